/* actor_resize.c: TaskService.ResizeActor, what an actor holds changed while it lives.
 *
 * An actor keeps what it was admitted with (its task entry in tm->actors); a resize
 * replaces that holding with a new vector. What shrinks is released at once (and the
 * node's queue re-examined); what grows must be admitted like anything else, so it waits
 * in the node's one queue (admission.h) in its turn, up to the request's timeout. GPUs
 * (plain or behind a backed resource) cannot change: their instances are the actor's
 * CUDA_VISIBLE_DEVICES, fixed when its worker started. The new holding reaches the
 * actor's worker quota at once (worker_pool_set_actor_cpu, task_cpu_quota: the CPU behind
 * its CPU-backed resources included) and its later calls (esc_actor_held). One resize per
 * actor at a time. Loop thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "actor_manager.h"
#include "log.h"
#include "loop.h"
#include "task_internal.h"
#include "worker_pool.h"
#include "xalloc.h"

typedef struct {
    admission_entry q; /* first: waits in the node's queue */
    task_manager *tm;
    esc_rpc_ctx *call;
    char *actor_id;
    Escher__Amount **want; /* the holding asked for (owned copies) */
    size_t nwant;
    accounting_req *grow; /* names point into want */
    size_t ngrow;
    ev_timer timer;
    bool queued;
} resize;

/* ------------------------------------------------------------ vectors */

static int64_t qty_in(Escher__Amount *const *v, size_t n, const char *name)
{
    int64_t q = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i]->name, name))
            q += v[i]->value;
    return q;
}

/* What of `from` is not in `to`: per name, from - to where positive. names point into
 * from. */
static size_t minus(Escher__Amount *const *from, size_t nfrom, Escher__Amount *const *to,
                    size_t nto, accounting_req *out)
{
    size_t n = 0;
    for (size_t i = 0; i < nfrom; i++) {
        int64_t d = from[i]->value - qty_in(to, nto, from[i]->name);
        if (d > 0)
            out[n++] = (accounting_req){.name = from[i]->name, .qty = d};
    }
    return n;
}

static Escher__Amount *amount_new(const char *name, int64_t value)
{
    Escher__Amount *a = esc_xmalloc(sizeof *a);
    escher__amount__init(a);
    a->name = esc_xstrdup(name);
    a->value = value;
    return a;
}

/* The entry's holding becomes want (copied): its spec's resources and request vector,
 * which release() gives back when the actor ends. */
static void set_holding(task_entry *e, Escher__Amount *const *want, size_t n)
{
    Escher__TaskSpec *s = e->spec;
    for (size_t i = 0; i < s->n_resources; i++)
        protobuf_c_message_free_unpacked(&s->resources[i]->base, NULL);
    free(s->resources);
    s->resources = esc_xcalloc(n + 1, sizeof *s->resources);
    s->n_resources = 0;
    for (size_t i = 0; i < n; i++)
        if (want[i]->value > 0)
            s->resources[s->n_resources++] = amount_new(want[i]->name, want[i]->value);
    free(e->req);
    e->nreq = s->n_resources;
    e->req = esc_xcalloc(e->nreq + 1, sizeof *e->req);
    for (size_t i = 0; i < e->nreq; i++)
        e->req[i] = (accounting_req){.name = s->resources[i]->name, .qty = s->resources[i]->value};
    accounting_resolve(e->tm->r->acct, e->req, e->nreq);
}

/* The holding of e (the actor's entry) changed: its worker's quota follows at once, and
 * its later calls run on the new holding under that quota. */
static void holding_changed(task_manager *tm, const char *actor_id, const task_entry *e)
{
    int64_t cpu = task_cpu_quota(tm, e);
    worker_pool_set_actor_cpu(tm->r->pool, actor_id, cpu);
    actor_manager_resized(tm->r->actors, actor_id, e->spec, cpu);
}

/* ------------------------------------------------------------ answers */

