/* task_manager.c: see task_manager.h for the policy; this file keeps it to plain
 * resource matching: fits here, else fits now elsewhere (or, when it never fits here,
 * could fit elsewhere), else wait. */
#include "task_manager.h"
#include "task_internal.h"
#include "package.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor_manager.h"
#include "cluster_view.h"
#include "gcs_link.h"
#include "gpu_slots.h"
#include "ids.h"
#include "log.h"
#include "names.h"
#include "object.pb-c.h"
#include "object_service.h"
#include "pbutil.h"
#include "qty.h"
#include "raylet.h"
#include "results.h"
#include "rpc_async.h"
#include "strmap.h"
#include "worker_pool.h"
#include "xalloc.h"

/* Whether a task on a dead node ended: one directory look (its first return). */
#define CHECK_TIMEOUT_MS 5000
/* ... held at the GCS up to this long for a location to appear: right after a GCS
 * restart the raylets are still announcing their objects again. */
#define CHECK_WAIT_MS 2000

/* ------------------------------------------------------------ entries */

task_entry *task_entry_new(task_manager *tm, Escher__TaskSpec *spec)
{
    task_entry *e = esc_xcalloc(1, sizeof *e);
    e->tm = tm;
    e->spec = spec;
    e->nreq = spec->n_resources;
    e->req = esc_xcalloc(e->nreq + 1, sizeof *e->req);
    for (size_t i = 0; i < e->nreq; i++) {
        e->req[i] = (accounting_req){.name = spec->resources[i]->name,
                                   .qty = spec->resources[i]->value};
        if (!strcmp(spec->resources[i]->name, "GPU"))
            e->gpus += spec->resources[i]->value;
    }
    accounting_resolve(tm->r->acct, e->req, e->nreq);
    return e;
}

void task_entry_free(task_entry *e)
{
    free(e->spilled_to);
    free(e->spilled_addr);
    free(e->shape_key);
    protobuf_c_message_free_unpacked(&e->spec->base, NULL);
    free(e->req);
    free(e->grant);
    free(e);
}

static void try_queued(admission_entry *a, uint64_t pass);

static void shape_count_in(task_manager *tm, task_entry *e);
static void shapes_free(esc_strmap *shapes);
static void shape_count_out(task_manager *tm, task_entry *e);

static char *shape_key(const task_entry *e);

void task_enqueue(task_manager *tm, task_entry *e)
{
    e->q.try_fn = try_queued;
    /* Tasks alike for admission (admission.h): try_queued decides from the request
     * (fits here, and where else it fits) and, for the spill target, from the sender
     * (never sent back) and the hops made; equal in all three, one that stays means the
     * later ones stay too. */
    char *shape = shape_key(e);
    size_t len = strlen(shape) + strlen(e->spec->reply_to) + 32;
    char *alike = esc_xmalloc(len);
    snprintf(alike, len, "%u|%s|%s", e->spec->spill_hops, e->spec->reply_to, shape);
    admission_push_alike(tm->r->admission, &e->q, alike);
    free(alike);
    free(shape);
    tm->nqueued++;
    shape_count_in(tm, e);
    if (e->spec->job_entrypoint)
        task_state_report_entrypoint(tm, e, true);
}

void task_dequeue(task_manager *tm, task_entry *e)
{
    admission_remove(tm->r->admission, &e->q);
    tm->nqueued--;
    shape_count_out(tm, e);
    if (e->spec->job_entrypoint)
        task_state_report_entrypoint(tm, e, false);
}

task_entry *task_queued_from(const admission_entry *a)
{
    while (a && a->try_fn != try_queued)
        a = a->next;
    return (task_entry *)a; /* q is the first member */
}

/* Iterates over the queued tasks; e->q.next may change inside only for e itself. */
#define FOR_QUEUED(tm, e, next)                                                            \
    for (task_entry *e = task_queued_from(admission_first((tm)->r->admission)), *next;     \
         e && ((next = task_queued_from(e->q.next)), 1); e = next)

/* A system failure (the worker process died) is retried; an application failure (the
 * task returned non-zero, the command exited non-zero) or a cancel is not. */
static bool retryable(const Escher__TaskResult *res)
{
    return !res->ok && res->error && strncmp(res->error, "worker died", 11) == 0;
}

