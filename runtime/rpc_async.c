/* rpc_async.c: see rpc_async.h. */
#include "rpc_async.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pbutil.h"
#include "xalloc.h"

typedef struct pending_call {
    struct pending_call *next;
    esc_rpc_channel *ch;
    const esc_rpc_method *method; /* static (generated), so not copied */
    ProtobufCMessage *req;
    int timeout_ms, flags;
    esc_rpc_async_fn fn;
    void *ud;
    /* outcome */
    int code;
    esc_status st;
    ProtobufCMessage *reply;
} pending_call;

struct esc_rpc_async {
    esc_rpc_post_fn post;
    void *post_ud;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pending_call *head, *tail;
    bool stopping;
};

static void call_free(pending_call *p)
{
    protobuf_c_message_free_unpacked(p->req, NULL);
    free(p);
}

/* Owner's thread: hand the outcome to the callback. */
static void deliver(void *arg)
{
    pending_call *p = arg;
    if (p->fn)
        p->fn(p->ud, p->code, &p->st, p->reply);
    else if (p->reply)
        protobuf_c_message_free_unpacked(p->reply, NULL);
    call_free(p);
}

static pending_call *next_call(esc_rpc_async *a)
{
    pthread_mutex_lock(&a->mu);
    while (!a->head && !a->stopping)
        pthread_cond_wait(&a->cv, &a->mu);
    pending_call *p = a->stopping ? NULL : a->head;
    if (p) {
        a->head = p->next;
        if (!a->head)
            a->tail = NULL;
    }
    pthread_mutex_unlock(&a->mu);
    return p;
}

static void *sender_main(void *arg)
{
    esc_rpc_async *a = arg;
    pending_call *p;
    while ((p = next_call(a)) != NULL) {
        p->code =
            esc_rpc_call(p->ch, p->method, p->req, &p->reply, p->timeout_ms, p->flags, &p->st);
        a->post(a->post_ud, deliver, p);
    }
    return NULL;
}

esc_rpc_async *esc_rpc_async_new(esc_rpc_post_fn post, void *post_ud)
{
    esc_rpc_async *a = esc_xcalloc(1, sizeof *a);
    a->post = post;
    a->post_ud = post_ud;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    if (pthread_create(&a->thread, NULL, sender_main, a) != 0) {
        pthread_cond_destroy(&a->cv);
        pthread_mutex_destroy(&a->mu);
        free(a);
        return NULL;
    }
    return a;
}

void esc_rpc_async_call(esc_rpc_async *a, esc_rpc_channel *ch, const esc_rpc_method *method,
                        const ProtobufCMessage *req, int timeout_ms, int flags,
                        esc_rpc_async_fn fn, void *ud)
{
    pending_call *p = esc_xcalloc(1, sizeof *p);
    p->ch = ch;
    p->method = method;
    p->req = esc_pb_dup(req);
    p->timeout_ms = timeout_ms;
    p->flags = flags;
    p->fn = fn;
    p->ud = ud;
    pthread_mutex_lock(&a->mu);
    if (a->tail)
        a->tail->next = p;
    else
        a->head = p;
    a->tail = p;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* Detaches the calls not made yet (under the lock) and posts each with code. */
static void fail_list(esc_rpc_async *a, pending_call *head, int code, const char *msg)
{
    while (head) {
        pending_call *p = head;
        head = p->next;
        p->code = esc_status_set(&p->st, code, "%s", msg);
        a->post(a->post_ud, deliver, p);
    }
}

void esc_rpc_async_fail_queued(esc_rpc_async *a, int code, const char *msg)
{
    pthread_mutex_lock(&a->mu);
    pending_call *head = a->head;
    a->head = a->tail = NULL;
    pthread_mutex_unlock(&a->mu);
    fail_list(a, head, code, msg);
}

void esc_rpc_async_free(esc_rpc_async *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stopping = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    /* Calls never made end as UNAVAILABLE, so every callback still runs once. */
    fail_list(a, a->head, ESC_UNAVAILABLE, "shutting down");
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
