/* object_service.c: the ObjectStore gRPC service of the raylet, over the node's store
 * (object_store.h), and the raylet's own object calls.
 *
 *  - PutChunk writes one chunk; the first one (offset 0) creates the object with its
 *    total size, which is checked against the capacity at once (RESOURCE_EXHAUSTED).
 *    When the last byte arrives the object is sealed and its location announced to the
 *    GCS; the reply to that last chunk waits for the GCS's acknowledgement (the loop does
 *    not: announcer.c batches it onto the outbound queue), so once esc_put returns,
 *    every reader and esc_ref_release anywhere finds the object. A repeated chunk (a
 *    retried call) is accepted, so the client may retry PutChunk.
 *  - Pull streams a sealed object in chunks of chunk_size (default 4 MiB). The object is
 *    pinned meanwhile, and one chunk is sent each time the previous ones went out
 *    (esc_rpc_ctx_on_drained): a reader of a 1 GB object costs a few chunks of memory,
 *    not a copy of the object, and the loop never stalls on it.
 *  - FreeObjects frees objects here and removes their locations at the GCS.
 *  - Pull and FreeObjects of an object of a job are allowed to that job and the jobs it
 *    granted its namespace only (job_mirror_object_ok): a client proves its job by its
 *    metadata, a raylet pulling a task's argument by the task's job id and credential in
 *    the request (docs/security.md, "Objects").
 *  - A job's objects are freed when its EV_JOB_FINISHED event is applied; the GCS drops
 *    their directory entries itself. An add refused because the job already ended
 *    (FAILED_PRECONDITION) frees the object here too, so a put racing with the end of
 *    its job does not leak.
 *  - An unsealed object untouched for PARTIAL_TIMEOUT_MS (its writer vanished) is
 *    dropped; the sweep timer runs only while unsealed objects exist.
 * Everything runs on the loop thread. */
#include "object_service.h"
#include "raylet.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "announcer.h"
#include "ids.h"
#include "job_mirror.h"
#include "log.h"
#include "names.h"
#include "object.pb-c.h"
#include "object_store.h"
#include "rpc_async.h"
#include "xalloc.h"

#define PARTIAL_TIMEOUT_MS 30000
#define SWEEP_PERIOD_S 1.0
#define DEFAULT_CHUNK (4u << 20)
#define MIN_CHUNK (4u << 10)
#define MAX_CHUNK (32u << 20)
#define PULL_WINDOW 2           /* chunks queued when a pull starts */
#define FREE_MAX_IDS 100000     /* ids in one FreeObjects request */

typedef struct pull {
    struct pull *prev, *next;
    object_service *o;
    esc_rpc_ctx *call;
    object_entry *pin;
    object_view view;
    uint64_t offset;
    uint32_t chunk;
    bool sent_first;
} pull;

struct object_service {
    raylet *r;
    object_store *store;
    esc_rpc_channel *gcs;      /* for the object directory (calls go out on r->async) */
    announcer *announcer;      /* locations to the GCS, batched */
    object_waiters waiters;    /* told of arrivals (the task manager) */
    pull *pulls;               /* streams in progress, ended at shutdown */
    ev_timer sweep;
};

/* ------------------------------------------------------------ announcing */

/* What an add must remember until the GCS answered. */
typedef struct {
    object_service *o;
    esc_rpc_ctx *call;         /* the last PutChunk, answered now; may be NULL */
    char id[ESC_OBJECT_ID_MAX];
} add_ctx;

static void reply_sealed(esc_rpc_ctx *call)
{
    Escher__PutChunkReply rep = ESCHER__PUT_CHUNK_REPLY__INIT;
    rep.sealed = true;
    esc_rpc_reply(call, &rep.base);
}

static void on_added(void *arg, int code, const char *why)
{
    (void)why;
    add_ctx *c = arg;
    if (code == ESC_FAILED_PRECONDITION) {
        /* The GCS refused: the job ended, or this node was declared dead. */
        ESC_INFO("object %s freed: the GCS refused its location", c->id);
        object_store_delete(c->o->store, c->id, NULL);
        if (c->call)
            esc_rpc_finish(c->call, ESC_FAILED_PRECONDITION,
                           "the object's job has ended or this node is dead");
    } else if (c->call) {
        /* Stored even if the GCS could not be told: readers on this node find it, and the
         * next snapshot from the GCS announces it again. */
        reply_sealed(c->call);
    }
    free(c);
}

static void announce_add(object_service *o, const object_view *v, const char *origin,
                         esc_rpc_ctx *call)
{
    /* Tasks here waiting for this object as an argument can go now. */
    object_service_arrived(o, v->id);
    add_ctx *c = esc_xcalloc(1, sizeof *c);
    c->o = o;
    c->call = call;
    snprintf(c->id, sizeof c->id, "%s", v->id);
    announcer_add(o->announcer, v->id, v->job_id, origin, v->size, v->is_error, on_added, c);
}

