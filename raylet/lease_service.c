/* lease_service.c: the Raylet gRPC service, the node's admission point.
 *
 * Admission rules (docs/raylet.md):
 *  - RequestLease is granted at once when accounting_acquire succeeds (every amount fits
 *    the available capacity, or the resource is unbounded). Otherwise the request waits
 *    in a FIFO queue, also when it names a resource that is absent, until a log entry or
 *    a release makes it fit, or until wait_ms passes (then granted=false). wait_ms 0
 *    answers granted=false at once.
 *  - The queue is the node's one admission queue (admission.h), shared with the tasks
 *    that wait: it is re-examined, in FIFO order, at the end of every loop turn in which
 *    an event was applied or something was released (raylet_changed): event driven,
 *    never on a timer. A request that does not fit does not block those behind it.
 *  - Names are matched literally: physical names ("CPU") or full "<ns>/<name>".
 *  - ReturnLease releases exactly what the grant held. Leases of a job are released
 *    when its EV_JOB_FINISHED event is applied; its queued requests are answered
 *    granted=false.
 * Everything here runs on the loop thread. */
#include "lease_service.h"
#include "admission.h"
#include "raylet.h"
#include "resource_rows.h"
#include "task_manager.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "qty.h"
#include "raylet.pb-c.h"
#include "strmap.h"
#include "xalloc.h"

/* Longest resource name accepted in a request. */
#define REQ_NAME_MAX 256

/* A request vector with its job, in one allocation. */
typedef struct {
    char *job_id;
    size_t n;
    accounting_req req[];
} reqset;

typedef struct lease {
    struct lease *prev, *next;
    uint64_t id;
    reqset *rs;
    char key[24];
} lease;

typedef struct waiter {
    admission_entry q;        /* first: the node's queue (admission.h) */
    lease_service *ls;
    esc_rpc_ctx *call;
    ev_timer timer;
    reqset *rs;
} waiter;

struct lease_service {
    raylet *r;
    esc_strmap *by_id;        /* decimal lease id -> lease */
    lease *leases;            /* every granted lease */
    size_t nleases;
    size_t nqueued;           /* requests waiting in the node's queue (r->admission) */
    uint64_t next_id;
};

/* ------------------------------------------------------------ request sets */

static reqset *reqset_new(const Escher__RequestLeaseRequest *rq)
{
    size_t size = sizeof(reqset) + rq->n_resources * sizeof(accounting_req);
    size_t strings = strlen(rq->job_id) + 1;
    for (size_t i = 0; i < rq->n_resources; i++)
        strings += strlen(rq->resources[i]->name) + 1;
    reqset *rs = esc_xmalloc(size + strings);
    char *p = (char *)rs + size;
    rs->n = rq->n_resources;
    for (size_t i = 0; i < rq->n_resources; i++) {
        size_t len = strlen(rq->resources[i]->name) + 1;
        memcpy(p, rq->resources[i]->name, len);
        rs->req[i] = (accounting_req){.name = p, .qty = rq->resources[i]->value};
        p += len;
    }
    rs->job_id = p;
    memcpy(p, rq->job_id, strlen(rq->job_id) + 1);
    return rs;
}

/* ------------------------------------------------------------ replies */

static void reply_lease(esc_rpc_ctx *call, bool granted, uint64_t id)
{
    Escher__RequestLeaseReply rep = ESCHER__REQUEST_LEASE_REPLY__INIT;
    rep.granted = granted;
    rep.lease_id = id;
    esc_rpc_reply(call, &rep.base);
}

/* Records a lease that was just acquired and answers the request. */
static void grant(lease_service *ls, reqset *rs, esc_rpc_ctx *call)
{
    lease *l = esc_xcalloc(1, sizeof *l);
    l->id = ++ls->next_id;
    l->rs = rs;
    snprintf(l->key, sizeof l->key, "%" PRIu64, l->id);
    esc_strmap_put(ls->by_id, l->key, l);
    l->next = ls->leases;
    if (ls->leases)
        ls->leases->prev = l;
    ls->leases = l;
    ls->nleases++;
    reply_lease(call, true, l->id);
}

