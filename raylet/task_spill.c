/* task_spill.c: placement elsewhere (task_internal.h): a task that does not fit here goes
 * to a node whose advertised availability fits it now, or, when it never fits here, to a
 * node where it is feasible; it is sent on that peer's own queue. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_view.h"
#include "ids.h"
#include "log.h"
#include "peers.h"
#include "task_internal.h"
#include "xalloc.h"

/* A withdraw held until the forward is answered (task_spill_hold_withdraw). */
typedef struct held_withdraw {
    struct held_withdraw *prev, *next;
    struct forward_ctx *f;
    esc_rpc_ctx *call;
} held_withdraw;

/* A forward's outcome finds its task by id and forward count: the entry may have ended,
 * or been placed again, before the peer answered. */
typedef struct forward_ctx {
    task_manager *tm;
    char task_id[ESC_OBJECT_ID_MAX];
    unsigned forwards;
    held_withdraw *held;
} forward_ctx;

static void on_held_withdraw_cancel(esc_rpc_ctx *call, void *ud)
{
    held_withdraw *h = ud;
    if (h->prev)
        h->prev->next = h->next;
    else
        h->f->held = h->next;
    if (h->next)
        h->next->prev = h->prev;
    esc_rpc_finish(call, ESC_CANCELLED, "withdraw cancelled");
    free(h);
}

/* Between the forward and its answer the peer may not hold the task yet (the call is on
 * its way, or the peer holds it until it knows the job: task_submit.c), so a withdraw
 * passed on could find nothing there while the task is about to wait there. The answer
 * is the event that settles it: the peer holds the task (or passed it on, or ran it), or
 * it came back here. */
bool task_spill_hold_withdraw(task_entry *e, esc_rpc_ctx *call)
{
    forward_ctx *f = e->forward;
    if (!f)
        return false;
    held_withdraw *h = esc_xcalloc(1, sizeof *h);
    *h = (held_withdraw){.next = f->held, .f = f, .call = call};
    if (h->next)
        h->next->prev = h;
    f->held = h;
    esc_rpc_ctx_on_cancel(call, on_held_withdraw_cancel, h);
    return true;
}

/* The forward was answered: each held withdraw is made again, on what is true now. */
static void release_withdraws(forward_ctx *f)
{
    while (f->held) {
        held_withdraw *h = f->held;
        f->held = h->next;
        esc_rpc_ctx_on_cancel(h->call, NULL, NULL);
        task_cancel_withdraw(f->tm, h->call, f->task_id);
        free(h);
    }
}

/* The peer did not take the task (it is suspect now: peers.h): it goes back to the queue
 * here, from where the re-examination places it on another node or keeps it. */
static void on_forwarded(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    forward_ctx *f = ud;
    task_manager *tm = f->tm;
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    task_entry *e = esc_strmap_get(tm->spilled, f->task_id);
    if (e && e->forward == f)
        e->forward = NULL;
    if (code != ESC_OK && e && e->forwards == f->forwards) {
        esc_strmap_del(tm->spilled, f->task_id);
        /* Another raylet answered at that node's address: the node is gone. */
        if (code == ESC_FAILED_PRECONDITION)
            cluster_view_node_gone(tm->r->view, e->spilled_to);
        ESC_WARN("forwarding task %s to %s failed (%s %s); it is placed again",
                 e->spec->task_id, e->spilled_addr, esc_status_name(code), st->message);
        /* The hop it did not make is not counted. */
        if (e->spec->spill_hops > 0)
            e->spec->spill_hops--;
        free(e->spilled_to);
        e->spilled_to = NULL;
        task_enqueue(tm, e);
        raylet_changed(tm->r, true);
    }
    release_withdraws(f);
    free(f);
}

/* Sends the task to the raylet at address, on that peer's own queue, with a short
 * deadline and no retry: a peer that does not answer in time is suspect, and the task
 * is placed again. A timeout can hide a task that did arrive (an overloaded but live
 * peer): then it may run twice, as a retried task may (docs/tasks.md). */
void task_spill_forward(task_manager *tm, task_entry *e, const char *address, const char *node_id)
{
    ESC_DEBUG("task %s forwarded to node %s (hop %u)", e->spec->task_id, node_id,
              e->spec->spill_hops + 1);
    /* Until that node advertises again, count the task against it here. */
    cluster_view_debit(tm->r->view, node_id, e->req, e->nreq);
    e->spec->spill_hops++;
    free(e->spilled_to);
    e->spilled_to = esc_xstrdup(node_id);
    free(e->spilled_addr);
    e->spilled_addr = esc_xstrdup(address);
    e->forwards++;
    /* Kept from now on: its end may be reported before the forward's own answer. */
    esc_strmap_put(tm->spilled, e->spec->task_id, e);
    forward_ctx *f = esc_xmalloc(sizeof *f);
    *f = (forward_ctx){.tm = tm, .forwards = e->forwards};
    e->forward = f;
    snprintf(f->task_id, sizeof f->task_id, "%s", e->spec->task_id);
    /* The copy that goes out says to tell this raylet when it ends; the spec kept here
     * still says whom this raylet tells (the call copies the request). */
    char *reply_to = e->spec->reply_to, *forwarded_to = e->spec->forwarded_to;
    e->spec->reply_to = tm->r->address;
    e->spec->forwarded_to = (char *)node_id;
    peers_call(tm->r->peers, peers_get(tm->r->peers, address), &ESC_M_TASK_SERVICE_SUBMIT_TASK,
               &e->spec->base, 0, 0, on_forwarded, f);
    e->spec->reply_to = reply_to;
    e->spec->forwarded_to = forwarded_to;
}

/* Where should a task that does not fit here now go? NULL: stay (run when it fits, or
 * wait). A node whose advertised availability fits it now, never the raylet that sent it
 * here (no ping-pong: a forwarded task that is busy here goes on to a third node or
 * waits); when this node could never hold it, also any node where it is feasible. At
 * most ESC_MAX_SPILL_HOPS forwards in all. */
const char *task_spill_target(task_manager *tm, const task_entry *e, const char **node_id)
{
    raylet *r = tm->r;
    if (e->spec->spill_hops >= ESC_MAX_SPILL_HOPS || task_fits_now(tm, e))
        return NULL;
    const char *from = cluster_view_node_at(r->view, e->spec->reply_to);
    const char *to = cluster_view_find_available(r->view, r->node_id, e->req, e->nreq, from,
                                                 node_id);
    if (to || accounting_feasible(r->acct, e->req, e->nreq))
        return to;
    return cluster_view_find_feasible(r->view, r->node_id, e->req, e->nreq, node_id);
}

/* True when b would find the same spill target as a: the same request, sender and hops. */
bool task_spill_same_placement(const task_entry *a, const task_entry *b)
{
    if (a->nreq != b->nreq || a->spec->spill_hops != b->spec->spill_hops ||
        strcmp(a->spec->reply_to, b->spec->reply_to) != 0)
        return false;
    for (size_t i = 0; i < a->nreq; i++)
        if (a->req[i].qty != b->req[i].qty || strcmp(a->req[i].name, b->req[i].name) != 0)
            return false;
    return true;
}
