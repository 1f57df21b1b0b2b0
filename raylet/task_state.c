/* task_state.c: where one task is on this raylet (task_internal.h).
 *
 * GetTaskState answers for the task manager's own tables only: queued (with what its
 * request lacks, as status shows it), fetching its arguments, running, or forwarded to
 * another node that has not reported its end. A reader that wants to know where a task
 * is follows FORWARDED answers from the raylet it was submitted to (libescher's
 * job_status.c does, for a job's entrypoint).
 *
 * A job's entrypoint entering or leaving the queue is also told to the GCS
 * (ReportEntrypoint, fire and forget on the raylet's outbound queue), so that ListJobs
 * shows the job waiting without asking any raylet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcs.pb-c.h"
#include "names.h"
#include "rpc_async.h"
#include "task_internal.h"

/* A report to the GCS that cannot go out in this long is dropped: the GCS's view is
 * advisory (GetTaskState is the authority), and the outbound queue must move on. */
#define REPORT_TIMEOUT_MS 5000

/* The queued entry's request, copied into the reply (which then owns it). */
static void fill_queued(task_manager *tm, const task_entry *e, Escher__TaskStateReply *rep)
{
    Escher__Demand *d = task_demand_of(tm, e);
    rep->phase = ESCHER__TASK_PHASE__TASK_QUEUED;
    rep->infeasible = d->infeasible;
    /* Moved, not copied: the demand's arrays become the reply's. */
    rep->missing = d->missing;
    rep->n_missing = d->n_missing;
    rep->shape = d->shape;
    rep->n_shape = d->n_shape;
    d->missing = NULL;
    d->n_missing = 0;
    d->shape = NULL;
    d->n_shape = 0;
    protobuf_c_message_free_unpacked(&d->base, NULL);
}

static void free_queued(Escher__TaskStateReply *rep)
{
    for (size_t i = 0; i < rep->n_missing; i++)
        free(rep->missing[i]);
    free(rep->missing);
    for (size_t i = 0; i < rep->n_shape; i++)
        protobuf_c_message_free_unpacked(&rep->shape[i]->base, NULL);
    free(rep->shape);
}

void task_state_report_entrypoint(task_manager *tm, const task_entry *e, bool pending)
{
    raylet *r = tm->r;
    if (r->stopping || !r->async || !r->registered)
        return; /* a raylet going away: its job's end, or the next node, says more */
    Escher__ReportEntrypointRequest req = ESCHER__REPORT_ENTRYPOINT_REQUEST__INIT;
    req.job_id = e->spec->job_id;
    req.task_id = e->spec->task_id;
    req.node_id = r->node_id;
    req.pending = pending;
    Escher__Demand *d = pending ? task_demand_of(tm, e) : NULL;
    if (d) {
        req.missing = d->missing;
        req.n_missing = d->n_missing;
        req.infeasible = d->infeasible;
    }
    esc_rpc_async_call(r->async, tm->gcs, &ESC_M_GCS_REPORT_ENTRYPOINT, &req.base,
                       REPORT_TIMEOUT_MS, ESC_RPC_IDEMPOTENT, NULL, NULL);
    if (d)
        protobuf_c_message_free_unpacked(&d->base, NULL);
}

void task_state_report_started(task_manager *tm, const task_entry *e)
{
    raylet *r = tm->r;
    if (r->stopping || !r->async || !r->registered)
        return;
    char key[300];
    snprintf(key, sizeof key, "%s/started", e->spec->job_id);
    Escher__KvPutRequest req = ESCHER__KV_PUT_REQUEST__INIT;
    req.ns = JOBS_KV_NS;
    req.key = key;
    req.value.data = (uint8_t *)r->node_id;
    req.value.len = strlen(r->node_id);
    req.overwrite = true;
    esc_rpc_async_call(r->async, tm->gcs, &ESC_M_GCS_KV_PUT, &req.base, REPORT_TIMEOUT_MS,
                       ESC_RPC_IDEMPOTENT, NULL, NULL);
}

bool task_manager_holds(task_manager *tm, const char *task_id)
{
    return esc_strmap_get(tm->running, task_id) || esc_strmap_get(tm->fetching, task_id) ||
           task_find_queued(tm, task_id);
}

bool task_manager_is_running(task_manager *tm, const char *task_id)
{
    return esc_strmap_get(tm->running, task_id) != NULL;
}

void task_state_handle(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__TaskStateRequest *rq = (const Escher__TaskStateRequest *)msg;
    if (!esc_object_id_valid(rq->task_id)) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "not a task id");
        return;
    }
    Escher__TaskStateReply rep = ESCHER__TASK_STATE_REPLY__INIT;
    const task_entry *e = task_find_queued(tm, rq->task_id);
    const task_entry *spilled = esc_strmap_get(tm->spilled, rq->task_id);
    if (e) {
        fill_queued(tm, e, &rep);
    } else if (esc_strmap_get(tm->running, rq->task_id)) {
        rep.phase = ESCHER__TASK_PHASE__TASK_RUNNING;
    } else if (esc_strmap_get(tm->fetching, rq->task_id)) {
        rep.phase = ESCHER__TASK_PHASE__TASK_FETCHING;
    } else if (spilled && spilled->spilled_to) {
        rep.phase = ESCHER__TASK_PHASE__TASK_FORWARDED;
        rep.node_id = spilled->spilled_to;
        rep.address = spilled->spilled_addr ? spilled->spilled_addr : "";
    }
    esc_rpc_reply(call, &rep.base);
    if (e)
        free_queued(&rep);
}