static void lease_remove(lease_service *ls, lease *l)
{
    esc_strmap_del(ls->by_id, l->key);
    if (l->prev)
        l->prev->next = l->next;
    else
        ls->leases = l->next;
    if (l->next)
        l->next->prev = l->prev;
    ls->nleases--;
    free(l->rs);
    free(l);
}

/* ------------------------------------------------------------ the queue */

static void queue_unlink(lease_service *ls, waiter *w)
{
    admission_remove(ls->r->admission, &w->q);
    ls->nqueued--;
    ev_timer_stop(esc_loop_ev(ls->r->loop), &w->timer);
}

static void waiter_free(waiter *w)
{
    free(w->rs);
    free(w);
}

static void on_wait_timeout(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    waiter *w = t->data;
    queue_unlink(w->ls, w);
    reply_lease(w->call, false, 0);
    waiter_free(w);
}

/* The client went away while its request waited. */
static void on_waiter_cancel(esc_rpc_ctx *call, void *ud)
{
    waiter *w = ud;
    queue_unlink(w->ls, w);
    esc_rpc_finish(call, ESC_CANCELLED, "request cancelled");
    waiter_free(w);
}

static void try_waiter(admission_entry *a, uint64_t pass);

/* The waiting request at or behind a (NULL when none); entries of other kinds skipped. */
static waiter *waiter_from(admission_entry *a)
{
    while (a && a->try_fn != try_waiter)
        a = a->next;
    return (waiter *)a; /* q is the first member */
}

static void enqueue(lease_service *ls, reqset *rs, esc_rpc_ctx *call, uint32_t wait_ms)
{
    waiter *w = esc_xcalloc(1, sizeof *w);
    w->ls = ls;
    w->call = call;
    w->rs = rs;
    w->q.try_fn = try_waiter;
    admission_push(ls->r->admission, &w->q);
    ls->nqueued++;
    struct ev_loop *ev = esc_loop_ev(ls->r->loop);
    ev_now_update(ev);
    ev_timer_init(&w->timer, on_wait_timeout, wait_ms / 1000.0, 0.);
    w->timer.data = w;
    ev_timer_start(ev, &w->timer);
    esc_rpc_ctx_on_cancel(call, on_waiter_cancel, w);
}

/* A waiting request's turn in a re-examination (admission.h). */
static void try_waiter(admission_entry *a, uint64_t pass)
{
    (void)pass;
    waiter *w = (waiter *)a;
    lease_service *ls = w->ls;
    if (esc_rpc_ctx_cancelled(w->call)) {
        /* Do not grant what nobody will learn about; on_waiter_cancel may not come (the
         * server may be stopping), so answer here. */
        queue_unlink(ls, w);
        esc_rpc_finish(w->call, ESC_CANCELLED, "request cancelled");
        waiter_free(w);
    } else if (accounting_acquire(ls->r->acct, w->rs->req, w->rs->n)) {
        queue_unlink(ls, w);
        grant(ls, w->rs, w->call);
        free(w);
    }
}

/* ------------------------------------------------------------ handlers */

static void on_request_lease(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    lease_service *ls = ud;
    const Escher__RequestLeaseRequest *rq = (const Escher__RequestLeaseRequest *)msg;
    for (size_t i = 0; i < rq->n_resources; i++) {
        const Escher__Amount *am = rq->resources[i];
        char m[200];
        if (!am->name[0] || strlen(am->name) > REQ_NAME_MAX) {
            esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "resource name empty or too long");
            return;
        }
        if (am->unbounded || am->value <= 0 || am->value > ESC_QTY_MAX) {
            snprintf(m, sizeof m, "bad quantity for '%.64s': must be > 0 and bounded", am->name);
            esc_rpc_finish(call, ESC_INVALID_ARGUMENT, m);
            return;
        }
    }
    reqset *rs = reqset_new(rq);
    if (accounting_acquire(ls->r->acct, rs->req, rs->n)) {
        grant(ls, rs, call);
        raylet_changed(ls->r, false);
    } else if (rq->wait_ms == 0) {
        free(rs);
        reply_lease(call, false, 0);
    } else {
        enqueue(ls, rs, call, rq->wait_ms);
    }
}

