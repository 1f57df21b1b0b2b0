/* results.c: see results.h. */
#include "results.h"

#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "object_service.h"
#include "peers.h"
#include "raylet.h"
#include "rpc_async.h"
#include "strmap.h"
#include "xalloc.h"

#define STREAM_BATCH_BYTES (4u << 20) /* inline bytes per stream message, at most */
#define DONE_TIMEOUT_MS 10000
/* The operations a task carries for its success go to the GCS; a write there may wait
 * for durable storage. */
#define GCS_OPS_TIMEOUT_MS 30000

typedef struct {
    Escher__ReadyObject **v;
    size_t n, cap;
} object_list;

/* One watching client. */
typedef struct owner {
    results *rs;
    char *id;
    esc_rpc_ctx *call;
    object_list pending;
    bool in_flight;             /* a message is out and not yet drained */
} owner;

/* Notices for one peer raylet, sent as one TasksDone. */
typedef struct {
    peer *to;
    Escher__TaskDone **done;
    size_t n, cap;
    Escher__TaskDone **kept;        /* a TasksDone that failed: again once it answers */
    size_t nkept, capkept;
} peer_batch;

/* One TasksDone in flight: its notices, kept for the failure. */
typedef struct {
    results *rs;
    peer *to;
    Escher__TaskDone **done;
    size_t n;
} done_call;

struct results {
    raylet *r;
    esc_rpc_channel *gcs;       /* for the operations tasks carry (on_success) */
    peers *peers;
    esc_strmap *owners;         /* owner id -> owner */
    esc_strmap *batches;        /* peer address -> peer_batch */
};

static void *grow(void *v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return v;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *nv = esc_xrealloc(v, c * elem);
    *cap = c;
    return nv;
}

static void list_push(object_list *l, Escher__ReadyObject *o)
{
    l->v = grow(l->v, &l->cap, l->n + 1, sizeof *l->v);
    l->v[l->n++] = o;
}

static void list_clear(object_list *l, size_t from)
{
    for (size_t i = from; i < l->n; i++)
        protobuf_c_message_free_unpacked(&l->v[i]->base, NULL);
    l->n = from;
}

Escher__ReadyObject *results_object_new(const char *id, const void *data, size_t len,
                                        bool is_error, const char *error,
                                        const char *address)
{
    Escher__ReadyObject *o = esc_xmalloc(sizeof *o);
    escher__ready_object__init(o);
    o->object_id = esc_xstrdup(id);
    o->is_error = is_error;
    o->error = esc_xstrdup(error ? error : "");
    o->size = len;
    o->address = esc_xstrdup(address);
    if (len <= ESC_INLINE_RESULT_MAX) {
        o->inlined = true;
        if (len) {
            o->data.data = esc_xmalloc(len);
            memcpy(o->data.data, data, len);
            o->data.len = len;
        }
    }
    return o;
}

/* ------------------------------------------------------------ owners' streams */

static void owner_free(owner *w)
{
    list_clear(&w->pending, 0);
    free(w->pending.v);
    free(w->id);
    free(w);
}

static void on_owner_gone(esc_rpc_ctx *call, void *ud)
{
    owner *w = ud;
    esc_rpc_finish(call, ESC_CANCELLED, NULL);
    if (esc_strmap_get(w->rs->owners, w->id) == w)
        esc_strmap_del(w->rs->owners, w->id);
    owner_free(w);
}

static void on_owner_drained(esc_rpc_ctx *call, void *ud)
{
    (void)call;
    ((owner *)ud)->in_flight = false; /* what waits goes out at the next flush */
}