/* ------------------------------------------------------------ partial puts */

static void on_sweep(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)revents;
    object_service *o = t->data;
    size_t n = object_store_expire(o->store, esc_now_ms());
    if (n)
        ESC_WARN("dropped %zu unsealed objects whose writers went away", n);
    object_store_stats s;
    object_store_get_stats(o->store, &s);
    if (s.unsealed == 0)
        ev_timer_stop(ev, t);
}

static void arm_sweep(object_service *o)
{
    struct ev_loop *ev = esc_loop_ev(o->r->loop);
    if (!ev_is_active(&o->sweep))
        ev_timer_again(ev, &o->sweep);
}

/* ------------------------------------------------------------ PutChunk */

static int check_chunk(const Escher__ObjectChunk *c, esc_status *st)
{
    if (!esc_object_id_valid(c->object_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "invalid object id (1-79 of A-Z a-z 0-9 _ . -)");
    if (*c->job_id && !esc_name_valid(c->job_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "invalid job id");
    if (c->offset > c->total_size || c->data.len > c->total_size - c->offset)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "chunk [%" PRIu64 ", +%zu) past the object's %" PRIu64 " bytes",
                              c->offset, c->data.len, c->total_size);
    return ESC_OK;
}

/* A chunk for an object that exists: a retry, the next chunk, or a conflicting put of
 * a taken id. */
static int check_same_object(const object_view *v, const Escher__ObjectChunk *c,
                             esc_status *st)
{
    if (v->size != c->total_size || strcmp(v->job_id, c->job_id) != 0)
        return esc_status_set(st, ESC_ALREADY_EXISTS,
                              "object %s exists with another size or job", c->object_id);
    return ESC_OK;
}

/* Applies one chunk to the store; *sealed tells whether the object is complete (also
 * when it was before: the chunk was a retry). */
static int put_chunk(object_service *o, const Escher__ObjectChunk *c, bool *sealed,
                     esc_status *st)
{
    uint64_t now = esc_now_ms();
    object_view v;
    if (object_store_peek(o->store, c->object_id, &v, sealed)) {
        if (check_same_object(&v, c, st) != ESC_OK)
            return st->code;
        if (*sealed)
            return ESC_OK; /* a retried last chunk: announced (again) and answered */
    } else {
        if (c->offset != 0)
            return esc_status_set(st, ESC_FAILED_PRECONDITION,
                                  "no write of object %s in progress (it expired or never "
                                  "began)",
                                  c->object_id);
        if (object_store_create(o->store, c->object_id, c->job_id, c->total_size, c->is_error,
                                c->error, now, st) != ESC_OK)
            return st->code;
        arm_sweep(o);
        object_store_peek(o->store, c->object_id, NULL, sealed);
        if (*sealed)
            return ESC_OK; /* an empty object is complete at creation */
    }
    return object_store_write(o->store, c->object_id, c->offset, c->data.data, c->data.len,
                              now, sealed, st);
}

static void on_put_chunk(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    object_service *o = ud;
    const Escher__ObjectChunk *c = (const Escher__ObjectChunk *)msg;
    esc_status st = {0};
    bool sealed = false;
    if (!o->r->registered) {
        esc_rpc_finish(call, ESC_UNAVAILABLE, "this raylet has not registered yet");
        return;
    }
    if (check_chunk(c, &st) != ESC_OK || put_chunk(o, c, &sealed, &st) != ESC_OK) {
        esc_rpc_finish(call, st.code, st.message);
        return;
    }
    if (!sealed) {
        Escher__PutChunkReply rep = ESCHER__PUT_CHUNK_REPLY__INIT;
        esc_rpc_reply(call, &rep.base);
        return;
    }
    object_view v;
    object_store_get(o->store, c->object_id, &v);
    announce_add(o, &v, NULL, call);
}

/* ------------------------------------------------------------ Pull */

static void pull_end(pull *p, int code, const char *message)
{
    object_service *o = p->o;
    if (p->prev)
        p->prev->next = p->next;
    else
        o->pulls = p->next;
    if (p->next)
        p->next->prev = p->prev;
    object_store_unpin(o->store, p->pin);
    esc_rpc_finish(p->call, code, message);
    free(p);
}

/* Sends the next chunk; ends the call once everything went. Returns false when the
 * pull ended (p is freed). */
static bool pull_step(pull *p)
{
    if (p->sent_first && p->offset >= p->view.size) {
        pull_end(p, ESC_OK, NULL);
        return false;
    }
    uint64_t left = p->view.size - p->offset;
    Escher__ObjectChunk c = ESCHER__OBJECT_CHUNK__INIT;
    c.object_id = (char *)p->view.id;
    c.offset = p->offset;
    c.total_size = p->view.size;
    c.is_error = p->view.is_error;
    if (!p->sent_first) {           /* what describes the whole object goes once */
        c.job_id = (char *)p->view.job_id;
        c.error = (char *)p->view.error;
    }
    c.data.len = left < p->chunk ? (size_t)left : p->chunk;
    c.data.data = (uint8_t *)p->view.data + p->offset;
    if (esc_rpc_send(p->call, &c.base) != 0) {
        pull_end(p, ESC_CANCELLED, "reader went away");
        return false;
    }
    p->offset += c.data.len;
    p->sent_first = true;
    return true;
}

static void on_pull_drained(esc_rpc_ctx *call, void *ud)
{
    (void)call;
    pull_step(ud);
}

static void on_pull_cancel(esc_rpc_ctx *call, void *ud)
{
    (void)call;
    pull_end(ud, ESC_CANCELLED, "reader went away");
}

static void on_pull(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    object_service *o = ud;
    const Escher__PullRequest *rq = (const Escher__PullRequest *)msg;
    if (*rq->node_id && strcmp(rq->node_id, o->r->node_id) != 0) {
        char why[256];
        snprintf(why, sizeof why, "this address is node %s now, not %.64s", o->r->node_id,
                 rq->node_id);
        esc_rpc_finish(call, ESC_UNAVAILABLE, why);
        return;
    }
    pull *p = esc_xcalloc(1, sizeof *p);
    p->pin = object_store_pin(o->store, rq->object_id, &p->view);
    char why[400];
    if (p->pin && job_mirror_object_ok(o->r->jobs, call, rq->job_id, rq->job_credential,
                                       rq->object_id, p->view.job_id, why,
                                       sizeof why) != ESC_OK) {
        object_store_unpin(o->store, p->pin);
        free(p);
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    if (!p->pin) {
        bool unsealed = object_store_peek(o->store, rq->object_id, NULL, NULL);
        free(p);
        esc_rpc_finish(call, ESC_NOT_FOUND,
                       unsealed ? "object is still being written on this node"
                                : "object is not in this node's store");
        return;
    }
    p->o = o;
    p->call = call;
    uint32_t want = rq->chunk_size ? rq->chunk_size : DEFAULT_CHUNK;
    p->chunk = want < MIN_CHUNK ? MIN_CHUNK : want > MAX_CHUNK ? MAX_CHUNK : want;
    p->next = o->pulls;
    if (o->pulls)
        o->pulls->prev = p;
    o->pulls = p;
    esc_rpc_ctx_on_cancel(call, on_pull_cancel, p);
    esc_rpc_ctx_on_drained(call, on_pull_drained, p);
    for (int i = 0; i < PULL_WINDOW; i++)
        if (!pull_step(p))
            return;
}

/* ------------------------------------------------------------ FreeObjects, Stats */

/* Frees one object here; its location at the GCS goes too. Returns whether it was here. */
static bool free_one(object_service *o, const char *id)
{
    bool was_sealed = false;
    if (!object_store_delete(o->store, id, &was_sealed))
        return false;
    if (was_sealed)
        announcer_remove(o->announcer, id);
    return true;
}

/* All or nothing: one object of a job the caller may not touch refuses the call (then
 * false, the call answered). The caller is verified once, at the first owned object. */
static bool may_free_all(object_service *o, esc_rpc_ctx *call,
                         const Escher__FreeObjectsRequest *rq)
{
    char reader[80], why[400];
    int rc = ESC_OK;
    bool known = false;
    for (size_t i = 0; i < rq->n_object_ids && rc == ESC_OK; i++) {
        object_view v;
        if (!object_store_peek(o->store, rq->object_ids[i], &v, NULL) || !*v.job_id)
            continue;
        if (!known)
            rc = job_mirror_caller(o->r->jobs, call, NULL, NULL, reader, why, sizeof why);
        known = true;
        if (rc == ESC_OK)
            rc = job_mirror_reader_ok(o->r->jobs, reader, v.id, v.job_id, why, sizeof why);
    }
    if (rc != ESC_OK)
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
    return rc == ESC_OK;
}

static void on_free_objects(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    object_service *o = ud;
    const Escher__FreeObjectsRequest *rq = (const Escher__FreeObjectsRequest *)msg;
    if (rq->n_object_ids > FREE_MAX_IDS) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "too many ids in one request");
        return;
    }
    if (!may_free_all(o, call, rq))
        return;
    Escher__FreeObjectsReply rep = ESCHER__FREE_OBJECTS_REPLY__INIT;
    for (size_t i = 0; i < rq->n_object_ids; i++)
        rep.freed += free_one(o, rq->object_ids[i]);
    esc_rpc_reply(call, &rep.base);
}