/* The GPU instances a task uses: what it asks of "GPU", plus the GPUs behind the
 * GPU-backed ephemeral resources it asks for (read at admission: a backing may change
 * while the task waits). */
static int64_t gpu_need(const task_manager *tm, const task_entry *e)
{
    return e->gpus + accounting_backed_physical(tm->r->acct, e->req, e->nreq, "GPU");
}

int64_t task_cpu_quota(const task_manager *tm, const task_entry *e)
{
    return esc_qty_add(worker_pool_spec_cpu(e->spec),
                       accounting_backed_physical(tm->r->acct, e->req, e->nreq, "CPU"));
}

/* Admission: the table must fit, and so must the GPU instances. */
bool task_fits_now(task_manager *tm, const task_entry *e)
{
    return accounting_fits(tm->r->acct, e->req, e->nreq) &&
           gpu_slots_fit(tm->gpus, gpu_need(tm, e));
}

static void release(task_manager *tm, task_entry *e)
{
    accounting_release(tm->r->acct, e->req, e->nreq);
    if (e->grant) {
        gpu_slots_release(tm->gpus, e->grant);
        free(e->grant);
        e->grant = NULL;
    }
    raylet_changed(tm->r, true);
}

/* The event history (docs/observability.md): a failed attempt, retried or not. */
static void report_failure(task_manager *tm, const task_entry *e, const char *error,
                           bool retried)
{
    const Escher__TaskSpec *s = e->spec;
    bool actor = s->actor_creation;
    if (!tm->r->link) /* unit tests run the manager without a GCS */
        return;
    gcs_link_task_event(tm->r->link, s->task_id, s->job_id, s->name, s->attempt,
                        actor ? s->max_restarts : s->max_retries, error, retried);
}

static void on_done(void *ud, const Escher__TaskResult *res)
{
    task_entry *e = ud;
    task_manager *tm = e->tm;
    raylet *r = tm->r;
    release(tm, e);
    esc_strmap_del(tm->running, e->spec->task_id);
    if (retryable(res) && e->spec->attempt < e->spec->max_retries && !r->stopping) {
        e->spec->attempt++;
        tm->ended[TASK_RETRIED]++;
        ESC_WARN("task %s (%s): %s; retrying (attempt %u of %u)", e->spec->task_id,
                 e->spec->name, res->error, e->spec->attempt, e->spec->max_retries);
        report_failure(tm, e, res->error, true);
        task_schedule(tm, e);
        return;
    }
    tm->ended[res->ok ? TASK_SUCCEEDED : TASK_FAILED]++;
    task_list_record_end(tm, e, res->ok);
    if (!res->ok)
        report_failure(tm, e, res->error, false);
    results_store(tm->r->results, e->spec, res);
    task_entry_free(e);
}

/* ------------------------------------------------------------ placement */

static void on_actor_ended(void *ud)
{
    task_entry *e = ud;
    task_manager *tm = e->tm;
    release(tm, e);
    esc_strmap_del(tm->actors, e->spec->actor_id);
    task_entry_free(e);
}

