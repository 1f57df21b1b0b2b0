/* announcer.c: see announcer.h. */
#include "announcer.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "object.pb-c.h"
#include "xalloc.h"

#define ANNOUNCE_TIMEOUT_MS 2000 /* retried within it; a GCS back later gets a reannounce */
#define BATCH_MAX 4096           /* entries per call: far under the message limit */

typedef struct op {
    struct op *next;
    bool add;
    Escher__ObjectLocation loc;  /* strings owned */
    announce_fn done;
    void *ud;
} op;

struct announcer {
    esc_rpc_async *sender;
    esc_rpc_channel *gcs;
    const char *node_id;
    op *head, *tail;             /* queued, not sent */
    op *flight;                  /* the batch out now (a list), NULL when none */
    bool stopped;
};

static void op_free(op *o)
{
    free(o->loc.object_id);
    free(o->loc.job_id);
    free(o->loc.origin);
    free(o);
}

static void finish(op *o, int code, const char *why)
{
    if (o->done)
        o->done(o->ud, code, why);
    op_free(o);
}

/* Takes the longest run of same-kind ops from the queue (up to BATCH_MAX). */
static op *take_batch(announcer *a, size_t *n)
{
    op *first = a->head, *last = first;
    *n = 1;
    while (last->next && last->next->add == first->add && *n < BATCH_MAX) {
        last = last->next;
        (*n)++;
    }
    a->head = last->next;
    if (!a->head)
        a->tail = NULL;
    last->next = NULL;
    return first;
}

static void pump(announcer *a);

/* The batch's answer: one code per entry, or the call's code for all. */
static void on_sent(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    announcer *a = ud;
    const Escher__ObjectLocationsReply *r = (const Escher__ObjectLocationsReply *)reply;
    op *o = a->flight;
    a->flight = NULL;
    for (size_t i = 0; o; i++) {
        op *next = o->next;
        int c = code;
        const char *why = st ? st->message : "";
        if (code == ESC_OK && r && i < r->n_codes) {
            c = r->codes[i];
            why = i < r->n_errors ? r->errors[i] : "";
        }
        if (c != ESC_OK && c != ESC_FAILED_PRECONDITION)
            ESC_DEBUG("location of %s not %s at the GCS: %s %s", o->loc.object_id,
                      o->add ? "added" : "removed", esc_status_name(c), why);
        finish(o, c, why);
        o = next;
    }
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    pump(a);
}

/* Sends the next batch when none is out. */
static void pump(announcer *a)
{
    if (a->flight || !a->head || a->stopped)
        return;
    size_t n;
    op *batch = take_batch(a, &n);
    Escher__ObjectLocation **locs = esc_xmalloc(n * sizeof *locs);
    size_t i = 0;
    for (op *o = batch; o; o = o->next) {
        o->loc.node_id = (char *)a->node_id;
        locs[i++] = &o->loc;
    }
    Escher__ObjectLocations req = ESCHER__OBJECT_LOCATIONS__INIT;
    req.locations = locs;
    req.n_locations = n;
    a->flight = batch;
    esc_rpc_async_call(a->sender, a->gcs,
                       batch->add ? &ESC_M_OBJECT_DIRECTORY_ADD_LOCATIONS
                                  : &ESC_M_OBJECT_DIRECTORY_REMOVE_LOCATIONS,
                       &req.base, ANNOUNCE_TIMEOUT_MS, ESC_RPC_IDEMPOTENT, on_sent, a);
    free(locs); /* the request was copied */
}

static void enqueue(announcer *a, op *o)
{
    if (a->tail)
        a->tail->next = o;
    else
        a->head = o;
    a->tail = o;
    pump(a);
}

static op *op_new(bool add, const char *id, const char *job_id)
{
    op *o = esc_xcalloc(1, sizeof *o);
    escher__object_location__init(&o->loc);
    o->add = add;
    o->loc.object_id = esc_xstrdup(id);
    o->loc.job_id = esc_xstrdup(job_id ? job_id : "");
    o->loc.origin = esc_xstrdup("");
    return o;
}

void announcer_add(announcer *a, const char *id, const char *job_id, const char *origin,
                   uint64_t size, bool is_error, announce_fn done, void *ud)
{
    op *o = op_new(true, id, job_id);
    if (origin && *origin) {
        free(o->loc.origin);
        o->loc.origin = esc_xstrdup(origin);
    }
    o->loc.size = size;
    o->loc.is_error = is_error;
    o->done = done;
    o->ud = ud;
    enqueue(a, o);
}

void announcer_remove(announcer *a, const char *id)
{
    enqueue(a, op_new(false, id, NULL));
}

announcer *announcer_new(esc_rpc_async *sender, esc_rpc_channel *gcs, const char *node_id)
{
    announcer *a = esc_xcalloc(1, sizeof *a);
    a->sender = sender;
    a->gcs = gcs;
    a->node_id = node_id;
    return a;
}

void announcer_stop(announcer *a)
{
    if (a)
        a->stopped = true;
}

void announcer_free(announcer *a)
{
    if (!a)
        return;
    a->stopped = true;
    /* A batch still out was answered while the loop drained (the sender ends every call
     * it holds), so only the queue is left. */
    while (a->head) {
        op *o = a->head;
        a->head = o->next;
        finish(o, ESC_UNAVAILABLE, "raylet shutting down");
    }
    free(a);
}
