/* liveness.c: the job-liveness subscription thread (see liveness.h). */
#include "liveness.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcs.pb-c.h"
#include "log.h"

#define RESUBSCRIBE_MS 200

struct esc_liveness {
    esc_rpc_channel *ch;
    char *job_id;
    pthread_t thread;
    /* mu guards stopping and stream: stop() must be able to cancel whichever stream
     * is open, and the thread must not open a new one after stop() began. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    esc_rpc_stream *stream;
    uint64_t last_seq; /* resume point, so a reopened stream does not replay old events */
};

/* Opens a stream unless stopping; returns it (published in l->stream) or NULL. */
static esc_rpc_stream *open_stream(esc_liveness *l)
{
    Escher__SubscribeRequest req = ESCHER__SUBSCRIBE_REQUEST__INIT;
    req.from_seq = l->last_seq;
    req.job_id = l->job_id;
    esc_rpc_stream *s = NULL;
    pthread_mutex_lock(&l->mu);
    if (!l->stopping) {
        esc_status st;
        s = esc_rpc_stream_open(l->ch, &escher__gcs__descriptor, "Subscribe",
                                &req.base, &st);
        if (!s)
            ESC_DEBUG("liveness: cannot subscribe: %s", st.message);
        l->stream = s;
    }
    pthread_mutex_unlock(&l->mu);
    return s;
}

/* Reads events until the stream ends; only their sequence numbers matter. */
static void drain_stream(esc_liveness *l, esc_rpc_stream *s)
{
    ProtobufCMessage *m;
    esc_status st;
    while (esc_rpc_stream_next(s, &m, &st) == 1) {
        const Escher__Event *ev = (const Escher__Event *)m;
        if (ev->seq > l->last_seq)
            l->last_seq = ev->seq;
        protobuf_c_message_free_unpacked(m, NULL);
    }
    ESC_DEBUG("liveness: stream ended: %s %s", esc_status_name(st.code), st.message);
    pthread_mutex_lock(&l->mu);
    l->stream = NULL;
    pthread_mutex_unlock(&l->mu);
    esc_rpc_stream_free(s);
}

/* Sleeps RESUBSCRIBE_MS, waking at once when stop() signals. Returns true to go on. */
static bool pause_before_retry(esc_liveness *l)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += RESUBSCRIBE_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&l->mu);
    while (!l->stopping && pthread_cond_timedwait(&l->cv, &l->mu, &until) == 0)
        ;
    bool go_on = !l->stopping;
    pthread_mutex_unlock(&l->mu);
    return go_on;
}

static void *liveness_main(void *arg)
{
    esc_liveness *l = arg;
    do {
        esc_rpc_stream *s = open_stream(l);
        if (s)
            drain_stream(l, s);
    } while (pause_before_retry(l));
    return NULL;
}

esc_liveness *esc_liveness_start(esc_rpc_channel *ch, const char *job_id)
{
    esc_liveness *l = calloc(1, sizeof *l);
    l->ch = ch;
    l->job_id = strdup(job_id);
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&l->thread, NULL, liveness_main, l) != 0) {
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
        free(l->job_id);
        free(l);
        return NULL;
    }
    return l;
}

void esc_liveness_stop(esc_liveness *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopping = true;
    if (l->stream)
        esc_rpc_stream_cancel(l->stream);
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l->job_id);
    free(l);
}
