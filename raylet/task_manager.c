/* task_manager.c: see task_manager.h for the policy; this file keeps it to plain
 * resource matching: fits here, else fits now elsewhere (or, when it never fits here,
 * could fit elsewhere), else wait. */
#include "task_manager.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor_manager.h"
#include "cluster_view.h"
#include "ids.h"
#include "gpu_slots.h"
#include "log.h"
#include "object_fetch.h"
#include "peers.h"
#include "names.h"
#include "pbutil.h"
#include "qty.h"
#include "raylet.h"
#include "object_service.h"
#include "results.h"
#include "rpc_async.h"
#include "strmap.h"
#include "worker_pool.h"

#define MAX_RETURNS 1024
/* Lineage kept per raylet: the specs of this many ended forwarded tasks at most, the
 * oldest forgotten first (their lost returns can then no longer be made again). */
#define LINEAGE_MAX 100000

typedef struct task_entry {
    struct task_entry *prev, *next; /* the queue, while waiting */
    task_manager *tm;
    char *spilled_to;               /* node id, while forwarded */
    char *spilled_addr;             /* and that node's raylet */
    unsigned forwards;              /* forwards made: tells a stale forward's outcome */
    Escher__TaskSpec *spec;         /* owned */
    accounting_req *req;              /* names point into spec */
    size_t nreq;
    int64_t gpus;                   /* the GPU quantity requested (fixed point) */
    gpu_grant grant;                /* the instances it holds while running */
} task_entry;

struct task_manager {
    raylet *r;
    task_entry *head, *tail;        /* FIFO of waiting tasks */
    size_t nqueued;
    esc_strmap *running;            /* task id -> task_entry */
    /* Tasks this raylet forwarded and that have not ended, by task id, from the moment
     * the forward goes out: when their node dies they are submitted again while retries
     * remain. A task leaves when its end is reported (TasksDone: its results exist, and
     * it never runs again for a node death), when its forward fails, or when its job
     * ends. An actor's creation stays while the actor lives: its node's death restarts
     * it. */
    esc_strmap *spilled;
    /* Lineage: ended tasks that this raylet forwarded as their origin (TaskSpec.origin),
     * by task id, so a return lost with the node that held it can be made again when a
     * reader asks (Reconstruct), never before. Gone when the job ends; bounded by
     * LINEAGE_MAX, oldest first (lineage_order is a ring of their ids, possibly stale). */
    esc_strmap *lineage;
    char **lineage_order;
    size_t lineage_next;
    esc_strmap *fetching;           /* task id -> task_entry waiting for argument objects */
    gpu_slots *gpus;                /* which GPU instance each running task holds */
    esc_strmap *actors;             /* actor id -> creation entry holding its resources */
};

/* ------------------------------------------------------------ entries */

static task_entry *entry_new(task_manager *tm, Escher__TaskSpec *spec)
{
    task_entry *e = calloc(1, sizeof *e);
    e->tm = tm;
    e->spec = spec;
    e->nreq = spec->n_resources;
    e->req = calloc(e->nreq + 1, sizeof *e->req);
    for (size_t i = 0; i < e->nreq; i++) {
        e->req[i] = (accounting_req){.name = spec->resources[i]->name,
                                   .qty = spec->resources[i]->value};
        if (!strcmp(spec->resources[i]->name, "GPU"))
            e->gpus += spec->resources[i]->value;
    }
    accounting_resolve(tm->r->acct, e->req, e->nreq);
    return e;
}

static void entry_free(task_entry *e)
{
    free(e->spilled_to);
    free(e->spilled_addr);
    protobuf_c_message_free_unpacked(&e->spec->base, NULL);
    free(e->req);
    free(e);
}

static void enqueue(task_manager *tm, task_entry *e)
{
    e->next = NULL;
    e->prev = tm->tail;
    if (tm->tail)
        tm->tail->next = e;
    else
        tm->head = e;
    tm->tail = e;
    tm->nqueued++;
}

static void dequeue(task_manager *tm, task_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        tm->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        tm->tail = e->prev;
    e->prev = e->next = NULL;
    tm->nqueued--;
}

/* A system failure (the worker process died) is retried; an application failure (the
 * task returned non-zero, the command exited non-zero) or a cancel is not. */
static bool retryable(const Escher__TaskResult *res)
{
    return !res->ok && res->error && strncmp(res->error, "worker died", 11) == 0;
}

static void schedule(task_manager *tm, task_entry *e);

/* Admission: the table must fit, and so must the GPU instances. */
static bool fits_now(task_manager *tm, const task_entry *e)
{
    return accounting_fits(tm->r->acct, e->req, e->nreq) && gpu_slots_fit(tm->gpus, e->gpus);
}

