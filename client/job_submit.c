/* job_submit.c: the driver's side of a submitted job: esc_job_submit, esc_job_wait,
 * and esc_job_stop (jobs.h).
 *
 * The submitting client is the job's driver. It ships the working directory into the
 * GCS key-value store (workdir.h), submits the entrypoint as a command task of its own
 * job, and records the job (job_record.c). esc_job_wait reads the entrypoint's return:
 * a command task's return is an error object whose text says how it ended ("exited
 * with code N", "killed by signal N (SIGX)", "cancelled", ...), or a value when it
 * exited 0. Then the result is recorded and the job ends.
 *
 * A stopped job may leave no result to read (a task queued on another node is dropped
 * without one when its job ends), so once the stop mark is seen the result gets
 * STOP_GRACE_MS to arrive. The wait ends on events only: the entrypoint's end (the
 * owner stream, or the object directory) or a write of the stop mark (a watch of its
 * key), besides its own deadline and the grace's end. */
#include "changes.h"
#include "job_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ids.h"
#include "workdir.h"
#include "xalloc.h"

#define STOP_GRACE_MS 2000
#define MAX_ENV 64

struct esc_job_run {
    esc_ref *ref;                /* the entrypoint's return */
    char task_id[ESC_ID_MAX];
    json_t *record;
    bool has_workdir;
    uint64_t stopped_at;         /* when the stop mark was seen; 0 before */
    bool done;                   /* the result is recorded and the job ended */
    esc_job_result result;
};

void esc_job_run_free(struct esc_job_run *run)
{
    if (!run)
        return;
    esc_ref_free(run->ref);
    json_decref(run->record);
    free(run);
}

/* ------------------------------------------------------------------ the working dir */

static const char *human_bytes(uint64_t n, char *buf, size_t len)
{
    static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

static int too_large(const char *dir, uint64_t size, uint64_t limit, bool at_least,
                     esc_status *st)
{
    char a[32], b[32];
    return esc_status_set(st, ESC_RESOURCE_EXHAUSTED,
                          "working directory %s is too large: %s%s as a tar stream, over "
                          "the limit of %s",
                          dir, at_least ? "over " : "", human_bytes(size, a, sizeof a),
                          human_bytes(limit, b, sizeof b));
}

/* Resolves and measures the working directory before anything is sent, so that one
 * that is missing or too large is refused at once. abs gets its absolute path. */
static int check_working_dir(const esc_job_spec *s, uint64_t limit, char *abs,
                             uint64_t *bytes, esc_status *st)
{
    struct stat sb;
    if (!realpath(s->working_dir, abs) || stat(abs, &sb) != 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "cannot use working directory %s: %s",
                              s->working_dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "working directory %s is not a "
                              "directory", s->working_dir);
    int rc = esc_workdir_measure(abs, bytes, st);
    if (rc != ESC_OK)
        return rc;
    return *bytes > limit ? too_large(s->working_dir, *bytes, limit, false, st) : ESC_OK;
}

static int ship_working_dir(esc_client *c, const esc_job_spec *s, const char *abs,
                            uint64_t limit, uint64_t *bytes, esc_status *st)
{
    esc_status why;
    int rc = esc_workdir_upload(c, c->job_id, abs, limit, bytes, &why);
    if (rc == ESC_RESOURCE_EXHAUSTED)
        return too_large(s->working_dir, limit, limit, true, st);
    if (rc != ESC_OK)
        return esc_status_set(st, rc, "cannot ship working directory %s: %s", s->working_dir,
                              why.message);
    return ESC_OK;
}

/* ------------------------------------------------------------------ the entrypoint */

static char *env_entry(const char *key, const char *value)
{
    size_t len = strlen(key) + strlen(value) + 2;
    char *e = esc_xmalloc(len);
    snprintf(e, len, "%s=%s", key, value);
    return e;
}

static void free_secret(char *s)
{
    if (s)
        memset(s, 0, strlen(s));
    free(s);
}

static int submit_entrypoint(esc_client *c, const esc_job_spec *s, bool workdir,
                             struct esc_job_run *run, esc_status *st)
{
    /* The cluster's entries, then the caller's. */
    char *own[3] = {env_entry("ESCHER_ADDRESS", c->address), NULL, NULL};
    size_t nown = 1;
    if (c->token)
        own[nown++] = env_entry("ESCHER_TOKEN", c->token);
    if (workdir)
        own[nown++] = env_entry("ESCHER_JOB_WORKDIR_KEY", c->job_id);
    const char *env[MAX_ENV + 4];
    size_t n = 0;
    for (size_t i = 0; i < nown; i++)
        env[n++] = own[i];
    for (size_t i = 0; s->env && s->env[i] && n < MAX_ENV + 3; i++)
        env[n++] = s->env[i];
    env[n] = NULL;
    esc_task_spec spec = {
        .argv = s->argv,
        .env = env,
        .resources = s->resources,
        .nresources = s->nresources,
        .num_returns = 1,
    };
    esc_status why;
    int rc = ESC_OK;
    esc_prepared *p = esc_task_prepare(c, &spec, &run->ref, &why);
    if (!p) {
        rc = why.code;
    } else {
        esc_prepared_mark_entrypoint(p, run->task_id);
        rc = esc_prepared_submit(c, p, NULL, 0, &why);
        esc_prepared_free(p);
    }
    for (size_t i = 0; i < nown; i++)
        free_secret(own[i]);
    if (rc != ESC_OK)
        return esc_status_set(st, rc, "cannot submit the entrypoint: %s", why.message);
    return ESC_OK;
}

static json_t *new_record(const esc_client *c, const esc_job_spec *s, const char *workdir,
                          uint64_t bytes, const char *task_id)
{
    json_t *argv = json_array();
    for (const char *const *a = s->argv; *a; a++)
        json_array_append_new(argv, json_string(*a));
    json_t *r = json_object();
    json_object_set_new(r, "job_id", json_string(c->job_id));
    json_object_set_new(r, "namespace", json_string(c->namespace_));
    json_object_set_new(r, "entrypoint", argv);
    json_object_set_new(r, "task_id", json_string(task_id));
    json_object_set_new(r, "submit_node", json_string(c->node_id));
    json_object_set_new(r, "working_dir", workdir[0] ? json_string(workdir) : json_null());
    json_object_set_new(r, "working_dir_bytes", json_integer((json_int_t)bytes));
    json_object_set_new(r, "submitted_ms", json_integer((json_int_t)esc_wall_ms()));
    json_object_set_new(r, "status", json_string("RUNNING"));
    return r;
}

static int check_submit(esc_client *c, const esc_job_spec *s, esc_status *st)
{
    if (!s || !s->argv || !s->argv[0] || !s->argv[0][0])
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a job needs an entrypoint (argv)");
    if (c->attached || !c->job_id || !c->job_id[0])
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "this client does not own a job (it joined one, or registered "
                              "none): connect a new job to submit");
    if (c->run)
        return esc_status_set(st, ESC_ALREADY_EXISTS,
                              "job %s has its entrypoint already (task %s): one per client",
                              c->job_id, c->run->task_id);
    return ESC_OK;
}

