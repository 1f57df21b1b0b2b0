/* event_log.c: the sequencer. Every committed change is one event with the next sequence
 * number; it reaches storage (with the new sequence number, atomically) before anything
 * in memory changes or anyone hears of it. Recent events stay in a ring so a subscriber
 * that reconnects can resume from the sequence it had applied. */
#include "gcs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "pbutil.h"
#include "xalloc.h"

/* Bound on ops kept for replay; older events are evicted and a subscriber that needs
 * them gets a snapshot instead. A key-value event weighs one op per KV_BYTES_PER_OP of
 * its value (at least one), so values cannot grow the ring past what ops would. */
#define RING_MAX_OPS 1000000
#define KV_BYTES_PER_OP 256

Escher__Event *gcs_event_new(Escher__EventKind kind)
{
    Escher__Event *ev = esc_xcalloc(1, sizeof *ev);
    escher__event__init(ev);
    ev->kind = kind;
    return ev;
}

void gcs_put_msg(esc_storage_batch *b, const char *table, const char *key,
                 const ProtobufCMessage *msg)
{
    size_t len;
    void *buf = esc_pb_pack(msg, &len);
    esc_storage_put(b, table, key, buf, len);
    free(buf);
}

/* One commit on its way to storage. ev is NULL for gcs_write. */
typedef struct {
    gcs *g;
    Escher__Event *ev;
    uint64_t seq;
    gcs_apply_fn apply;
    gcs_done_fn done;
    struct timespec started;          /* when the batch went to storage (metrics) */
    void *ud;
} commit_ctx;

static void publish(gcs *g, commit_ctx *c);

/* Storage has the batch (err NULL) or refused it: memory changes and anyone hears
 * of the change only now, then the next write may be planned. */
static void commit_done(void *ud, const char *err)
{
    commit_ctx *c = ud;
    gcs *g = c->g;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    gcs_metrics_write_done(g, (double)(now.tv_sec - c->started.tv_sec) +
                                  (double)(now.tv_nsec - c->started.tv_nsec) / 1e9);
    if (err) {
        ESC_ERROR("storage write failed, change not committed: %s", err);
        gcs_history_landed(g, false);
        if (c->ev)
            protobuf_c_message_free_unpacked(&c->ev->base, NULL);
        c->done(g, 0, err, c->ud);
    } else if (c->ev) {
        gcs_history_landed(g, true);
        publish(g, c);
    } else {
        gcs_history_landed(g, true);
        c->done(g, 0, NULL, c->ud);
    }
    free(c);
    gcs_write_end(g);
}

static void start_commit(gcs *g, commit_ctx *c, esc_storage_batch *b)
{
    if (!gcs_write_begin(g)) {
        /* A bug: a second commit would be planned without the first's effects. */
        esc_storage_batch_free(b);
        gcs_history_landed(g, false);
        if (c->ev)
            protobuf_c_message_free_unpacked(&c->ev->base, NULL);
        c->done(g, 0, "internal error: a commit was started while another was in flight",
                c->ud);
        free(c);
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &c->started);
    esc_storage_commit_async(g->store, b, gcs_write_time_left(g), commit_done, c);
}

void gcs_write(gcs *g, esc_storage_batch *b, gcs_done_fn done, void *ud)
{
    commit_ctx *c = esc_xcalloc(1, sizeof *c);
    *c = (commit_ctx){.g = g, .done = done, .ud = ud};
    gcs_history_flush(g, b, 0, NULL);
    start_commit(g, c, b);
}

void gcs_ring_init(gcs_ring *r, size_t cap)
{
    r->events = esc_xcalloc(cap, sizeof *r->events);
    r->cap = cap;
    r->head = r->len = r->ops = 0;
}

static size_t ev_weight(const Escher__Event *ev)
{
    size_t w = ev->n_ops;
    for (size_t i = 0; i < ev->n_kvs; i++)
        w += 1 + ev->kvs[i]->value.len / KV_BYTES_PER_OP;
    return w;
}

static void ring_drop_oldest(gcs_ring *r)
{
    Escher__Event *old = r->events[r->head];
    r->ops -= ev_weight(old);
    protobuf_c_message_free_unpacked(&old->base, NULL);
    r->events[r->head] = NULL;
    r->head = (r->head + 1) % r->cap;
    r->len--;
}

void gcs_ring_free(gcs_ring *r)
{
    while (r->len)
        ring_drop_oldest(r);
    free(r->events);
}

static void ring_push(gcs_ring *r, Escher__Event *ev)
{
    size_t w = ev_weight(ev);
    while (r->len && (r->len == r->cap || r->ops + w > RING_MAX_OPS))
        ring_drop_oldest(r);
    r->events[(r->head + r->len) % r->cap] = ev;
    r->len++;
    r->ops += w;
}

Escher__Event *gcs_ring_at(const gcs *g, size_t i)
{
    return g->ring.events[(g->ring.head + i) % g->ring.cap];
}

long gcs_ring_since(const gcs *g, uint64_t from, size_t *first)
{
    if (from > g->seq)
        return -1; /* a sequence from an earlier life of a GCS without storage */
    if (from == g->seq) {
        *first = g->ring.len;
        return 0;
    }
    if (g->ring.len == 0)
        return -1;
    uint64_t lo = gcs_ring_at(g, 0)->seq;
    if (from + 1 < lo)
        return -1;
    *first = (size_t)(from + 1 - lo);
    return (long)(g->seq - from);
}

static void publish(gcs *g, commit_ctx *c)
{
    Escher__Event *ev = c->ev;
    g->seq = c->seq;
    ev->seq = c->seq;
    if (c->apply)
        c->apply(g, c->ud);
    gcs_broadcast(g, ev);
    ring_push(&g->ring, ev);
    c->done(g, c->seq, NULL, c->ud);
}

void gcs_commit(gcs *g, Escher__Event *ev, esc_storage_batch *b, gcs_apply_fn apply,
                gcs_done_fn done, void *ud)
{
    /* The next number is safe to take: no other commit is in flight (write_queue.c). */
    uint64_t seq = g->seq + 1;
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, seq);
    esc_storage_put(b, GCS_T_META, "seq", text, strlen(text));
    gcs_history_flush(g, b, seq, ev);
    commit_ctx *c = esc_xcalloc(1, sizeof *c);
    *c = (commit_ctx){.g = g, .ev = ev, .seq = seq, .apply = apply, .done = done, .ud = ud};
    start_commit(g, c, b);
}