/* Sends the pending notices of one owner, up to STREAM_BATCH_BYTES of inline data. */
static void owner_send(owner *w)
{
    size_t k = 0, bytes = 0;
    while (k < w->pending.n && (k == 0 || bytes < STREAM_BATCH_BYTES))
        bytes += w->pending.v[k++]->data.len;
    Escher__ReadyBatch b = ESCHER__READY_BATCH__INIT;
    b.objects = w->pending.v;
    b.n_objects = k;
    w->in_flight = esc_rpc_send(w->call, &b.base) == 0;
    for (size_t i = 0; i < k; i++)
        protobuf_c_message_free_unpacked(&w->pending.v[i]->base, NULL);
    memmove(w->pending.v, w->pending.v + k, (w->pending.n - k) * sizeof *w->pending.v);
    w->pending.n -= k;
}

static void handle_watch(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    results *rs = ud;
    const Escher__WatchResultsRequest *req = (const Escher__WatchResultsRequest *)msg;
    if (!req->owner_id[0] || strlen(req->owner_id) > 128) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "owner id must be 1 to 128 characters");
        return;
    }
    owner *old = esc_strmap_get(rs->owners, req->owner_id);
    if (old) {
        /* The client opened a new stream: the old one ends, its notices move over. */
        esc_strmap_del(rs->owners, old->id);
        esc_rpc_ctx *c = old->call;
        old->call = NULL;
        esc_rpc_ctx_on_cancel(c, NULL, NULL);
        esc_rpc_finish(c, ESC_ABORTED, "replaced by a newer stream of the same owner");
    }
    owner *w = esc_xcalloc(1, sizeof *w);
    w->rs = rs;
    w->id = esc_xstrdup(req->owner_id);
    w->call = call;
    if (old) {
        w->pending = old->pending;
        old->pending = (object_list){0};
        owner_free(old);
    }
    esc_strmap_put(rs->owners, w->id, w);
    esc_rpc_ctx_on_cancel(call, on_owner_gone, w);
    esc_rpc_ctx_on_drained(call, on_owner_drained, w);
    Escher__ReadyBatch hello = ESCHER__READY_BATCH__INIT;
    w->in_flight = esc_rpc_send(call, &hello.base) == 0;
}

/* ------------------------------------------------------------ peers */

static void free_done(Escher__TaskDone **d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        protobuf_c_message_free_unpacked(&d[i]->base, NULL);
}

/* A failure for want of the peer (it is suspect now) keeps the notices until it answers
 * again (results_flush); any other failure, or a peer's death, drops them. */
static void on_done_sent(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    done_call *dc = ud;
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    peer_batch *p = esc_strmap_get(dc->rs->batches, peer_address(dc->to));
    if (code != ESC_OK && p && peer_suspect(dc->to)) {
        ESC_WARN("telling raylet %s that %zu forwarded tasks ended failed (%s %s): told "
                 "again when it answers", peer_address(dc->to), dc->n, esc_status_name(code),
                 st->message);
        p->kept = grow(p->kept, &p->capkept, p->nkept + dc->n, sizeof *p->kept);
        memcpy(p->kept + p->nkept, dc->done, dc->n * sizeof *dc->done);
        p->nkept += dc->n;
    } else {
        if (code != ESC_OK)
            ESC_WARN("telling a raylet that its forwarded tasks ended failed: %s %s",
                     esc_status_name(code), st->message);
        free_done(dc->done, dc->n);
    }
    free(dc->done);
    free(dc);
}

static void peer_send(results *rs, peer_batch *p)
{
    Escher__TasksDoneRequest req = ESCHER__TASKS_DONE_REQUEST__INIT;
    req.done = p->done;
    req.n_done = p->n;
    done_call *dc = esc_xmalloc(sizeof *dc);
    *dc = (done_call){.rs = rs, .to = p->to, .done = p->done, .n = p->n};
    peers_call(rs->peers, p->to, &ESC_M_TASK_SERVICE_TASKS_DONE, &req.base, DONE_TIMEOUT_MS,
               ESC_RPC_IDEMPOTENT, on_done_sent, dc);
    p->done = NULL;
    p->n = p->cap = 0;
}

