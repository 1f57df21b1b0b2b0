/* load.c: availability advertisement (EV_NODE_LOAD). Raylets report their accounting
 * rows (total, held) in ReportNode; this module tells every raylet what the others have
 * available, so a task that is feasible but busy on its node can go to an idle one.
 *
 * Not part of the ordered log: load is soft state that changes whenever a task starts or
 * ends, so committing it would put a storage write on every task and flood the replay
 * ring (evicting the resource entries that resubscribing raylets need). An EV_NODE_LOAD
 * carries the last committed seq, not a new one: subscribers resume from the seq of the
 * last event they got, and every event up to g->seq is already on each stream when a load
 * event is sent, so the resume point stays right. It is never stored or replayed;
 * instead a raylet gets every node's full rows right after its snapshot or replay
 * (gcs_load_full_event), then changes.
 *
 * Bounded cost: reports only mark their node dirty; a 50 ms one-shot timer then sends
 * one event holding, per dirty node, only the rows that differ from what was last
 * advertised (a node whose rows vanished is sent whole). The diff walks the two reports
 * in order (a raylet's rows keep their order), so it costs one pass per dirty node per
 * period however many tasks started, and a task start on a node with 10,000 resources
 * sends one or two rows to each raylet, not 10,000. */
#include "gcs.h"

#include "pbutil.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define LOAD_PERIOD_S 0.05

/* The report a node's rows were last advertised from; it may be the current one. */
static void drop_published(gcs_node *n)
{
    if (n->published && n->published != n->report)
        protobuf_c_message_free_unpacked(&n->published->base, NULL);
    n->published = NULL;
}

void gcs_load_set_report(gcs_node *n, Escher__ReportNodeRequest *report)
{
    if (n->report && n->report != n->published)
        protobuf_c_message_free_unpacked(&n->report->base, NULL);
    n->report = report;
}

void gcs_load_forget(gcs_node *n)
{
    drop_published(n);
    gcs_load_set_report(n, NULL);
    n->load_dirty = false;
    if (n->demand)
        protobuf_c_message_free_unpacked(&n->demand->base, NULL);
    n->demand = NULL;
    n->demand_dirty = false;
}

void gcs_load_set_demand(gcs *g, gcs_node *n, const Escher__ReportNodeRequest *report)
{
    Escher__ReportNodeRequest only = ESCHER__REPORT_NODE_REQUEST__INIT;
    only.node_id = report->node_id;
    only.has_demand = true;
    only.n_demand = report->n_demand;
    only.demand = report->demand;
    if (n->demand)
        protobuf_c_message_free_unpacked(&n->demand->base, NULL);
    n->demand = (Escher__ReportNodeRequest *)esc_pb_dup(&only.base);
    n->demand_dirty = true;
    gcs_load_reported(g, n);
}

/* Attaches n's demand (borrowed) to l. */
static void attach_demand(const gcs_node *n, Escher__NodeLoad *l)
{
    if (!n->demand)
        return;
    l->has_demand = true;
    l->n_demand = n->demand->n_demand;
    l->demand = n->demand->demand;
}

static bool same_row(const Escher__ResourceState *a, const Escher__ResourceState *b)
{
    return a->total == b->total && a->held == b->held && a->unbounded == b->unbounded &&
           a->deleted == b->deleted;
}

/* Appends to out (room for cur->n_resources) the rows of cur that differ from prev.
 * Returns false when a row of prev is gone from cur: then the node must be sent whole. */
static bool diff_rows(const Escher__ReportNodeRequest *prev, const Escher__ReportNodeRequest *cur,
                      Escher__ResourceState **out, size_t *n)
{
    size_t i = 0, np = prev->n_resources, nc = cur->n_resources;
    /* Fast path: the same names in the same order. */
    for (; i < np && i < nc && !strcmp(prev->resources[i]->name, cur->resources[i]->name); i++)
        if (!same_row(prev->resources[i], cur->resources[i]))
            out[(*n)++] = cur->resources[i];
    if (i == np && i == nc)
        return true;
    esc_strmap *old = esc_strmap_new();
    for (size_t k = i; k < np; k++)
        esc_strmap_put(old, prev->resources[k]->name, prev->resources[k]);
    size_t matched = 0;
    for (size_t k = i; k < nc; k++) {
        const Escher__ResourceState *p = esc_strmap_get(old, cur->resources[k]->name);
        matched += p != NULL;
        if (!p || !same_row(p, cur->resources[k]))
            out[(*n)++] = cur->resources[k];
    }
    esc_strmap_free(old);
    return matched == np - i;
}

/* Fills l with what changed on n since its last advertisement (its demand whole when it
 * changed); false when nothing did. */
