/* esl_monitor.c: see esl_monitor.h. */
#include "esl_monitor.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "changes.h"
#include "xalloc.h"

#define ESTABLISH_MS 10000

struct esl_monitor {
    void (*step)(void *ud);
    void *ud;
    esc_changes *changes;
    atomic_bool stop;
    pthread_t thread;
};

static void *monitor_main(void *arg)
{
    esl_monitor *m = arg;
    while (!atomic_load(&m->stop)) {
        uint64_t mark = esc_changes_mark(m->changes);
        m->step(m->ud);
        esc_changes_wait(m->changes, mark, UINT64_MAX);
    }
    return NULL;
}

int esl_monitor_start(esc_client *c, const char *prefix, bool follow_owner,
                      void (*step)(void *ud), void *ud, esl_monitor **out, esc_status *st)
{
    *out = NULL;
    esl_monitor *m = esc_xcalloc(1, sizeof *m);
    m->step = step;
    m->ud = ud;
    atomic_init(&m->stop, false);
    const char *prefixes[] = {prefix};
    esc_watch_filter f = {.resources = prefixes, .nresources = 1, .loads = true};
    int rc = esc_changes_start(c, &f, NULL, NULL, follow_owner, ESTABLISH_MS, &m->changes, st);
    if (rc != ESC_OK) {
        free(m);
        return rc;
    }
    if (pthread_create(&m->thread, NULL, monitor_main, m) != 0) {
        esc_changes_stop(m->changes);
        free(m);
        return esc_status_set(st, ESC_INTERNAL, "cannot start the policy's thread");
    }
    *out = m;
    return ESC_OK;
}

void esl_monitor_stop(esl_monitor *m)
{
    if (!m)
        return;
    atomic_store(&m->stop, true);
    esc_changes_poke(m->changes);
    pthread_join(m->thread, NULL);
    esc_changes_stop(m->changes);
    free(m);
}