static void on_stats(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    (void)msg;
    object_service *o = ud;
    object_store_stats s;
    object_store_get_stats(o->store, &s);
    Escher__ObjectStoreStatsReply rep = ESCHER__OBJECT_STORE_STATS_REPLY__INIT;
    rep.capacity = s.capacity;
    rep.used = s.used;
    rep.objects = s.objects;
    rep.pulled_bytes = o->r->pulled_bytes;
    esc_rpc_reply(call, &rep.base);
}

/* ------------------------------------------------------------ the raylet's own calls */

int object_service_store(raylet *r, const char *id, const char *job_id, const char *origin,
                        const void *data, size_t len, bool is_error, const char *error)
{
    object_service *o = r->objects;
    if (!o)
        return ESC_UNAVAILABLE; /* after shutdown freed the store */
    esc_status st = {0};
    int rc = object_store_put(o->store, id, job_id, data, len, is_error, error, &st);
    if (rc != ESC_OK) {
        ESC_WARN("cannot store object %s: %s", id, st.message);
        return rc;
    }
    object_store_set_origin(o->store, id, origin);
    object_view v;
    object_store_get(o->store, id, &v);
    announce_add(o, &v, v.origin, NULL);
    return ESC_OK;
}

void object_service_set_waiters(object_service *o, const object_waiters *w)
{
    o->waiters = *w;
}