static void release(task_manager *tm, task_entry *e)
{
    accounting_release(tm->r->acct, e->req, e->nreq);
    gpu_slots_release(tm->gpus, &e->grant);
    memset(&e->grant, 0, sizeof e->grant);
    raylet_changed(tm->r, true);
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
        ESC_WARN("task %s (%s): %s; retrying (attempt %u of %u)", e->spec->task_id,
                 e->spec->name, res->error, e->spec->attempt, e->spec->max_retries);
        schedule(tm, e);
        return;
    }
    results_store(tm->r->results, e->spec, res);
    entry_free(e);
}

/* ------------------------------------------------------------ placement */

/* Object arguments become inline bytes for the worker: views into this node's store,
 * lent to the spec only while worker_pool_run copies it. Returns NULL, or why the task
 * cannot run. */
static const char *lend_args(task_manager *tm, task_entry *e, char *why, size_t len)
{
    for (size_t i = 0; i < e->spec->n_args; i++) {
        Escher__TaskArg *a = e->spec->args[i];
        if (!*a->object_id)
            continue;
        object_view v;
        if (!object_service_get(tm->r, a->object_id, &v)) {
            snprintf(why, len, "argument object %.80s is not on this node (arguments from "
                     "other nodes are not fetched yet)", a->object_id);
            return why;
        }
        if (v.is_error) {
            snprintf(why, len, "argument %.80s is a failed task's: %.300s", a->object_id, v.error);
            return why;
        }
        a->data = (ProtobufCBinaryData){(size_t)v.size, (uint8_t *)v.data};
    }
    return NULL;
}

static void unlend_args(task_entry *e)
{
    for (size_t i = 0; i < e->spec->n_args; i++)
        if (*e->spec->args[i]->object_id)
            e->spec->args[i]->data = (ProtobufCBinaryData){0, NULL};
}

static void on_actor_ended(void *ud)
{
    task_entry *e = ud;
    task_manager *tm = e->tm;
    release(tm, e);
    esc_strmap_del(tm->actors, e->spec->actor_id);
    entry_free(e);
}

static void run(task_manager *tm, task_entry *e)
{
    raylet *r = tm->r;
    char why[512];
    if (lend_args(tm, e, why, sizeof why)) {
        unlend_args(e);
        results_store_error(tm->r->results, e->spec, why);
        entry_free(e);
        return;
    }
    if (!gpu_slots_fit(tm->gpus, e->gpus) || !accounting_acquire(r->acct, e->req, e->nreq)) {
        unlend_args(e);
        enqueue(tm, e);
        return;
    }
    gpu_slots_acquire(tm->gpus, e->gpus, &e->grant);
    raylet_changed(r, false);
    esc_strmap_put(tm->running, e->spec->task_id, e);
    /* Tasks see only their GPU instances (none for a task without GPUs), and can use the
     * SDK: a client they connect joins their job (ESCHER_JOB_ID, set by the pool). */
    char node_env[200], gpu_env[300], ids[256], gcs_env[400], token_env[600];
    snprintf(node_env, sizeof node_env, "ESCHER_NODE_ID=%s", r->node_id);
    gpu_grant_format(&e->grant, ids, sizeof ids);
    snprintf(gpu_env, sizeof gpu_env, "CUDA_VISIBLE_DEVICES=%s", ids);
    snprintf(gcs_env, sizeof gcs_env, "ESCHER_ADDRESS=%s", r->cfg.gcs_address);
    snprintf(token_env, sizeof token_env, "ESCHER_TOKEN=%s", r->cfg.token ? r->cfg.token : "");
    const char *env[] = {node_env, gpu_env, gcs_env, token_env};
    size_t nenv = r->cfg.token ? 4 : 3;
    if (e->spec->actor_creation) {
        /* An actor keeps what it was admitted with until it ends. */
        esc_strmap_del(tm->running, e->spec->task_id);
        esc_strmap_put(tm->actors, e->spec->actor_id, e);
        unlend_args(e);
        actor_manager_start(r->actors, e->spec, env, nenv, on_actor_ended, e);
        return;
    }
    /* The worker needs what to run, not what it holds: a task with a thousand resources
     * would otherwise ship them all to its worker. The pool deep-copies the spec it is
     * given, so a shallow copy without the resources serves. */
    Escher__TaskSpec to_run = *e->spec;
    to_run.n_resources = 0;
    to_run.resources = NULL;
    int rc = worker_pool_run(r->pool, &to_run, env, nenv, on_done, e);
    unlend_args(e);
    if (rc != 0) {
        esc_strmap_del(tm->running, e->spec->task_id);
        release(tm, e);
        results_store_error(tm->r->results, e->spec, "cannot start a worker process");
        entry_free(e);
    }
}