static void run(task_manager *tm, task_entry *e)
{
    raylet *r = tm->r;
    char why[512];
    task_entry *host = e->spec->actor_creation ? esc_strmap_get(tm->actors, e->spec->actor_id)
                                               : NULL;
    if (host && host != e) {
        /* Two creations of one actor id (accepted while the first was queued): the
         * second would replace the first in tm->actors and orphan it. */
        snprintf(why, sizeof why, "actor %.40s already exists on this node", e->spec->actor_id);
        task_list_record_end(tm, e, false);
        results_store_error(tm->r->results, e->spec, why);
        task_entry_free(e);
        return;
    }
    if (task_args_lend(tm, e, why, sizeof why)) {
        task_args_unlend(e);
        task_list_record_end(tm, e, false);
        results_store_error(tm->r->results, e->spec, why);
        task_entry_free(e);
        return;
    }
    int64_t gpus = gpu_need(tm, e);
    if (!gpu_slots_fit(tm->gpus, gpus) || !accounting_acquire(r->acct, e->req, e->nreq)) {
        task_args_unlend(e);
        task_enqueue(tm, e);
        return;
    }
    if (gpus > 0) {
        e->grant = esc_xcalloc(1, sizeof *e->grant);
        gpu_slots_acquire(tm->gpus, gpus, e->grant);
    }
    static const gpu_grant no_gpus;
    const gpu_grant *grant = e->grant ? e->grant : &no_gpus;
    e->start_ms = esc_wall_ms();
    raylet_changed(r, false);
    esc_strmap_put(tm->running, e->spec->task_id, e);
    if (e->spec->job_entrypoint)
        task_state_report_started(tm, e);
    /* Tasks see only their GPU instances (none for a task without GPUs), and can use the
     * SDK: a client they connect joins their job (ESCHER_JOB_ID, set by the pool). */
    char node_env[200], gpu_env[300], ids[256], gcs_env[400], token_env[600], mps_env[64];
    snprintf(node_env, sizeof node_env, "ESCHER_NODE_ID=%s", r->node_id);
    gpu_grant_format(grant, ids, sizeof ids);
    snprintf(gpu_env, sizeof gpu_env, "CUDA_VISIBLE_DEVICES=%s", ids);
    snprintf(gcs_env, sizeof gcs_env, "ESCHER_ADDRESS=%s", r->cfg.gcs_address);
    snprintf(token_env, sizeof token_env, "ESCHER_TOKEN=%s", r->cfg.token ? r->cfg.token : "");
    const char *env[5] = {node_env, gpu_env, gcs_env};
    size_t nenv = 3;
    if (r->cfg.token)
        env[nenv++] = token_env;
    /* A share of one GPU under MPS: that share of its threads (gpu_slots.h). */
    int pct = tm->mps ? gpu_grant_mps_percentage(grant) : 0;
    snprintf(mps_env, sizeof mps_env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", pct);
    if (pct)
        env[nenv++] = mps_env;
    if (e->spec->actor_creation) {
        /* An actor keeps what it was admitted with until it ends. */
        esc_strmap_del(tm->running, e->spec->task_id);
        esc_strmap_put(tm->actors, e->spec->actor_id, e);
        task_args_unlend(e);
        actor_manager_start(r->actors, e->spec, env, nenv, task_cpu_quota(tm, e),
                            on_actor_ended, e);
        return;
    }
    /* The worker needs what to run, not what it holds: a task with a thousand resources
     * would otherwise ship them all to its worker. The pool deep-copies the spec it is
     * given, so a shallow copy without the resources serves. */
    Escher__TaskSpec to_run = *e->spec;
    to_run.n_resources = 0;
    to_run.resources = NULL;
    int rc = worker_pool_run(r->pool, &to_run, env, nenv, task_cpu_quota(tm, e), on_done, e);
    task_args_unlend(e);
    if (rc != 0) {
        esc_strmap_del(tm->running, e->spec->task_id);
        release(tm, e);
        task_list_record_end(tm, e, false);
        results_store_error(tm->r->results, e->spec, "cannot start a worker process");
        task_entry_free(e);
    }
}

void task_schedule(task_manager *tm, task_entry *e)
{
    /* Placement first, then arguments: a task that will run here needs them here; one
     * that goes elsewhere (busy or infeasible here) is spilled with its references, and
     * its new node fetches them. One that cannot run here and has no node yet (the view
     * has not heard of a resource just made elsewhere, say) waits without fetching: its
     * arguments would cross the network for nothing. */
    const char *spill_node = NULL;
    const char *to = task_spill_target(tm, e, &spill_node);
    if (to) {
        task_spill_forward(tm, e, to, spill_node);
        return;
    }
    bool here = task_fits_now(tm, e);
    if (!here && !accounting_feasible(tm->r->acct, e->req, e->nreq)) {
        task_enqueue(tm, e);
        return;
    }
    if (task_args_wait(tm, e))
        return;
    if (here)
        run(tm, e);
    else
        task_enqueue(tm, e);
}

/* A queued task's turn in a re-examination (admission.h): run it if it fits here, else
 * send it where it fits now, else it keeps its place. */
static void try_queued(admission_entry *a, uint64_t pass)
{
    task_entry *e = (task_entry *)a;
    task_manager *tm = e->tm;
    if (tm->stuck_pass != pass) {
        tm->stuck_pass = pass;
        tm->stuck = NULL;
    }
    if (task_fits_now(tm, e)) {
        task_dequeue(tm, e);
        if (!task_args_wait(tm, e)) /* none fetched yet when it waited as infeasible */
            run(tm, e);
    } else if (!tm->stuck || !task_spill_same_placement(tm->stuck, e)) {
        const char *node = NULL;
        const char *to = task_spill_target(tm, e, &node);
        if (to) {
            task_dequeue(tm, e);
            task_spill_forward(tm, e, to, node);
        } else {
            tm->stuck = e;
        }
    }
}

task_entry *task_find_queued(task_manager *tm, const char *task_id)
{
    FOR_QUEUED(tm, e, next)
        if (strcmp(e->spec->task_id, task_id) == 0)
            return e;
    return NULL;
}

/* ------------------------------------------------------------ lifetime */

/* Whole GPUs of this node, from its physical resources. */
static int node_gpus(const raylet *r)
{
    for (size_t i = 0; i < r->node.nphysical; i++)
        if (!strcmp(r->node.physical[i].name, "GPU"))
            return (int)(r->node.physical[i].qty / ESC_QTY_SCALE);
    return 0;
}

task_manager *task_manager_new(raylet *r)
{
    task_manager *tm = esc_xcalloc(1, sizeof *tm);
    tm->r = r;
    tm->running = esc_strmap_new();
    tm->shapes = esc_strmap_new();
    tm->spilled = esc_strmap_new();
    tm->lineage = esc_strmap_new();
    tm->checking = esc_strmap_new();
    tm->gcs = raylet_channel_new(r, r->cfg.gcs_address);
    tm->checker = esc_rpc_async_new(esc_loop_post, r->loop);
    tm->lineage_order = esc_xcalloc(LINEAGE_MAX, sizeof *tm->lineage_order);
    tm->fetching = esc_strmap_new();
    tm->gpus = gpu_slots_new(node_gpus(r));
    tm->mps = gpu_mps_running();
    tm->actors = esc_strmap_new();
    tm->resizing = esc_strmap_new();
    return tm;
}

/* Removes and returns the spilled entries matching node_id or job_id (one of them). */
static task_entry **take_spilled(task_manager *tm, const char *node_id, const char *job_id,
                                 size_t *n)
{
    task_entry **out = esc_xcalloc(esc_strmap_count(tm->spilled) + 1, sizeof *out);
    *n = 0;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(tm->spilled, &pos, &k, &v)) {
        task_entry *e = v;
        if ((node_id && !strcmp(e->spilled_to, node_id)) ||
            (job_id && !strcmp(e->spec->job_id, job_id))) {
            out[(*n)++] = e;
            esc_strmap_del(tm->spilled, k);
        }
    }
    return out;
}

