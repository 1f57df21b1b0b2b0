/* task_lineage.c: the ends of forwarded tasks and their lineage (task_internal.h,
 * docs/tasks.md "When a node fails"). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "job_mirror.h"
#include "log.h"
#include "names.h"
#include "pbutil.h"
#include "peers.h"
#include "results.h"
#include "secret.h"
#include "task_internal.h"
#include "xalloc.h"

/* Keeps an ended task's spec for reconstruction, forgetting the oldest past the bound. */
void task_lineage_keep(task_manager *tm, task_entry *e)
{
    char **slot = &tm->lineage_order[tm->lineage_next];
    tm->lineage_next = (tm->lineage_next + 1) % LINEAGE_MAX;
    if (*slot) {
        task_entry *old = esc_strmap_del(tm->lineage, *slot);
        if (old)
            task_entry_free(old);
        free(*slot);
    }
    *slot = esc_xstrdup(e->spec->task_id);
    free(e->spilled_to);
    e->spilled_to = NULL;
    esc_strmap_put(tm->lineage, e->spec->task_id, e);
}

/* True while the task is somewhere in this raylet: queued, fetching, running, forwarded,
 * or its forwardee just died and the directory is being asked whether it ended. */
static bool in_progress(task_manager *tm, const char *task_id)
{
    return esc_strmap_get(tm->spilled, task_id) || esc_strmap_get(tm->checking, task_id) ||
           esc_strmap_get(tm->running, task_id) ||
           esc_strmap_get(tm->fetching, task_id) || task_find_queued(tm, task_id);
}

/* Who may have a task run again: a raylet (the daemon key: it fetches an argument for a
 * task whose job the directory already let read it), or a client whose job may read the
 * task's objects (its own job, or one that granted it its namespace). */
static bool reconstruct_allowed(task_manager *tm, const esc_rpc_ctx *call, const task_entry *e,
                                const char *object_id, char *why, size_t len)
{
    if (!e || esc_rpc_ctx_from_daemon(call))
        return true;
    char reader[80];
    job_mirror *m = tm->r->jobs;
    return job_mirror_caller(m, call, "", "", reader, why, len) == ESC_OK &&
           job_mirror_reader_ok(m, reader, object_id, e->spec->job_id, why, len) == ESC_OK;
}

/* A reader found every copy of a return gone with its node: the task that made it runs
 * again, from its lineage, once however many readers ask. */
void task_lineage_handle_reconstruct(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__ReconstructRequest *req = (const Escher__ReconstructRequest *)msg;
    Escher__ReconstructReply rep = ESCHER__RECONSTRUCT_REPLY__INIT;
    size_t n = strlen(req->object_id);
    if (!esc_object_id_valid(req->object_id) || n <= 4) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "invalid object id");
        return;
    }
    char task_id[ESC_OBJECT_ID_MAX];
    snprintf(task_id, sizeof task_id, "%.*s", (int)(n - 4), req->object_id); /* esc_return_id */
    char why[300];
    if (!reconstruct_allowed(tm, call, esc_strmap_get(tm->lineage, task_id), req->object_id,
                             why, sizeof why)) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    task_entry *e = esc_strmap_del(tm->lineage, task_id);
    rep.found = e || in_progress(tm, task_id);
    if (e) /* before the reply, which frees the request */
        ESC_WARN("object %s was lost with its node; running task %s (%s) again from its "
                 "lineage", req->object_id, task_id, e->spec->name);
    esc_rpc_reply(call, &rep.base);
    if (!e)
        return;
    e->spec->spill_hops = 0;
    task_schedule(tm, e);
}

/* A notice of a task forwarded from here comes from the task's path: it carries the
 * credential of the spec this raylet forwarded (docs/security.md). Constant time. */
static bool done_from_path(const task_entry *e, const Escher__TaskDone *d)
{
    const char *want = e->spec->job_credential;
    size_t n = strlen(want);
    if (!n)
        return true; /* a spec without one (an older client): nothing to check */
    return esc_secret_equal(d->job_credential, strlen(d->job_credential), want);
}

/* A raylet this one forwarded tasks to says they ended: the notice goes on the way the
 * task came here (the spec kept at forwarding says whom to tell), or to the owner. */
void task_lineage_handle_tasks_done(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__TasksDoneRequest *req = (const Escher__TasksDoneRequest *)msg;
    const char *refused = NULL;
    for (size_t i = 0; i < req->n_done; i++) {
        const Escher__TaskDone *d = req->done[i];
        task_entry *e = esc_strmap_get(tm->spilled, d->task_id);
        if (e && !done_from_path(e, d)) {
            refused = refused ? refused : d->task_id;
            continue;
        }
        Escher__ReadyObject **objs = esc_xmalloc((d->n_returns + 1) * sizeof *objs);
        for (size_t k = 0; k < d->n_returns; k++)
            objs[k] = (Escher__ReadyObject *)esc_pb_dup(&d->returns[k]->base);
        const char *back = e ? e->spec->reply_to : "";
        results_deliver(tm->r->results, back[0] ? peers_get(tm->r->peers, back) : NULL, d->task_id,
                        e ? e->spec->owner_id : d->owner_id,
                        e ? e->spec->job_credential : d->job_credential, objs, d->n_returns);
        /* It ended: its results exist, so its node's death must not run it again; its
         * origin keeps it as lineage, in case a reader finds them lost. */
        if (e && !e->spec->actor_creation) {
            esc_strmap_del(tm->spilled, d->task_id);
            if (!strcmp(e->spec->origin, tm->r->node_id))
                task_lineage_keep(tm, e);
            else
                task_entry_free(e);
        }
    }
    if (refused) {
        char why[200];
        snprintf(why, sizeof why,
                 "a notice for task %.80s without its job's credential: not from its path",
                 refused);
        ESC_WARN("TasksDone from %s refused: %s", esc_rpc_ctx_peer(call), why);
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    Escher__TasksDoneReply rep = ESCHER__TASKS_DONE_REPLY__INIT;
    esc_rpc_reply(call, &rep.base);
}

/* Forgets the lineage of the job (every job's when job_id is NULL). The ring keeps the
 * ids: stale ones are skipped when their slot comes round. */
void task_lineage_drop(task_manager *tm, const char *job_id)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(tm->lineage, &pos, &k, &v)) {
        task_entry *e = v;
        if (!job_id || !strcmp(e->spec->job_id, job_id)) {
            esc_strmap_del(tm->lineage, k); /* deleting the entry just returned is allowed */
            task_entry_free(e);
        }
    }
}