/* A forward's outcome finds its task by id and forward count: the entry may have ended,
 * or been placed again, before the peer answered. */
typedef struct {
    task_manager *tm;
    char task_id[ESC_OBJECT_ID_MAX];
    unsigned forwards;
} forward_ctx;

/* The peer did not take the task (it is suspect now: peers.h): it goes back to the queue
 * here, from where the re-examination places it on another node or keeps it. */
static void on_forwarded(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    forward_ctx *f = ud;
    task_manager *tm = f->tm;
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    task_entry *e = esc_strmap_get(tm->spilled, f->task_id);
    if (code != ESC_OK && e && e->forwards == f->forwards) {
        esc_strmap_del(tm->spilled, f->task_id);
        ESC_WARN("forwarding task %s to %s failed (%s %s); it is placed again",
                 e->spec->task_id, e->spilled_addr, esc_status_name(code), st->message);
        /* The hop it did not make is not counted. */
        if (e->spec->spill_hops > 0)
            e->spec->spill_hops--;
        free(e->spilled_to);
        e->spilled_to = NULL;
        enqueue(tm, e);
        raylet_changed(tm->r, true);
    }
    free(f);
}

/* Sends the task to the raylet at address, on that peer's own queue, with a short
 * deadline and no retry: a peer that does not answer in time is suspect, and the task
 * is placed again. A timeout can hide a task that did arrive (an overloaded but live
 * peer): then it may run twice, as a retried task may (docs/tasks.md). */
static void forward(task_manager *tm, task_entry *e, const char *address, const char *node_id)
{
    ESC_DEBUG("task %s forwarded to node %s (hop %u)", e->spec->task_id, node_id,
              e->spec->spill_hops + 1);
    /* Until that node advertises again, count the task against it here. */
    cluster_view_debit(tm->r->view, node_id, e->req, e->nreq);
    e->spec->spill_hops++;
    free(e->spilled_to);
    e->spilled_to = strdup(node_id);
    free(e->spilled_addr);
    e->spilled_addr = strdup(address);
    e->forwards++;
    /* Kept from now on: its end may be reported before the forward's own answer. */
    esc_strmap_put(tm->spilled, e->spec->task_id, e);
    forward_ctx *f = malloc(sizeof *f);
    *f = (forward_ctx){.tm = tm, .forwards = e->forwards};
    snprintf(f->task_id, sizeof f->task_id, "%s", e->spec->task_id);
    /* The copy that goes out says to tell this raylet when it ends; the spec kept here
     * still says whom this raylet tells (the call copies the request). */
    char *reply_to = e->spec->reply_to;
    e->spec->reply_to = tm->r->address;
    peers_call(tm->r->peers, peers_get(tm->r->peers, address), "SubmitTask", &e->spec->base, 0, 0,
               on_forwarded, f);
    e->spec->reply_to = reply_to;
}

/* Where should a task that does not fit here now go? NULL: stay (run when it fits, or
 * wait). A node whose advertised availability fits it now, never the raylet that sent it
 * here (no ping-pong: a forwarded task that is busy here goes on to a third node or
 * waits); when this node could never hold it, also any node where it is feasible. At
 * most ESC_MAX_SPILL_HOPS forwards in all. */
static const char *spill_target(task_manager *tm, const task_entry *e, const char **node_id)
{
    raylet *r = tm->r;
    if (e->spec->spill_hops >= ESC_MAX_SPILL_HOPS || fits_now(tm, e))
        return NULL;
    const char *from = cluster_view_node_at(r->view, e->spec->reply_to);
    const char *to = cluster_view_find_available(r->view, r->node_id, e->req, e->nreq, from,
                                                 node_id);
    if (to || accounting_feasible(r->acct, e->req, e->nreq))
        return to;
    return cluster_view_find_feasible(r->view, r->node_id, e->req, e->nreq, node_id);
}

/* True when an argument object is not on this node yet. */
static bool arg_missing(task_manager *tm, const Escher__TaskArg *a)
{
    object_view v;
    return *a->object_id && !object_service_get(tm->r, a->object_id, &v);
}

/* Starts fetching the task's missing argument objects; true when it must wait for them
 * (it is parked in tm->fetching until task_manager_object_arrived). */
static bool wait_for_args(task_manager *tm, task_entry *e)
{
    bool waiting = false;
    for (size_t i = 0; i < e->spec->n_args; i++) {
        if (arg_missing(tm, e->spec->args[i])) {
            object_fetch_start(tm->r->fetcher, e->spec->args[i]->object_id, e->spec->job_id);
            waiting = true;
        }
    }
    if (waiting)
        esc_strmap_put(tm->fetching, e->spec->task_id, e);
    return waiting;
}