/* Runs a task whose node died again while its retries (an actor: its restarts) last. */
static void run_again(task_manager *tm, task_entry *e, const char *node_id)
{
    bool actor = e->spec->actor_creation;
    if (e->spec->attempt >= (actor ? e->spec->max_restarts : e->spec->max_retries)) {
        const char *why = actor ? "the actor's node died and no restarts remain"
                                : "the node running it died and no retries remain";
        task_list_record_end(tm, e, false);
        report_failure(tm, e, why, false);
        results_store_error(tm->r->results, e->spec, why);
        task_entry_free(e);
        return;
    }
    e->spec->attempt++;
    e->spec->spill_hops = 0;
    report_failure(tm, e, "the node running it died", true);
    ESC_WARN("task %s (%s) was on dead node %s; submitting it again (attempt %u of %u)",
             e->spec->task_id, e->spec->name, node_id, e->spec->attempt,
             actor ? e->spec->max_restarts : e->spec->max_retries);
    task_schedule(tm, e);
}

typedef struct {
    task_manager *tm;
    char task_id[ESC_OBJECT_ID_MAX];
    char node_id[128];
} check_ctx;

/* A task found ended after its node died: its notice died with a raylet on the way
 * back, so its owner hears now that it ended, with neither value nor address (the
 * owner's reader then reads the returns from the directory). The owner waits for this
 * notice on its stream alone, with no periodic look at the directory (client/tasks.c). */
static void notify_ended(task_manager *tm, const task_entry *e)
{
    unsigned n = e->spec->num_returns;
    Escher__ReadyObject **objs = esc_xmalloc((n + 1) * sizeof *objs);
    for (unsigned i = 0; i < n; i++) {
        char id[ESC_OBJECT_ID_MAX];
        esc_return_id(e->spec->task_id, i, id, sizeof id);
        Escher__ReadyObject *o = esc_xmalloc(sizeof *o);
        escher__ready_object__init(o);
        o->object_id = esc_xstrdup(id);
        o->error = esc_xstrdup("");
        o->address = esc_xstrdup("");
        objs[i] = o;
    }
    const char *back = e->spec->reply_to;
    results_deliver(tm->r->results, *back ? peers_get(tm->r->peers, back) : NULL,
                    e->spec->task_id, e->spec->owner_id, e->spec->job_credential, objs, n);
}

