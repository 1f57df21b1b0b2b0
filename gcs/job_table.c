/* job_table.c: jobs. A job is alive while its driver keeps a Subscribe stream open (or,
 * for short-lived clients, until it finishes); a job with no stream for job_timeout_ms
 * has lost its driver and ends. When a job ends, its non-detached ephemeral resources
 * are removed in the same event that announces the end, and its objects leave the
 * object directory (raylets free them when they apply that event). */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "names.h"
#include "pbutil.h"
#include "utf8.h"
#include "xalloc.h"

gcs_job *gcs_job_find(gcs *g, const char *id)
{
    return id && *id ? esc_strmap_get(g->jobs, id) : NULL;
}

Escher__Event *gcs_job_event(const Escher__JobInfo *row)
{
    Escher__Event *ev = gcs_event_new(ESCHER__EVENT_KIND__EV_JOB_UPDATED);
    ev->jobs = esc_xmalloc(sizeof *ev->jobs);
    ev->jobs[0] = (Escher__JobInfo *)esc_pb_dup(&row->base);
    ev->n_jobs = 1;
    ev->job_id = esc_xstrdup(row->job_id);
    return ev;
}

static gcs_job *job_put(gcs *g, Escher__JobInfo *info)
{
    gcs_job *j = esc_xcalloc(1, sizeof *j);
    j->info = info;
    j->orphan_since_ms = esc_now_ms();
    esc_strmap_put(g->jobs, info->job_id, j);
    return j;
}

/* Forgets the report that the job's entrypoint waits. */
static void pending_clear(gcs_job *j)
{
    if (j->pending)
        protobuf_c_message_free_unpacked(&j->pending->base, NULL);
    j->pending = NULL;
}

void gcs_job_load(gcs *g, Escher__JobInfo *info)
{
    job_put(g, info);
}

/* Joins a running job: the reply names it and its namespace. */
static void attach(gcs *g, esc_rpc_ctx *call, const Escher__RegisterJobRequest *req)
{
    gcs_job *j = gcs_job_find(g, req->attach_job_id);
    char msg[400];
    if (!j) {
        snprintf(msg, sizeof msg, "no job %.100s to join", req->attach_job_id);
        esc_rpc_finish(call, ESC_NOT_FOUND, msg);
        return;
    }
    if (j->info->state != ESCHER__JOB_STATE__JOB_RUNNING) {
        snprintf(msg, sizeof msg, "job %.100s has ended", req->attach_job_id);
        esc_rpc_finish(call, ESC_FAILED_PRECONDITION, msg);
        return;
    }
    if (!gcs_auth_matches(j, req->attach_credential)) {
        snprintf(msg, sizeof msg, "joining job %.100s needs its credential (ESCHER_JOB_CREDENTIAL)",
                 req->attach_job_id);
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, msg);
        return;
    }
    if (*req->namespace_ && strcmp(req->namespace_, j->info->namespace_) != 0) {
        snprintf(msg, sizeof msg, "job %.100s runs in namespace %.80s, not %.80s",
                 req->attach_job_id, j->info->namespace_, req->namespace_);
        esc_rpc_finish(call, ESC_FAILED_PRECONDITION, msg);
        return;
    }
    Escher__RegisterJobReply rep = ESCHER__REGISTER_JOB_REPLY__INIT;
    rep.job_id = j->info->job_id;
    rep.namespace_ = j->info->namespace_;
    rep.package = j->info->package;
    rep.credential = req->attach_credential;
    rep.job_seq = g->seq; /* the job's event is at or below it */
    esc_rpc_reply(call, &rep.base);
}

typedef struct {
    esc_rpc_ctx *call;
    Escher__JobInfo *info; /* owned */
    char *credential;      /* owned: the reply's, never stored */
} job_call;

/* Answers RegisterJob once storage has the job (or failed). */
static void job_registered(gcs *g, uint64_t seq, const char *err, void *ud)
{
    job_call *c = ud;
    if (err) {
        protobuf_c_message_free_unpacked(&c->info->base, NULL);
        esc_rpc_finish(c->call, ESC_UNAVAILABLE, err);
    } else {
        job_put(g, c->info);
        Escher__RegisterJobReply rep = ESCHER__REGISTER_JOB_REPLY__INIT;
        rep.job_id = c->info->job_id;
        rep.namespace_ = c->info->namespace_;
        rep.credential = c->credential;
        rep.job_seq = seq;
        esc_rpc_reply(c->call, &rep.base);
    }
    memset(c->credential, 0, strlen(c->credential));
    free(c->credential);
    free(c);
}

