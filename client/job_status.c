/* job_status.c: esc_job_status and esc_job_list (jobs.h).
 *
 * A submitted job is seen through three sources: the GCS's job table (is it running,
 * FINISHED or FAILED: the authority), the record its driver keeps in the key-value store
 * (entrypoint, task, result; job_record.c), and, while it runs, the raylets: the one the
 * entrypoint was submitted to says whether it waits in its queue (PENDING, with what
 * its request lacks), runs, or went to another node, which is then asked in turn. */
#include "job_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qty.h"
#include "task.pb-c.h"
#include "xalloc.h"

/* Forwards followed from the submit node: a task is forwarded at most
 * ESC_MAX_SPILL_HOPS (2) times, plus a re-submission after a node death. */
#define MAX_HOPS 4

/* ------------------------------------------------------------------ the raylets */

int job_task_state(esc_client *c, const char *address, const char *task_id,
                   Escher__TaskStateReply **reply, esc_status *st)
{
    Escher__TaskStateRequest req = ESCHER__TASK_STATE_REQUEST__INIT;
    req.task_id = (char *)task_id;
    ProtobufCMessage *m;
    int rc =
        esc_rpc_call(esc_client_raylet_channel(c, address), &ESC_M_TASK_SERVICE_GET_TASK_STATE,
                     &req.base, &m, c->timeout_ms, ESC_RPC_IDEMPOTENT, st);
    *reply = rc == ESC_OK ? (Escher__TaskStateReply *)m : NULL;
    return rc;
}

static void take_request(esc_job_status_info *j, const Escher__TaskStateReply *r)
{
    j->infeasible = r->infeasible;
    j->missing = esc_xcalloc(r->n_missing + 1, sizeof *j->missing);
    for (size_t i = 0; i < r->n_missing; i++)
        j->missing[j->nmissing++] = esc_xstrdup(r->missing[i]);
    j->request = esc_xcalloc(r->n_shape + 1, sizeof *j->request);
    for (size_t i = 0; i < r->n_shape; i++)
        j->request[j->nrequest++] = (esc_amount){.name = esc_xstrdup(r->shape[i]->name),
                                                 .value = r->shape[i]->value};
}

/* Asks the submit node's raylet where the task is, then the raylets it was forwarded
 * to. Returns the reply of the raylet that holds it (queued, fetching or running; the
 * caller frees it) with that node's id in node, or NULL when none does (not arrived yet,
 * ended) or one did not answer. */
static Escher__TaskStateReply *find_holder(esc_client *c, const char *submit_node,
                                          const char *task_id, char *node, size_t len)
{
    char address[300];
    if (!submit_node[0] ||
        esc_client_raylet_address(c, submit_node, address, sizeof address, NULL) != ESC_OK)
        return NULL;
    snprintf(node, len, "%s", submit_node);
    for (int hop = 0; hop < MAX_HOPS; hop++) {
        Escher__TaskStateReply *r;
        if (job_task_state(c, address, task_id, &r, NULL) != ESC_OK)
            return NULL;
        if (r->phase == ESCHER__TASK_PHASE__TASK_QUEUED ||
            r->phase == ESCHER__TASK_PHASE__TASK_RUNNING ||
            r->phase == ESCHER__TASK_PHASE__TASK_FETCHING)
            return r;
        bool forwarded = r->phase == ESCHER__TASK_PHASE__TASK_FORWARDED && *r->address;
        if (forwarded) {
            snprintf(node, len, "%s", r->node_id);
            snprintf(address, sizeof address, "%s", r->address);
        }
        protobuf_c_message_free_unpacked(&r->base, NULL);
        if (!forwarded)
            return NULL;
    }
    return NULL;
}

bool job_entrypoint_node(esc_client *c, const char *submit_node, const char *task_id,
                         char *node, size_t len)
{
    Escher__TaskStateReply *r = find_holder(c, submit_node, task_id, node, len);
    if (r)
        protobuf_c_message_free_unpacked(&r->base, NULL);
    return r != NULL;
}

/* Where the entrypoint is: PENDING with its request while it is queued. Leaves j alone
 * when no raylet holds it or one does not answer. */
