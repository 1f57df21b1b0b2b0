/* object_announce.c: the sender thread of object locations (object_announce.h). */
#include "object_announce.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ids.h"
#include "log.h"
#include "object.pb-c.h"
#include "rpc.h"

#define RETRY_PAUSE_MS 100

typedef struct item {
    struct item *next;
    bool add;
    char *object_id, *node_id, *job_id;
    uint64_t size;
    bool is_error;
    announce_done_fn done;
    void *arg;
} item;

struct object_announcer {
    esc_loop *loop;
    esc_rpc_channel *ch;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* CLOCK_MONOTONIC: new work, or stopping */
    item *head, *tail;
    bool stopping;
    bool started;
    bool warned;            /* one warning per outage, not one per object */
    pthread_t thread;
};

object_announcer *object_announcer_new(esc_loop *loop, const char *gcs_address,
                                       const char *token)
{
    object_announcer *a = calloc(1, sizeof *a);
    if (!a)
        abort();
    a->loop = loop;
    a->ch = esc_rpc_channel_new(gcs_address, token);
    pthread_mutex_init(&a->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    return a;
}

static void item_free(item *it)
{
    free(it->object_id);
    free(it->node_id);
    free(it->job_id);
    free(it);
}

/* ------------------------------------------------------------ outcome on the loop */

typedef struct {
    announce_done_fn done;
    void *arg;
    int code;
} done_msg;

static void run_done(void *p)
{
    done_msg *m = p;
    m->done(m->arg, m->code);
    free(m);
}

static void post_done(object_announcer *a, item *it, int code)
{
    if (!it->done)
        return;
    done_msg *m = malloc(sizeof *m);
    if (!m)
        abort();
    *m = (done_msg){it->done, it->arg, code};
    esc_loop_post(a->loop, run_done, m);
}

/* ------------------------------------------------------------ queue */

static void push(object_announcer *a, item *it)
{
    pthread_mutex_lock(&a->mu);
    if (a->stopping) {
        /* At once, not posted: after the loop's last drain a posted call would outlive
         * the state it points to. */
        pthread_mutex_unlock(&a->mu);
        if (it->done)
            it->done(it->arg, ESC_UNAVAILABLE);
        item_free(it);
        return;
    }
    if (a->tail)
        a->tail->next = it;
    else
        a->head = it;
    a->tail = it;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

void object_announcer_add(object_announcer *a, const char *object_id, const char *node_id,
                          const char *job_id, uint64_t size, bool is_error,
                          announce_done_fn done, void *arg)
{
    item *it = calloc(1, sizeof *it);
    if (!it)
        abort();
    it->add = true;
    it->object_id = strdup(object_id);
    it->node_id = strdup(node_id);
    it->job_id = strdup(job_id ? job_id : "");
    it->size = size;
    it->is_error = is_error;
    it->done = done;
    it->arg = arg;
    push(a, it);
}

void object_announcer_remove(object_announcer *a, const char *object_id, const char *node_id)
{
    item *it = calloc(1, sizeof *it);
    if (!it)
        abort();
    it->object_id = strdup(object_id);
    it->node_id = strdup(node_id);
    it->job_id = strdup("");
    push(a, it);
}

/* ------------------------------------------------------------ the thread */

static bool stopping(object_announcer *a)
{
    pthread_mutex_lock(&a->mu);
    bool s = a->stopping;
    pthread_mutex_unlock(&a->mu);
    return s;
}

/* Waits ms unless stopping; returns whether stopping. */
static bool pause_ms(object_announcer *a, uint64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&a->mu);
    while (!a->stopping && pthread_cond_timedwait(&a->cv, &a->mu, &until) != ETIMEDOUT)
        ;
    bool s = a->stopping;
    pthread_mutex_unlock(&a->mu);
    return s;
}

static int call_once(object_announcer *a, const item *it, esc_status *st)
{
    Escher__ObjectLocation loc = ESCHER__OBJECT_LOCATION__INIT;
    loc.object_id = it->object_id;
    loc.node_id = it->node_id;
    loc.job_id = it->job_id;
    loc.size = it->size;
    loc.is_error = it->is_error;
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(a->ch, &escher__object_directory__descriptor,
                          it->add ? "AddLocation" : "RemoveLocation", &loc.base, &rep,
                          ANNOUNCE_ATTEMPT_MS, ESC_RPC_IDEMPOTENT, st);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    return rc;
}

/* One announcement, retried while the GCS is unreachable. Returns its status code. */
static int send_item(object_announcer *a, const item *it)
{
    uint64_t deadline = esc_now_ms() + ANNOUNCE_TOTAL_MS;
    for (;;) {
        esc_status st = {0};
        int rc = call_once(a, it, &st);
        bool transient = rc == ESC_UNAVAILABLE || rc == ESC_DEADLINE_EXCEEDED;
        if (!transient || esc_now_ms() >= deadline || pause_ms(a, RETRY_PAUSE_MS)) {
            if (rc != ESC_OK && !(transient && a->warned))
                ESC_WARN("%s of object %s at the GCS failed: %s %s",
                         it->add ? "AddLocation" : "RemoveLocation", it->object_id,
                         esc_status_name(rc), st.message);
            if (transient)
                a->warned = true;
            else
                a->warned = false;
            return rc;
        }
    }
}

static item *pop(object_announcer *a)
{
    pthread_mutex_lock(&a->mu);
    while (!a->stopping && !a->head)
        pthread_cond_wait(&a->cv, &a->mu);
    item *it = NULL;
    if (!a->stopping) {
        it = a->head;
        a->head = it->next;
        if (!a->head)
            a->tail = NULL;
    }
    pthread_mutex_unlock(&a->mu);
    return it;
}

static void *sender_main(void *arg)
{
    object_announcer *a = arg;
    item *it;
    while ((it = pop(a)) != NULL) {
        int rc = send_item(a, it);
        post_done(a, it, stopping(a) && rc != ESC_OK ? ESC_UNAVAILABLE : rc);
        item_free(it);
    }
    return NULL;
}

int object_announcer_start(object_announcer *a)
{
    if (pthread_create(&a->thread, NULL, sender_main, a) != 0)
        return -1;
    a->started = true;
    return 0;
}

void object_announcer_stop(object_announcer *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stopping = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (a->started)
        pthread_join(a->thread, NULL);
    a->started = false;
    while (a->head) {
        item *it = a->head;
        a->head = it->next;
        post_done(a, it, ESC_UNAVAILABLE);
        item_free(it);
    }
    a->tail = NULL;
}

void object_announcer_free(object_announcer *a)
{
    if (!a)
        return;
    object_announcer_stop(a);
    esc_rpc_channel_free(a->ch);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