static void resize_free(resize *z)
{
    ev_timer_stop(esc_loop_ev(z->tm->r->loop), &z->timer);
    if (z->queued)
        admission_remove(z->tm->r->admission, &z->q);
    esc_strmap_del(z->tm->resizing, z->actor_id);
    for (size_t i = 0; i < z->nwant; i++)
        protobuf_c_message_free_unpacked(&z->want[i]->base, NULL);
    free(z->want);
    free(z->grow);
    free(z->actor_id);
    free(z);
}

/* Replies with what the actor holds now (its entry: NULL when it died meanwhile). */
static void reply_holding(resize *z, const task_entry *e)
{
    Escher__ResizeActorReply rep = ESCHER__RESIZE_ACTOR_REPLY__INIT;
    if (e) {
        rep.resources = e->spec->resources;
        rep.n_resources = e->spec->n_resources;
    }
    esc_rpc_reply(z->call, &rep.base);
}

static void finish(resize *z, int code, const char *why)
{
    task_entry *e = esc_strmap_get(z->tm->actors, z->actor_id);
    if (code == ESC_OK && !e) {
        code = ESC_ABORTED;
        why = "the actor ended while its resize waited";
    }
    if (code == ESC_OK)
        reply_holding(z, e);
    else
        esc_rpc_finish(z->call, code, why);
    resize_free(z);
}

/* The grown part is admitted: the actor holds what was asked. */
static void grown(resize *z, task_entry *e)
{
    task_manager *tm = z->tm;
    set_holding(e, z->want, z->nwant);
    holding_changed(tm, z->actor_id, e);
    raylet_changed(tm->r, false);
    ESC_INFO("actor %s resized", z->actor_id);
    finish(z, ESC_OK, NULL);
}

static bool try_grow(resize *z)
{
    task_entry *e = esc_strmap_get(z->tm->actors, z->actor_id);
    if (!e) {
        finish(z, ESC_ABORTED, "the actor ended while its resize waited");
        return true;
    }
    if (!accounting_acquire(z->tm->r->acct, z->grow, z->ngrow))
        return false;
    grown(z, e);
    return true;
}

static void on_turn(admission_entry *q, uint64_t pass)
{
    (void)pass;
    try_grow((resize *)q);
}

static void on_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    resize *z = t->data;
    char why[200];
    snprintf(why, sizeof why, "the node could not admit the growth of actor %.80s in time; "
             "its shrinks were kept", z->actor_id);
    finish(z, ESC_DEADLINE_EXCEEDED, why);
}

/* ------------------------------------------------------------ the call */

static int check_request(task_manager *tm, const Escher__ResizeActorRequest *req,
                         const task_entry *e, char *why, size_t len)
{
    for (size_t i = 0; i < req->n_resources; i++)
        if (!req->resources[i]->name || !*req->resources[i]->name || req->resources[i]->value < 0) {
            snprintf(why, len, "a resource needs a name and a quantity >= 0");
            return ESC_INVALID_ARGUMENT;
        }
    accounting_req *want = esc_xcalloc(req->n_resources + 1, sizeof *want);
    for (size_t i = 0; i < req->n_resources; i++)
        want[i] = (accounting_req){.name = req->resources[i]->name, .qty = req->resources[i]->value};
    int64_t before = e->gpus + accounting_backed_physical(tm->r->acct, e->req, e->nreq, "GPU");
    int64_t after = qty_in(req->resources, req->n_resources, "GPU") +
                    accounting_backed_physical(tm->r->acct, want, req->n_resources, "GPU");
    free(want);
    if (before != after) {
        snprintf(why, len, "the GPUs an actor holds cannot change (its CUDA_VISIBLE_DEVICES "
                 "is fixed when its worker starts)");
        return ESC_INVALID_ARGUMENT;
    }
    if (esc_strmap_get(tm->resizing, req->actor_id)) {
        snprintf(why, len, "a resize of actor %.80s is under way", req->actor_id);
        return ESC_FAILED_PRECONDITION;
    }
    return ESC_OK;
}