static void schedule(task_manager *tm, task_entry *e)
{
    /* Placement first, then arguments: a task that will run here needs them here; one
     * that goes elsewhere (busy or infeasible here) is spilled with its references, and
     * its new node fetches them. One that cannot run here and has no node yet (the view
     * has not heard of a resource just made elsewhere, say) waits without fetching: its
     * arguments would cross the network for nothing. */
    const char *spill_node = NULL;
    const char *to = spill_target(tm, e, &spill_node);
    if (to) {
        forward(tm, e, to, spill_node);
        return;
    }
    bool here = fits_now(tm, e);
    if (!here && !accounting_feasible(tm->r->acct, e->req, e->nreq)) {
        enqueue(tm, e);
        return;
    }
    if (wait_for_args(tm, e))
        return;
    if (here)
        run(tm, e);
    else
        enqueue(tm, e);
}

/* True when b would find the same spill target as a: the same request, sender and hops. */
static bool same_placement(const task_entry *a, const task_entry *b)
{
    if (a->nreq != b->nreq || a->spec->spill_hops != b->spec->spill_hops ||
        strcmp(a->spec->reply_to, b->spec->reply_to) != 0)
        return false;
    for (size_t i = 0; i < a->nreq; i++)
        if (a->req[i].qty != b->req[i].qty || strcmp(a->req[i].name, b->req[i].name) != 0)
            return false;
    return true;
}

void task_manager_reexamine(task_manager *tm)
{
    /* The last task that found no other node: during a pass the view only loses
     * availability (debits), so a task placed like it would find none either. Queues of
     * many tasks of one shape then cost one search per pass, not one per task. */
    const task_entry *stuck = NULL;
    task_entry *e = tm->head;
    while (e) {
        task_entry *next = e->next;
        if (fits_now(tm, e)) {
            dequeue(tm, e);
            if (!wait_for_args(tm, e)) /* none fetched yet when it waited as infeasible */
                run(tm, e);
        } else if (!stuck || !same_placement(stuck, e)) {
            const char *node = NULL;
            const char *to = spill_target(tm, e, &node);
            if (to) {
                dequeue(tm, e);
                forward(tm, e, to, node);
            } else {
                stuck = e;
            }
        }
        e = next;
    }
}

/* ------------------------------------------------------------ service */

static int check_spec(const Escher__TaskSpec *s, esc_status *st)
{
    if (!esc_name_valid(s->task_id) || !esc_name_valid(s->job_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "task and job ids must be set");
    bool fn = s->function && *s->function->symbol, cmd = s->command && s->command->n_argv;
    if (fn == cmd)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "a task is exactly one of a function or a command");
    if (s->num_returns > MAX_RETURNS)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "at most %d returns", MAX_RETURNS);
    for (size_t i = 0; i < s->n_resources; i++) {
        const Escher__Amount *a = s->resources[i];
        if (!*a->name || a->value <= 0 || a->value > ESC_QTY_MAX || a->unbounded)
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "bad resource request '%.80s'",
                                  a->name);
    }
    return ESC_OK;
}

/* Takes an unpacked spec (owned). Returns ESC_OK with *ready set to the entry to
 * schedule once the caller has answered (NULL when there is none: an actor's method
 * call goes straight to the actor's queue), or an error (the spec is freed). */
static int accept_spec(task_manager *tm, Escher__TaskSpec *spec, task_entry **ready,
                       esc_status *st)
{
    *ready = NULL;
    int rc = check_spec(spec, st);
    if (rc == ESC_OK && tm->r->stopping)
        rc = esc_status_set(st, ESC_UNAVAILABLE, "raylet shutting down");
    if (rc != ESC_OK) {
        protobuf_c_message_free_unpacked(&spec->base, NULL);
        return rc;
    }
    if (*spec->actor_id && !spec->actor_creation) {
        /* A method call: straight to the actor's queue (the caller found this raylet). */
        actor_manager_call(tm->r->actors, spec);
        protobuf_c_message_free_unpacked(&spec->base, NULL);
        return ESC_OK;
    }
    if (!*spec->origin) /* from its owner: this raylet keeps its lineage */
        spec->origin = strdup(tm->r->node_id);
    *ready = entry_new(tm, spec);
    return ESC_OK;
}

static void handle_submit(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    esc_status st = {0};
    task_entry *e;
    /* Copied before the reply: replying releases the call, and the request with it. */
    if (accept_spec(tm, (Escher__TaskSpec *)esc_pb_dup(msg), &e, &st) != ESC_OK) {
        esc_rpc_finish(call, st.code, st.message);
        return;
    }
    Escher__SubmitTaskReply rep = ESCHER__SUBMIT_TASK_REPLY__INIT;
    rep.accepted = true;
    esc_rpc_reply(call, &rep.base);
    if (e)
        schedule(tm, e);
}