/* A new job may not claim a namespace that a running job owns (docs/security.md):
 * checked in the write's turn, when every earlier registration is in the table. */
static bool claim_ok(gcs *g, esc_rpc_ctx *call, const char *ns)
{
    gcs_job *owner = *ns ? gcs_ns_owner(g, ns) : NULL;
    if (!owner)
        return true;
    char msg[300];
    snprintf(msg, sizeof msg,
             "namespace %.64s belongs to running job %.40s; join it with its credential or "
             "use another namespace",
             ns, owner->info->job_id);
    esc_rpc_finish(call, ESC_PERMISSION_DENIED, msg);
    return false;
}

/* A new job is a write: it waits for its turn (write_queue.c). */
static void register_new(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__RegisterJobRequest *req = (const Escher__RegisterJobRequest *)msg;
    if (!claim_ok(g, call, req->namespace_))
        return;
    char hash[65];
    char *credential = gcs_auth_new_credential(hash);
    if (!credential) {
        esc_rpc_finish(call, ESC_INTERNAL, "no randomness for a job credential");
        return;
    }
    Escher__JobInfo *info = esc_xmalloc(sizeof *info);
    escher__job_info__init(info);
    info->credential_sha256 = esc_xstrdup(hash);
    info->job_id = esc_xmalloc(ESC_ID_HEX + 1);
    esc_random_hex(info->job_id, ESC_ID_HEX / 2);
    if (*req->namespace_) {
        info->namespace_ = esc_xstrdup(req->namespace_);
    } else {
        info->namespace_ = esc_xmalloc(ESC_ID_HEX + 5);
        snprintf(info->namespace_, ESC_ID_HEX + 5, "job-%s", info->job_id);
    }
    /* Cut at a character boundary: the request was checked to be UTF-8, the stored
     * copy must stay so. */
    info->entrypoint = esc_xstrndup(req->entrypoint, esc_utf8_prefix(req->entrypoint, 4096));
    info->driver_pid = req->driver_pid;
    info->start_ms = esc_wall_ms();
    info->state = ESCHER__JOB_STATE__JOB_RUNNING;
    esc_storage_batch *b = esc_storage_batch_new();
    gcs_put_msg(b, GCS_T_JOBS, info->job_id, &info->base);
    job_call *c = esc_xmalloc(sizeof *c);
    *c = (job_call){call, info, credential};
    gcs_history_stage_job(g, ESCHER__HISTORY_KIND__H_JOB_STARTED, info);
    /* An event, not just a write: the raylets learn the job from the log (job_mirror.c). */
    gcs_commit(g, gcs_job_event(info), b, NULL, job_registered, c);
}

/* A job's end on its way to storage. */
typedef struct {
    esc_rpc_ctx *call;     /* FinishJob to answer, or NULL (the sweep) */
    char *job_id;
    bool failed;
    Escher__JobInfo *done; /* the ended job's row, owned until applied */
} end_ctx;

static void end_ctx_free(end_ctx *c)
{
    if (c->done)
        protobuf_c_message_free_unpacked(&c->done->base, NULL);
    free(c->job_id);
    free(c);
}

/* Storage has the end (or failed: the job stays running, and a lost driver's job is
 * tried again by the next sweep). */
static void job_ended(gcs *g, uint64_t seq, const char *err, void *ud)
{
    end_ctx *c = ud;
    gcs_job *j = gcs_job_find(g, c->job_id);
    if (j)
        j->end_queued = false;
    if (seq && j) {
        pending_clear(j);
        protobuf_c_message_free_unpacked(&j->info->base, NULL);
        j->info = c->done;
        c->done = NULL;
        gcs_objects_job_ended(g, c->job_id);
        gcs_packages_job_ended(g, j->info->package);
    }
    if (c->call && !seq) {
        esc_rpc_finish(c->call, ESC_UNAVAILABLE, err);
    } else if (c->call) {
        Escher__FinishJobReply rep = ESCHER__FINISH_JOB_REPLY__INIT;
        esc_rpc_reply(c->call, &rep.base);
    }
    end_ctx_free(c);
}

