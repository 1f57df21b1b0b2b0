/* task_submit.c: SubmitTask and SubmitTasks, from drivers and from raylets that forward.
 *
 * Each spec is checked on its own (a bad one is named in the reply, the others go on):
 * its shape, then its job (docs/security.md, "Raylet checks"): the credential in the spec
 * must be its job's, each ephemeral resource it requests must be in a namespace its job
 * may consume, and an actor method call must come from the actor's job or a job that
 * job granted its namespace. The jobs are the raylet's mirror of the GCS job table
 * (job_mirror.h).
 *
 * The race with registration: a job may submit before this raylet applied the log entry
 * that tells of it. The spec carries that entry's seq (TaskSpec.job_seq, from
 * RegisterJobReply): a call with a spec of a job the mirror does not know, whose job_seq
 * is beyond the applied seq, is held (not answered) until the raylet applied that seq or
 * HOLD_MS passed, then judged. A genuine job is never refused for being early; a forged
 * spec (an unknown job, a made-up seq) is refused after HOLD_MS at the latest. */
#include "task_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor_manager.h"
#include "job_mirror.h"
#include "loop.h"
#include "names.h"
#include "package.h"
#include "pbutil.h"
#include "qty.h"
#include "worker_pool.h"
#include "xalloc.h"

#define MAX_RETURNS 1024
/* How long a submission waits for its job's event (the GCS sends it before it answers
 * RegisterJob, so it is normally milliseconds behind). */
#define HOLD_MS 10000

/* A submission held until its job is known (or HOLD_MS passed). */
typedef struct held_submit {
    struct held_submit *prev, *next;
    task_manager *tm;
    esc_rpc_ctx *call;
    Escher__TaskSpec **specs;       /* owned; NULL where an entry was not a TaskSpec */
    size_t n;
    bool single;                    /* SubmitTask: one spec, answered with its status */
    ev_timer timer;
} held_submit;

static int check_spec(const Escher__TaskSpec *s, esc_status *st)
{
    if (!esc_name_valid(s->task_id) || !esc_name_valid(s->job_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "task and job ids must be set");
    /* An actor's creation names its library and may have no init symbol. */
    bool fn = s->function && (*s->function->symbol || (s->actor_creation && *s->function->library));
    bool cmd = s->command && s->command->n_argv;
    if (fn == cmd)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "a task is exactly one of a function or a command");
    if (s->num_returns > MAX_RETURNS)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "at most %d returns", MAX_RETURNS);
    if (s->max_concurrency > WORKER_MAX_CONCURRENCY)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "max_concurrency %u is over %d",
                              s->max_concurrency, WORKER_MAX_CONCURRENCY);
    if (*s->package && !esc_package_hash_valid(s->package))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "invalid package hash (64 lowercase hex digits)");
    for (size_t i = 0; i < s->n_resources; i++) {
        const Escher__Amount *a = s->resources[i];
        if (!*a->name || a->value <= 0 || a->value > ESC_QTY_MAX || a->unbounded)
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "bad resource request '%.80s'",
                                  a->name);
    }
    return ESC_OK;
}