/* Many specs, each unpacked and checked on its own: a bad one is named in the reply,
 * the others go on. */
static void handle_submit_batch(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__TaskBatch *b = (const Escher__TaskBatch *)msg;
    task_entry **ready = calloc(b->n_specs + 1, sizeof *ready);
    uint32_t *rejected = calloc(b->n_specs + 1, sizeof *rejected);
    char **errors = calloc(b->n_specs + 1, sizeof *errors);
    size_t nready = 0, nrej = 0;
    for (size_t i = 0; i < b->n_specs; i++) {
        esc_status st = {0};
        Escher__TaskSpec *spec = escher__task_spec__unpack(NULL, b->specs[i].len, b->specs[i].data);
        if (!spec)
            esc_status_set(&st, ESC_INVALID_ARGUMENT, "spec %zu is not a TaskSpec", i);
        else if (accept_spec(tm, spec, &ready[nready], &st) == ESC_OK) {
            nready += ready[nready] != NULL;
            continue;
        }
        rejected[nrej] = (uint32_t)i;
        errors[nrej++] = strdup(st.message);
    }
    Escher__SubmitTasksReply rep = ESCHER__SUBMIT_TASKS_REPLY__INIT;
    rep.rejected = rejected;
    rep.n_rejected = nrej;
    rep.errors = errors;
    rep.n_errors = nrej;
    esc_rpc_reply(call, &rep.base);
    for (size_t i = 0; i < nrej; i++)
        free(errors[i]);
    free(errors);
    free(rejected);
    for (size_t i = 0; i < nready; i++)
        schedule(tm, ready[i]);
    free(ready);
}

/* ------------------------------------------------------------ lineage */

static task_entry *find_queued(task_manager *tm, const char *task_id);

/* Keeps an ended task's spec for reconstruction, forgetting the oldest past the bound. */
static void lineage_keep(task_manager *tm, task_entry *e)
{
    char **slot = &tm->lineage_order[tm->lineage_next];
    tm->lineage_next = (tm->lineage_next + 1) % LINEAGE_MAX;
    if (*slot) {
        task_entry *old = esc_strmap_del(tm->lineage, *slot);
        if (old)
            entry_free(old);
        free(*slot);
    }
    *slot = strdup(e->spec->task_id);
    free(e->spilled_to);
    e->spilled_to = NULL;
    esc_strmap_put(tm->lineage, e->spec->task_id, e);
}

/* True while the task is somewhere in this raylet: queued, fetching, running, forwarded. */
static bool in_progress(task_manager *tm, const char *task_id)
{
    return esc_strmap_get(tm->spilled, task_id) || esc_strmap_get(tm->running, task_id) ||
           esc_strmap_get(tm->fetching, task_id) || find_queued(tm, task_id);
}

/* A reader found every copy of a return gone with its node: the task that made it runs
 * again, from its lineage, once however many readers ask. */
static void handle_reconstruct(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__ReconstructRequest *req = (const Escher__ReconstructRequest *)msg;
    Escher__ReconstructReply rep = ESCHER__RECONSTRUCT_REPLY__INIT;
    size_t n = strlen(req->object_id);
    if (!esc_object_id_valid(req->object_id) || n <= 4) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "invalid object id");
        return;
    }
    char task_id[ESC_OBJECT_ID_MAX];
    snprintf(task_id, sizeof task_id, "%.*s", (int)(n - 4), req->object_id); /* esc_return_id */
    task_entry *e = esc_strmap_del(tm->lineage, task_id);
    rep.found = e || in_progress(tm, task_id);
    esc_rpc_reply(call, &rep.base);
    if (!e)
        return;
    ESC_WARN("object %s was lost with its node; running task %s (%s) again from its lineage",
             req->object_id, task_id, e->spec->name);
    e->spec->spill_hops = 0;
    schedule(tm, e);
}

/* A raylet this one forwarded tasks to says they ended: the notice goes on the way the
 * task came here (the spec kept at forwarding says whom to tell), or to the owner. */
