/* object_fetch.c: see object_fetch.h. */
#include "object_fetch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ids.h"
#include "log.h"
#include "object.pb-c.h"
#include "object_service.h"
#include "raylet.h"
#include "strmap.h"
#include "task.pb-c.h"
#include "xalloc.h"

#define WAIT_ROUND_MS 1000   /* one held GetLocations; stop is noticed between rounds */
#define RETRY_MS 200         /* at least this long between two rounds of one fetch */
/* Fetch threads per raylet. Each takes a fetch, makes one round (at most WAIT_ROUND_MS
 * waiting at the GCS, then the pull) and puts it back at the tail when the object is not
 * there yet: up to FETCH_THREADS fetches wait at the GCS at once, event driven; beyond
 * that they take turns, a round each. */
#define FETCH_THREADS 32
#define PULL_TIMEOUT_MS 600000
#define RECONSTRUCT_TIMEOUT_MS 5000

typedef struct fetch {
    struct fetch *next;       /* every fetch not yet delivered (f->all) */
    struct fetch *next_queued;/* the queue of fetches waiting for a thread */
    object_fetcher *f;
    char *id, *job_id;
    char *credential;         /* job_id's, from the task's spec: proves the fetch's job */
    char *owner;              /* the object's job, from its first chunk */
    uint64_t not_before_ms;   /* its next round starts no sooner (esc_now_ms) */
    /* outcome, handed to the loop */
    int code;
    char error[512];
    uint8_t *data;
    size_t len;
    bool is_error;
    char *obj_error;
    bool local;     /* the object turned up on this node: nothing to pull */
    bool asked;     /* a reconstruction was asked for; the next round waits for it */
    bool final;     /* the object cannot be had: stop trying */
} fetch;

struct object_fetcher {
    struct raylet *r;
    esc_rpc_channel *gcs;
    pthread_t threads[FETCH_THREADS];
    int nthreads;
    pthread_mutex_t mu;
    pthread_cond_t work;   /* signalled when a fetch is queued, and at stop */
    bool stopping;
    fetch *head, *tail;    /* fetches waiting for a thread, oldest first */
    fetch *all;            /* every fetch not yet delivered */
    esc_strmap *running;   /* object id -> fetch, until delivered */
};

static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Reads a whole object from the raylet at address into x. */
static int pull(fetch *x, const char *address, const char *node_id)
{
    object_fetcher *f = x->f;
    esc_rpc_channel *ch = raylet_channel_new(f->r, address);
    Escher__PullRequest req = ESCHER__PULL_REQUEST__INIT;
    req.object_id = x->id;
    req.node_id = (char *)node_id;
    req.job_id = x->job_id;
    req.job_credential = x->credential;
    esc_status st = {0};
    esc_rpc_stream *s = esc_rpc_stream_open_timeout(ch, &ESC_M_OBJECT_STORE_PULL, &req.base,
                                                    PULL_TIMEOUT_MS, &st);
    int rc = s ? ESC_OK : st.code;
    ProtobufCMessage *m;
    bool sized = false;
    while (rc == ESC_OK && esc_rpc_stream_next(s, &m, &st) == 1) {
        Escher__ObjectChunk *c = (Escher__ObjectChunk *)m;
        if (!sized) {
            x->len = (size_t)c->total_size;
            x->data = esc_xmalloc(x->len + 1);
            x->is_error = c->is_error;
            x->obj_error = esc_xstrdup(c->error);
            free(x->owner);
            x->owner = esc_xstrdup(*c->job_id ? c->job_id : x->job_id);
            sized = true;
        }
        if (c->offset + c->data.len <= x->len) {
            if (c->data.len) /* an empty chunk (an error object) has no data pointer */
                memcpy(x->data + c->offset, c->data.data, c->data.len);
        }
        else
            rc = ESC_INTERNAL;
        protobuf_c_message_free_unpacked(m, NULL);
    }
    if (rc == ESC_OK && st.code != ESC_OK)
        rc = st.code;
    if (rc == ESC_OK && !sized)
        rc = ESC_NOT_FOUND;
    esc_rpc_stream_free(s);
    esc_rpc_channel_free(ch);
    if (rc != ESC_OK) {
        free(x->data);
        free(x->obj_error);
        x->data = NULL;
        x->obj_error = NULL;
        snprintf(x->error, sizeof x->error, "pull from %s: %s %s", address, esc_status_name(rc),
                 st.message);
    }
    return rc;
}

/* Every copy died with its node: asks the raylet at origin (the task's lineage) to make
 * it again. Sets x->final when nobody can. */