/* Everything of esc_job_submit after the checks; run_mu is held. */
static int submit_locked(esc_client *c, const esc_job_spec *s, esc_status *st)
{
    uint64_t limit = s->working_dir_limit ? s->working_dir_limit : ESC_JOB_WORKDIR_LIMIT;
    char workdir[PATH_MAX] = "";
    uint64_t bytes = 0;
    int rc = ESC_OK;
    if (s->working_dir && (rc = check_working_dir(s, limit, workdir, &bytes, st)) != ESC_OK)
        return rc;
    struct esc_job_run *run = esc_xcalloc(1, sizeof *run);
    run->has_workdir = workdir[0] != 0;
    if (run->has_workdir)
        rc = ship_working_dir(c, s, workdir, limit, &bytes, st);
    if (rc == ESC_OK)
        rc = submit_entrypoint(c, s, run->has_workdir, run, st);
    if (rc == ESC_OK) {
        run->record = new_record(c, s, workdir, bytes, run->task_id);
        esc_status why;
        if ((rc = job_record_put(c, c->job_id, run->record, &why)) != ESC_OK) {
            esc_status_set(st, rc, "cannot record job %s: %s", c->job_id, why.message);
            esc_cancel(c, run->ref, NULL);
        }
    }
    if (rc != ESC_OK) {
        if (run->has_workdir)
            esc_workdir_delete(c, c->job_id, NULL);
        esc_job_run_free(run);
        return rc;
    }
    c->run = run;
    return ESC_OK;
}

int esc_job_submit(esc_client *c, const esc_job_spec *spec, char *job_id, esc_status *st)
{
    pthread_mutex_lock(&c->run_mu);
    int rc = check_submit(c, spec, st);
    if (rc == ESC_OK)
        rc = submit_locked(c, spec, st);
    pthread_mutex_unlock(&c->run_mu);
    if (rc == ESC_OK && job_id)
        snprintf(job_id, ESC_ID_MAX, "%s", c->job_id);
    return rc == ESC_OK ? esc_status_set(st, ESC_OK, "%s", "") : rc;
}

/* ------------------------------------------------------------------ waiting */

/* The raylet's error text says how a command ended: "exited with code N", "killed by
 * signal N (SIGX)", or something else (cancelled, job ended, worker died). */
