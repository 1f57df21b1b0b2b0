/* changes.c: see changes.h. */
#include "changes.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "client_internal.h"
#include "ids.h"
#include "xalloc.h"

struct esc_changes {
    esc_waker wake;
    esc_watch *watch;
    esc_owner *owner;       /* listened to, or NULL */
    esc_changes_keep keep;
    void *ud;
    atomic_bool established; /* the first event came */
};

static void on_event(void *ud, const esc_event *ev)
{
    esc_changes *w = ud;
    bool first = !atomic_exchange(&w->established, true);
    if (first || !w->keep || w->keep(w->ud, ev))
        esc_waker_poke(&w->wake);
}

static bool wait_established(esc_changes *w, uint64_t deadline_ms)
{
    for (;;) {
        uint64_t gen = esc_waker_gen(&w->wake, NULL);
        if (atomic_load(&w->established))
            return true;
        if (esc_now_ms() >= deadline_ms)
            return false;
        esc_waker_wait(&w->wake, gen, deadline_ms);
    }
}

int esc_changes_start(esc_client *c, const esc_watch_filter *f, esc_changes_keep keep,
                      void *ud, bool follow_owner, int wait_ms, esc_changes **out,
                      esc_status *st)
{
    *out = NULL;
    esc_changes *w = esc_xcalloc(1, sizeof *w);
    esc_waker_init(&w->wake);
    w->keep = keep;
    w->ud = ud;
    atomic_init(&w->established, false);
    int rc = ESC_OK;
    if (follow_owner) {
        esc_status ost = {0};
        w->owner = esc_owner_get(c, &ost);
        if (w->owner)
            esc_owner_listen(w->owner, &w->wake);
        else
            rc = esc_status_set(st, ost.code ? ost.code : ESC_INTERNAL, "%s", ost.message);
    }
    if (rc == ESC_OK)
        rc = esc_subscribe(c, f, on_event, w, &w->watch, st);
    if (rc == ESC_OK && !wait_established(w, esc_now_ms() + (uint64_t)wait_ms))
        rc = esc_status_set(st, ESC_UNAVAILABLE, "no event stream from the GCS in %d ms",
                            wait_ms);
    if (rc != ESC_OK) {
        esc_changes_stop(w);
        return rc;
    }
    *out = w;
    return ESC_OK;
}

uint64_t esc_changes_mark(esc_changes *w)
{
    return esc_waker_gen(&w->wake, NULL);
}

bool esc_changes_wait(esc_changes *w, uint64_t mark, uint64_t deadline_ms)
{
    esc_waker_wait(&w->wake, mark, deadline_ms);
    return esc_waker_gen(&w->wake, NULL) != mark;
}

esc_waker *esc_changes_waker(esc_changes *w)
{
    return &w->wake;
}

void esc_changes_poke(esc_changes *w)
{
    esc_waker_poke(&w->wake);
}

void esc_changes_stop(esc_changes *w)
{
    if (!w)
        return;
    esc_unsubscribe(w->watch);
    if (w->owner)
        esc_owner_unlisten(w->owner, &w->wake);
    esc_waker_destroy(&w->wake);
    free(w);
}