static int ask_reconstruct(fetch *x, const char *origin, const char *origin_node)
{
    if (!*origin) {
        x->final = true;
        snprintf(x->error, sizeof x->error, "object %.80s was lost with its node, and so was "
                 "the node that kept its lineage (%.64s)", x->id, origin_node);
        return ESC_NOT_FOUND;
    }
    esc_rpc_channel *ch = raylet_channel_new(x->f->r, origin);
    Escher__ReconstructRequest req = ESCHER__RECONSTRUCT_REQUEST__INIT;
    req.object_id = x->id;
    Escher__ReconstructReply *rep = NULL;
    esc_status st = {0};
    int rc =
        esc_rpc_call(ch, &ESC_M_TASK_SERVICE_RECONSTRUCT, &req.base, (ProtobufCMessage **)&rep,
                     RECONSTRUCT_TIMEOUT_MS, ESC_RPC_IDEMPOTENT, &st);
    esc_rpc_channel_free(ch);
    if (rc == ESC_OK && !rep->found) {
        x->final = true;
        snprintf(x->error, sizeof x->error, "object %.80s was lost with its node and %.100s "
                 "keeps no lineage for it", x->id, origin);
        rc = ESC_NOT_FOUND;
    }
    x->asked = rc == ESC_OK;
    if (rep)
        protobuf_c_message_free_unpacked(&rep->base, NULL);
    return rc == ESC_OK ? ESC_UNAVAILABLE : rc; /* the next round waits for the new copy */
}

/* One round: ask where the object is (held up to a second), pull it from a node that is
 * not this one. Returns ESC_OK when x holds the value. A lost object is reported at once
 * (unless a reconstruction was just asked for: then the round waits for it) and its
 * reconstruction asked for. */
static int fetch_round(fetch *x)
{
    object_fetcher *f = x->f;
    Escher__GetLocationsRequest req = ESCHER__GET_LOCATIONS_REQUEST__INIT;
    req.object_id = x->id;
    req.wait_ms = WAIT_ROUND_MS;
    req.job_id = x->job_id;
    req.job_credential = x->credential;
    req.report_lost = !x->asked;
    x->asked = false;
    Escher__GetLocationsReply *rep = NULL;
    esc_status st = {0};
    int rc =
        esc_rpc_call(f->gcs, &ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS, &req.base,
                     (ProtobufCMessage **)&rep, WAIT_ROUND_MS + 2000, ESC_RPC_IDEMPOTENT, &st);
    if (rc == ESC_PERMISSION_DENIED) { /* the task's job may not read it: no use trying again */
        x->final = true;
        snprintf(x->error, sizeof x->error, "PERMISSION_DENIED: %.400s", st.message);
    }
    if (rc != ESC_OK)
        return rc;
    if (rep->lost) {
        rc = ask_reconstruct(x, rep->origin_address, rep->origin);
        protobuf_c_message_free_unpacked(&rep->base, NULL);
        return rc;
    }
    rc = ESC_NOT_FOUND;
    for (size_t i = 0; rep->found && i < rep->n_node_ids && rc != ESC_OK; i++) {
        if (strcmp(rep->node_ids[i], f->r->node_id) == 0) {
            x->local = true; /* stored here meanwhile (a task of this node made it) */
            rc = ESC_OK;
        } else {
            rc = pull(x, rep->addresses[i], rep->node_ids[i]);
            x->final = rc == ESC_PERMISSION_DENIED; /* x->error says why */
        }
    }
    protobuf_c_message_free_unpacked(&rep->base, NULL);
    return rc;
}

/* Loop thread: store the copy, wake the tasks. */
static void unlink_fetch(object_fetcher *f, fetch *x)
{
    for (fetch **p = &f->all; *p; p = &(*p)->next) {
        if (*p == x) {
            *p = x->next;
            return;
        }
    }
}

static void deliver(void *arg)
{
    fetch *x = arg;
    object_fetcher *f = x->f;
    pthread_mutex_lock(&f->mu);
    esc_strmap_del(f->running, x->id);
    unlink_fetch(f, x);
    pthread_mutex_unlock(&f->mu);
    struct raylet *r = f->r;
    if (x->code == ESC_OK && x->local) {
        object_service_arrived(r->objects, x->id);
    } else if (x->code == ESC_OK) {
        r->pulled_bytes += x->len; /* moved between nodes, for Stats */
        int rc = object_service_store(r, x->id, x->owner ? x->owner : x->job_id, NULL, x->data,
                                      x->len, x->is_error, x->obj_error);
        if (rc == ESC_OK || rc == ESC_ALREADY_EXISTS)
            object_service_arrived(r->objects, x->id);
        else
            object_service_fetch_failed(r->objects, x->id, "no room for the argument in this "
                                                        "node's object store");
    } else if (r->objects) {
        object_service_fetch_failed(r->objects, x->id, x->error);
    }
    free(x->data);
    free(x->obj_error);
    free(x->id);
    free(x->job_id);
    free(x->credential);
    free(x->owner);
    free(x);
}

