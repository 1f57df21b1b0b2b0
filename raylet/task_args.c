/* task_args.c: what a task here needs before it runs (task_internal.h): its argument
 * objects, fetched when missing and lent to its worker when it starts, and its job's
 * package (packages.h), fetched once per node. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packages.h"
#include "results.h"
#include "spec_args.h"
#include "task_internal.h"
#include "xalloc.h"

const char *task_args_lend(task_manager *tm, task_entry *e, char *why, size_t len)
{
    return spec_args_lend(tm->r, e->spec, why, len);
}

void task_args_unlend(task_entry *e)
{
    spec_args_unlend(e->spec);
}

/* True when the task's package is not unpacked here yet. */
static bool package_missing(task_manager *tm, const task_entry *e)
{
    return *e->spec->package && !packages_ready(tm->r->packages, e->spec->package);
}

/* Starts fetching the task's missing argument objects and package; true when it must
 * wait for them (it is parked in tm->fetching until task_manager_object_arrived and
 * task_manager_package_ready find all there). */
bool task_args_wait(task_manager *tm, task_entry *e)
{
    bool waiting = *e->spec->package &&
                   !packages_use(tm->r->packages, e->spec->package, e->spec->job_id);
    waiting = spec_args_fetch(tm->r, e->spec) || waiting;
    if (waiting)
        esc_strmap_put(tm->fetching, e->spec->task_id, e);
    return waiting;
}

/* Entries waiting for arguments whose wait `done` says is over (removed from the map). */
static task_entry **take_fetching(task_manager *tm, bool (*done)(task_manager *, task_entry *,
                                                                 const char *),
                                  const char *id, size_t *n)
{
    task_entry **out = esc_xcalloc(esc_strmap_count(tm->fetching) + 1, sizeof *out);
    *n = 0;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(tm->fetching, &pos, &k, &v)) {
        if (done(tm, v, id)) {
            out[(*n)++] = v;
            esc_strmap_del(tm->fetching, k);
        }
    }
    return out;
}

static bool all_args_here(task_manager *tm, task_entry *e, const char *id)
{
    (void)id;
    return !spec_args_missing(tm->r, e->spec) && !package_missing(tm, e);
}

static bool needs_missing(task_manager *tm, task_entry *e, const char *id)
{
    return spec_args_waits_for(tm->r, e->spec, id);
}

void task_manager_object_arrived(task_manager *tm, const char *id)
{
    size_t n;
    task_entry **ready = take_fetching(tm, all_args_here, id, &n);
    for (size_t i = 0; i < n; i++)
        task_schedule(tm, ready[i]);
    free(ready);
}

void task_manager_object_failed(task_manager *tm, const char *id, const char *why)
{
    size_t n;
    task_entry **lost = take_fetching(tm, needs_missing, id, &n);
    for (size_t i = 0; i < n; i++) {
        char msg[700];
        snprintf(msg, sizeof msg, "cannot fetch argument %.80s: %.500s", id, why);
        task_list_record_end(tm, lost[i], false);
        results_store_error(tm->r->results, lost[i]->spec, msg);
        task_entry_free(lost[i]);
    }
    free(lost);
}

static bool needs_package(task_manager *tm, task_entry *e, const char *hash)
{
    (void)tm;
    return !strcmp(e->spec->package, hash);
}

void task_manager_package_ready(task_manager *tm, const char *hash, const char *why)
{
    size_t n;
    task_entry **list = take_fetching(tm, why ? needs_package : all_args_here, hash, &n);
    for (size_t i = 0; i < n; i++) {
        if (why) {
            task_list_record_end(tm, list[i], false);
            results_store_error(tm->r->results, list[i]->spec, why);
            task_entry_free(list[i]);
        } else {
            task_schedule(tm, list[i]);
        }
    }
    free(list);
}

static bool of_job(task_manager *tm, task_entry *e, const char *job_id)
{
    (void)tm;
    return !strcmp(e->spec->job_id, job_id);
}

task_entry **task_args_take_job(task_manager *tm, const char *job_id, size_t *n)
{
    return take_fetching(tm, of_job, job_id, n);
}