static void handle_tasks_done(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__TasksDoneRequest *req = (const Escher__TasksDoneRequest *)msg;
    for (size_t i = 0; i < req->n_done; i++) {
        const Escher__TaskDone *d = req->done[i];
        task_entry *e = esc_strmap_get(tm->spilled, d->task_id);
        Escher__ReadyObject **objs = malloc((d->n_returns + 1) * sizeof *objs);
        for (size_t k = 0; k < d->n_returns; k++)
            objs[k] = (Escher__ReadyObject *)esc_pb_dup(&d->returns[k]->base);
        const char *back = e ? e->spec->reply_to : "";
        results_deliver(tm->r->results, back[0] ? peers_get(tm->r->peers, back) : NULL, d->task_id,
                        e ? e->spec->owner_id : d->owner_id, objs, d->n_returns);
        /* It ended: its results exist, so its node's death must not run it again; its
         * origin keeps it as lineage, in case a reader finds them lost. */
        if (e && !e->spec->actor_creation) {
            esc_strmap_del(tm->spilled, d->task_id);
            if (!strcmp(e->spec->origin, tm->r->node_id))
                lineage_keep(tm, e);
            else
                entry_free(e);
        }
    }
    Escher__TasksDoneReply rep = ESCHER__TASKS_DONE_REPLY__INIT;
    esc_rpc_reply(call, &rep.base);
}

static task_entry *find_queued(task_manager *tm, const char *task_id)
{
    for (task_entry *e = tm->head; e; e = e->next)
        if (strcmp(e->spec->task_id, task_id) == 0)
            return e;
    return NULL;
}

typedef struct {
    task_manager *tm;
    esc_rpc_ctx *call;
    char task_id[ESC_OBJECT_ID_MAX];
} withdraw_ctx;

/* The raylet the task was forwarded to answered: pass it on; withdrawn there means
 * forgotten here too. */
static void on_withdrawn_there(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    withdraw_ctx *w = ud;
    const Escher__CancelTaskReply *r = (const Escher__CancelTaskReply *)reply;
    if (code != ESC_OK) {
        esc_rpc_finish(w->call, code, st->message);
    } else {
        if (r->found && !r->started) {
            task_entry *e = esc_strmap_del(w->tm->spilled, w->task_id);
            if (e)
                entry_free(e);
        }
        esc_rpc_reply(w->call, &r->base);
    }
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    free(w);
}

/* Withdraws a task that has not started: queued, waiting for arguments, or forwarded
 * (then the raylet it went to decides). */
static void withdraw(task_manager *tm, esc_rpc_ctx *call, const char *task_id)
{
    Escher__CancelTaskReply rep = ESCHER__CANCEL_TASK_REPLY__INIT;
    task_entry *e = find_queued(tm, task_id);
    if (e)
        dequeue(tm, e);
    else
        e = esc_strmap_del(tm->fetching, task_id);
    if (e) {
        entry_free(e);
        rep.found = true;
    } else if (esc_strmap_get(tm->running, task_id)) {
        rep.found = rep.started = true;
    } else if ((e = esc_strmap_get(tm->spilled, task_id)) && e->spilled_addr) {
        withdraw_ctx *w = calloc(1, sizeof *w);
        *w = (withdraw_ctx){.tm = tm, .call = call};
        snprintf(w->task_id, sizeof w->task_id, "%s", task_id);
        Escher__CancelTaskRequest fwd = ESCHER__CANCEL_TASK_REQUEST__INIT;
        fwd.task_id = w->task_id;
        fwd.if_queued = true;
        peers_call(tm->r->peers, peers_get(tm->r->peers, e->spilled_addr), "CancelTask", &fwd.base, 0, 0,
                   on_withdrawn_there, w);
        return;
    }
    esc_rpc_reply(call, &rep.base);
}

static void handle_cancel(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__CancelTaskRequest *req = (const Escher__CancelTaskRequest *)msg;
    if (req->if_queued) {
        char id[ESC_OBJECT_ID_MAX];
        snprintf(id, sizeof id, "%s", req->task_id);
        withdraw(tm, call, id);
        return;
    }
    Escher__CancelTaskReply rep = ESCHER__CANCEL_TASK_REPLY__INIT;
    task_entry *e = find_queued(tm, req->task_id);
    if (e) {
        dequeue(tm, e);
        results_store_error(tm->r->results, e->spec, "cancelled");
        entry_free(e);
        rep.found = true;
    } else {
        rep.found = worker_pool_cancel(tm->r->pool, req->task_id);
    }
    esc_rpc_reply(call, &rep.base);
}

static void handle_kill_actor(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__KillActorRequest *req = (const Escher__KillActorRequest *)msg;
    Escher__KillActorReply rep = ESCHER__KILL_ACTOR_REPLY__INIT;
    rep.found = actor_manager_kill(tm->r->actors, req->actor_id, "killed");
    esc_rpc_reply(call, &rep.base);
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
    task_manager *tm = calloc(1, sizeof *tm);
    tm->r = r;
    tm->running = esc_strmap_new();
    tm->spilled = esc_strmap_new();
    tm->lineage = esc_strmap_new();
    tm->lineage_order = calloc(LINEAGE_MAX, sizeof *tm->lineage_order);
    tm->fetching = esc_strmap_new();
    tm->gpus = gpu_slots_new(node_gpus(r));
    tm->actors = esc_strmap_new();
    return tm;
}

