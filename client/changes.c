/* changes.c: see changes.h. */
#include "changes.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "ids.h"

struct esc_changes {
    esc_watch *watch;
    esc_changes_keep keep;
    void *ud;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* CLOCK_MONOTONIC */
    uint64_t count;
    bool established;       /* the first event came */
};

static void on_event(void *ud, const esc_event *ev)
{
    esc_changes *w = ud;
    bool counts = !w->keep || w->keep(w->ud, ev);
    pthread_mutex_lock(&w->mu);
    w->count += counts;
    bool wake = counts || !w->established;
    w->established = true;
    if (wake)
        pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Waits on cv until done(w) or deadline_ms; returns done(w). Called locked. */
static bool wait_locked(esc_changes *w, bool (*done)(const esc_changes *, uint64_t),
                        uint64_t arg, uint64_t deadline_ms)
{
    while (!done(w, arg)) {
        if (deadline_ms == UINT64_MAX) {
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        uint64_t now = esc_now_ms();
        if (now >= deadline_ms)
            return false;
        struct timespec until = esc_time_after_ms(CLOCK_MONOTONIC, deadline_ms - now);
        pthread_cond_timedwait(&w->cv, &w->mu, &until);
    }
    return true;
}

static bool is_established(const esc_changes *w, uint64_t unused)
{
    (void)unused;
    return w->established;
}

static bool passed(const esc_changes *w, uint64_t mark)
{
    return w->count > mark;
}

int esc_changes_start(esc_client *c, const esc_watch_filter *f, esc_changes_keep keep,
                      void *ud, int wait_ms, esc_changes **out, esc_status *st)
{
    *out = NULL;
    esc_changes *w = calloc(1, sizeof *w);
    if (!w)
        return esc_status_set(st, ESC_RESOURCE_EXHAUSTED, "out of memory");
    w->keep = keep;
    w->ud = ud;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &attr);
    pthread_condattr_destroy(&attr);
    int rc = esc_subscribe(c, f, on_event, w, &w->watch, st);
    if (rc == ESC_OK) {
        pthread_mutex_lock(&w->mu);
        bool ok = wait_locked(w, is_established, 0, esc_now_ms() + (uint64_t)wait_ms);
        pthread_mutex_unlock(&w->mu);
        if (!ok)
            rc = esc_status_set(st, ESC_UNAVAILABLE, "no event stream from the GCS in %d ms",
                                wait_ms);
    }
    if (rc != ESC_OK) {
        esc_changes_stop(w);
        return rc;
    }
    *out = w;
    return ESC_OK;
}

uint64_t esc_changes_mark(esc_changes *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t n = w->count;
    pthread_mutex_unlock(&w->mu);
    return n;
}

bool esc_changes_wait(esc_changes *w, uint64_t mark, uint64_t deadline_ms)
{
    pthread_mutex_lock(&w->mu);
    bool ok = wait_locked(w, passed, mark, deadline_ms);
    pthread_mutex_unlock(&w->mu);
    return ok;
}

void esc_changes_poke(esc_changes *w)
{
    pthread_mutex_lock(&w->mu);
    w->count++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void esc_changes_stop(esc_changes *w)
{
    if (!w)
        return;
    esc_unsubscribe(w->watch);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
