/* wait_applied.c: WaitApplied holds its call until every target node has acknowledged
 * the sequence (through ReportNode), the node died, or the timeout passed. Waiters are
 * re-checked when a node's applied sequence advances: event driven, no polling. */
#include "gcs.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

struct gcs_waiter {
    gcs_waiter *prev, *next;
    gcs *g;
    esc_rpc_ctx *call;
    uint64_t seq;
    char **node_ids;   /* NULL: every alive node */
    size_t n;
    ev_timer timer;
};

static void waiter_unlink(gcs *g, gcs_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        g->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
}

static void waiter_free(gcs *g, gcs_waiter *w)
{
    ev_timer_stop(esc_loop_ev(g->loop), &w->timer);
    for (size_t i = 0; i < w->n; i++)
        free(w->node_ids[i]);
    free(w->node_ids);
    free(w);
}

static bool node_pending(const gcs_node *n, uint64_t seq)
{
    return gcs_node_alive(n) && n->applied_seq < seq;
}

/* Fills rep->pending (borrowed strings) with nodes that still lag; returns their count. */
static size_t pending_nodes(gcs *g, const gcs_waiter *w, Escher__WaitAppliedReply *rep)
{
    size_t count = 0;
    if (w->node_ids) {
        for (size_t i = 0; i < w->n; i++) {
            gcs_node *n = gcs_node_find(g, w->node_ids[i]);
            if (n && node_pending(n, w->seq) && rep)
                rep->pending[rep->n_pending++] = n->info->node_id;
            count += n && node_pending(n, w->seq);
        }
        return count;
    }
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->nodes, &pos, &k, &v)) {
        gcs_node *n = v;
        if (!node_pending(n, w->seq))
            continue;
        if (rep)
            rep->pending[rep->n_pending++] = n->info->node_id;
        count++;
    }
    return count;
}

static void answer(gcs *g, gcs_waiter *w, bool applied)
{
    Escher__WaitAppliedReply rep = ESCHER__WAIT_APPLIED_REPLY__INIT;
    rep.applied = applied;
    rep.pending = esc_xcalloc(esc_strmap_count(g->nodes) + w->n + 1, sizeof *rep.pending);
    if (!applied)
        pending_nodes(g, w, &rep);
    esc_rpc_reply(w->call, &rep.base);
    free(rep.pending);
}

static void on_timeout(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    gcs_waiter *w = t->data;
    gcs *g = w->g;
    waiter_unlink(g, w);
    answer(g, w, false);
    waiter_free(g, w);
}

static void on_cancel(esc_rpc_ctx *call, void *ud)
{
    gcs_waiter *w = ud;
    gcs *g = w->g;
    waiter_unlink(g, w);
    esc_rpc_finish(call, ESC_CANCELLED, NULL);
    waiter_free(g, w);
}

void gcs_wait_recheck(gcs *g)
{
    gcs_waiter *w = g->waiters;
    while (w) {
        gcs_waiter *next = w->next;
        if (pending_nodes(g, w, NULL) == 0) {
            waiter_unlink(g, w);
            answer(g, w, true);
            waiter_free(g, w);
        }
        w = next;
    }
}

static void handle_wait(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__WaitAppliedRequest *req = (const Escher__WaitAppliedRequest *)msg;
    if (req->seq > g->seq) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "sequence number was never committed");
        return;
    }
    for (size_t i = 0; i < req->n_node_ids; i++) {
        /* A node forgotten after its death is dead: never pending, as in the table. */
        if (!gcs_node_find(g, req->node_ids[i]) && !gcs_node_forgotten(g, req->node_ids[i])) {
            esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "unknown node in wait list");
            return;
        }
    }
    gcs_waiter *w = esc_xcalloc(1, sizeof *w);
    w->g = g;
    w->call = call;
    w->seq = req->seq;
    if (req->n_node_ids) {
        w->node_ids = esc_xcalloc(req->n_node_ids, sizeof *w->node_ids);
        for (size_t i = 0; i < req->n_node_ids; i++)
            w->node_ids[w->n++] = esc_xstrdup(req->node_ids[i]);
    }
    if (pending_nodes(g, w, NULL) == 0) {
        answer(g, w, true);
        waiter_free(g, w);
        return;
    }
    w->next = g->waiters;
    if (g->waiters)
        g->waiters->prev = w;
    g->waiters = w;
    double timeout = (req->timeout_ms ? req->timeout_ms : 10000) / 1000.0;
    ev_timer_init(&w->timer, on_timeout, timeout, 0);
    w->timer.data = w;
    ev_timer_start(esc_loop_ev(g->loop), &w->timer);
    esc_rpc_ctx_on_cancel(call, on_cancel, w);
}

void gcs_wait_close_all(gcs *g)
{
    while (g->waiters) {
        gcs_waiter *w = g->waiters;
        waiter_unlink(g, w);
        esc_rpc_finish(w->call, ESC_UNAVAILABLE, "gcs shutting down");
        waiter_free(g, w);
    }
}

void gcs_wait_register(gcs *g)
{
    esc_rpc_server_handle(g->server, &ESC_M_GCS_WAIT_APPLIED, handle_wait, g);
}
