/* object_fetch.c: see object_fetch.h. */
#include "object_fetch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "object.pb-c.h"
#include "raylet.h"
#include "object_service.h"
#include "strmap.h"
#include "task.pb-c.h"

#define WAIT_ROUND_MS 1000   /* one held GetLocations; stop is noticed between rounds */
#define RETRY_MS 200
#define PULL_TIMEOUT_MS 600000
#define RECONSTRUCT_TIMEOUT_MS 5000

typedef struct fetch {
    struct fetch *next;
    object_fetcher *f;
    char *id, *job_id;
    pthread_t thread;
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
    pthread_mutex_t mu;
    pthread_cond_t idle;   /* signalled when a thread has posted its result */
    bool stopping;
    int live;              /* threads that have not posted their result yet */
    fetch *all;            /* every fetch not yet delivered */
    esc_strmap *running;   /* object id -> fetch, while its thread works */
};

static bool stopping(object_fetcher *f)
{
    pthread_mutex_lock(&f->mu);
    bool s = f->stopping;
    pthread_mutex_unlock(&f->mu);
    return s;
}

static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Reads a whole object from the raylet at address into x. */
static int pull(fetch *x, const char *address)
{
    object_fetcher *f = x->f;
    esc_rpc_channel *ch = esc_rpc_channel_new(address, f->r->cfg.token);
    Escher__PullRequest req = ESCHER__PULL_REQUEST__INIT;
    req.object_id = x->id;
    esc_status st = {0};
    esc_rpc_stream *s = esc_rpc_stream_open_timeout(ch, &escher__object_store__descriptor, "Pull",
                                                    &req.base, PULL_TIMEOUT_MS, &st);
    int rc = s ? ESC_OK : st.code;
    ProtobufCMessage *m;
    bool sized = false;
    while (rc == ESC_OK && esc_rpc_stream_next(s, &m, &st) == 1) {
        Escher__ObjectChunk *c = (Escher__ObjectChunk *)m;
        if (!sized) {
            x->len = (size_t)c->total_size;
            x->data = malloc(x->len + 1);
            x->is_error = c->is_error;
            x->obj_error = strdup(c->error);
            sized = true;
        }
        if (c->offset + c->data.len <= x->len)
            memcpy(x->data + c->offset, c->data.data, c->data.len);
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
static int ask_reconstruct(fetch *x, const char *origin)
{
    if (!*origin) {
        x->final = true;
        snprintf(x->error, sizeof x->error, "object %.80s was lost with its node, and so was "
                 "the node that kept its lineage", x->id);
        return ESC_NOT_FOUND;
    }
    esc_rpc_channel *ch = esc_rpc_channel_new(origin, x->f->r->cfg.token);
    Escher__ReconstructRequest req = ESCHER__RECONSTRUCT_REQUEST__INIT;
    req.object_id = x->id;
    Escher__ReconstructReply *rep = NULL;
    esc_status st = {0};
    int rc = esc_rpc_call(ch, &escher__task_service__descriptor, "Reconstruct", &req.base,
                          (ProtobufCMessage **)&rep, RECONSTRUCT_TIMEOUT_MS, ESC_RPC_IDEMPOTENT,
                          &st);
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
    req.report_lost = !x->asked;
    x->asked = false;
    Escher__GetLocationsReply *rep = NULL;
    esc_status st = {0};
    int rc = esc_rpc_call(f->gcs, &escher__object_directory__descriptor, "GetLocations", &req.base,
                          (ProtobufCMessage **)&rep, WAIT_ROUND_MS + 2000, ESC_RPC_IDEMPOTENT, &st);
    if (rc != ESC_OK)
        return rc;
    if (rep->lost) {
        rc = ask_reconstruct(x, rep->origin_address);
        protobuf_c_message_free_unpacked(&rep->base, NULL);
        return rc;
    }
    rc = ESC_NOT_FOUND;
    for (size_t i = 0; rep->found && i < rep->n_node_ids && rc != ESC_OK; i++) {
        if (strcmp(rep->node_ids[i], f->r->node_id) == 0) {
            x->local = true; /* stored here meanwhile (a task of this node made it) */
            rc = ESC_OK;
        } else {
            rc = pull(x, rep->addresses[i]);
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
    pthread_join(x->thread, NULL); /* it posted this as its last act */
    pthread_mutex_lock(&f->mu);
    esc_strmap_del(f->running, x->id);
    unlink_fetch(f, x);
    pthread_mutex_unlock(&f->mu);
    struct raylet *r = f->r;
    if (x->code == ESC_OK && x->local) {
        object_service_arrived(r->objects, x->id);
    } else if (x->code == ESC_OK) {
        r->pulled_bytes += x->len; /* moved between nodes, for Stats */
        int rc = object_service_store(r, x->id, x->job_id, NULL, x->data, x->len, x->is_error,
                                     x->obj_error);
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
    free(x);
}

static void *fetch_main(void *arg)
{
    fetch *x = arg;
    object_fetcher *f = x->f;
    for (;;) {
        if (stopping(f)) {
            x->code = ESC_UNAVAILABLE;
            snprintf(x->error, sizeof x->error, "raylet shutting down");
            break;
        }
        if (fetch_round(x) == ESC_OK) {
            x->code = ESC_OK;
            break;
        }
        if (x->final) {
            x->code = ESC_NOT_FOUND;
            break;
        }
        nap(RETRY_MS);
    }
    esc_loop_post(f->r->loop, deliver, x);
    pthread_mutex_lock(&f->mu);
    f->live--;
    pthread_cond_broadcast(&f->idle);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

object_fetcher *object_fetch_new(struct raylet *r)
{
    object_fetcher *f = calloc(1, sizeof *f);
    f->r = r;
    f->gcs = esc_rpc_channel_new(r->cfg.gcs_address, r->cfg.token);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->idle, NULL);
    f->running = esc_strmap_new();
    return f;
}

void object_fetch_start(object_fetcher *f, const char *id, const char *job_id)
{
    pthread_mutex_lock(&f->mu);
    if (f->stopping || esc_strmap_get(f->running, id)) {
        pthread_mutex_unlock(&f->mu);
        return;
    }
    fetch *x = calloc(1, sizeof *x);
    x->f = f;
    x->id = strdup(id);
    x->job_id = strdup(job_id);
    if (pthread_create(&x->thread, NULL, fetch_main, x) != 0) {
        pthread_mutex_unlock(&f->mu);
        ESC_ERROR("cannot start a thread to fetch object %s", id);
        free(x->id);
        free(x->job_id);
        free(x);
        return;
    }
    esc_strmap_put(f->running, id, x);
    f->live++;
    x->next = f->all;
    f->all = x;
    pthread_mutex_unlock(&f->mu);
}

void object_fetch_stop(object_fetcher *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stopping = true;
    while (f->live > 0)
        pthread_cond_wait(&f->idle, &f->mu);
    pthread_mutex_unlock(&f->mu);
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
        pthread_join(x->thread, NULL);
        free(x->data);
        free(x->obj_error);
        free(x->id);
        free(x->job_id);
        free(x);
    }
    esc_strmap_free(f->running);
    esc_rpc_channel_free(f->gcs);
    pthread_cond_destroy(&f->idle);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