/* Ends a running job: marks it, removes its resources, tells everyone; then
 * job_ended. */
static void job_end(gcs *g, gcs_job *j, end_ctx *c)
{
    Escher__JobInfo *done = (Escher__JobInfo *)esc_pb_dup(&j->info->base);
    done->state = c->failed ? ESCHER__JOB_STATE__JOB_FAILED : ESCHER__JOB_STATE__JOB_FINISHED;
    done->end_ms = esc_wall_ms();
    c->done = done;
    esc_storage_batch *b = esc_storage_batch_new();
    gcs_put_msg(b, GCS_T_JOBS, done->job_id, &done->base);
    Escher__Event *ev = gcs_event_new(ESCHER__EVENT_KIND__EV_JOB_FINISHED);
    ev->job_id = esc_xstrdup(done->job_id);
    gcs_history_stage_job(g, ESCHER__HISTORY_KIND__H_JOB_ENDED, done);
    gcs_registry_remove_where(g, NULL, j->info->job_id, ev, b, job_ended, c);
}

static end_ctx *end_ctx_new(esc_rpc_ctx *call, const char *job_id, bool failed)
{
    end_ctx *c = esc_xcalloc(1, sizeof *c);
    *c = (end_ctx){.call = call, .job_id = esc_xstrdup(job_id), .failed = failed};
    return c;
}

static void handle_finish(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__FinishJobRequest *req = (const Escher__FinishJobRequest *)msg;
    gcs_job *j = gcs_job_find(g, req->job_id);
    if (!j) {
        esc_rpc_finish(call, ESC_NOT_FOUND, "unknown job");
        return;
    }
    if (!req->operator_stop && !gcs_auth_is_job(call, j, NULL)) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED,
                       "only the job itself (its credential) or an operator stop ends a job");
        return;
    }
    char why[200];
    if (req->operator_stop && !gcs_auth_is_operator(g, call, why, sizeof why)) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    if (req->operator_stop)
        ESC_INFO("job %s stopped by an operator call from %s", req->job_id,
                 esc_rpc_ctx_peer(call));
    if (j->info->state != ESCHER__JOB_STATE__JOB_RUNNING) {
        Escher__FinishJobReply rep = ESCHER__FINISH_JOB_REPLY__INIT;
        esc_rpc_reply(call, &rep.base);
        return;
    }
    job_end(g, j, end_ctx_new(call, req->job_id, req->failed));
}

/* The sweep's end of a job whose driver is gone, in its turn among the writes. */
static void lost_end_run(gcs *g, void *ud)
{
    end_ctx *c = ud;
    gcs_job *j = gcs_job_find(g, c->job_id);
    if (j && j->info->state == ESCHER__JOB_STATE__JOB_RUNNING && j->streams == 0) {
        ESC_WARN("job %s lost its driver: ending it", c->job_id);
        job_end(g, j, c);
        return;
    }
    job_ended(g, 0, NULL, c); /* ended or reattached meanwhile */
}

static void lost_end_expire(gcs *g, void *ud)
{
    job_ended(g, 0, NULL, ud);
}

/* The row as ListJobs shows it: the stored row, plus where its entrypoint waits. The
 * copy is shallow: it borrows the row's and the report's strings. */
static void list_row(const gcs_job *j, Escher__JobInfo *out)
{
    *out = *j->info;
    out->credential_sha256 = (char *)""; /* never shown */
    const Escher__ReportEntrypointRequest *p = j->pending;
    if (p && j->info->state == ESCHER__JOB_STATE__JOB_RUNNING) {
        out->pending_node = p->node_id;
        out->pending_missing = p->missing;
        out->n_pending_missing = p->n_missing;
        out->pending_infeasible = p->infeasible;
    }
}

