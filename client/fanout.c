/* fanout.c: see fanout.h. */
#include "fanout.h"

#include <pthread.h>
#include <stdlib.h>

#include "client_internal.h"
#include "xalloc.h"

typedef struct {
    esc_rpc_channel **channels;
    size_t n;
    size_t next;                   /* the next address to ask (under mu) */
    pthread_mutex_t mu;
    const esc_rpc_method *method;
    const ProtobufCMessage *req;
    int timeout_ms, flags;
    esc_fanout_result *out;
} fanout;

static void *asker_main(void *p)
{
    fanout *f = p;
    for (;;) {
        pthread_mutex_lock(&f->mu);
        size_t i = f->next++;
        pthread_mutex_unlock(&f->mu);
        if (i >= f->n)
            return NULL;
        esc_fanout_result *r = &f->out[i];
        r->code = esc_rpc_call(f->channels[i], f->method, f->req, &r->reply, f->timeout_ms,
                               f->flags, &r->st);
    }
}

esc_fanout_result *esc_fanout_call(esc_client *c, const char *const *addresses, size_t n,
                                   const esc_rpc_method *method, const ProtobufCMessage *req,
                                   int timeout_ms, int flags)
{
    fanout f = {.n = n, .method = method, .req = req, .timeout_ms = timeout_ms, .flags = flags};
    f.out = esc_xcalloc(n + 1, sizeof *f.out);
    f.channels = esc_xcalloc(n + 1, sizeof *f.channels);
    /* The channels first, on this thread: the cache is shared with the rest of the client. */
    for (size_t i = 0; i < n; i++)
        f.channels[i] = esc_client_raylet_channel(c, addresses[i]);
    pthread_mutex_init(&f.mu, NULL);
    pthread_t th[ESC_FANOUT_THREADS];
    size_t started = 0;
    for (; started < ESC_FANOUT_THREADS && started + 1 < n; started++)
        if (pthread_create(&th[started], NULL, asker_main, &f) != 0)
            break;
    asker_main(&f); /* this thread asks too (and alone when n is 1 or no thread started) */
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&f.mu);
    free(f.channels);
    return f.out;
}

void esc_fanout_free(esc_fanout_result *results, size_t n)
{
    for (size_t i = 0; results && i < n; i++)
        if (results[i].reply)
            protobuf_c_message_free_unpacked(results[i].reply, NULL);
    free(results);
}