static void locate_entrypoint(esc_client *c, esc_job_status_info *j)
{
    char node[128];
    Escher__TaskStateReply *r = find_holder(c, j->submit_node, j->task_id, node, sizeof node);
    if (!r)
        return;
    if (r->phase == ESCHER__TASK_PHASE__TASK_QUEUED) {
        free(j->state);
        j->state = esc_xstrdup("PENDING");
        take_request(j, r);
    }
    free(j->node_id);
    j->node_id = esc_xstrdup(node);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* ------------------------------------------------------------------ the view */

static char *rec_str(const json_t *rec, const char *key)
{
    const char *s = json_string_value(json_object_get(rec, key));
    return esc_xstrdup(s ? s : "");
}

static uint64_t rec_u64(const json_t *rec, const char *key)
{
    json_int_t v = json_integer_value(json_object_get(rec, key));
    return v > 0 ? (uint64_t)v : 0;
}

static void take_record(esc_client *c, esc_job_status_info *j, const json_t *rec)
{
    j->has_record = true;
    j->status = rec_str(rec, "status");
    j->namespace_ = rec_str(rec, "namespace");
    j->task_id = rec_str(rec, "task_id");
    j->submit_node = rec_str(rec, "submit_node");
    j->message = rec_str(rec, "message");
    if (json_is_string(json_object_get(rec, "working_dir")))
        j->working_dir = rec_str(rec, "working_dir");
    j->working_dir_bytes = rec_u64(rec, "working_dir_bytes");
    j->submitted_ms = rec_u64(rec, "submitted_ms");
    j->end_ms = rec_u64(rec, "end_ms");
    json_t *code = json_object_get(rec, "exit_code");
    j->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
    json_t *argv = json_object_get(rec, "entrypoint");
    j->entrypoint = esc_xcalloc(json_array_size(argv) + 1, sizeof *j->entrypoint);
    size_t i;
    json_t *a;
    json_array_foreach(argv, i, a)
    {
        const char *s = json_string_value(a);
        j->entrypoint[j->nentrypoint++] = esc_xstrdup(s ? s : "");
    }
    j->stopped = job_stop_reason(c, j->id, NULL, 0);
}

/* "CPU=100, ns/x=1" into buf. */
static void request_text(const esc_job_status_info *j, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < j->nrequest && used < len; i++) {
        char q[48];
        int n = snprintf(buf + used, len - used, "%s%s=%s", i ? ", " : "", j->request[i].name,
                         esc_qty_format(j->request[i].value, q, sizeof q));
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

static void pending_text(const esc_job_status_info *j, char *buf, size_t len)
{
    char what[512];
    if (j->nmissing) {
        size_t used = (size_t)snprintf(buf, len, "pending: no node has ");
        for (size_t i = 0; i < j->nmissing && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                                     j->missing[i]);
        return;
    }
    request_text(j, what, sizeof what);
    snprintf(buf, len, j->infeasible ? "pending: no node can hold %s" : "pending: waiting for %s",
             what);
}

/* What became of the entrypoint, in a few words. */
static char *result_text(const esc_job_status_info *j)
{
    char buf[640];
    const char *status = j->status;
    if (!j->has_record)
        snprintf(buf, sizeof buf, "-");
    else if (!strcmp(j->state, "PENDING"))
        pending_text(j, buf, sizeof buf);
    else if (!strcmp(status, "RUNNING") && !strcmp(j->state, "RUNNING"))
        snprintf(buf, sizeof buf, j->stopped ? "stopping" : "running");
    else if (!strcmp(status, "RUNNING"))
        /* The job ended while its record says running: its driver never wrote the
         * result (stopped meanwhile, or it died and the GCS ended the job). */
        snprintf(buf, sizeof buf, j->stopped ? "stopped" : "ended without a result");
    else if (!strcmp(status, "STOPPED"))
        snprintf(buf, sizeof buf, "stopped");
    else if (j->exit_code >= 0)
        snprintf(buf, sizeof buf, "exit code %d", j->exit_code);
    else
        snprintf(buf, sizeof buf, "%s", j->message);
    return esc_xstrdup(buf);
}

/* Fills j for id from the GCS's rows (jobs) and the key-value store. NOT_FOUND when
 * neither knows it. */
static int load_one(esc_client *c, const char *id, const esc_job_info *jobs, size_t n,
                    esc_job_status_info *j, esc_status *st)
{
    memset(j, 0, sizeof *j);
    j->id = esc_xstrdup(id);
    j->exit_code = -1;
    const esc_job_info *row = NULL;
    for (size_t i = 0; i < n && !row; i++)
        if (!strcmp(jobs[i].id, id))
            row = &jobs[i];
    j->state = esc_xstrdup(row ? row->state : "UNKNOWN");
    json_t *rec = NULL;
    int rc = job_record_get(c, id, &rec, st);
    if (rc == ESC_OK)
        take_record(c, j, rec);
    json_decref(rec);
    if (rc != ESC_OK && rc != ESC_NOT_FOUND)
        return rc;
    if (!row && !rec)
        return esc_status_set(st, ESC_NOT_FOUND, "no job %s", id);
    /* Strings the caller may print without checks. */
    char **fill[] = {&j->status, &j->namespace_, &j->task_id, &j->submit_node, &j->message,
                     &j->node_id};
    for (size_t i = 0; i < sizeof fill / sizeof fill[0]; i++)
        if (!*fill[i])
            *fill[i] = esc_xstrdup("");
    if (j->has_record && !strcmp(j->state, "RUNNING") && !strcmp(j->status, "RUNNING"))
        locate_entrypoint(c, j);
    j->result = result_text(j);
    return esc_status_set(st, ESC_OK, "%s", "");
}

int esc_job_status(esc_client *c, const char *job_id, esc_job_status_info *out,
                   esc_status *st)
{
    memset(out, 0, sizeof *out);
    if (!job_id || !*job_id)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "esc_job_status needs a job id");
    esc_job_info *jobs;
    size_t n;
    int rc = esc_list_jobs(c, &jobs, &n, st);
    if (rc != ESC_OK)
        return rc;
    rc = load_one(c, job_id, jobs, n, out, st);
    esc_jobs_free(jobs, n);
    return rc;
}

void esc_job_status_clear(esc_job_status_info *j)
{
    if (!j)
        return;
    char *strs[] = {j->id,        j->state,   j->status,      j->result,  j->namespace_,
                    j->task_id,   j->submit_node, j->node_id, j->working_dir, j->message};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        free(strs[i]);
    for (size_t i = 0; i < j->nentrypoint; i++)
        free(j->entrypoint[i]);
    free(j->entrypoint);
    for (size_t i = 0; i < j->nmissing; i++)
        free(j->missing[i]);
    free(j->missing);
    for (size_t i = 0; i < j->nrequest; i++)
        free((char *)j->request[i].name);
    free(j->request);
    memset(j, 0, sizeof *j);
}

/* ------------------------------------------------------------------ the list */

/* Oldest first, as they were submitted. */
static int cmp_submitted(const void *a, const void *b)
{
    uint64_t x = ((const esc_job_status_info *)a)->submitted_ms;
    uint64_t y = ((const esc_job_status_info *)b)->submitted_ms;
    return x < y ? -1 : x > y;
}

int esc_job_list(esc_client *c, esc_job_status_info **out, size_t *n, esc_status *st)
{
    *out = NULL;
    *n = 0;
    esc_job_info *jobs;
    size_t njobs;
    int rc = esc_list_jobs(c, &jobs, &njobs, st);
    if (rc != ESC_OK)
        return rc;
    char **ids;
    size_t nids;
    if ((rc = job_record_ids(c, &ids, &nids, st)) != ESC_OK) {
        esc_jobs_free(jobs, njobs);
        return rc;
    }
    esc_job_status_info *v = esc_xcalloc(nids + 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < nids; i++) {
        /* A record that vanished or is malformed meanwhile is left out. */
        if (load_one(c, ids[i], jobs, njobs, &v[k], NULL) == ESC_OK && v[k].has_record)
            k++;
        else
            esc_job_status_clear(&v[k]);
    }
    esc_kv_keys_free(ids, nids);
    esc_jobs_free(jobs, njobs);
    qsort(v, k, sizeof *v, cmp_submitted);
    *out = v;
    *n = k;
    return esc_status_set(st, ESC_OK, "%s", "");
}

void esc_job_list_free(esc_job_status_info *jobs, size_t n)
{
    if (!jobs)
        return;
    for (size_t i = 0; i < n; i++)
        esc_job_status_clear(&jobs[i]);
    free(jobs);
}
