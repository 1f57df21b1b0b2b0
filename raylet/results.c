/* results.c: see results.h. */
#include "results.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "peers.h"
#include "strmap.h"

#define STREAM_BATCH_BYTES (4u << 20) /* inline bytes per stream message, at most */
#define DONE_TIMEOUT_MS 10000

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
} peer_batch;

struct results {
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
    void *nv = realloc(v, c * elem);
    if (!nv)
        abort();
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
    Escher__ReadyObject *o = malloc(sizeof *o);
    if (!o)
        abort();
    escher__ready_object__init(o);
    o->object_id = strdup(id);
    o->is_error = is_error;
    o->error = strdup(error ? error : "");
    o->size = len;
    o->address = strdup(address);
    if (len <= ESC_INLINE_RESULT_MAX) {
        o->inlined = true;
        if (len) {
            o->data.data = malloc(len);
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
    owner *w = calloc(1, sizeof *w);
    w->rs = rs;
    w->id = strdup(req->owner_id);
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

static void on_done_sent(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    (void)ud;
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    if (code != ESC_OK)
        ESC_WARN("telling a raylet that its forwarded tasks ended failed: %s %s",
                 esc_status_name(code), st->message);
}

static void peer_send(results *rs, peer_batch *p)
{
    Escher__TasksDoneRequest req = ESCHER__TASKS_DONE_REQUEST__INIT;
    req.done = p->done;
    req.n_done = p->n;
    peers_call(rs->peers, p->to, "TasksDone", &req.base, DONE_TIMEOUT_MS, ESC_RPC_IDEMPOTENT,
               on_done_sent, NULL);
    for (size_t i = 0; i < p->n; i++)
        protobuf_c_message_free_unpacked(&p->done[i]->base, NULL);
    p->n = 0;
}

static void send_back(results *rs, peer *to, const char *task_id,
                      const char *owner_id, Escher__ReadyObject **objs, size_t n)
{
    peer_batch *p = esc_strmap_get(rs->batches, peer_address(to));
    if (!p) {
        p = calloc(1, sizeof *p);
        esc_strmap_put(rs->batches, peer_address(to), p);
    }
    p->to = to;
    Escher__TaskDone *d = malloc(sizeof *d);
    escher__task_done__init(d);
    d->task_id = strdup(task_id);
    d->owner_id = strdup(owner_id);
    d->returns = objs;
    d->n_returns = n;
    p->done = grow(p->done, &p->cap, p->n + 1, sizeof *p->done);
    p->done[p->n++] = d;
}

/* ------------------------------------------------------------ api */

void results_deliver(results *rs, peer *back, const char *task_id,
                     const char *owner_id, Escher__ReadyObject **objs, size_t n)
{
    if (back) {
        send_back(rs, back, task_id, owner_id, objs, n);
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
        if (p->n)
            peer_send(rs, p);
    }
}

results *results_new(peers *ps)
{
    results *rs = calloc(1, sizeof *rs);
    rs->peers = ps;
    rs->owners = esc_strmap_new();
    rs->batches = esc_strmap_new();
    return rs;
}

int results_serve(results *rs, esc_rpc_server *srv)
{
    return esc_rpc_server_handle(srv, &escher__task_service__descriptor, "WatchResults",
                                 handle_watch, rs);
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
        for (size_t i = 0; i < p->n; i++)
            protobuf_c_message_free_unpacked(&p->done[i]->base, NULL);
        free(p->done);
        free(p);
    }
    esc_strmap_free(rs->batches);
    free(rs);
}