static void handle_list(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    (void)msg;
    gcs *g = ud;
    Escher__ListJobsReply rep = ESCHER__LIST_JOBS_REPLY__INIT;
    size_t n = esc_strmap_count(g->jobs);
    Escher__JobInfo *rows = esc_xcalloc(n + 1, sizeof *rows);
    rep.jobs = esc_xcalloc(n + 1, sizeof *rep.jobs);
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->jobs, &pos, &k, &v)) {
        list_row(v, &rows[rep.n_jobs]);
        rep.jobs[rep.n_jobs] = &rows[rep.n_jobs];
        rep.n_jobs++;
    }
    esc_rpc_reply(call, &rep.base);
    free(rep.jobs);
    free(rows);
}

/* A raylet's report on a job's entrypoint (gcs.proto, ReportEntrypoint). Reports about
 * an unknown or ended job change nothing: the entrypoint goes with its job. */
static void handle_report_entrypoint(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__ReportEntrypointRequest *req = (const Escher__ReportEntrypointRequest *)msg;
    gcs_job *j = gcs_job_find(g, req->job_id);
    if (!esc_object_id_valid(req->task_id) || !*req->node_id) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "a report names a task and a node");
        return;
    }
    if (j && j->info->state == ESCHER__JOB_STATE__JOB_RUNNING) {
        if (req->pending) {
            pending_clear(j);
            j->pending = (Escher__ReportEntrypointRequest *)esc_pb_dup(msg);
        } else if (j->pending && !strcmp(j->pending->node_id, req->node_id) &&
                   !strcmp(j->pending->task_id, req->task_id)) {
            pending_clear(j);
        }
    }
    Escher__ReportEntrypointReply rep = ESCHER__REPORT_ENTRYPOINT_REPLY__INIT;
    esc_rpc_reply(call, &rep.base);
}

void gcs_job_stream_opened(gcs *g, const char *job_id)
{
    gcs_job *j = gcs_job_find(g, job_id);
    if (j)
        j->streams++;
}

void gcs_job_stream_closed(gcs *g, const char *job_id)
{
    gcs_job *j = gcs_job_find(g, job_id);
    if (j && --j->streams == 0)
        j->orphan_since_ms = esc_now_ms();
}

void gcs_jobs_sweep(gcs *g, uint64_t now)
{
    size_t pos = 0;
    const char *k;
    void *v;
    gcs_job **lost = esc_xcalloc(esc_strmap_count(g->jobs) + 1, sizeof *lost);
    size_t n = 0;
    while (esc_strmap_next(g->jobs, &pos, &k, &v)) {
        gcs_job *j = v;
        if (j->info->state == ESCHER__JOB_STATE__JOB_RUNNING && j->streams == 0 &&
            !j->end_queued &&
            now - j->orphan_since_ms > (uint64_t)g->cfg.job_timeout_ms)
            lost[n++] = j;
    }
    for (size_t i = 0; i < n; i++) {
        lost[i]->end_queued = true;
        gcs_queue_write(g, lost_end_run, lost_end_expire,
                        end_ctx_new(NULL, lost[i]->info->job_id, true));
    }
    free(lost);
}

void gcs_jobs_free(gcs *g)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->jobs, &pos, &k, &v)) {
        gcs_job *j = v;
        pending_clear(j);
        protobuf_c_message_free_unpacked(&j->info->base, NULL);
        free(j);
    }
    esc_strmap_free(g->jobs);
}

/* Joining a running job reads only, so a slow storage does not delay it. */
static void handle_register(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__RegisterJobRequest *req = (const Escher__RegisterJobRequest *)msg;
    if (*req->namespace_ && !esc_name_valid(req->namespace_)) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT,
                       "invalid namespace (1-64 of A-Z a-z 0-9 _ . -)");
        return;
    }
    if (*req->attach_job_id)
        attach(g, call, req);
    else
        gcs_write_call(g, call, msg, register_new);
}

void gcs_jobs_register(gcs *g)
{
    esc_rpc_server_handle(g->server, &ESC_M_GCS_REGISTER_JOB, handle_register, g);
    gcs_handle_write(g, &ESC_M_GCS_FINISH_JOB, handle_finish);
    esc_rpc_server_handle(g->server, &ESC_M_GCS_LIST_JOBS, handle_list, g);
    esc_rpc_server_handle(g->server, &ESC_M_GCS_REPORT_ENTRYPOINT, handle_report_entrypoint, g);
}