/* The directory's answer for the first return of a task whose node died: it decides
 * whether the task ended (docs/tasks.md, "When a node fails", rule 1). */
static void on_checked(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    (void)st;
    check_ctx *c = ud;
    task_manager *tm = c->tm;
    const Escher__GetLocationsReply *r = (const Escher__GetLocationsReply *)reply;
    task_entry *e = esc_strmap_get(tm->checking, c->task_id);
    if (e && !tm->r->stopping) {
        esc_strmap_del(tm->checking, c->task_id);
        if (code == ESC_OK && (r->found || r->lost)) {
            /* It ended (a notice lost with a raylet on the way back): its returns exist,
             * or existed and are made again only when asked for. */
            ESC_INFO("task %s (%s) ended before node %s died; not run again", c->task_id,
                     e->spec->name, c->node_id);
            notify_ended(tm, e);
            if (!strcmp(e->spec->origin, tm->r->node_id))
                task_lineage_keep(tm, e);
            else
                task_entry_free(e);
        } else {
            run_again(tm, e, c->node_id);
        }
    }
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    free(c);
}

/* Asks the directory whether the task's first return exists (or was lost with a node)
 * before running it again: the task may have ended on a node further down its spill path
 * whose end notice died with the node that was to pass it back. */
static void check_ended(task_manager *tm, task_entry *e, const char *node_id)
{
    check_ctx *c = esc_xcalloc(1, sizeof *c);
    c->tm = tm;
    snprintf(c->task_id, sizeof c->task_id, "%s", e->spec->task_id);
    snprintf(c->node_id, sizeof c->node_id, "%s", node_id);
    esc_strmap_put(tm->checking, c->task_id, e);
    char id[ESC_OBJECT_ID_MAX];
    esc_return_id(e->spec->task_id, 0, id, sizeof id);
    Escher__GetLocationsRequest req = ESCHER__GET_LOCATIONS_REQUEST__INIT;
    req.object_id = id;
    req.report_lost = true;
    req.wait_ms = CHECK_WAIT_MS;
    req.job_id = e->spec->job_id; /* the directory shows a job's objects to that job */
    req.job_credential = e->spec->job_credential;
    /* Its own queue: a held look must not delay the raylet's other calls to the GCS. */
    esc_rpc_async_call(tm->checker, tm->gcs, &ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS, &req.base,
                       CHECK_WAIT_MS + CHECK_TIMEOUT_MS, ESC_RPC_IDEMPOTENT, on_checked, c);
}

void task_manager_node_dead(task_manager *tm, const char *node_id)
{
    size_t n;
    task_entry **lost = take_spilled(tm, node_id, NULL, &n);
    for (size_t i = 0; i < n; i++) {
        /* An actor is created again elsewhere while its restarts last (its state is lost,
         * as after a worker crash); a task runs again if it had not ended. */
        if (lost[i]->spec->actor_creation || !tm->checker)
            run_again(tm, lost[i], node_id);
        else
            check_ended(tm, lost[i], node_id);
    }
    free(lost);
}

int task_manager_serve(task_manager *tm, esc_rpc_server *srv)
{
    return esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_SUBMIT_TASK, task_submit_handle, tm) |
           esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_SUBMIT_TASKS,
                                 task_submit_handle_batch, tm) |
           esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_TASKS_DONE,
                                 task_lineage_handle_tasks_done, tm) |
           esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_CANCEL_TASK, task_cancel_handle, tm) |
           esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_KILL_ACTOR,
                                 task_cancel_handle_kill_actor, tm) |
           esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_RESIZE_ACTOR, actor_resize_handle,
                                 tm) |
           esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_RECONSTRUCT,
                                 task_lineage_handle_reconstruct, tm) |
           esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_GET_TASK_STATE, task_state_handle,
                                 tm) |
           esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_LIST_TASKS, task_list_handle_tasks,
                                 tm) |
           esc_rpc_server_handle(srv, &ESC_M_TASK_SERVICE_LIST_ACTORS, task_list_handle_actors,
                                 tm);
}

