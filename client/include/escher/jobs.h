/* jobs.h: submitted jobs from C (libescher): a command line run as a job's entrypoint
 * on some node of the cluster, its state, its output and stopping it. `escher job` is
 * a thin user of these calls (docs/jobs.md).
 *
 * The client that submits is the job's driver: the job is the client's own job, and it
 * lives as long as the client does (esc_disconnect ends it, as does the GCS's job
 * timeout when the driver's process dies). esc_job_wait reads the entrypoint's end,
 * records it and ends the job. Every other call works from any client on any machine
 * that reaches the GCS: a job's output is read through the raylet of the node that ran
 * its entrypoint.
 *
 * A submitted job keeps a record in the GCS key-value store (namespace "_jobs", key
 * its job id): entrypoint, task, where it was submitted, and its result once it ended.
 *
 * Errors as in escher.h: every call returns a status code and, when st is not NULL,
 * fills st with the code and a one-line message. The calls are thread-safe; on one
 * client, esc_job_submit and esc_job_wait run one at a time (a wait holds the client's
 * submission until it returns), while status, logs and stop run alongside them: a
 * driver may follow its job's output on one thread and wait on another.
 */
#ifndef ESCHER_JOBS_H
#define ESCHER_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "escher.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest working directory shipped by default, as a tar stream: 100 MiB. */
#define ESC_JOB_WORKDIR_LIMIT (100ull << 20)

/* What a job runs. Strings are read during esc_job_submit only. */
typedef struct {
    /* The entrypoint's command line, NULL-terminated; required (argv[0] is looked up in
     * PATH, or relative to the working directory). */
    const char *const *argv;
    /* More "KEY=VALUE" for the entrypoint's environment, NULL-terminated; may be NULL.
     * It always gets ESCHER_ADDRESS and ESCHER_TOKEN (the client's), so an SDK program
     * run as the entrypoint joins the job. */
    const char *const *env;
    /* A local directory that becomes the job's package (esc_job_package): every node
     * that runs a task of the job fetches it once, tasks resolve relative libraries in
     * it, and the entrypoint starts in a fresh, writable copy of it. NULL: none (the
     * entrypoint starts in the worker's directory). */
    const char *working_dir;
    /* The largest working_dir accepted, in bytes as a tar stream; 0: ESC_JOB_WORKDIR_LIMIT. */
    uint64_t working_dir_limit;
    /* What the entrypoint holds while it runs (names as in esc_task_spec); may be none. */
    const esc_amount *resources;
    size_t nresources;
} esc_job_spec;

/* Submits spec's entrypoint as a command task of the client's own job and records the
 * job. Returns once the entrypoint is submitted (it may still wait for its resources:
 * esc_job_status then says PENDING). job_id (when not NULL, ESC_ID_MAX bytes) gets the
 * job id, the same as esc_client_job_id(c).
 *
 * One entrypoint per client: a second submit is ALREADY_EXISTS. INVALID_ARGUMENT for an
 * empty argv, or a working_dir that is missing or not a directory ("cannot use working
 * directory DIR: ..."); RESOURCE_EXHAUSTED when it is over the limit ("working directory
 * DIR is too large: ..."), checked before anything is sent; FAILED_PRECONDITION for a
 * client that joined another job or registered none (esc_connect_opts.no_job), or that
 * has no local raylet. On failure nothing of the submission is left: no record, no
 * working directory (the job itself stays the client's). */
int esc_job_submit(esc_client *c, const esc_job_spec *spec, char *job_id, esc_status *st);

/* How a submitted job's entrypoint ended (esc_job_wait). */
typedef enum {
    ESC_JOB_SUCCEEDED, /* exited with code 0 */
    ESC_JOB_FAILED,    /* exited non-zero, was killed, or could not run */
    ESC_JOB_STOPPED,   /* esc_job_stop (or `escher job stop`) ended it */
} esc_job_outcome;

typedef struct {
    esc_job_outcome outcome;
    int exit_code;     /* the entrypoint's exit code; -1 when it did not exit */
    int signal;        /* the signal that killed it; 0 when none did */
    char message[320]; /* "exited with code 3", "killed by signal 9 (SIGKILL)", the stop's
                          reason, ... */
} esc_job_result;

/* Waits up to timeout_ms (< 0: no limit) for the entrypoint that esc_job_submit
 * submitted on this client to end. On ESC_OK *out says how; the result is then written
 * to the job's record, its working directory is removed and the job ends in the GCS
 * (FINISHED when it succeeded, else FAILED), which cleans up whatever it still holds. A
 * second call after that gives the same result again. DEADLINE_EXCEEDED: it has not
 * ended yet. FAILED_PRECONDITION: this client submitted nothing. Another code: the
 * cluster did not answer (the caller may wait again). A job stopped by anyone ends as
 * STOPPED within about two seconds of the stop, even when its entrypoint leaves no
 * result (one that was still queued on another node). */
int esc_job_wait(esc_client *c, int timeout_ms, esc_job_result *out, esc_status *st);

