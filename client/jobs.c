/* jobs.c: the job table: listing it (ListJobs) and ending a job (FinishJob). */
#include "client_internal.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *job_state_name(Escher__JobState s)
{
    switch (s) {
    case ESCHER__JOB_STATE__JOB_RUNNING:
        return "RUNNING";
    case ESCHER__JOB_STATE__JOB_FINISHED:
        return "FINISHED";
    case ESCHER__JOB_STATE__JOB_FAILED:
        return "FAILED";
    default:
        return "UNKNOWN";
    }
}

static void fill_job(esc_job_info *j, const Escher__JobInfo *p)
{
    j->id = esc_xstrdup(p->job_id);
    j->namespace_ = esc_xstrdup(p->namespace_);
    j->state = esc_xstrdup(job_state_name(p->state));
    j->entrypoint = esc_xstrdup(p->entrypoint);
    j->start_ms = p->start_ms;
    j->end_ms = p->end_ms;
    j->driver_pid = p->driver_pid;
    j->pending_node = esc_xstrdup(p->pending_node);
    j->pending_missing = esc_xcalloc(p->n_pending_missing + 1, sizeof *j->pending_missing);
    for (size_t i = 0; i < p->n_pending_missing; i++)
        j->pending_missing[j->npending_missing++] = esc_xstrdup(p->pending_missing[i]);
    j->pending_infeasible = p->pending_infeasible;
    j->grants = esc_xcalloc(p->n_grants + 1, sizeof *j->grants);
    for (size_t i = 0; i < p->n_grants; i++)
        j->grants[j->ngrants++] = esc_xstrdup(p->grants[i]);
    j->prefix_grants = esc_xcalloc(p->n_prefix_grants + 1, sizeof *j->prefix_grants);
    for (size_t i = 0; i < p->n_prefix_grants; i++)
        j->prefix_grants[j->nprefix_grants++] =
            (esc_prefix_grant){esc_xstrdup(p->prefix_grants[i]->grantee),
                               esc_xstrdup(p->prefix_grants[i]->prefix)};
}

int esc_list_jobs(esc_client *c, esc_job_info **jobs, size_t *n, esc_status *st)
{
    *jobs = NULL;
    *n = 0;
    Escher__ListJobsRequest req = ESCHER__LIST_JOBS_REQUEST__INIT;
    ProtobufCMessage *m;
    int rc = esc_client_call(c, &ESC_M_GCS_LIST_JOBS, &req.base, &m, ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    const Escher__ListJobsReply *r = (const Escher__ListJobsReply *)m;
    /* As many as the cluster holds: a checked calloc (escher.h, "Out of memory"). */
    *jobs = calloc(r->n_jobs + 1, sizeof **jobs);
    if (!*jobs) {
        rc = esc_client_out_of_memory(st, (r->n_jobs + 1) * sizeof **jobs);
        protobuf_c_message_free_unpacked(m, NULL);
        return rc;
    }
    for (size_t i = 0; i < r->n_jobs; i++)
        fill_job(&(*jobs)[i], r->jobs[i]);
    *n = r->n_jobs;
    protobuf_c_message_free_unpacked(m, NULL);
    return ESC_OK;
}

void esc_jobs_free(esc_job_info *jobs, size_t n)
{
    if (!jobs)
        return;
    for (size_t i = 0; i < n; i++) {
        free(jobs[i].id);
        free(jobs[i].namespace_);
        free(jobs[i].state);
        free(jobs[i].entrypoint);
        free(jobs[i].pending_node);
        for (size_t k = 0; k < jobs[i].npending_missing; k++)
            free(jobs[i].pending_missing[k]);
        free(jobs[i].pending_missing);
        for (size_t k = 0; k < jobs[i].ngrants; k++)
            free(jobs[i].grants[k]);
        free(jobs[i].grants);
        for (size_t k = 0; k < jobs[i].nprefix_grants; k++) {
            free(jobs[i].prefix_grants[k].job_id);
            free(jobs[i].prefix_grants[k].prefix);
        }
        free(jobs[i].prefix_grants);
    }
    free(jobs);
}

/* FinishJob with the operator key, on a channel of its own: the key travels with
 * this one call only, never with the client's other calls. */
static int operator_finish(esc_client *c, const Escher__FinishJobRequest *req,
                           const char *operator_key, ProtobufCMessage **m, esc_status *st)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(c->address, c->token);
    esc_rpc_channel_set_secret(ch, ESC_RPC_OPERATOR_KEY, operator_key);
    int rc = esc_rpc_call(ch, &ESC_M_GCS_FINISH_JOB, &req->base, m, c->timeout_ms,
                          ESC_RPC_IDEMPOTENT, st);
    esc_rpc_channel_free(ch);
    return rc;
}

int esc_client_finish_job(esc_client *c, const char *job_id, bool failed,
                          const char *operator_key, esc_status *st)
{
    Escher__FinishJobRequest req = ESCHER__FINISH_JOB_REQUEST__INIT;
    req.job_id = (char *)(job_id ? job_id : esc_client_job_id(c));
    req.failed = failed;
    req.operator_stop = operator_key != NULL;
    ProtobufCMessage *m = NULL;
    /* Idempotent: finishing a job that has ended already changes nothing. */
    int rc = operator_key ? operator_finish(c, &req, operator_key, &m, st)
                          : esc_client_call(c, &ESC_M_GCS_FINISH_JOB, &req.base, &m,
                                            ESC_RPC_IDEMPOTENT, st);
    if (rc == ESC_OK)
        protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

int esc_job_finish(esc_client *c, const char *job_id, bool failed, esc_status *st)
{
    return esc_client_finish_job(c, job_id, failed, NULL, st);
}
