/* owner.c: the client as the owner of the tasks it submits (client_internal.h).
 *
 * Submission: esc_task_submit packs the spec and queues it; a sender thread sends what
 * queued while its previous call was out as one SubmitTasks call, so a loop of submits
 * costs one round trip per batch, not per task.
 *
 * Results: the client holds a WatchResults stream with its local raylet. The raylet that
 * ran a task (or, for a forwarded task, the raylet that accepted it, told by the other)
 * pushes each return there: small values inline, large ones as where they are. A reader
 * thread files them in a table, where esc_get and esc_wait find them without asking the
 * GCS. What the stream cannot tell (no stream, or refs this client did not submit) the
 * GCS directory still can: waiters turn to it when a ref is ESC_OWNED_UNKNOWN (see
 * esc_owner_take), and wait there too. While the stream is up no notice is lost for
 * good, so a pending ref is never re-checked in the directory (tasks.c, "Why nothing is
 * re-checked periodically").
 *
 * One mutex guards the queue and the tables; two condition variables wake the sender
 * (work queued) and the waiters (a value arrived, a batch went out, the stream ended),
 * and each change pokes the wakers listening (client_internal.h): waits that block on
 * more than this owner (esc_wait with refs only the directory knows, esl_queues). */
#include "client_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ids.h"
#include "log.h"
#include "strmap.h"
#include "task.pb-c.h"
#include "xalloc.h"

#define BATCH_MAX_TASKS 4096
#define BATCH_MAX_BYTES (8u << 20)
#define SUBMIT_TIMEOUT_MS 30000

typedef struct {
    char *task_id;
    unsigned nreturns;
    ProtobufCBinaryData spec;       /* packed TaskSpec, owned */
} queued_task;

struct esc_owner {
    esc_client *c;
    esc_rpc_channel *raylet;
    pthread_mutex_t mu;
    pthread_cond_t work;            /* sender: something queued, or stop */
    pthread_cond_t changed;         /* waiters: a value arrived, a batch went, stream ended */
    queued_task *queue;
    size_t nqueue, cap;
    uint64_t queued, sent;          /* tasks ever queued / handed to the raylet (or failed) */
    bool stop;
    pthread_t sender;
    esc_rpc_stream *stream;
    pthread_t reader;
    bool watching;                  /* the stream is up: pending values will arrive on it */
    /* Object id -> the address of the raylet that runs its task when that is not the
     * local raylet's business (an actor's), else "" (malloc'd): told of on the stream. */
    esc_strmap *pending;
    esc_strmap *ready;              /* object id -> esc_owned_value *, until taken */
    esc_waker *listeners;           /* poked at every change (esc_owner_listen) */
};

static void value_free(esc_owned_value *v)
{
    if (!v)
        return;
    free(v->data);
    free(v->error);
    free(v->address);
    free(v);
}

void esc_owned_value_free(esc_owned_value *v)
{
    value_free(v);
}

/* ------------------------------------------------------------------ wakers */