/* The notices kept for a peer that answers again join its next batch. */
static void retell(peer_batch *p)
{
    if (!p->nkept || peer_suspect(p->to))
        return;
    p->done = grow(p->done, &p->cap, p->n + p->nkept, sizeof *p->done);
    memcpy(p->done + p->n, p->kept, p->nkept * sizeof *p->kept);
    p->n += p->nkept;
    p->nkept = 0;
}

static void send_back(results *rs, peer *to, const char *task_id, const char *owner_id,
                      const char *credential, Escher__ReadyObject **objs, size_t n)
{
    peer_batch *p = esc_strmap_get(rs->batches, peer_address(to));
    if (!p) {
        p = esc_xcalloc(1, sizeof *p);
        esc_strmap_put(rs->batches, peer_address(to), p);
    }
    p->to = to;
    Escher__TaskDone *d = esc_xmalloc(sizeof *d);
    escher__task_done__init(d);
    d->task_id = esc_xstrdup(task_id);
    d->owner_id = esc_xstrdup(owner_id);
    d->job_credential = esc_xstrdup(credential ? credential : "");
    d->returns = objs;
    d->n_returns = n;
    p->done = grow(p->done, &p->cap, p->n + 1, sizeof *p->done);
    p->done[p->n++] = d;
}

/* ------------------------------------------------------------ storing returns */

/* The returns' notice goes back the way the task came: to the raylet that forwarded
 * it, else to its owner's stream here. */
static void notify(results *rs, const Escher__TaskSpec *spec, Escher__ReadyObject **objs,
                   size_t n)
{
    /* A reply_to naming this raylet (an actor call from a local owner) is local. */
    bool away = spec->reply_to && spec->reply_to[0] && strcmp(spec->reply_to, rs->r->address);
    peer *back = away ? peers_get(rs->peers, spec->reply_to) : NULL;
    results_deliver(rs, back, spec->task_id, spec->owner_id ? spec->owner_id : "",
                    spec->job_credential, objs, n);
}

/* Stores return i of the task (an error object when why is set) and describes it. */
static Escher__ReadyObject *store_one(results *rs, const Escher__TaskSpec *spec,
                                      unsigned i, const ProtobufCBinaryData *b, const char *why)
{
    char id[ESC_OBJECT_ID_MAX];
    esc_return_id(spec->task_id, i, id, sizeof id);
    const void *data = b ? b->data : NULL;
    size_t len = b ? b->len : 0;
    /* Only a return made away from its origin can be lost while the origin lives; one
     * made on the origin dies with its lineage, so it carries none (and the common,
     * local case stores and announces no origin at all). */
    const char *origin = strcmp(spec->origin, rs->r->node_id) ? spec->origin : NULL;
    object_service_store(rs->r, id, spec->job_id, origin, data, len, why != NULL, why);
    return results_object_new(id, data, len, why != NULL, why, rs->r->address);
}

void results_store_error(results *rs, const Escher__TaskSpec *spec, const char *why)
{
    unsigned n = spec->num_returns ? spec->num_returns : 1;
    Escher__ReadyObject **objs = esc_xmalloc(n * sizeof *objs);
    for (unsigned i = 0; i < n; i++)
        objs[i] = store_one(rs, spec, i, NULL, why);
    notify(rs, spec, objs, n);
}

static void on_ops_done(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    char *task_id = ud;
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    if (code != ESC_OK)
        ESC_WARN("the resource operations of task %s failed: %s %s", task_id,
                 esc_status_name(code), st->message);
    free(task_id);
}

/* Commits the operations the task carries for its success, as its job, with LOCAL
 * meaning this node. The task's result stands either way; a refusal is logged. */