static resize *resize_new(task_manager *tm, esc_rpc_ctx *call,
                          const Escher__ResizeActorRequest *req)
{
    resize *z = esc_xcalloc(1, sizeof *z);
    z->tm = tm;
    z->call = call;
    z->actor_id = esc_xstrdup(req->actor_id);
    z->nwant = req->n_resources;
    z->want = esc_xcalloc(z->nwant + 1, sizeof *z->want);
    for (size_t i = 0; i < z->nwant; i++)
        z->want[i] = amount_new(req->resources[i]->name, req->resources[i]->value);
    z->q.try_fn = on_turn;
    ev_timer_init(&z->timer, on_timeout, req->timeout_ms / 1000.0, 0);
    z->timer.data = z;
    esc_strmap_put(tm->resizing, z->actor_id, z);
    return z;
}

void actor_resize_handle(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__ResizeActorRequest *req = (const Escher__ResizeActorRequest *)msg;
    char why[240];
    if (!task_actor_caller_ok(tm, call, req->actor_id, why, sizeof why)) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    task_entry *e = esc_strmap_get(tm->actors, req->actor_id);
    if (!e) {
        snprintf(why, sizeof why, "actor %.80s is not alive on this node", req->actor_id);
        esc_rpc_finish(call, ESC_NOT_FOUND, why);
        return;
    }
    int rc = check_request(tm, req, e, why, sizeof why);
    if (rc != ESC_OK) {
        esc_rpc_finish(call, rc, why);
        return;
    }
    resize *z = resize_new(tm, call, req);
    /* Shrinks first, at once: they may be what lets others (or the growth) in. */
    accounting_req *shrink = esc_xcalloc(e->nreq + 1, sizeof *shrink);
    size_t nshrink = minus(e->spec->resources, e->spec->n_resources, z->want, z->nwant, shrink);
    accounting_release(tm->r->acct, shrink, nshrink);
    free(shrink);
    z->grow = esc_xcalloc(z->nwant + 1, sizeof *z->grow);
    z->ngrow = minus(z->want, z->nwant, e->spec->resources, e->spec->n_resources, z->grow);
    accounting_resolve(tm->r->acct, z->grow, z->ngrow);
    if (nshrink) {
        /* The holding while the growth waits: the old one less what shrank. */
        Escher__Amount **kept = esc_xcalloc(e->spec->n_resources + 1, sizeof *kept);
        for (size_t i = 0; i < e->spec->n_resources; i++) {
            const char *n = e->spec->resources[i]->name;
            int64_t w = qty_in(z->want, z->nwant, n), h = e->spec->resources[i]->value;
            kept[i] = amount_new(n, w < h ? w : h);
        }
        size_t nkept = e->spec->n_resources;
        set_holding(e, kept, nkept);
        for (size_t i = 0; i < nkept; i++)
            protobuf_c_message_free_unpacked(&kept[i]->base, NULL);
        free(kept);
        holding_changed(tm, z->actor_id, e);
        raylet_changed(tm->r, true);
    }
    if (try_grow(z))
        return;
    if (req->timeout_ms == 0) {
        on_timeout(NULL, &z->timer, 0);
        return;
    }
    admission_push(tm->r->admission, &z->q);
    z->queued = true;
    ev_timer_start(esc_loop_ev(tm->r->loop), &z->timer);
}

void actor_resize_stop(task_manager *tm)
{
    const char *k;
    void *v;
    size_t pos = 0;
    while (esc_strmap_count(tm->resizing) && esc_strmap_next(tm->resizing, &pos, &k, &v)) {
        resize *z = v;
        esc_rpc_finish(z->call, ESC_UNAVAILABLE, "raylet shutting down");
        resize_free(z); /* takes it out of the map: start over */
        pos = 0;
    }
}