/* Removes and returns the spilled entries matching node_id or job_id (one of them). */
static task_entry **take_spilled(task_manager *tm, const char *node_id, const char *job_id,
                                 size_t *n)
{
    task_entry **out = calloc(esc_strmap_count(tm->spilled) + 1, sizeof *out);
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

/* Entries waiting for arguments whose wait `done` says is over (removed from the map). */
static task_entry **take_fetching(task_manager *tm, bool (*done)(task_manager *, task_entry *,
                                                                 const char *),
                                  const char *id, size_t *n)
{
    task_entry **out = calloc(esc_strmap_count(tm->fetching) + 1, sizeof *out);
    *n = 0;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(tm->fetching, &pos, &k, &v)) {
        if (done(tm, v, id)) {
            out[(*n)++] = v;
            esc_strmap_del(tm->fetching, k);
        }
    }
    return out;
}

static bool all_args_here(task_manager *tm, task_entry *e, const char *id)
{
    (void)id;
    for (size_t i = 0; i < e->spec->n_args; i++)
        if (arg_missing(tm, e->spec->args[i]))
            return false;
    return true;
}

static bool needs_missing(task_manager *tm, task_entry *e, const char *id)
{
    for (size_t i = 0; i < e->spec->n_args; i++)
        if (!strcmp(e->spec->args[i]->object_id, id) && arg_missing(tm, e->spec->args[i]))
            return true;
    return false;
}

void task_manager_object_arrived(task_manager *tm, const char *id)
{
    size_t n;
    task_entry **ready = take_fetching(tm, all_args_here, id, &n);
    for (size_t i = 0; i < n; i++)
        schedule(tm, ready[i]);
    free(ready);
}

void task_manager_object_failed(task_manager *tm, const char *id, const char *why)
{
    size_t n;
    task_entry **lost = take_fetching(tm, needs_missing, id, &n);
    for (size_t i = 0; i < n; i++) {
        char msg[700];
        snprintf(msg, sizeof msg, "cannot fetch argument %.80s: %.500s", id, why);
        results_store_error(tm->r->results, lost[i]->spec, msg);
        entry_free(lost[i]);
    }
    free(lost);
}

static bool of_job(task_manager *tm, task_entry *e, const char *job_id)
{
    (void)tm;
    return !strcmp(e->spec->job_id, job_id);
}

void task_manager_node_dead(task_manager *tm, const char *node_id)
{
    size_t n;
    task_entry **lost = take_spilled(tm, node_id, NULL, &n);
    for (size_t i = 0; i < n; i++) {
        task_entry *e = lost[i];
        /* An actor is created again elsewhere while its restarts last (its state is lost,
         * as after a worker crash); a task runs again while its retries last. */
        bool actor = e->spec->actor_creation;
        if (e->spec->attempt >= (actor ? e->spec->max_restarts : e->spec->max_retries)) {
            results_store_error(tm->r->results, e->spec, actor ? "the actor's node died and no restarts remain"
                                           : "the node running it died and no retries remain");
            entry_free(e);
            continue;
        }
        e->spec->attempt++;
        e->spec->spill_hops = 0;
        ESC_WARN("task %s (%s) was on dead node %s; submitting it again (attempt %u of %u)",
                 e->spec->task_id, e->spec->name, node_id, e->spec->attempt, e->spec->max_retries);
        schedule(tm, e);
    }
    free(lost);
}

int task_manager_serve(task_manager *tm, esc_rpc_server *srv)
{
    const ProtobufCServiceDescriptor *d = &escher__task_service__descriptor;
    return esc_rpc_server_handle(srv, d, "SubmitTask", handle_submit, tm) |
           esc_rpc_server_handle(srv, d, "SubmitTasks", handle_submit_batch, tm) |
           esc_rpc_server_handle(srv, d, "TasksDone", handle_tasks_done, tm) |
           esc_rpc_server_handle(srv, d, "CancelTask", handle_cancel, tm) |
           esc_rpc_server_handle(srv, d, "KillActor", handle_kill_actor, tm) |
           esc_rpc_server_handle(srv, d, "Reconstruct", handle_reconstruct, tm);
}

/* Forgets the lineage of the job (every job's when job_id is NULL). The ring keeps the
 * ids: stale ones are skipped when their slot comes round. */