void task_manager_log_applied(task_manager *tm)
{
    if (tm->held)
        task_submit_jobs_changed(tm);
}

void task_manager_job_finished(task_manager *tm, const char *job_id)
{
    size_t n;
    task_entry **done = take_spilled(tm, NULL, job_id, &n);
    for (size_t i = 0; i < n; i++)
        task_entry_free(done[i]);
    free(done);
    task_lineage_drop(tm, job_id);
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(tm->checking, &pos, &k, &v)) {
        task_entry *e = v;
        if (!strcmp(e->spec->job_id, job_id)) {
            esc_strmap_del(tm->checking, k); /* deleting the entry just returned is allowed */
            task_entry_free(e);
        }
    }
    done = task_args_take_job(tm, job_id, &n);
    for (size_t i = 0; i < n; i++)
        task_entry_free(done[i]);
    free(done);
    FOR_QUEUED(tm, e, next) {
        if (strcmp(e->spec->job_id, job_id) == 0) {
            task_dequeue(tm, e);
            task_entry_free(e);
        }
    }
    actor_manager_job_finished(tm->r->actors, job_id);
    worker_pool_job_ended(tm->r->pool, job_id);
}

size_t task_manager_queued(const task_manager *tm)
{
    return tm->nqueued;
}

uint64_t task_manager_ended(const task_manager *tm, task_outcome o)
{
    return (unsigned)o < TASK_OUTCOMES ? tm->ended[o] : 0;
}

/* Per job: [0] queued, [1] running. */
static void count_job(esc_strmap *jobs, const char *job_id, int which)
{
    size_t *c = esc_strmap_get(jobs, job_id);
    if (!c) {
        c = esc_xcalloc(2, sizeof *c);
        esc_strmap_put(jobs, job_id, c);
    }
    c[which]++;
}

void task_manager_job_counts(task_manager *tm,
                             void (*fn)(void *ud, const char *job_id, size_t queued,
                                        size_t running),
                             void *ud)
{
    esc_strmap *jobs = esc_strmap_new();
    FOR_QUEUED(tm, e, next)
        count_job(jobs, e->spec->job_id, 0);
    size_t pos = 0;
    const char *id;
    void *val;
    while (esc_strmap_next(tm->running, &pos, &id, &val))
        count_job(jobs, ((task_entry *)val)->spec->job_id, 1);
    pos = 0;
    while (esc_strmap_next(jobs, &pos, &id, &val)) {
        const size_t *c = val;
        fn(ud, id, c[0], c[1]);
        free(val);
    }
    esc_strmap_free(jobs);
}

size_t task_manager_running(const task_manager *tm)
{
    return esc_strmap_count(tm->running);
}

void task_manager_stop(task_manager *tm)
{
    if (tm) {
        actor_resize_stop(tm);
        task_submit_drop_held(tm);
        esc_rpc_async_free(tm->checker); /* looks not made yet end UNAVAILABLE */
        tm->checker = NULL;
    }
}

void task_manager_free(task_manager *tm)
{
    if (!tm)
        return;
    FOR_QUEUED(tm, e, next) {
        task_dequeue(tm, e);
        task_entry_free(e);
    }
    size_t pos = 0;
    const char *k;
    void *v;
    esc_strmap_free(tm->running);
    shapes_free(tm->shapes);
    esc_strmap_free(tm->resizing);
    while (esc_strmap_next(tm->spilled, &pos, &k, &v))
        task_entry_free(v);
    esc_strmap_free(tm->spilled);
    pos = 0;
    while (esc_strmap_next(tm->checking, &pos, &k, &v))
        task_entry_free(v);
    esc_strmap_free(tm->checking);
    esc_rpc_channel_free(tm->gcs);
    task_lineage_drop(tm, NULL);
    esc_strmap_free(tm->lineage);
    for (size_t i = 0; i < LINEAGE_MAX; i++)
        free(tm->lineage_order[i]);
    free(tm->lineage_order);
    pos = 0;
    while (esc_strmap_next(tm->fetching, &pos, &k, &v))
        task_entry_free(v);
    esc_strmap_free(tm->fetching);
    gpu_slots_free(tm->gpus);
    pos = 0;
    while (esc_strmap_next(tm->actors, &pos, &k, &v))
        task_entry_free(v);
    esc_strmap_free(tm->actors);
    task_list_free(tm);
    free(tm);
}

