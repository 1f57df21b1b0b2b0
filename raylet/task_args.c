/* task_args.c: what a task here needs before it runs (task_internal.h): its argument
 * objects, fetched when missing and lent to its worker when it starts, and its job's
 * package (packages.h), fetched once per node. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_internal.h"
#include "job_mirror.h"
#include "object_fetch.h"
#include "object_service.h"
#include "packages.h"
#include "results.h"

/* Object arguments become inline bytes for the worker: views into this node's store,
 * lent to the spec only while worker_pool_run copies it. Returns NULL, or why the task
 * cannot run. */
const char *task_args_lend(task_manager *tm, task_entry *e, char *why, size_t len)
{
    for (size_t i = 0; i < e->spec->n_args; i++) {
        Escher__TaskArg *a = e->spec->args[i];
        if (!*a->object_id)
            continue;
        object_view v;
        if (!object_service_get(tm->r, a->object_id, &v)) {
            snprintf(why, len, "argument object %.80s is not on this node (arguments from "
                     "other nodes are not fetched yet)", a->object_id);
            return why;
        }
        /* A copy here is no licence: the object's job must be the task's or grant it
         * (the same rule as Pull, docs/security.md, "Objects"). */
        if (*v.job_id && !job_mirror_may_use(tm->r->jobs, e->spec->job_id, v.job_id)) {
            snprintf(why, len, "PERMISSION_DENIED: argument %.80s belongs to job %.40s, which did "
                     "not grant its namespace to job %.40s", a->object_id, v.job_id,
                     e->spec->job_id);
            return why;
        }
        if (v.is_error) {
            snprintf(why, len, "argument %.80s is a failed task's: %.300s", a->object_id, v.error);
            return why;
        }
        a->data = (ProtobufCBinaryData){(size_t)v.size, (uint8_t *)v.data};
    }
    return NULL;
}

void task_args_unlend(task_entry *e)
{
    for (size_t i = 0; i < e->spec->n_args; i++)
        if (*e->spec->args[i]->object_id)
            e->spec->args[i]->data = (ProtobufCBinaryData){0, NULL};
}

/* True when an argument object is not on this node yet. */
static bool arg_missing(task_manager *tm, const Escher__TaskArg *a)
{
    object_view v;
    return *a->object_id && !object_service_get(tm->r, a->object_id, &v);
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
    for (size_t i = 0; i < e->spec->n_args; i++) {
        if (arg_missing(tm, e->spec->args[i])) {
            object_fetch_start(tm->r->fetcher, e->spec->args[i]->object_id, e->spec->job_id,
                               e->spec->job_credential);
            waiting = true;
        }
    }
    if (waiting)
        esc_strmap_put(tm->fetching, e->spec->task_id, e);
    return waiting;
}

/* Entries waiting for arguments whose wait `done` says is over (removed from the map). */
static task_entry **take_fetching(task_manager *tm, bool (*done)(task_manager *, task_entry *,
                                                                 const char *),
                                  const char *id, size_t *n)
{
    task_entry **out = calloc(esc_strmap_count(tm->fetching) + 1, sizeof *out);
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
    for (size_t i = 0; i < e->spec->n_args; i++)
        if (arg_missing(tm, e->spec->args[i]))
            return false;
    return !package_missing(tm, e);
}

static bool needs_missing(task_manager *tm, task_entry *e, const char *id)
{
    for (size_t i = 0; i < e->spec->n_args; i++)
        if (!strcmp(e->spec->args[i]->object_id, id) && arg_missing(tm, e->spec->args[i]))
            return true;
    return false;
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