static bool node_load(gcs_node *n, Escher__NodeLoad *l)
{
    escher__node_load__init(l);
    l->node_id = n->info->node_id;
    if (n->demand_dirty)
        attach_demand(n, l);
    n->demand_dirty = false;
    const Escher__ReportNodeRequest *cur = n->report;
    if (!cur) {
        l->rows = esc_xcalloc(1, sizeof *l->rows);
        return l->has_demand;
    }
    l->rows = esc_xcalloc(cur->n_resources + 1, sizeof *l->rows);
    l->full = !n->published || !diff_rows(n->published, cur, l->rows, &l->n_rows);
    if (l->full) {
        if (cur->n_resources) /* a report of no rows has resources NULL */
            memcpy(l->rows, cur->resources, cur->n_resources * sizeof *l->rows);
        l->n_rows = cur->n_resources;
        attach_demand(n, l);
    }
    return l->full || l->n_rows > 0 || l->has_demand;
}

static void free_loads(Escher__Event *ev)
{
    for (size_t i = 0; i < ev->n_loads; i++)
        free(ev->loads[i]->rows);
    free(ev->loads ? ev->loads[0] : NULL); /* one block holds every NodeLoad */
    free(ev->loads);
}

/* Timer: one event with the changes of every dirty node, to every raylet. */
static void on_load_timer(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    gcs *g = t->data;
    size_t cap = esc_strmap_count(g->nodes) + 1, pos = 0;
    Escher__Event out = ESCHER__EVENT__INIT;
    out.kind = ESCHER__EVENT_KIND__EV_NODE_LOAD;
    out.seq = g->seq;
    out.loads = esc_xcalloc(cap, sizeof *out.loads);
    Escher__NodeLoad *block = esc_xcalloc(cap, sizeof *block);
    const char *k;
    void *v;
    while (esc_strmap_next(g->nodes, &pos, &k, &v)) {
        gcs_node *n = v;
        if (!n->load_dirty)
            continue;
        n->load_dirty = false;
        if (!gcs_node_alive(n) || (!n->report && !n->demand))
            continue;
        Escher__NodeLoad *l = &block[out.n_loads];
        if (node_load(n, l))
            out.loads[out.n_loads++] = l;
        else
            free(l->rows);
        /* The rows sent point into the current report, which becomes the base of the
         * next diff; the previous base is no longer needed. */
        if (n->report) {
            drop_published(n);
            n->published = n->report;
        }
    }
    if (out.n_loads)
        gcs_broadcast(g, &out);
    else
        free(block); /* free_loads finds the block through loads[0] */
    free_loads(&out);
}

void gcs_load_reported(gcs *g, gcs_node *n)
{
    n->load_dirty = true;
    if (!ev_is_active(&g->load_timer))
        ev_timer_start(esc_loop_ev(g->loop), &g->load_timer);
}

void gcs_load_init(gcs *g)
{
    ev_timer_init(&g->load_timer, on_load_timer, LOAD_PERIOD_S, 0);
    g->load_timer.data = g;
}

void gcs_load_stop(gcs *g)
{
    ev_timer_stop(esc_loop_ev(g->loop), &g->load_timer);
}

Escher__Event *gcs_load_full_event(gcs *g)
{
    Escher__Event *ev = esc_xcalloc(1, sizeof *ev);
    escher__event__init(ev);
    ev->kind = ESCHER__EVENT_KIND__EV_NODE_LOAD;
    ev->seq = g->seq;
    size_t cap = esc_strmap_count(g->nodes) + 1, pos = 0;
    ev->loads = esc_xcalloc(cap, sizeof *ev->loads);
    Escher__NodeLoad *block = esc_xcalloc(cap, sizeof *block);
    const char *k;
    void *v;
    while (esc_strmap_next(g->nodes, &pos, &k, &v)) {
        gcs_node *n = v;
        if (!gcs_node_alive(n) || !n->report)
            continue;
        Escher__NodeLoad *l = &block[ev->n_loads];
        escher__node_load__init(l);
        l->node_id = n->info->node_id;
        l->full = true;
        l->n_rows = n->report->n_resources;
        l->rows = esc_xcalloc(l->n_rows + 1, sizeof *l->rows);
        memcpy(l->rows, n->report->resources, l->n_rows * sizeof *l->rows);
        attach_demand(n, l);
        ev->loads[ev->n_loads++] = l;
    }
    if (!ev->n_loads)
        free(block); /* free_loads finds the block through loads[0] */
    return ev;
}

void gcs_load_full_event_free(Escher__Event *ev)
{
    free_loads(ev);
    free(ev);
}