/* The spec's job: its credential, the namespaces of its resources, the actor it calls. */
static int check_job(task_manager *tm, const Escher__TaskSpec *s, esc_status *st)
{
    job_mirror *m = tm->r->jobs;
    char why[400];
    if (job_mirror_verify(m, s->job_id, s->job_credential, why, sizeof why) != ESC_OK)
        return esc_status_set(st, ESC_PERMISSION_DENIED, "task %.40s: %s", s->task_id, why);
    /* One verdict per namespace: a task asking for many resources usually names one
     * namespace (k = 1000 resources cost a lookup each otherwise). Under a prefix grant
     * the verdict is per name, so it is not kept. */
    const char *checked = NULL;
    size_t checked_len = 0;
    for (size_t i = 0; i < s->n_resources; i++) {
        const char *name = s->resources[i]->name, *slash = strchr(name, '/');
        size_t len = slash ? (size_t)(slash - name) : 0;
        if (slash && checked && len == checked_len && !memcmp(name, checked, len))
            continue;
        bool per_name;
        if (job_mirror_resource_ok(m, s->job_id, name, &per_name, why, sizeof why) != ESC_OK)
            return esc_status_set(st, ESC_PERMISSION_DENIED, "task %.40s: %s", s->task_id, why);
        if (slash && !per_name) {
            checked = name;
            checked_len = len;
        }
    }
    if (s->actor_creation && esc_strmap_get(tm->actors, s->actor_id))
        return esc_status_set(st, ESC_ALREADY_EXISTS, "actor %.40s already exists on this node",
                              s->actor_id);
    if (*s->actor_id && !s->actor_creation) {
        const char *owner = actor_manager_job(tm->r->actors, s->actor_id);
        if (owner && !job_mirror_may_use(m, s->job_id, owner))
            return esc_status_set(st, ESC_PERMISSION_DENIED,
                                  "actor %.40s belongs to job %.40s, which did not grant its "
                                  "namespace to job %.40s", s->actor_id, owner, s->job_id);
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
    if (rc == ESC_OK && *spec->forwarded_to && strcmp(spec->forwarded_to, tm->r->node_id))
        rc = esc_status_set(st, ESC_FAILED_PRECONDITION, "this raylet is node %s, not %.64s "
                            "(it took over that node's address)", tm->r->node_id,
                            spec->forwarded_to);
    if (rc == ESC_OK)
        rc = check_job(tm, spec, st);
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
        spec->origin = esc_xstrdup(tm->r->node_id);
    *ready = task_entry_new(tm, spec);
    return ESC_OK;
}

/* A spec of a job this raylet may not know yet (see the top of the file). */
static bool must_wait(task_manager *tm, const Escher__TaskSpec *s)
{
    return s && s->job_seq > tm->r->applied_seq && !job_mirror_knows(tm->r->jobs, s->job_id);
}

static bool any_must_wait(task_manager *tm, Escher__TaskSpec **specs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (must_wait(tm, specs[i]))
            return true;
    return false;
}

static void answer_single(task_manager *tm, esc_rpc_ctx *call, Escher__TaskSpec *spec)
{
    esc_status st = {0};
    task_entry *e;
    if (accept_spec(tm, spec, &e, &st) != ESC_OK) {
        esc_rpc_finish(call, st.code, st.message);
        return;
    }
    Escher__SubmitTaskReply rep = ESCHER__SUBMIT_TASK_REPLY__INIT;
    rep.accepted = true;
    esc_rpc_reply(call, &rep.base);
    if (e)
        task_schedule(tm, e);
}

/* Judges every spec (taking them) and answers the batch; the accepted are scheduled
 * after the reply. */
static void answer_batch(task_manager *tm, esc_rpc_ctx *call, Escher__TaskSpec **specs, size_t n)
{
    task_entry **ready = esc_xcalloc(n + 1, sizeof *ready);
    uint32_t *rejected = esc_xcalloc(n + 1, sizeof *rejected);
    char **errors = esc_xcalloc(n + 1, sizeof *errors);
    int32_t *codes = esc_xcalloc(n + 1, sizeof *codes);
    size_t nready = 0, nrej = 0;
    for (size_t i = 0; i < n; i++) {
        esc_status st = {0};
        if (!specs[i])
            esc_status_set(&st, ESC_INVALID_ARGUMENT, "spec %zu is not a TaskSpec", i);
        else if (accept_spec(tm, specs[i], &ready[nready], &st) == ESC_OK) {
            nready += ready[nready] != NULL;
            continue;
        }
        rejected[nrej] = (uint32_t)i;
        codes[nrej] = st.code;
        errors[nrej++] = esc_xstrdup(st.message);
    }
    Escher__SubmitTasksReply rep = ESCHER__SUBMIT_TASKS_REPLY__INIT;
    rep.rejected = rejected;
    rep.n_rejected = nrej;
    rep.errors = errors;
    rep.n_errors = nrej;
    rep.codes = codes;
    rep.n_codes = nrej;
    esc_rpc_reply(call, &rep.base);
    for (size_t i = 0; i < nrej; i++)
        free(errors[i]);
    free(errors);
    free(codes);
    free(rejected);
    for (size_t i = 0; i < nready; i++)
        task_schedule(tm, ready[i]);
    free(ready);
}

/* ------------------------------------------------------------ held submissions */

static void held_unlink(held_submit *h)
{
    task_manager *tm = h->tm;
    if (h->prev)
        h->prev->next = h->next;
    else
        tm->held = h->next;
    if (h->next)
        h->next->prev = h->prev;
    ev_timer_stop(esc_loop_ev(tm->r->loop), &h->timer);
}

static void held_free_specs(held_submit *h)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->specs[i])
            protobuf_c_message_free_unpacked(&h->specs[i]->base, NULL);
    free(h->specs);
    free(h);
}

