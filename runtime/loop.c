/* loop.c: libev loop plus a mutex-protected queue of posted functions, woken by ev_async. */
#include "loop.h"
#include "xalloc.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

typedef struct posted {
    struct posted *next;
    void (*fn)(void *);
    void *arg;
} posted;

struct esc_loop {
    struct ev_loop *ev;
    ev_async wake;
    ev_async stop;
    ev_signal sigint, sigterm;
    int signals;
    pthread_mutex_t mu;
    posted *head, *tail;
};

/* Takes the whole queue at once so functions posted while running wait for the next turn. */
static void run_posted(esc_loop *l)
{
    pthread_mutex_lock(&l->mu);
    posted *p = l->head;
    l->head = l->tail = NULL;
    pthread_mutex_unlock(&l->mu);
    while (p) {
        posted *next = p->next;
        p->fn(p->arg);
        free(p);
        p = next;
    }
}

static void on_wake(struct ev_loop *ev, ev_async *w, int revents)
{
    (void)ev;
    (void)revents;
    run_posted(w->data);
}

static void on_stop(struct ev_loop *ev, ev_async *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(ev, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *ev, ev_signal *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(ev, EVBREAK_ALL);
}

esc_loop *esc_loop_new(void)
{
    esc_loop *l = esc_xcalloc(1, sizeof *l);
    l->ev = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
    pthread_mutex_init(&l->mu, NULL);
    ev_async_init(&l->wake, on_wake);
    l->wake.data = l;
    ev_async_start(l->ev, &l->wake);
    ev_async_init(&l->stop, on_stop);
    ev_async_start(l->ev, &l->stop);
    ev_signal_init(&l->sigint, on_signal, SIGINT);
    ev_signal_init(&l->sigterm, on_signal, SIGTERM);
    return l;
}

void esc_loop_stop_on_signals(esc_loop *l)
{
    ev_signal_start(l->ev, &l->sigint);
    ev_signal_start(l->ev, &l->sigterm);
    ev_unref(l->ev); /* signal watchers alone do not keep the loop alive */
    ev_unref(l->ev);
    l->signals = 1;
}

void esc_loop_free(esc_loop *l)
{
    if (!l)
        return;
    /* Every posted function runs exactly once: what was queued owns references. */
    run_posted(l);
    if (l->signals) {
        ev_ref(l->ev);
        ev_ref(l->ev);
        ev_signal_stop(l->ev, &l->sigint);
        ev_signal_stop(l->ev, &l->sigterm);
    }
    ev_async_stop(l->ev, &l->wake);
    ev_async_stop(l->ev, &l->stop);
    ev_loop_destroy(l->ev);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

struct ev_loop *esc_loop_ev(esc_loop *l)
{
    return l->ev;
}

void esc_loop_post(void *lp, void (*fn)(void *), void *arg)
{
    esc_loop *l = lp;
    posted *p = esc_xmalloc(sizeof *p);
    p->next = NULL;
    p->fn = fn;
    p->arg = arg;
    pthread_mutex_lock(&l->mu);
    if (l->tail)
        l->tail->next = p;
    else
        l->head = p;
    l->tail = p;
    pthread_mutex_unlock(&l->mu);
    ev_async_send(l->ev, &l->wake);
}

void esc_loop_run(esc_loop *l)
{
    ev_run(l->ev, 0);
}

void esc_loop_stop(esc_loop *l)
{
    ev_async_send(l->ev, &l->stop);
}

void esc_loop_drain(esc_loop *l)
{
    run_posted(l);
}