void esc_waker_init(esc_waker *w)
{
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

void esc_waker_destroy(esc_waker *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

static void waker_bump(esc_waker *w, bool external)
{
    pthread_mutex_lock(&w->mu);
    w->gen++;
    w->ext += external;
    if (w->call)
        esc_rpc_stream_cancel(w->call);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void esc_waker_poke(esc_waker *w)
{
    waker_bump(w, true);
}

uint64_t esc_waker_gen(esc_waker *w, uint64_t *ext)
{
    pthread_mutex_lock(&w->mu);
    uint64_t gen = w->gen;
    if (ext)
        *ext = w->ext;
    pthread_mutex_unlock(&w->mu);
    return gen;
}

void esc_waker_wait(esc_waker *w, uint64_t seen, uint64_t until_ms)
{
    pthread_mutex_lock(&w->mu);
    while (w->gen == seen) {
        uint64_t now = esc_now_ms();
        if (until_ms != UINT64_MAX && now >= until_ms)
            break;
        if (until_ms == UINT64_MAX) {
            pthread_cond_wait(&w->cv, &w->mu);
        } else {
            struct timespec ts = esc_time_after_ms(CLOCK_REALTIME, until_ms - now);
            pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
    }
    pthread_mutex_unlock(&w->mu);
}

bool esc_waker_begin_call(esc_waker *w, uint64_t seen, esc_rpc_stream *call)
{
    pthread_mutex_lock(&w->mu);
    bool fresh = w->gen == seen;
    w->call = fresh ? call : NULL;
    pthread_mutex_unlock(&w->mu);
    return fresh;
}

void esc_waker_end_call(esc_waker *w)
{
    pthread_mutex_lock(&w->mu);
    w->call = NULL;
    pthread_mutex_unlock(&w->mu);
}

/* Something changed: wakes the waiters and pokes the listeners. o->mu held; the lock
 * order is owner, then waker (a waker's holder never takes the owner's lock). */
static void changed_locked(esc_owner *o)
{
    pthread_cond_broadcast(&o->changed);
    for (esc_waker *w = o->listeners; w; w = w->next)
        waker_bump(w, false);
}

void esc_owner_listen(esc_owner *o, esc_waker *w)
{
    pthread_mutex_lock(&o->mu);
    w->prev = NULL;
    w->next = o->listeners;
    if (w->next)
        w->next->prev = w;
    o->listeners = w;
    pthread_mutex_unlock(&o->mu);
}

void esc_owner_unlisten(esc_owner *o, esc_waker *w)
{
    pthread_mutex_lock(&o->mu);
    if (w->prev)
        w->prev->next = w->next;
    else
        o->listeners = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    pthread_mutex_unlock(&o->mu);
}

/* ------------------------------------------------------------------ tables */

/* Files a value for id when someone waits for it (it is pending). Takes v. */
static void file_locked(esc_owner *o, const char *id, esc_owned_value *v)
{
    char *route = esc_strmap_del(o->pending, id);
    if (!route) {
        value_free(v); /* released, or told twice (a retried forward) */
        return;
    }
    free(route);
    value_free(esc_strmap_get(o->ready, id));
    esc_strmap_put(o->ready, id, v);
}

/* Every return of a task that could not be submitted becomes an error value. */
static void fail_task_locked(esc_owner *o, const queued_task *t, int code, const char *why)
{
    for (unsigned i = 0; i < t->nreturns; i++) {
        char id[ESC_OBJECT_ID_MAX];
        esc_return_id(t->task_id, i, id, sizeof id);
        esc_owned_value *v = esc_xcalloc(1, sizeof *v);
        v->is_error = true;
        v->code = code;
        v->error = esc_xstrdup(why);
        file_locked(o, id, v);
    }
}

/* ------------------------------------------------------------------ sender */

static void queued_free(queued_task *t)
{
    free(t->task_id);
    free(t->spec.data);
}

/* Sends tasks t[0..n) as one call and files the failures. Called unlocked. */
static void send_batch(esc_owner *o, queued_task *t, size_t n)
{
    ProtobufCBinaryData *specs = esc_xmalloc(n * sizeof *specs);
    for (size_t i = 0; i < n; i++)
        specs[i] = t[i].spec;
    Escher__TaskBatch req = ESCHER__TASK_BATCH__INIT;
    req.specs = specs;
    req.n_specs = n;
    ProtobufCMessage *m = NULL;
    esc_status st = {0};
    int rc = esc_rpc_call(o->raylet, &ESC_M_TASK_SERVICE_SUBMIT_TASKS, &req.base, &m,
                          SUBMIT_TIMEOUT_MS, 0, &st);
    free(specs);
    Escher__SubmitTasksReply *rep = (Escher__SubmitTasksReply *)m;
    pthread_mutex_lock(&o->mu);
    if (rc != ESC_OK) {
        char why[400];
        snprintf(why, sizeof why, "cannot submit the task to the local raylet: %s %s",
                 esc_status_name(rc), st.message);
        for (size_t i = 0; i < n; i++)
            fail_task_locked(o, &t[i], rc, why);
    }
    for (size_t k = 0; rep && k < rep->n_rejected && k < rep->n_errors; k++)
        if (rep->rejected[k] < n)
            fail_task_locked(o, &t[rep->rejected[k]],
                             k < rep->n_codes ? rep->codes[k] : ESC_INVALID_ARGUMENT,
                             rep->errors[k]);
    o->sent += n;
    changed_locked(o);
    pthread_mutex_unlock(&o->mu);
    if (m)
        protobuf_c_message_free_unpacked(m, NULL);
    for (size_t i = 0; i < n; i++)
        queued_free(&t[i]);
}

/* Takes the oldest queued tasks, up to the batch limits, into a new array. */
static queued_task *take_batch_locked(esc_owner *o, size_t *n)
{
    size_t k = 0, bytes = 0;
    while (k < o->nqueue && k < BATCH_MAX_TASKS && (k == 0 || bytes < BATCH_MAX_BYTES))
        bytes += o->queue[k++].spec.len;
    queued_task *t = esc_xmalloc(k * sizeof *t);
    memcpy(t, o->queue, k * sizeof *t);
    memmove(o->queue, o->queue + k, (o->nqueue - k) * sizeof *o->queue);
    o->nqueue -= k;
    *n = k;
    return t;
}

static void *sender_main(void *arg)
{
    esc_owner *o = arg;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (!o->nqueue && !o->stop)
            pthread_cond_wait(&o->work, &o->mu);
        if (!o->nqueue)
            break; /* stopping, and everything went */
        size_t n;
        queued_task *t = take_batch_locked(o, &n);
        pthread_mutex_unlock(&o->mu);
        send_batch(o, t, n);
        free(t);
        pthread_mutex_lock(&o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

/* ------------------------------------------------------------------ reader */

/* Takes the value out of the message (the message is freed by the caller). */
static esc_owned_value *value_from(Escher__ReadyObject *r)
{
    esc_owned_value *v = esc_xcalloc(1, sizeof *v);
    v->is_error = r->is_error;
    v->code = r->is_error ? ESC_ABORTED : ESC_OK;
    v->error = esc_xstrdup(r->error ? r->error : "");
    v->inlined = r->inlined;
    v->size = r->size;
    v->address = esc_xstrdup(r->address ? r->address : "");
    if (r->inlined) {
        /* One NUL byte after the value, as esc_get promises. */
        v->data = esc_xmalloc(r->data.len + 1);
        if (r->data.len)
            memcpy(v->data, r->data.data, r->data.len);
        ((char *)v->data)[r->data.len] = 0;
    }
    return v;
}

static void *reader_main(void *arg)
{
    esc_owner *o = arg;
    ProtobufCMessage *m;
    esc_status st = {0};
    while (esc_rpc_stream_next(o->stream, &m, &st)) {
        Escher__ReadyBatch *b = (Escher__ReadyBatch *)m;
        pthread_mutex_lock(&o->mu);
        for (size_t i = 0; i < b->n_objects; i++)
            file_locked(o, b->objects[i]->object_id, value_from(b->objects[i]));
        changed_locked(o);
        pthread_mutex_unlock(&o->mu);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    pthread_mutex_lock(&o->mu);
    if (!o->stop)
        ESC_DEBUG("results stream ended: %s %s; results come from the GCS directory now",
                  esc_status_name(st.code), st.message);
    o->watching = false;
    changed_locked(o);
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

/* Opens the stream and waits for its first (empty) message, which says the raylet has
 * registered it: results of tasks submitted after that cannot be missed. */
static bool open_stream(esc_owner *o)
{
    Escher__WatchResultsRequest req = ESCHER__WATCH_RESULTS_REQUEST__INIT;
    req.owner_id = o->c->owner_id;
    esc_status st = {0};
    o->stream =
        esc_rpc_stream_open(o->raylet, &ESC_M_TASK_SERVICE_WATCH_RESULTS, &req.base, &st);
    ProtobufCMessage *m = NULL;
    if (!o->stream || !esc_rpc_stream_next(o->stream, &m, &st)) {
        ESC_DEBUG("no results stream from the local raylet (%s %s): results come from "
                  "the GCS directory", esc_status_name(st.code), st.message);
        esc_rpc_stream_free(o->stream);
        o->stream = NULL;
        return false;
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return true;
}

/* ------------------------------------------------------------------ lifetime */

static esc_owner *owner_new(esc_client *c, esc_rpc_channel *raylet)
{
    esc_owner *o = esc_xcalloc(1, sizeof *o);
    o->c = c;
    o->raylet = raylet;
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->work, NULL);
    pthread_cond_init(&o->changed, NULL);
    o->pending = esc_strmap_new();
    o->ready = esc_strmap_new();
    if (open_stream(o)) {
        o->watching = true;
        if (pthread_create(&o->reader, NULL, reader_main, o) != 0) {
            esc_rpc_stream_free(o->stream);
            o->stream = NULL;
            o->watching = false;
        }
    }
    if (pthread_create(&o->sender, NULL, sender_main, o) != 0)
        abort(); /* no thread: nothing else in the client would work either */
    return o;
}

esc_owner *esc_owner_get(esc_client *c, esc_status *st)
{
    pthread_mutex_lock(&c->owner_mu);
    if (!c->owner) {
        char addr[300];
        if (esc_client_raylet_address(c, NULL, addr, sizeof addr, st) == ESC_OK)
            c->owner = owner_new(c, esc_client_raylet_channel(c, addr));
    }
    esc_owner *o = c->owner;
    pthread_mutex_unlock(&c->owner_mu);
    return o;
}

esc_owner *esc_owner_peek(esc_client *c)
{
    pthread_mutex_lock(&c->owner_mu);
    esc_owner *o = c->owner;
    pthread_mutex_unlock(&c->owner_mu);
    return o;
}

void esc_owner_free(esc_owner *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->mu);
    o->stop = true; /* the sender sends what is queued, then ends */
    pthread_cond_signal(&o->work);
    pthread_mutex_unlock(&o->mu);
    pthread_join(o->sender, NULL);
    if (o->stream) {
        esc_rpc_stream_cancel(o->stream);
        pthread_join(o->reader, NULL);
        esc_rpc_stream_free(o->stream);
    }
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(o->ready, &pos, &k, &v))
        value_free(v);
    esc_strmap_free(o->ready);
    pos = 0;
    while (esc_strmap_next(o->pending, &pos, &k, &v))
        free(v);
    esc_strmap_free(o->pending);
    free(o->queue); /* empty: the sender sent everything before it ended */
    pthread_cond_destroy(&o->work);
    pthread_cond_destroy(&o->changed);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

/* ------------------------------------------------------------------ api */

/* Expects the task's returns on the stream (while it is up). */
static void expect_locked(esc_owner *o, const char *task_id, unsigned nreturns,
                          const char *route)
{
    for (unsigned i = 0; o->watching && i < nreturns; i++) {
        char id[ESC_OBJECT_ID_MAX];
        esc_return_id(task_id, i, id, sizeof id);
        free(esc_strmap_put(o->pending, id, esc_xstrdup(route)));
    }
}

void esc_owner_expect(esc_owner *o, const char *task_id, unsigned nreturns, const char *route)
{
    pthread_mutex_lock(&o->mu);
    expect_locked(o, task_id, nreturns, route);
    pthread_mutex_unlock(&o->mu);
}

void esc_owner_node_dead(esc_owner *o, const char *address, const char *why)
{
    pthread_mutex_lock(&o->mu);
    size_t n = 0, pos = 0;
    const char *k;
    void *v;
    char **ids = esc_xcalloc(esc_strmap_count(o->pending) + 1, sizeof *ids);
    while (esc_strmap_next(o->pending, &pos, &k, &v))
        if (!strcmp(v, address))
            ids[n++] = esc_xstrdup(k);
    for (size_t i = 0; i < n; i++) {
        esc_owned_value *val = esc_xcalloc(1, sizeof *val);
        val->is_error = true;
        val->code = ESC_ABORTED;
        val->error = esc_xstrdup(why);
        file_locked(o, ids[i], val);
        free(ids[i]);
    }
    free(ids);
    changed_locked(o);
    pthread_mutex_unlock(&o->mu);
}

const char *esc_owner_raylet(const esc_owner *o)
{
    return esc_rpc_channel_target(o->raylet);
}

void esc_owner_submit(esc_owner *o, const char *task_id, unsigned nreturns, void *packed,
                      size_t len)
{
    pthread_mutex_lock(&o->mu);
    /* Expected before it can possibly end: the notice only counts when it is pending. */
    expect_locked(o, task_id, nreturns, "");
    if (o->nqueue == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 256;
        o->queue = esc_xrealloc(o->queue, o->cap * sizeof *o->queue);
    }
    o->queue[o->nqueue++] = (queued_task){esc_xstrdup(task_id), nreturns, {len, packed}};
    o->queued++;
    pthread_cond_signal(&o->work);
    pthread_mutex_unlock(&o->mu);
}

void esc_owner_flush(esc_owner *o)
{
    pthread_mutex_lock(&o->mu);
    uint64_t want = o->queued;
    while (o->sent < want)
        pthread_cond_wait(&o->changed, &o->mu);
    pthread_mutex_unlock(&o->mu);
}


int esc_owner_take(esc_owner *o, const char *id, int wait_ms, esc_owned_value **out)
{
    *out = NULL;
    uint64_t ms = wait_ms > 0 ? (uint64_t)wait_ms : 0;
    struct timespec until = esc_time_after_ms(CLOCK_REALTIME, ms);
    pthread_mutex_lock(&o->mu);
    int rc;
    for (;;) {
        esc_owned_value *v = esc_strmap_get(o->ready, id);
        if (v) {
            esc_strmap_del(o->ready, id);
            *out = v;
            rc = ESC_OWNED_READY;
            break;
        }
        if (!esc_strmap_get(o->pending, id) || !o->watching) {
            rc = ESC_OWNED_UNKNOWN;
            break;
        }
        if (wait_ms < 0) {
            pthread_cond_wait(&o->changed, &o->mu);
        } else if (wait_ms == 0 ||
                   pthread_cond_timedwait(&o->changed, &o->mu, &until) == ETIMEDOUT) {
            rc = ESC_OWNED_PENDING;
            break;
        }
    }
    pthread_mutex_unlock(&o->mu);
    return rc;
}

int esc_owner_state(esc_owner *o, const char *id)
{
    pthread_mutex_lock(&o->mu);
    int rc = esc_strmap_get(o->ready, id) ? ESC_OWNED_READY
             : esc_strmap_get(o->pending, id) && o->watching ? ESC_OWNED_PENDING
                                                             : ESC_OWNED_UNKNOWN;
    pthread_mutex_unlock(&o->mu);
    return rc;
}

void esc_owner_forget(esc_owner *o, const char *id)
{
    pthread_mutex_lock(&o->mu);
    free(esc_strmap_del(o->pending, id));
    value_free(esc_strmap_get(o->ready, id));
    esc_strmap_del(o->ready, id);
    pthread_mutex_unlock(&o->mu);
}