static void drop_lineage(task_manager *tm, const char *job_id)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(tm->lineage, &pos, &k, &v)) {
        task_entry *e = v;
        if (!job_id || !strcmp(e->spec->job_id, job_id)) {
            esc_strmap_del(tm->lineage, k); /* deleting the entry just returned is allowed */
            entry_free(e);
        }
    }
}

void task_manager_job_finished(task_manager *tm, const char *job_id)
{
    size_t n;
    task_entry **done = take_spilled(tm, NULL, job_id, &n);
    for (size_t i = 0; i < n; i++)
        entry_free(done[i]);
    free(done);
    drop_lineage(tm, job_id);
    done = take_fetching(tm, of_job, job_id, &n);
    for (size_t i = 0; i < n; i++)
        entry_free(done[i]);
    free(done);
    task_entry *e = tm->head;
    while (e) {
        task_entry *next = e->next;
        if (strcmp(e->spec->job_id, job_id) == 0) {
            dequeue(tm, e);
            entry_free(e);
        }
        e = next;
    }
    actor_manager_job_finished(tm->r->actors, job_id);
    worker_pool_job_ended(tm->r->pool, job_id);
}

size_t task_manager_queued(const task_manager *tm)
{
    return tm->nqueued;
}

size_t task_manager_running(const task_manager *tm)
{
    return esc_strmap_count(tm->running);
}

void task_manager_free(task_manager *tm)
{
    if (!tm)
        return;
    while (tm->head) {
        task_entry *e = tm->head;
        dequeue(tm, e);
        entry_free(e);
    }
    size_t pos = 0;
    const char *k;
    void *v;
    esc_strmap_free(tm->running);
    while (esc_strmap_next(tm->spilled, &pos, &k, &v))
        entry_free(v);
    esc_strmap_free(tm->spilled);
    drop_lineage(tm, NULL);
    esc_strmap_free(tm->lineage);
    for (size_t i = 0; i < LINEAGE_MAX; i++)
        free(tm->lineage_order[i]);
    free(tm->lineage_order);
    pos = 0;
    while (esc_strmap_next(tm->fetching, &pos, &k, &v))
        entry_free(v);
    esc_strmap_free(tm->fetching);
    gpu_slots_free(tm->gpus);
    pos = 0;
    while (esc_strmap_next(tm->actors, &pos, &k, &v))
        entry_free(v);
    esc_strmap_free(tm->actors);
    free(tm);
}

/* ------------------------------------------------------------ demand */

/* "name=value;..." in request order: tasks with the same key have the same shape. */
static void shape_key(const task_entry *e, char *out, size_t len)
{
    size_t off = 0;
    out[0] = 0;
    for (size_t i = 0; i < e->nreq && off < len; i++) {
        int k = snprintf(out + off, len - off, "%s=%lld;", e->req[i].name,
                         (long long)e->req[i].qty);
        if (k < 0)
            break;
        off += (size_t)k;
    }
}

static Escher__Demand *demand_of(task_manager *tm, const task_entry *e)
{
    Escher__Demand *d = calloc(1, sizeof *d);
    escher__demand__init(d);
    d->n_shape = e->nreq;
    d->shape = calloc(e->nreq + 1, sizeof *d->shape);
    d->missing = calloc(e->nreq + 1, sizeof *d->missing);
    for (size_t i = 0; i < e->nreq; i++) {
        Escher__Amount *a = malloc(sizeof *a);
        escher__amount__init(a);
        a->name = strdup(e->req[i].name);
        a->value = e->req[i].qty;
        d->shape[i] = a;
        accounting_row row;
        if (!accounting_get(tm->r->acct, e->req[i].name, &row) &&
            !cluster_view_has_name(tm->r->view, e->req[i].name))
            d->missing[d->n_missing++] = strdup(e->req[i].name);
    }
    d->infeasible = !accounting_feasible(tm->r->acct, e->req, e->nreq) &&
                    !cluster_view_find_feasible(tm->r->view, tm->r->node_id, e->req, e->nreq, NULL);
    return d;
}

Escher__Demand **task_manager_demand(task_manager *tm, size_t *n)
{
    esc_strmap *by_shape = esc_strmap_new();
    Escher__Demand **out = calloc(tm->nqueued + 1, sizeof *out);
    *n = 0;
    for (task_entry *e = tm->head; e; e = e->next) {
        char key[2048];
        shape_key(e, key, sizeof key);
        Escher__Demand *d = esc_strmap_get(by_shape, key);
        if (!d) {
            d = demand_of(tm, e);
            esc_strmap_put(by_shape, key, d);
            out[(*n)++] = d;
        }
        d->count++;
    }
    esc_strmap_free(by_shape);
    return out;
}

void task_manager_demand_free(Escher__Demand **d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        protobuf_c_message_free_unpacked(&d[i]->base, NULL);
    free(d);
}
