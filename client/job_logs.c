/* job_logs.c: esc_job_logs and esc_task_logs (jobs.h), through Raylet.StreamLogs.
 *
 * A task's output lives in the log folder of the node that ran it; that node's raylet
 * serves it. The reader does not need to know which node that is: it asks the alive
 * raylets in turn, and the one that has the output (or, following, holds the task)
 * answers with an empty first message, the others with NOT_FOUND at once.
 *
 * Following, the raylet that holds the entrypoint (TaskService.GetTaskState from the
 * node it was submitted to, along its forwards) is asked first.
 *
 * Following a job whose entrypoint is on no raylet yet (the submission is on its way,
 * or a forward is), the reader asks again when it starts somewhere (its raylet writes
 * the job's "started" key, job_internal.h: a watch tells) or the job ends. Once found,
 * the raylet streams the output as it grows and ends the stream when the task ended
 * there. */
#include "changes.h"
#include "job_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "raylet.pb-c.h"
#include "workdir.h"
#include "xalloc.h"

typedef struct {
    char **addr;
    size_t n;
} raylet_list;

static void raylets_free(raylet_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->addr[i]);
    free(l->addr);
    *l = (raylet_list){0};
}

/* The alive nodes' raylets, from the GCS; first the one at first_node when it is one. */
static int alive_raylets(esc_client *c, const char *first_node, raylet_list *l,
                         esc_status *st)
{
    *l = (raylet_list){0};
    Escher__GetClusterStatusRequest req = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    ProtobufCMessage *m;
    int rc = esc_client_call(c, &ESC_M_GCS_GET_CLUSTER_STATUS, &req.base, &m,
                             ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    const Escher__GetClusterStatusReply *r = (const Escher__GetClusterStatusReply *)m;
    l->addr = esc_xcalloc(r->n_nodes + 1, sizeof *l->addr);
    for (size_t i = 0; i < r->n_nodes; i++) {
        const Escher__NodeInfo *n = r->nodes[i]->node;
        if (!n || n->state == ESCHER__NODE_STATE__NODE_DEAD || !*n->address)
            continue;
        l->addr[l->n] = esc_xstrdup(n->address);
        if (first_node && !strcmp(n->node_id, first_node) && l->n > 0) {
            char *t = l->addr[0];
            l->addr[0] = l->addr[l->n];
            l->addr[l->n] = t;
        }
        l->n++;
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return ESC_OK;
}

/* Streams the task's output from one raylet into fn. Returns NOT_FOUND when that raylet
 * has none (and, following, does not hold the task); *found tells whether it answered
 * that it has it before the stream ended. */
static int read_from(esc_client *c, const char *address, const char *task_id, bool follow,
                     esc_log_fn fn, void *ud, bool *found, esc_status *st)
{
    Escher__StreamLogsRequest req = ESCHER__STREAM_LOGS_REQUEST__INIT;
    req.task_id = (char *)task_id;
    req.follow = follow;
    *found = false;
    esc_status end = {0};
    esc_rpc_stream *s = esc_rpc_stream_open(esc_client_raylet_channel(c, address),
                                            &ESC_M_RAYLET_STREAM_LOGS, &req.base, &end);
    if (!s) {
        if (st)
            *st = end;
        return end.code ? end.code : ESC_UNAVAILABLE;
    }
    ProtobufCMessage *m;
    int rc = ESC_OK;
    while (esc_rpc_stream_next(s, &m, &end)) {
        const Escher__LogChunk *ch = (const Escher__LogChunk *)m;
        *found = true;
        if (ch->data.len && (ch->stream == 1 || ch->stream == 2) &&
            fn(ud, (int)ch->stream, ch->data.data, ch->data.len) != 0)
            rc = esc_status_set(&end, ESC_CANCELLED, "the reader stopped");
        protobuf_c_message_free_unpacked(m, NULL);
        if (rc != ESC_OK) {
            esc_rpc_stream_cancel(s);
            break;
        }
    }
    esc_rpc_stream_free(s);
    if (rc == ESC_OK)
        rc = end.code;
    if (st)
        *st = end;
    return rc;
}

/* One round over the alive raylets. ESC_OK or another end once one had the output;
 * NOT_FOUND when none did. */
static int read_round(esc_client *c, const char *first_node, const char *task_id,
                      bool follow, esc_log_fn fn, void *ud, esc_status *st)
{
    raylet_list l;
    int rc = alive_raylets(c, first_node, &l, st);
    if (rc != ESC_OK)
        return rc;
    rc = ESC_NOT_FOUND;
    for (size_t i = 0; i < l.n && rc == ESC_NOT_FOUND; i++) {
        bool found;
        int one = read_from(c, l.addr[i], task_id, follow, fn, ud, &found, st);
        /* NOT_FOUND after a first message too: the task left that node before it ran
         * (forwarded), and is elsewhere now. A raylet that does not answer may be dying:
         * the others are asked. */
        if (one != ESC_NOT_FOUND && one != ESC_UNAVAILABLE && one != ESC_DEADLINE_EXCEEDED)
            rc = one;
    }
    raylets_free(&l);
    return rc;
}

int esc_task_logs(esc_client *c, const char *task_id, esc_log_fn fn, void *ud,
                  esc_status *st)
{
    if (!task_id || !esc_object_id_valid(task_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "not a task id: \"%s\"",
                              task_id ? task_id : "");
    int rc = read_round(c, NULL, task_id, false, fn, ud, st);
    if (rc == ESC_NOT_FOUND)
        esc_status_set(st, rc, "no logs of task %s on any alive node", task_id);
    return rc;
}

/* Whether the GCS says job_id runs (a GCS that does not answer: assume it does). */
static bool job_running(esc_client *c, const char *job_id)
{
    esc_job_info *jobs;
    size_t n;
    if (esc_list_jobs(c, &jobs, &n, NULL) != ESC_OK)
        return true;
    bool running = false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(jobs[i].id, job_id))
            running = !strcmp(jobs[i].state, "RUNNING");
    esc_jobs_free(jobs, n);
    return running;
}

/* What may let a round that found nothing find the entrypoint: it started somewhere
 * (its raylet writes "<job>/started", job_internal.h), or the job ended. */
typedef struct {
    const char *job_id;
    char key[300];
} follow_keep;

static bool follow_counts(void *ud, const esc_event *ev)
{
    const follow_keep *k = ud;
    return (ev->kind == ESC_EVENT_KV && !strcmp(ev->key, k->key)) ||
           (ev->kind == ESC_EVENT_JOB_FINISHED && !strcmp(ev->job_id, k->job_id));
}

/* Following: rounds until a raylet holds the entrypoint and its stream ends, or the job
 * ended without it running anywhere. Between rounds it waits for an event that may
 * change the answer (follow_counts), never for a period. */
static int follow_job(esc_client *c, const char *job_id, const char *node, const char *task,
                      esc_log_fn fn, void *ud, esc_status *st)
{
    follow_keep keep = {.job_id = job_id};
    snprintf(keep.key, sizeof keep.key, "%s/started", job_id);
    esc_kv_filter kv = {.ns = ESC_JOBS_NS, .prefix = keep.key};
    esc_watch_filter f = {.kv = &kv, .nkv = 1};
    esc_changes *w = NULL;
    int rc = esc_changes_start(c, &f, follow_counts, &keep, false, c->timeout_ms, &w, st);
    while (rc == ESC_OK) {
        uint64_t mark = esc_changes_mark(w);
        /* Looked at before the round: a job that ends during a round that found nothing
         * ran its entrypoint nowhere this round saw, and the next round looks at every
         * node once more without following. */
        bool running = job_running(c, job_id);
        /* The raylet that holds it first: raylets that share a log folder (several on
         * one machine) could otherwise answer for a task that runs on another. */
        char holder[128];
        const char *first = job_entrypoint_node(c, node, task, holder, sizeof holder)
                                ? holder : node;
        rc = read_round(c, first, task, running, fn, ud, st);
        if (rc != ESC_NOT_FOUND)
            break;
        rc = ESC_OK;
        if (!running) {
            esc_status_set(st, ESC_OK, "%s", "");
            break;
        }
        esc_changes_wait(w, mark, UINT64_MAX);
    }
    esc_changes_stop(w);
    return rc;
}

int esc_job_logs(esc_client *c, const char *job_id, bool follow, esc_log_fn fn, void *ud,
                 esc_status *st)
{
    if (!job_id || !esc_name_valid(job_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "not a job id: \"%s\"",
                              job_id ? job_id : "");
    json_t *rec;
    int rc = job_record_get(c, job_id, &rec, st);
    if (rc == ESC_NOT_FOUND)
        return esc_status_set(st, rc, "no job %s was submitted (it has no record)", job_id);
    if (rc != ESC_OK)
        return rc;
    char task[ESC_ID_MAX], node[128];
    const char *t = json_string_value(json_object_get(rec, "task_id"));
    const char *n = json_string_value(json_object_get(rec, "submit_node"));
    snprintf(task, sizeof task, "%s", t ? t : "");
    snprintf(node, sizeof node, "%s", n ? n : "");
    json_decref(rec);
    if (!esc_object_id_valid(task))
        return esc_status_set(st, ESC_INTERNAL, "job %s has no entrypoint task in its record",
                              job_id);
    if (follow)
        return follow_job(c, job_id, node, task, fn, ud, st);
    rc = read_round(c, node, task, false, fn, ud, st);
    if (rc == ESC_NOT_FOUND)
        esc_status_set(st, rc, "no logs of job %s (entrypoint task %s) on any alive node: it "
                       "has not started yet, or its node is gone", job_id, task);
    return rc;
}