/* Judges a held submission now, whatever the mirror knows. */
static void held_answer(held_submit *h)
{
    held_unlink(h);
    if (esc_rpc_ctx_cancelled(h->call)) {
        esc_rpc_finish(h->call, ESC_CANCELLED, "submission cancelled");
        held_free_specs(h);
        return;
    }
    if (h->single)
        answer_single(h->tm, h->call, h->specs[0]);
    else
        answer_batch(h->tm, h->call, h->specs, h->n);
    free(h->specs); /* the specs were taken */
    free(h);
}

static void on_held_timeout(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    held_answer(t->data);
}

static void on_held_cancel(esc_rpc_ctx *call, void *ud)
{
    held_submit *h = ud;
    held_unlink(h);
    esc_rpc_finish(call, ESC_CANCELLED, "submission cancelled");
    held_free_specs(h);
}

static void hold(task_manager *tm, esc_rpc_ctx *call, Escher__TaskSpec **specs, size_t n,
                 bool single)
{
    held_submit *h = esc_xcalloc(1, sizeof *h);
    *h = (held_submit){.next = tm->held, .tm = tm, .call = call, .specs = specs, .n = n,
                       .single = single};
    if (tm->held)
        tm->held->prev = h;
    tm->held = h;
    struct ev_loop *ev = esc_loop_ev(tm->r->loop);
    ev_now_update(ev);
    ev_timer_init(&h->timer, on_held_timeout, HOLD_MS / 1000.0, 0.);
    h->timer.data = h;
    ev_timer_start(ev, &h->timer);
    esc_rpc_ctx_on_cancel(call, on_held_cancel, h);
}

void task_submit_jobs_changed(task_manager *tm)
{
    held_submit *h = tm->held;
    while (h) {
        held_submit *next = h->next;
        if (!any_must_wait(tm, h->specs, h->n))
            held_answer(h);
        h = next;
    }
}

void task_submit_drop_held(task_manager *tm)
{
    while (tm->held) {
        held_submit *h = tm->held;
        held_unlink(h);
        esc_rpc_finish(h->call, ESC_UNAVAILABLE, "raylet shutting down");
        held_free_specs(h);
    }
}

/* ------------------------------------------------------------ handlers */

void task_submit_handle(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    /* Copied before the reply: replying releases the call, and the request with it. */
    Escher__TaskSpec *spec = (Escher__TaskSpec *)esc_pb_dup(msg);
    if (!must_wait(tm, spec)) {
        answer_single(tm, call, spec);
        return;
    }
    Escher__TaskSpec **specs = esc_xmalloc(sizeof *specs);
    specs[0] = spec;
    hold(tm, call, specs, 1, true);
}

/* Many specs, each unpacked and checked on its own: a bad one is named in the reply,
 * the others go on. */
void task_submit_handle_batch(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__TaskBatch *b = (const Escher__TaskBatch *)msg;
    Escher__TaskSpec **specs = esc_xcalloc(b->n_specs + 1, sizeof *specs);
    for (size_t i = 0; i < b->n_specs; i++)
        specs[i] = escher__task_spec__unpack(NULL, b->specs[i].len, b->specs[i].data);
    if (any_must_wait(tm, specs, b->n_specs)) {
        hold(tm, call, specs, b->n_specs, false);
        return;
    }
    answer_batch(tm, call, specs, b->n_specs);
    free(specs);
}