static void set_failure(esc_job_result *o, const char *why)
{
    *o = (esc_job_result){.outcome = ESC_JOB_FAILED, .exit_code = -1};
    snprintf(o->message, sizeof o->message, "%s", why);
    const char *p;
    int n;
    if ((p = strstr(why, "exited with code ")) && sscanf(p + 17, "%d", &n) == 1)
        o->exit_code = n;
    else if ((p = strstr(why, "killed by signal ")) && sscanf(p + 17, "%d", &n) == 1)
        o->signal = n;
}

/* One look at the entrypoint: ESC_OK with *o when it ended, DEADLINE_EXCEEDED when it
 * runs on, another code when the cluster did not answer. */
static int ended(esc_client *c, struct esc_job_run *run, esc_job_result *o, esc_status *st)
{
    void *data = NULL;
    size_t len;
    esc_status why;
    int rc = esc_get(c, run->ref, 0, &data, &len, &why);
    free(data);
    if (rc == ESC_OK) {
        *o = (esc_job_result){.outcome = ESC_JOB_SUCCEEDED, .exit_code = 0};
        snprintf(o->message, sizeof o->message, "exited with code 0");
        return ESC_OK;
    }
    if (rc == ESC_ABORTED || rc == ESC_NOT_FOUND) {
        /* NOT_FOUND: the result was freed, which ending a job does. */
        set_failure(o, rc == ESC_ABORTED ? why.message : "the job ended first");
        return ESC_OK;
    }
    return rc == ESC_DEADLINE_EXCEEDED ? rc : esc_status_set(st, rc, "%s", why.message);
}

/* Waits for the entrypoint's end until deadline: ESC_OK with *o, DEADLINE_EXCEEDED, or
 * the code of a look the cluster did not answer. wk is poked by a write of the stop
 * mark; the stop mark is read after each poke. */
static int wait_end(esc_client *c, struct esc_job_run *run, esc_waker *wk, uint64_t deadline,
                    esc_job_result *o, esc_status *st)
{
    uint64_t seen_ext = UINT64_MAX;
    for (;;) {
        uint64_t ext;
        esc_waker_gen(wk, &ext);
        if (ext != seen_ext && !run->stopped_at && job_stop_reason(c, c->job_id, NULL, 0))
            run->stopped_at = esc_now_ms();
        seen_ext = ext;
        int rc = ended(c, run, o, st);
        if (rc != ESC_DEADLINE_EXCEEDED)
            return rc;
        uint64_t now = esc_now_ms(), until = deadline;
        if (run->stopped_at) {
            if (now - run->stopped_at > STOP_GRACE_MS) {
                set_failure(o, "the job ended first");
                return ESC_OK;
            }
            until = run->stopped_at + STOP_GRACE_MS + 1 < until ? run->stopped_at + STOP_GRACE_MS + 1
                                                                : until;
        }
        if (now >= deadline)
            return ESC_DEADLINE_EXCEEDED;
        const esc_ref *refs[1] = {run->ref};
        bool ready[1] = {false};
        size_t n = 0;
        int ms = until == UINT64_MAX ? -1 : (int)(until - now);
        esc_wait_woken(c, refs, 1, 1, ms, wk, ext, ready, &n, NULL);
    }
}

/* Records the result and ends the job: FAILED unless the entrypoint succeeded. A job
 * that was stopped ends as STOPPED with the stop's reason. */
static void finish_run(esc_client *c, struct esc_job_run *run, esc_job_result *o)
{
    char why[sizeof o->message];
    if (o->outcome != ESC_JOB_SUCCEEDED && job_stop_reason(c, c->job_id, why, sizeof why)) {
        o->outcome = ESC_JOB_STOPPED;
        snprintf(o->message, sizeof o->message, "%s", why);
    }
    static const char *names[] = {"SUCCEEDED", "FAILED", "STOPPED"};
    json_t *r = run->record;
    json_object_set_new(r, "status", json_string(names[o->outcome]));
    json_object_set_new(r, "exit_code", o->exit_code >= 0 ? json_integer(o->exit_code)
                                                          : json_null());
    json_object_set_new(r, "message", json_string(o->message));
    json_object_set_new(r, "end_ms", json_integer((json_int_t)esc_wall_ms()));
    /* Best effort: the job ends either way, and readers then say "ended without a
     * result". */
    job_record_put(c, c->job_id, r, NULL);
    if (run->has_workdir)
        esc_workdir_delete(c, c->job_id, NULL);
    esc_job_finish(c, NULL, o->outcome != ESC_JOB_SUCCEEDED, NULL);
    run->result = *o;
    run->done = true;
}

