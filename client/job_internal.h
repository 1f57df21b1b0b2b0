/* job_internal.h: what the SDK's job files share (not public; jobs.h is the API).
 *
 *   job_record.c  a submitted job's record and stop mark in the GCS key-value store
 *   job_submit.c  esc_job_submit, esc_job_wait, esc_job_stop: the driver's side
 *   job_status.c  esc_job_status, esc_job_list: the GCS row, the record, the entrypoint's
 *                 place (TaskService.GetTaskState)
 *   job_logs.c    esc_job_logs, esc_task_logs: Raylet.StreamLogs
 *
 * A submitted job's keys, in namespace ESC_JOBS_NS ("_jobs", workdir.h):
 *   "<job_id>"            its record, JSON: entrypoint, task, submit node, result
 *   "<job_id>/stop"       written by esc_job_stop before it ends the job; its value is
 *                         the reason, which becomes the result's message
 *   "<job_id>/workdir..." its working directory while it runs (workdir.h)
 *   "<job_id>/started"    the node its entrypoint last started on, written by that raylet
 *                         (raylet/task_state.c): `job logs --follow` waits for it */
#ifndef ESC_JOB_INTERNAL_H
#define ESC_JOB_INTERNAL_H

#include <jansson.h>

#include "client_internal.h"
#include "escher/jobs.h"

/* Stores rec as the record of job_id (overwriting). */
int job_record_put(esc_client *c, const char *job_id, json_t *rec, esc_status *st);
/* Reads the record of job_id: ESC_OK with *rec (caller decrefs), or ESC_NOT_FOUND. */
int job_record_get(esc_client *c, const char *job_id, json_t **rec, esc_status *st);
/* The ids of every job with a record, sorted (caller frees with esc_kv_keys_free). */
int job_record_ids(esc_client *c, char ***ids, size_t *n, esc_status *st);

/* Marks job_id as stopped, with why as the reason. */
int job_mark_stopped(esc_client *c, const char *job_id, const char *why, esc_status *st);
/* Removes that mark (a stop the GCS refused), best effort. */
void job_unmark_stopped(esc_client *c, const char *job_id);
/* Whether job_id was marked stopped; its reason into why (len bytes) when it was. A
 * GCS that does not answer counts as not marked. */
bool job_stop_reason(esc_client *c, const char *job_id, char *why, size_t len);

/* The state of the task on the raylet at address (TaskService.GetTaskState): *reply
 * (free with protobuf_c_message_free_unpacked) on ESC_OK. */
struct Escher__TaskStateReply;
int job_task_state(esc_client *c, const char *address, const char *task_id,
                   struct Escher__TaskStateReply **reply, esc_status *st);

/* The node whose raylet holds the task now (queued, fetching or running), found from
 * its submit node along its forwards (job_status.c): false when none does. */
bool job_entrypoint_node(esc_client *c, const char *submit_node, const char *task_id,
                         char *node, size_t len);

/* The driver's side of the job this client submitted (job_submit.c); freed by
 * esc_disconnect. */
void esc_job_run_free(struct esc_job_run *run);

#endif
