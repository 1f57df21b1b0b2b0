/* subscription.c: see subscription.h. */
#include "subscription.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "pbutil.h"
#include "xalloc.h"

#define RESUBSCRIBE_MS 200

struct esc_subscription {
    esc_rpc_channel *ch;
    char *node_id, *job_id, *who;
    uint64_t from;            /* last sequence received: where a new stream resumes */
    Escher__SubscribeRequest *watch; /* an application's watch: its filter (a copy) */
    esc_subscription_fn fn;
    void *ud;
    pthread_t thread;
    /* mu guards stopping and stream: stop() must cancel whichever stream is open, and
     * the thread must not open a new one once stop() began. */
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* CLOCK_MONOTONIC */
    bool stopping;
    esc_rpc_stream *stream;
};

/* Opens a stream and publishes it, unless stopping. */
static esc_rpc_stream *open_stream(esc_subscription *s, esc_status *st)
{
    Escher__SubscribeRequest req = ESCHER__SUBSCRIBE_REQUEST__INIT;
    if (s->watch) {
        req = *s->watch;
        req.watch = true;
    }
    req.from_seq = s->from;
    req.node_id = s->node_id ? s->node_id : "";
    req.job_id = s->job_id ? s->job_id : "";
    esc_rpc_stream *stream = NULL;
    pthread_mutex_lock(&s->mu);
    if (!s->stopping) {
        stream = esc_rpc_stream_open(s->ch, &ESC_M_GCS_SUBSCRIBE, &req.base, st);
        s->stream = stream;
    }
    pthread_mutex_unlock(&s->mu);
    return stream;
}

/* Hands every event to the callback until the stream ends; returns whether any came. */
static bool read_stream(esc_subscription *s, esc_rpc_stream *stream, bool failing,
                        esc_status *st)
{
    ProtobufCMessage *m;
    bool any = false;
    while (esc_rpc_stream_next(stream, &m, st) == 1) {
        Escher__Event *ev = (Escher__Event *)m;
        if (failing && !any && s->who)
            ESC_INFO("%s: event stream restored at seq %" PRIu64, s->who, ev->seq);
        any = true;
        s->from = ev->seq;
        s->fn(s->ud, ev);
    }
    pthread_mutex_lock(&s->mu);
    s->stream = NULL;
    pthread_mutex_unlock(&s->mu);
    esc_rpc_stream_free(stream);
    return any;
}

/* Sleeps RESUBSCRIBE_MS, waking at once on stop. Returns true to go on. */
static bool pause_before_retry(esc_subscription *s)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += RESUBSCRIBE_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping && pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0)
        ;
    bool go_on = !s->stopping;
    pthread_mutex_unlock(&s->mu);
    return go_on;
}

static void *subscription_main(void *arg)
{
    esc_subscription *s = arg;
    bool failing = false;
    do {
        esc_status st = {0};
        esc_rpc_stream *stream = open_stream(s, &st);
        if (stream && read_stream(s, stream, failing, &st))
            failing = false;
        if (!failing) {
            if (s->who)
                ESC_WARN("%s: event stream ended (%s %s); resubscribing from seq %" PRIu64,
                         s->who, esc_status_name(st.code), st.message, s->from);
            else
                ESC_DEBUG("event stream ended (%s %s)", esc_status_name(st.code), st.message);
        }
        failing = true;
    } while (pause_before_retry(s));
    return NULL;
}

static char *dup_or_null(const char *v)
{
    return v && *v ? esc_xstrdup(v) : NULL;
}

static void subscription_free(esc_subscription *s)
{
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    if (s->watch)
        protobuf_c_message_free_unpacked(&s->watch->base, NULL);
    free(s->node_id);
    free(s->job_id);
    free(s->who);
    free(s);
}

static esc_subscription *subscription_new(esc_rpc_channel *ch, const char *node_id,
                                          const char *job_id, uint64_t from_seq,
                                          esc_subscription_fn fn, void *ud, const char *who)
{
    esc_subscription *s = esc_xcalloc(1, sizeof *s);
    s->ch = ch;
    s->node_id = dup_or_null(node_id);
    s->job_id = dup_or_null(job_id);
    s->who = dup_or_null(who);
    s->from = from_seq;
    s->fn = fn;
    s->ud = ud;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &attr);
    pthread_condattr_destroy(&attr);
    return s;
}

static esc_subscription *subscription_run(esc_subscription *s)
{
    if (pthread_create(&s->thread, NULL, subscription_main, s) != 0) {
        subscription_free(s);
        return NULL;
    }
    return s;
}

esc_subscription *esc_subscription_start(esc_rpc_channel *ch, const char *node_id,
                                         const char *job_id, uint64_t from_seq,
                                         esc_subscription_fn fn, void *ud, const char *who)
{
    return subscription_run(subscription_new(ch, node_id, job_id, from_seq, fn, ud, who));
}

esc_subscription *esc_subscription_watch(esc_rpc_channel *ch, const char *job_id,
                                         const Escher__SubscribeRequest *filter,
                                         esc_subscription_fn fn, void *ud)
{
    esc_subscription *s = subscription_new(ch, NULL, job_id, filter->from_seq, fn, ud, NULL);
    s->watch = (Escher__SubscribeRequest *)esc_pb_dup(&filter->base);
    return subscription_run(s);
}

void esc_subscription_stop(esc_subscription *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    if (s->stream)
        esc_rpc_stream_cancel(s->stream);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    subscription_free(s);
}