/* A watch of the job's stop mark, "<job>/stop" in ESC_JOBS_NS (job_internal.h). */
static int watch_stop_mark(esc_client *c, esc_changes **w, esc_status *st)
{
    char key[ESC_ID_MAX + 8];
    snprintf(key, sizeof key, "%s/stop", c->job_id);
    esc_kv_filter kv = {.ns = ESC_JOBS_NS, .prefix = key};
    esc_watch_filter f = {.kv = &kv, .nkv = 1};
    return esc_changes_start(c, &f, NULL, NULL, false, c->timeout_ms, w, st);
}

int esc_job_wait(esc_client *c, int timeout_ms, esc_job_result *out, esc_status *st)
{
    pthread_mutex_lock(&c->run_mu);
    struct esc_job_run *run = c->run;
    int rc = ESC_OK;
    if (!run) {
        rc = esc_status_set(st, ESC_FAILED_PRECONDITION, "this client submitted no job");
    } else if (!run->done) {
        uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : esc_now_ms() + (uint64_t)timeout_ms;
        esc_job_result o;
        esc_changes *w = NULL;
        rc = watch_stop_mark(c, &w, st);
        if (rc == ESC_OK)
            rc = wait_end(c, run, esc_changes_waker(w), deadline, &o, st);
        esc_changes_stop(w);
        if (rc == ESC_OK)
            finish_run(c, run, &o);
        else if (rc == ESC_DEADLINE_EXCEEDED)
            esc_status_set(st, rc, "the entrypoint of job %s runs on", c->job_id);
    }
    if (rc == ESC_OK) {
        *out = run->result;
        esc_status_set(st, ESC_OK, "%s", "");
    }
    pthread_mutex_unlock(&c->run_mu);
    return rc;
}

/* ------------------------------------------------------------------ stopping */

/* The GCS's state of job_id into state (len bytes). NOT_FOUND when it does not know it. */
static int gcs_job_state(esc_client *c, const char *job_id, char *state, size_t len,
                         esc_status *st)
{
    esc_job_info *jobs;
    size_t n;
    int rc = esc_list_jobs(c, &jobs, &n, st);
    if (rc != ESC_OK)
        return rc;
    rc = esc_status_set(st, ESC_NOT_FOUND, "no job %s in the GCS", job_id);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(jobs[i].id, job_id)) {
            snprintf(state, len, "%s", jobs[i].state);
            rc = esc_status_set(st, ESC_OK, "%s", "");
        }
    esc_jobs_free(jobs, n);
    return rc;
}

/* Cancels the entrypoint when the local raylet holds it: its result then says
 * "cancelled". Ending the job kills it wherever it runs, so nothing else is needed. */
static void cancel_entrypoint(esc_client *c, const char *job_id)
{
    json_t *rec;
    if (job_record_get(c, job_id, &rec, NULL) != ESC_OK)
        return;
    const char *task = json_string_value(json_object_get(rec, "task_id"));
    char ref_id[ESC_OBJECT_ID_MAX];
    esc_ref *ref = NULL;
    if (task) {
        esc_return_id(task, 0, ref_id, sizeof ref_id);
        ref = esc_ref_from_id(ref_id);
    }
    if (ref && c->node_id[0])
        esc_cancel(c, ref, NULL);
    esc_ref_free(ref);
    json_decref(rec);
}

int esc_job_stop(esc_client *c, const char *job_id, const char *why, esc_status *st)
{
    if (!job_id || !*job_id)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "esc_job_stop needs a job id");
    char state[32];
    int rc = gcs_job_state(c, job_id, state, sizeof state, st);
    if (rc != ESC_OK)
        return rc;
    if (strcmp(state, "RUNNING") != 0)
        return esc_status_set(st, ESC_FAILED_PRECONDITION, "job %s is not running (%s)",
                              job_id, state);
    /* The caller's own job (a driver stopping what it submitted, on SIGINT) ends as the
     * job itself; another job needs the operator key, checked here too, before the stop
     * mark, so that a caller without one leaves the job's record as it was. */
    bool own = c->job_id && !strcmp(job_id, c->job_id);
    char *key = own ? NULL : esc_client_operator_key(c);
    if (!own && !key)
        return esc_status_set(st, ESC_PERMISSION_DENIED,
                              "stopping a job needs the operator key: set "
                              "ESCHER_OPERATOR_KEY, or run where the head's session "
                              "directory (its `operator` file) is");
    /* The mark comes first, so whoever sees the entrypoint end reads it. */
    rc = job_mark_stopped(c, job_id, why ? why : "stopped by esc_job_stop", st);
    if (rc == ESC_OK) {
        cancel_entrypoint(c, job_id);
        rc = esc_client_finish_job(c, job_id, true, key, st);
        if (rc == ESC_PERMISSION_DENIED) /* a wrong key: the job runs on, unmarked */
            job_unmark_stopped(c, job_id);
    }
    if (key)
        memset(key, 0, strlen(key));
    free(key);
    return rc;
}
