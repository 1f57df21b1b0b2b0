/* event_log.c: the sequencer. Every committed change is one event with the next sequence
 * number; it reaches storage (with the new sequence number, atomically) before anything
 * in memory changes or anyone hears of it. Recent events stay in a ring so a subscriber
 * that reconnects can resume from the sequence it had applied. */
#include "gcs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pbutil.h"

/* Bound on ops kept for replay; older events are evicted and a subscriber that needs
 * them gets a snapshot instead. */
#define RING_MAX_OPS 1000000

Escher__Event *gcs_event_new(Escher__EventKind kind)
{
    Escher__Event *ev = calloc(1, sizeof *ev);
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

int gcs_write(gcs *g, esc_storage_batch *b, char *err, size_t errlen)
{
    return esc_storage_commit(g->store, b, err, errlen);
}

void gcs_ring_init(gcs_ring *r, size_t cap)
{
    r->events = calloc(cap, sizeof *r->events);
    r->cap = cap;
    r->head = r->len = r->ops = 0;
}

static void ring_drop_oldest(gcs_ring *r)
{
    Escher__Event *old = r->events[r->head];
    r->ops -= old->n_ops;
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
    while (r->len && (r->len == r->cap || r->ops + ev->n_ops > RING_MAX_OPS))
        ring_drop_oldest(r);
    r->events[(r->head + r->len) % r->cap] = ev;
    r->len++;
    r->ops += ev->n_ops;
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

uint64_t gcs_commit(gcs *g, Escher__Event *ev, esc_storage_batch *b, gcs_apply_fn apply,
                    void *ud, char *err, size_t errlen)
{
    uint64_t seq = g->seq + 1;
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, seq);
    esc_storage_put(b, GCS_T_META, "seq", text, strlen(text));
    if (esc_storage_commit(g->store, b, err, errlen) != 0) {
        ESC_ERROR("storage write failed, change not committed: %s", err);
        protobuf_c_message_free_unpacked(&ev->base, NULL);
        return 0;
    }
    g->seq = seq;
    ev->seq = seq;
    if (apply)
        apply(g, ud);
    gcs_broadcast(g, ev);
    ring_push(&g->ring, ev);
    return seq;
}