/* ------------------------------------------------------------ demand */

/* Queued tasks of one shape: the shape (names copied) and how many. */
typedef struct {
    accounting_req *req;
    size_t nreq;
    uint32_t count;
} queued_shape;

static void queued_shape_free(queued_shape *q)
{
    for (size_t i = 0; i < q->nreq; i++)
        free((char *)q->req[i].name);
    free(q->req);
    free(q);
}

static void shapes_free(esc_strmap *shapes)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(shapes, &pos, &k, &v))
        queued_shape_free(v);
    esc_strmap_free(shapes);
}

/* "name=value;..." in request order (malloc'd): tasks with the same key have the same
 * shape. */
static char *shape_key(const task_entry *e)
{
    size_t len = 1;
    for (size_t i = 0; i < e->nreq; i++)
        len += strlen(e->req[i].name) + 24;
    char *out = esc_xmalloc(len);
    size_t off = 0;
    out[0] = 0;
    for (size_t i = 0; i < e->nreq; i++)
        off += (size_t)snprintf(out + off, len - off, "%s=%lld;", e->req[i].name,
                                (long long)e->req[i].qty);
    return out;
}

static void shape_count_in(task_manager *tm, task_entry *e)
{
    tm->queue_version++;
    free(e->shape_key);
    e->shape_key = shape_key(e);
    queued_shape *q = esc_strmap_get(tm->shapes, e->shape_key);
    if (!q) {
        q = esc_xcalloc(1, sizeof *q);
        q->req = esc_xcalloc(e->nreq + 1, sizeof *q->req);
        q->nreq = e->nreq;
        for (size_t i = 0; i < e->nreq; i++)
            q->req[i] = (accounting_req){esc_xstrdup(e->req[i].name), e->req[i].qty, 0};
        esc_strmap_put(tm->shapes, e->shape_key, q);
    }
    q->count++;
}

static void shape_count_out(task_manager *tm, task_entry *e)
{
    tm->queue_version++;
    queued_shape *q = e->shape_key ? esc_strmap_get(tm->shapes, e->shape_key) : NULL;
    if (q && --q->count == 0)
        queued_shape_free(esc_strmap_del(tm->shapes, e->shape_key));
    free(e->shape_key);
    e->shape_key = NULL;
}

static Escher__Demand *demand_of(task_manager *tm, const accounting_req *req, size_t nreq)
{
    Escher__Demand *d = esc_xcalloc(1, sizeof *d);
    escher__demand__init(d);
    d->n_shape = nreq;
    d->shape = esc_xcalloc(nreq + 1, sizeof *d->shape);
    d->missing = esc_xcalloc(nreq + 1, sizeof *d->missing);
    for (size_t i = 0; i < nreq; i++) {
        Escher__Amount *a = esc_xmalloc(sizeof *a);
        escher__amount__init(a);
        a->name = esc_xstrdup(req[i].name);
        a->value = req[i].qty;
        d->shape[i] = a;
        accounting_row row;
        if (!accounting_get(tm->r->acct, req[i].name, &row) &&
            !cluster_view_has_name(tm->r->view, req[i].name))
            d->missing[d->n_missing++] = esc_xstrdup(req[i].name);
    }
    d->infeasible = !accounting_feasible(tm->r->acct, req, nreq) &&
                    !cluster_view_find_feasible(tm->r->view, tm->r->node_id, req, nreq, NULL);
    return d;
}

Escher__Demand *task_demand_of(task_manager *tm, const task_entry *e)
{
    return demand_of(tm, e->req, e->nreq);
}

Escher__Demand **task_manager_demand(task_manager *tm, size_t *n)
{
    Escher__Demand **out = esc_xcalloc(esc_strmap_count(tm->shapes) + 1, sizeof *out);
    *n = 0;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(tm->shapes, &pos, &k, &v)) {
        const queued_shape *q = v;
        Escher__Demand *d = demand_of(tm, q->req, q->nreq);
        d->count = q->count;
        out[(*n)++] = d;
    }
    return out;
}

uint64_t task_manager_queue_version(const task_manager *tm)
{
    return tm->queue_version;
}

void task_manager_demand_free(Escher__Demand **d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        protobuf_c_message_free_unpacked(&d[i]->base, NULL);
    free(d);
}