void object_service_arrived(object_service *o, const char *id)
{
    if (o->waiters.arrived)
        o->waiters.arrived(o->waiters.ud, id);
}

void object_service_fetch_failed(object_service *o, const char *id, const char *why)
{
    if (o->waiters.failed)
        o->waiters.failed(o->waiters.ud, id, why);
}

bool object_service_get(raylet *r, const char *id, object_view *out)
{
    return r->objects && object_store_get(r->objects->store, id, out);
}

void object_service_stop(object_service *o)
{
    if (o)
        announcer_stop(o->announcer);
}

void object_service_each(object_service *o, void (*fn)(void *ud, const object_row *row),
                         void *ud)
{
    if (o)
        object_store_each(o->store, fn, ud);
}

void object_service_stats(const object_service *o, object_store_stats *out)
{
    object_store_get_stats(o->store, out);
}

void object_service_job_finished(object_service *o, const char *job_id)
{
    size_t n = object_store_delete_job(o->store, job_id);
    if (n)
        ESC_INFO("job %s finished: freed %zu objects", job_id, n);
}

static void reannounce_one(void *ud, const object_view *v)
{
    /* With its origin: a directory that restarted must be able to call it lost later. */
    announce_add(ud, v, v->origin, NULL);
}

void object_service_reannounce(object_service *o)
{
    if (o->r->registered)
        object_store_each_sealed(o->store, reannounce_one, o);
}

/* ------------------------------------------------------------ lifetime */

object_service *object_service_new(raylet *r, uint64_t capacity)
{
    object_service *o = esc_xcalloc(1, sizeof *o);
    o->r = r;
    o->store = object_store_new(capacity, PARTIAL_TIMEOUT_MS);
    o->gcs = raylet_channel_new(r, r->cfg.gcs_address);
    o->announcer = announcer_new(r->async, o->gcs, r->node_id);
    ev_init(&o->sweep, on_sweep);
    o->sweep.repeat = SWEEP_PERIOD_S;
    o->sweep.data = o;
    return o;
}

int object_service_serve(object_service *o, esc_rpc_server *srv)
{
    if (esc_rpc_server_handle(srv, &ESC_M_OBJECT_STORE_PUT_CHUNK, on_put_chunk, o) != 0 ||
        esc_rpc_server_handle(srv, &ESC_M_OBJECT_STORE_PULL, on_pull, o) != 0 ||
        esc_rpc_server_handle(srv, &ESC_M_OBJECT_STORE_FREE_OBJECTS, on_free_objects, o) != 0 ||
        esc_rpc_server_handle(srv, &ESC_M_OBJECT_STORE_STATS, on_stats, o) != 0 ||
        esc_rpc_server_handle(srv, &ESC_M_OBJECT_STORE_LIST_OBJECTS, state_list_handle_objects,
                              o->r) != 0)
        return -1;
    return 0;
}

void object_service_free(object_service *o)
{
    if (!o)
        return;
    while (o->pulls)
        pull_end(o->pulls, ESC_UNAVAILABLE, "raylet is shutting down");
    ev_timer_stop(esc_loop_ev(o->r->loop), &o->sweep);
    announcer_free(o->announcer);
    esc_rpc_channel_free(o->gcs);
    object_store_free(o->store);
    free(o);
}