static void on_return_lease(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    lease_service *ls = ud;
    const Escher__ReturnLeaseRequest *rq = (const Escher__ReturnLeaseRequest *)msg;
    char key[24];
    snprintf(key, sizeof key, "%" PRIu64, rq->lease_id);
    lease *l = esc_strmap_get(ls->by_id, key);
    Escher__ReturnLeaseReply rep = ESCHER__RETURN_LEASE_REPLY__INIT;
    if (l) {
        accounting_release(ls->r->acct, l->rs->req, l->rs->n);
        lease_remove(ls, l);
        rep.released = true;
        raylet_changed(ls->r, true);
    }
    esc_rpc_reply(call, &rep.base);
}

static void on_get_node_state(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    (void)msg;
    lease_service *ls = ud;
    raylet *r = ls->r;
    resource_rows *rows = resource_rows_build(r->acct, NULL);
    Escher__GetNodeStateReply rep = ESCHER__GET_NODE_STATE_REPLY__INIT;
    rep.node_id = r->node_id;
    rep.applied_seq = r->applied_seq;
    rep.n_resources = rows->n;
    rep.resources = rows->rows;
    rep.num_leases = (uint32_t)ls->nleases;
    rep.queued_leases = (uint32_t)ls->nqueued;
    rep.demand = task_manager_demand(r->tasks, &rep.n_demand);
    esc_rpc_reply(call, &rep.base);
    task_manager_demand_free(rep.demand, rep.n_demand);
    free(rows);
}

/* ------------------------------------------------------------ jobs */

void lease_service_job_finished(lease_service *ls, const char *job_id)
{
    if (!job_id || !*job_id)
        return;
    size_t released = 0, failed = 0;
    for (lease *l = ls->leases, *next; l; l = next) {
        next = l->next;
        if (strcmp(l->rs->job_id, job_id) != 0)
            continue;
        accounting_release(ls->r->acct, l->rs->req, l->rs->n);
        lease_remove(ls, l);
        released++;
    }
    for (waiter *w = waiter_from(admission_first(ls->r->admission)), *next; w; w = next) {
        next = waiter_from(w->q.next);
        if (strcmp(w->rs->job_id, job_id) != 0)
            continue;
        queue_unlink(ls, w);
        reply_lease(w->call, false, 0);
        waiter_free(w);
        failed++;
    }
    if (released || failed)
        ESC_INFO("job %s finished: released %zu leases, refused %zu queued requests", job_id,
                 released, failed);
    if (released)
        raylet_changed(ls->r, true);
}

/* ------------------------------------------------------------ lifetime */

lease_service *lease_service_new(raylet *r)
{
    lease_service *ls = esc_xcalloc(1, sizeof *ls);
    ls->r = r;
    ls->by_id = esc_strmap_new();
    return ls;
}

int lease_service_serve(lease_service *ls, esc_rpc_server *srv)
{
    if (esc_rpc_server_handle(srv, &ESC_M_RAYLET_REQUEST_LEASE, on_request_lease, ls) != 0 ||
        esc_rpc_server_handle(srv, &ESC_M_RAYLET_RETURN_LEASE, on_return_lease, ls) != 0 ||
        esc_rpc_server_handle(srv, &ESC_M_RAYLET_GET_NODE_STATE, on_get_node_state, ls) != 0)
        return -1;
    return 0;
}

size_t lease_service_count(const lease_service *ls)
{
    return ls->nleases;
}

size_t lease_service_queued(const lease_service *ls)
{
    return ls->nqueued;
}

void lease_service_free(lease_service *ls)
{
    if (!ls)
        return;
    waiter *w;
    while ((w = waiter_from(admission_first(ls->r->admission))) != NULL) {
        queue_unlink(ls, w);
        esc_rpc_finish(w->call, ESC_UNAVAILABLE, "raylet is shutting down");
        waiter_free(w);
    }
    while (ls->leases)
        lease_remove(ls, ls->leases);
    esc_strmap_free(ls->by_id);
    free(ls);
}