/* Under f->mu. */
static void queue_push(object_fetcher *f, fetch *x)
{
    x->next_queued = NULL;
    if (f->tail)
        f->tail->next_queued = x;
    else
        f->head = x;
    f->tail = x;
    pthread_cond_signal(&f->work);
}

/* Under f->mu: the oldest queued fetch, waiting while there is none (NULL once
 * stopping). */
static fetch *queue_pop(object_fetcher *f)
{
    while (!f->head && !f->stopping)
        pthread_cond_wait(&f->work, &f->mu);
    if (f->stopping)
        return NULL;
    fetch *x = f->head;
    f->head = x->next_queued;
    if (!f->head)
        f->tail = NULL;
    return x;
}

/* One round of x on this thread; true when x is settled (posted to the loop). */
static bool work_on(object_fetcher *f, fetch *x)
{
    uint64_t now = esc_now_ms();
    if (x->not_before_ms > now)
        nap((int)(x->not_before_ms - now));
    x->not_before_ms = esc_now_ms() + RETRY_MS;
    if (fetch_round(x) == ESC_OK)
        x->code = ESC_OK;
    else if (x->final)
        x->code = ESC_NOT_FOUND;
    else
        return false;
    esc_loop_post(f->r->loop, deliver, x);
    return true;
}

static void *fetch_main(void *arg)
{
    object_fetcher *f = arg;
    pthread_mutex_lock(&f->mu);
    fetch *x;
    while ((x = queue_pop(f)) != NULL) {
        pthread_mutex_unlock(&f->mu);
        bool settled = work_on(f, x);
        pthread_mutex_lock(&f->mu);
        if (!settled)
            queue_push(f, x); /* not there yet: the others take their turn first */
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

object_fetcher *object_fetch_new(struct raylet *r)
{
    object_fetcher *f = esc_xcalloc(1, sizeof *f);
    f->r = r;
    f->gcs = raylet_channel_new(r, r->cfg.gcs_address);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->work, NULL);
    f->running = esc_strmap_new();
    for (int i = 0; i < FETCH_THREADS; i++) {
        if (pthread_create(&f->threads[f->nthreads], NULL, fetch_main, f) != 0)
            break;
        f->nthreads++;
    }
    if (f->nthreads == 0) {
        object_fetch_free(f);
        return NULL;
    }
    if (f->nthreads < FETCH_THREADS)
        ESC_WARN("started %d of %d object fetch threads", f->nthreads, FETCH_THREADS);
    return f;
}

void object_fetch_start(object_fetcher *f, const char *id, const char *job_id,
                        const char *credential)
{
    pthread_mutex_lock(&f->mu);
    if (esc_strmap_get(f->running, id)) {
        pthread_mutex_unlock(&f->mu);
        return;
    }
    fetch *x = esc_xcalloc(1, sizeof *x);
    x->f = f;
    x->id = esc_xstrdup(id);
    x->job_id = esc_xstrdup(job_id);
    x->credential = esc_xstrdup(credential);
    esc_strmap_put(f->running, id, x);
    x->next = f->all;
    f->all = x;
    if (f->stopping) {
        /* Settled at once: the task fails instead of waiting in fetching. */
        x->code = ESC_UNAVAILABLE;
        snprintf(x->error, sizeof x->error, "raylet shutting down");
        esc_loop_post(f->r->loop, deliver, x);
    } else {
        queue_push(f, x);
    }
    pthread_mutex_unlock(&f->mu);
}

void object_fetch_stop(object_fetcher *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    bool was = f->stopping;
    f->stopping = true;
    pthread_cond_broadcast(&f->work);
    pthread_mutex_unlock(&f->mu);
    if (was)
        return;
    /* Each thread ends its round (a held GetLocations: at most about a second). */
    for (int i = 0; i < f->nthreads; i++)
        pthread_join(f->threads[i], NULL);
    /* What did not settle fails: its tasks end instead of waiting in fetching. */
    while (f->head) {
        fetch *x = f->head;
        f->head = x->next_queued;
        x->code = ESC_UNAVAILABLE;
        snprintf(x->error, sizeof x->error, "raylet shutting down");
        esc_loop_post(f->r->loop, deliver, x);
    }
    f->tail = NULL;
}

void object_fetch_free(object_fetcher *f)
{
    if (!f)
        return;
    object_fetch_stop(f);
    /* Results not delivered (the owner did not drain): free them here. */
    while (f->all) {
        fetch *x = f->all;
        f->all = x->next;
        free(x->data);
        free(x->obj_error);
        free(x->id);
        free(x->job_id);
        free(x->credential);
        free(x->owner);
        free(x);
    }
    esc_strmap_free(f->running);
    esc_rpc_channel_free(f->gcs);
    pthread_cond_destroy(&f->work);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