/* Stops a running job: marks it stopped with why (NULL: "stopped by esc_job_stop"; it
 * becomes the job's result message), cancels its entrypoint, and ends the job as FAILED
 * in the GCS, which kills its tasks on every node and frees what it holds. A job that
 * has ended already is FAILED_PRECONDITION ("job X is not running (FINISHED)"); an
 * unknown one NOT_FOUND.
 *
 * The client's own job (a driver stopping what it submitted) ends as the job itself.
 * Any other job is the operator's path (FinishJob.operator_stop, for `escher job stop`),
 * which needs the cluster's operator key (docs/security.md): $ESCHER_OPERATOR_KEY, else
 * the `operator` file of the session directory c connected with (the head's session has
 * one, written by `escher start --head`). The key goes with this one call only, on a
 * channel of its own. PERMISSION_DENIED: no key was found (nothing is changed), or the
 * GCS refused the key (a wrong one, or a GCS started without one; the stop mark is
 * removed again and the job runs on). */
int esc_job_stop(esc_client *c, const char *job_id, const char *why, esc_status *st);

/* A submitted job as seen now: the GCS's job table (the authority on whether it runs),
 * the job's record, and, while it runs, where its entrypoint is. Every string is owned
 * by the struct (esc_job_status_clear); those not known are "" (never NULL) unless said
 * otherwise. */
typedef struct {
    char *id;
    /* "PENDING": running in the GCS and its entrypoint waits in a raylet's queue for
     * resources (see missing); "RUNNING"; "FINISHED" or "FAILED" (ended); "UNKNOWN": the
     * GCS does not know the job (a record is left). */
    char *state;
    /* The record's status: "RUNNING" until the driver wrote the result, then
     * "SUCCEEDED", "FAILED" or "STOPPED"; "" without a record. */
    char *status;
    /* The result in a few words: "pending: no node has ns/x", "running", "stopping",
     * "exit code 3", "stopped", "ended without a result", ... */
    char *result;
    bool has_record;        /* made by esc_job_submit: the fields below are filled */
    char **entrypoint;      /* argv, nentrypoint strings */
    size_t nentrypoint;
    char *namespace_;
    char *task_id;          /* the entrypoint's task */
    char *submit_node;      /* the node whose raylet took the entrypoint */
    char *node_id;          /* the node that runs it, while known; else "" */
    char *working_dir;      /* NULL when the job has none */
    uint64_t working_dir_bytes;
    uint64_t submitted_ms, end_ms; /* wall clock; end_ms is 0 until the result is written */
    int exit_code;          /* -1 when it did not exit (yet) */
    char *message;          /* the result's message, "" until it ended */
    bool stopped;           /* it was stopped (esc_job_stop) */
    /* PENDING only: no alive node can ever hold the entrypoint's request (a name absent
     * everywhere, or a total too small everywhere); the names no node has (nmissing of
     * them); and the request itself (nrequest amounts; names owned by the struct). */
    bool infeasible;
    char **missing;
    size_t nmissing;
    esc_amount *request;
    size_t nrequest;
} esc_job_status_info;

/* Reads job_id's state into *out (cleared first; free its strings with
 * esc_job_status_clear, also after an error). NOT_FOUND when neither the GCS nor the
 * record store knows the job. A raylet that does not answer only leaves the entrypoint's
 * place unknown (state RUNNING). */
int esc_job_status(esc_client *c, const char *job_id, esc_job_status_info *out,
                   esc_status *st);
void esc_job_status_clear(esc_job_status_info *info);

/* Every job made by esc_job_submit, oldest first: *jobs (owned by the caller,
 * esc_job_list_free) holds *n of them, each as esc_job_status gives it. */
int esc_job_list(esc_client *c, esc_job_status_info **jobs, size_t *n, esc_status *st);
void esc_job_list_free(esc_job_status_info *jobs, size_t n);

/* Receives output: stream 1 is stdout, 2 stderr; data (len bytes, not NUL-terminated)
 * is only valid during the call. Return 0 to go on, anything else to stop reading (the
 * reading call then returns ESC_CANCELLED). */
typedef int (*esc_log_fn)(void *ud, int stream, const void *data, size_t len);

/* Reads a submitted job's entrypoint output through the raylet of the node that ran it,
 * from any machine: every attempt that ran there, in order, each stream as written
 * (the order between stdout and stderr is not kept). Without follow it returns once
 * what was written so far went to fn. With follow it also waits for an entrypoint that
 * has not started (PENDING), and streams its output as it grows until it ends; it
 * returns ESC_OK then, or when the job ended without the entrypoint running.
 * NOT_FOUND: no job_id was submitted with esc_job_submit, or (without follow) no alive
 * node has its output (it has not started, or its node is gone). */
int esc_job_logs(esc_client *c, const char *job_id, bool follow, esc_log_fn fn, void *ud,
                 esc_status *st);

/* The output of any task, whole, read through the raylet of the node that has it (every
 * alive node is asked). NOT_FOUND when none has it; INVALID_ARGUMENT for an invalid id. */
int esc_task_logs(esc_client *c, const char *task_id, esc_log_fn fn, void *ud,
                  esc_status *st);

#ifdef __cplusplus
}
#endif
#endif