static void commit_on_success(results *rs, const Escher__TaskSpec *spec)
{
    if (!spec->on_success || !spec->on_success->n_ops || !rs->r->async)
        return;
    Escher__UpdateResourcesRequest req = *spec->on_success;
    req.job_id = spec->job_id;
    req.job_credential = spec->job_credential; /* the raylet acts for the task's job */
    req.local_node_id = rs->r->node_id;
    req.detached = false;
    /* Not idempotent: an add must not be applied twice. */
    esc_rpc_async_call(rs->r->async, rs->gcs, &ESC_M_GCS_UPDATE_RESOURCES, &req.base,
                       GCS_OPS_TIMEOUT_MS, 0, on_ops_done, esc_xstrdup(spec->task_id));
}

static void store_returns(results *rs, const Escher__TaskSpec *spec,
                          const Escher__TaskResult *res)
{
    commit_on_success(rs, spec);
    unsigned n = spec->num_returns ? spec->num_returns : 1;
    Escher__ReadyObject **objs = esc_xmalloc(n * sizeof *objs);
    for (unsigned i = 0; i < n; i++)
        objs[i] = store_one(rs, spec, i, i < res->n_returns ? &res->returns[i] : NULL, NULL);
    notify(rs, spec, objs, n);
}

void results_store(results *rs, const Escher__TaskSpec *spec, const Escher__TaskResult *res)
{
    if (res->ok)
        store_returns(rs, spec, res);
    else
        results_store_error(rs, spec, res->error && *res->error ? res->error : "task failed");
}

/* ------------------------------------------------------------ api */

void results_deliver(results *rs, peer *back, const char *task_id, const char *owner_id,
                     const char *credential, Escher__ReadyObject **objs, size_t n)
{
    if (back) {
        send_back(rs, back, task_id, owner_id, credential, objs, n);
        return;
    }
    owner *w = owner_id[0] ? esc_strmap_get(rs->owners, owner_id) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (w)
            list_push(&w->pending, objs[i]);
        else
            protobuf_c_message_free_unpacked(&objs[i]->base, NULL);
    }
    free(objs);
}

void results_flush(results *rs)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(rs->owners, &pos, &k, &v)) {
        owner *w = v;
        if (!w->in_flight && w->pending.n)
            owner_send(w);
    }
    pos = 0;
    while (esc_strmap_next(rs->batches, &pos, &k, &v)) {
        peer_batch *p = v;
        retell(p);
        if (p->n)
            peer_send(rs, p);
    }
}

void results_peer_dead(results *rs, const char *address)
{
    peer_batch *p = address ? esc_strmap_get(rs->batches, address) : NULL;
    if (p && p->nkept) {
        ESC_INFO("dropping %zu task-end notices kept for dead raylet %s", p->nkept, address);
        free_done(p->kept, p->nkept);
        p->nkept = 0;
    }
}

results *results_new(raylet *r)
{
    results *rs = esc_xcalloc(1, sizeof *rs);
    rs->r = r;
    rs->peers = r->peers;
    rs->gcs = raylet_channel_new(r, r->cfg.gcs_address);
    rs->owners = esc_strmap_new();
    rs->batches = esc_strmap_new();
    return rs;
}

int results_serve(results *rs, esc_rpc_server *srv)
{
    return esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_WATCH_RESULTS, handle_watch, rs);
}

void results_stop(results *rs)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(rs->owners, &pos, &k, &v)) {
        owner *w = v;
        esc_strmap_del(rs->owners, k); /* deleting the entry just returned is allowed */
        esc_rpc_ctx_on_cancel(w->call, NULL, NULL);
        esc_rpc_finish(w->call, ESC_UNAVAILABLE, "raylet shutting down");
        owner_free(w);
    }
}

void results_free(results *rs)
{
    if (!rs)
        return;
    results_stop(rs);
    esc_strmap_free(rs->owners);
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(rs->batches, &pos, &k, &v)) {
        peer_batch *p = v;
        free_done(p->done, p->n);
        free(p->done);
        free_done(p->kept, p->nkept);
        free(p->kept);
        free(p);
    }
    esc_strmap_free(rs->batches);
    esc_rpc_channel_free(rs->gcs);
    free(rs);
}
