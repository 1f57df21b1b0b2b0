/* job.h: what the job commands share: finding and following a task's log files on this
 * machine (task_logs.c), the record a submitted job keeps in the GCS key-value store
 * (job_record.c), and submitting (job_submit.c).
 *
 * A submitted job's keys, in namespace ESC_JOBS_NS ("_jobs"):
 *   "<job_id>"            its record, JSON (job_record_*): entrypoint, task, result
 *   "<job_id>/stop"       written by `escher job stop` before it ends the job, so the
 *                         submitter reports "stopped" and not a plain failure
 *   "<job_id>/workdir..." its working directory while it runs (../workdir.h) */
#ifndef ESC_CLI_JOB_H
#define ESC_CLI_JOB_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"

/* ------------------------------------------------------------- task logs (task_logs.c) */

/* Finds the directory on this machine that holds task_id's logs (an index record of it
 * in some worker-<id>.idx, see task_logs.c): the session's logs/tasks, then logs/tasks
 * of every /tmp/escher/session_<...> (other sessions here, a joined raylet's included),
 * then every folder of /tmp/escher/logs (raylets started without `escher start`).
 * Writes it into dir and returns true when found. */
bool cli_task_logs_find(const char *session_dir, const char *task_id, char *dir, size_t len);

/* Copies the task's stdout (ext "out") or stderr ("err") found in dir to out, every
 * attempt in the order they started. Prints the error itself; returns an exit code. */
int cli_task_log_print(const char *dir, const char *task_id, const char *ext, FILE *out);

/* Follows a task's stdout and stderr while it runs, onto ours (its first attempt). */
typedef struct {
    const char *session_dir;
    const char *task_id;
    char idx[PATH_MAX];  /* the index of its worker, "" until found */
    int fd[2];           /* the worker's capture files, -1 until opened */
    off_t pos_start[2];  /* where the attempt starts in them */
    off_t pos[2];        /* how far we copied */
    off_t end[2];        /* where it ends, -1 while nothing ran after it */
} cli_tail;

void cli_tail_init(cli_tail *t, const char *session_dir, const char *task_id);
/* Copies what the task's output gained since the last call (looking for it first while
 * it is not found). Returns whether it was found. */
bool cli_tail_pump(cli_tail *t);
void cli_tail_close(cli_tail *t);

/* ------------------------------------------------------------- records (job_record.c) */

/* Stores rec as the record of job_id (overwriting). */
int job_record_put(esc_client *c, const char *job_id, json_t *rec, esc_status *st);
/* Reads the record of job_id: ESC_OK with *rec (caller decrefs), or ESC_NOT_FOUND. */
int job_record_get(esc_client *c, const char *job_id, json_t **rec, esc_status *st);
/* The ids of every submitted job with a record, sorted (caller frees with
 * esc_kv_keys_free). */
int job_record_ids(esc_client *c, char ***ids, size_t *n, esc_status *st);

/* Marks job_id as stopped by a user (its "<job_id>/stop" key). */
int job_mark_stopped(esc_client *c, const char *job_id, esc_status *st);
/* Whether job_id was marked stopped. */
bool job_was_stopped(esc_client *c, const char *job_id);

/* Stops a job: marks it stopped, cancels its entrypoint task (when task_id is given and
 * it is queued or running on the local raylet), and ends the job as FAILED in the GCS,
 * which kills its tasks on every node. Returns an esc status code. */
int job_stop(esc_client *c, const char *job_id, const char *task_id, esc_status *st);

/* ------------------------------------------------------------- commands */

/* `escher job submit`: job_submit.c. */
int cmd_job_submit(const cli_globals *g, int argc, char **argv);

#endif
