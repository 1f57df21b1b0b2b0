/* actor_manager.c: see actor_manager.h. */
#include "actor_manager.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcs.pb-c.h"
#include "log.h"
#include "pbutil.h"
#include "raylet.h"
#include "results.h"
#include "rpc_async.h"
#include "spec_args.h"
#include "strmap.h"
#include "worker_pool.h"
#include "xalloc.h"

#define LOCATION_TIMEOUT_MS 5000
#define ACTOR_KV_NS "_actors"
#define ACTOR_STATE_NS "_actor_state" /* docs/tasks.md, "Actors": its state line */

struct actor;

typedef struct call {
    struct call *next;
    Escher__TaskSpec *spec;      /* owned; the init's is the actor's creation (not owned) */
    struct actor *a;
    bool lost;                   /* running: its worker was lost under it */
} call;

typedef struct actor {
    actor_manager *am;
    Escher__TaskSpec *creation;  /* owned: library, init, job, max_restarts, concurrency */
    char **env;
    size_t nenv;
    int64_t cpu;                 /* its worker's CPU quota: what it holds, backed CPU too */
    call *head, *tail;           /* calls waiting, in arrival order */
    call *running;               /* the calls (or the init) on the worker now */
    unsigned nrunning;           /* at most max_concurrency (1 for 0) */
    bool initialized;
    bool created_stored;         /* the creation's return is stored */
    bool dead;
    char why[512];               /* why it died */
    char lost_why[256];          /* why it lost its last worker ("" if never) */
    unsigned restarts;
    actor_manager_ended_fn ended;
    void *ud;
} actor;

struct actor_manager {
    struct raylet *r;
    esc_strmap *actors;          /* actor id -> actor (dead ones stay, to answer calls) */
    esc_rpc_channel *gcs;
};

static void dispatch(actor *a);

/* ------------------------------------------------------------ lifetime */

static void free_calls(actor *a, const char *why)
{
    while (a->head) {
        call *c = a->head;
        a->head = c->next;
        if (why)
            results_store_error(a->am->r->results, c->spec, why);
        protobuf_c_message_free_unpacked(&c->spec->base, NULL);
        free(c);
    }
    a->tail = NULL;
}

static void call_free(actor *a, call *c)
{
    if (c->spec != a->creation)
        protobuf_c_message_free_unpacked(&c->spec->base, NULL);
    free(c);
}

static void actor_free(actor *a)
{
    free_calls(a, NULL);
    while (a->running) {
        call *c = a->running;
        a->running = c->next;
        call_free(a, c);
    }
    for (size_t i = 0; i < a->nenv; i++)
        free(a->env[i]);
    free(a->env);
    protobuf_c_message_free_unpacked(&a->creation->base, NULL);
    free(a);
}

/* Publishes the actor's state line in the GCS (namespace ACTOR_STATE_NS, key its id):
 * "<STATE> restarts=<n> max_restarts=<m> node=<node id> why=<text>", where STATE is
 * STARTING, ALIVE, RESTARTING or DEAD and why is why it died, else why it lost its last
 * worker. Puts go out in order (rpc_async), so the last one written is the latest. */
static void publish(actor *a, const char *state)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "%s restarts=%u max_restarts=%u node=%s why=%s", state,
                     a->restarts, a->creation->max_restarts,
                     *a->am->r->node_id ? a->am->r->node_id : "-",
                     a->dead ? a->why : a->lost_why);
    Escher__KvPutRequest req = ESCHER__KV_PUT_REQUEST__INIT;
    req.ns = ACTOR_STATE_NS;
    req.key = a->creation->actor_id;
    req.value.data = (uint8_t *)line;
    req.value.len = n < (int)sizeof line ? (size_t)n : sizeof line - 1;
    req.overwrite = true;
    esc_rpc_async_call(a->am->r->async, a->am->gcs, &ESC_M_GCS_KV_PUT, &req.base,
                       LOCATION_TIMEOUT_MS, ESC_RPC_IDEMPOTENT, NULL, NULL);
}

/* The creation's return is stored once per start: the first init's result, or the
 * death's error if it never became ready (callers waiting to locate it give up then). */
static void store_creation(actor *a, const Escher__TaskResult *res, const char *why)
{
    if (a->created_stored)
        return;
    a->created_stored = true;
    if (res)
        results_store(a->am->r->results, a->creation, res);
    else
        results_store_error(a->am->r->results, a->creation, why);
}

/* The actor is gone for good: calls fail from now on and its resources go back. */
static void actor_die(actor *a, const char *why)
{
    if (a->dead)
        return;
    a->dead = true;
    snprintf(a->why, sizeof a->why, "actor %.40s died: %.400s", a->creation->actor_id, why);
    ESC_WARN("%s", a->why);
    store_creation(a, NULL, a->why);
    publish(a, "DEAD");
    free_calls(a, a->why);
    worker_pool_actor_ended(a->am->r->pool, a->creation->actor_id);
    if (a->ended)
        a->ended(a->ud);
    a->ended = NULL;
}

/* ------------------------------------------------------------ calls */

/* Init ran (or there is none): calls can run. */
static void actor_ready(actor *a, const Escher__TaskResult *res)
{
    a->initialized = true;
    store_creation(a, res, NULL);
    publish(a, "ALIVE");
}

/* The init ended. When the worker was lost under it, the loss already decided (a restart
 * runs it again, or the actor is dead); otherwise a failed init kills the actor. */
static void init_done(actor *a, const Escher__TaskResult *res, bool lost)
{
    if (a->dead || lost)
        return;
    if (!res->ok) {
        actor_die(a, res->error && *res->error ? res->error : "its init failed");
        return;
    }
    actor_ready(a, res);
}

/* How many calls may run at once: max_concurrency, 1 for 0 (the serial actor). */
static unsigned concurrency(const actor *a)
{
    return a->creation->max_concurrency > 1 ? a->creation->max_concurrency : 1;
}

static void unlink_running(actor *a, call *c)
{
    for (call **pp = &a->running; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            a->nrunning--;
            return;
        }
}

static void on_call_done(void *ud, const Escher__TaskResult *res)
{
    call *c = ud;
    actor *a = c->a;
    unlink_running(a, c);
    if (c->spec == a->creation)
        init_done(a, res, c->lost);
    else
        results_store(a->am->r->results, c->spec, res);
    call_free(a, c);
    if (!a->dead)
        dispatch(a);
}

/* The actor's worker was lost (worker_pool_on_actor_lost), busy or idle alike: its state
 * is gone. A restart, while max_restarts allows, is counted and logged here, and its
 * init runs again before any further call: at once when it was idle, once every call
 * that was running has ended (failed: the pool fails them right after this) otherwise. */
static void on_worker_lost(void *ud, const char *actor_id, const char *why)
{
    actor_manager *am = ud;
    actor *a = esc_strmap_get(am->actors, actor_id);
    if (!a || a->dead)
        return;
    a->initialized = false;
    for (call *c = a->running; c; c = c->next)
        c->lost = true;
    snprintf(a->lost_why, sizeof a->lost_why, "%s", why);
    unsigned max = a->creation->max_restarts;
    if (a->restarts >= max) {
        char dying[400];
        snprintf(dying, sizeof dying, "%.200s; no restart left (%u of max_restarts %u used)",
                 why, a->restarts, max);
        actor_die(a, dying);
        return;
    }
    a->restarts++;
    ESC_WARN("actor %s (%s): %s; restarting it: restart %u of max_restarts %u, its init "
             "runs again", actor_id, a->creation->name, why, a->restarts, max);
    publish(a, "RESTARTING");
    dispatch(a);
}

/* Gives c (now running) to the actor's worker. Every call runs on what the actor holds
 * now (its creation's resources, changed by resizes), and its worker is told so
 * (esc_actor_held), with the actor's max_concurrency (the pool sizes the worker by it). A
 * call from a job the actor's job granted its namespace runs in the actor's worker all
 * the same: the pool matches workers by job and credential, so it gets the creation's
 * (the pool copies the spec; the call keeps its own for its results). */
static void run_call(actor *a, call *c)
{
    char why[600];
    if (spec_args_lend(a->am->r, c->spec, why, sizeof why)) {
        spec_args_unlend(c->spec);
        results_store_error(a->am->r->results, c->spec, why);
        call_free(a, c);
        return;
    }
    c->a = a;
    c->next = a->running;
    a->running = c;
    a->nrunning++;
    Escher__TaskSpec as_actor = *c->spec;
    as_actor.job_id = a->creation->job_id;
    as_actor.job_credential = a->creation->job_credential;
    as_actor.resources = a->creation->resources;
    as_actor.n_resources = a->creation->n_resources;
    as_actor.max_concurrency = concurrency(a);
    int rc = worker_pool_run(a->am->r->pool, &as_actor, (const char *const *)a->env, a->nenv,
                             a->cpu, on_call_done, c);
    spec_args_unlend(c->spec); /* the pool copied the spec, objects included */
    if (rc != 0) {
        unlink_running(a, c);
        call_free(a, c);
        actor_die(a, "cannot start its worker");
    }
}

/* Starts the init when it is due. Returns true when calls may run (the actor is ready). */
static bool start_init(actor *a)
{
    if (a->initialized)
        return true;
    /* The init runs alone, on a fresh worker: after a loss, once every call that ran on
     * the lost worker has ended (else the pool would hand it to the dying worker). */
    if (a->nrunning)
        return false;
    if (!a->creation->function || !*a->creation->function->symbol) {
        /* No init: ready at once; the next call starts its worker. */
        Escher__TaskResult ok = ESCHER__TASK_RESULT__INIT;
        ok.ok = true;
        actor_ready(a, &ok);
        return true;
    }
    call *c = esc_xcalloc(1, sizeof *c);
    c->spec = a->creation;
    run_call(a, c);
    return false;
}

/* Runs the init (when not done), else the waiting calls, in arrival order, while fewer
 * than max_concurrency run. A call whose argument objects are not all here yet holds back
 * the calls behind it (they start in the order made). */
static void dispatch(actor *a)
{
    if (a->dead || !start_init(a))
        return;
    while (!a->dead && a->head && a->nrunning < concurrency(a) &&
           !spec_args_missing(a->am->r, a->head->spec)) {
        call *c = a->head;
        a->head = c->next;
        if (!a->head)
            a->tail = NULL;
        run_call(a, c);
    }
}

void actor_manager_resized(actor_manager *am, const char *actor_id,
                           const Escher__TaskSpec *holding, int64_t cpu)
{
    actor *a = esc_strmap_get(am->actors, actor_id);
    if (!a || a->dead)
        return;
    a->cpu = cpu;
    Escher__TaskSpec *c = a->creation;
    for (size_t i = 0; i < c->n_resources; i++)
        protobuf_c_message_free_unpacked(&c->resources[i]->base, NULL);
    free(c->resources);
    c->n_resources = holding->n_resources;
    c->resources = esc_xcalloc(c->n_resources + 1, sizeof *c->resources);
    for (size_t i = 0; i < c->n_resources; i++)
        c->resources[i] = (Escher__Amount *)esc_pb_dup(&holding->resources[i]->base);
}

void actor_manager_call(actor_manager *am, const Escher__TaskSpec *spec)
{
    actor *a = esc_strmap_get(am->actors, spec->actor_id);
    if (!a || a->dead) {
        char why[600];
        snprintf(why, sizeof why, "%s", a ? a->why : "");
        if (!a)
            snprintf(why, sizeof why, "actor %.40s is not hosted on this node (never created "
                     "here, or its node restarted)", spec->actor_id);
        results_store_error(am->r->results, spec, why);
        return;
    }
    call *c = esc_xcalloc(1, sizeof *c);
    c->spec = (Escher__TaskSpec *)esc_pb_dup(&spec->base);
    /* The actor's library runs every method. */
    if (c->spec->function && a->creation->function && !*c->spec->function->library) {
        free(c->spec->function->library);
        c->spec->function->library = esc_xstrdup(a->creation->function->library);
    }
    if (a->tail)
        a->tail->next = c;
    else
        a->head = c;
    a->tail = c;
    spec_args_fetch(am->r, c->spec);
    dispatch(a);
}

void actor_manager_object_arrived(actor_manager *am, const char *id)
{
    (void)id;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(am->actors, &pos, &k, &v)) {
        actor *a = v;
        if (a->head && !a->dead)
            dispatch(a);
    }
}

/* Drops the waiting calls of a that need object id, which could not be fetched. */
static void fail_waiting(actor *a, const char *id, const char *why)
{
    call **pp = &a->head, *prev = NULL;
    while (*pp) {
        call *c = *pp;
        if (!spec_args_waits_for(a->am->r, c->spec, id)) {
            prev = c;
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        char msg[700];
        snprintf(msg, sizeof msg, "cannot fetch argument %.80s: %.500s", id, why);
        results_store_error(a->am->r->results, c->spec, msg);
        call_free(a, c);
    }
    a->tail = prev;
}

void actor_manager_object_failed(actor_manager *am, const char *id, const char *why)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(am->actors, &pos, &k, &v)) {
        actor *a = v;
        if (a->head && !a->dead) {
            fail_waiting(a, id, why);
            dispatch(a);
        }
    }
}

/* ------------------------------------------------------------ start, kill */

static void announce(actor_manager *am, const char *actor_id)
{
    Escher__KvPutRequest req = ESCHER__KV_PUT_REQUEST__INIT;
    req.ns = ACTOR_KV_NS;
    req.key = (char *)actor_id;
    req.value.data = (uint8_t *)am->r->address;
    req.value.len = strlen(am->r->address);
    req.overwrite = true;
    esc_rpc_async_call(am->r->async, am->gcs, &ESC_M_GCS_KV_PUT, &req.base, LOCATION_TIMEOUT_MS,
                       ESC_RPC_IDEMPOTENT, NULL, NULL);
}

void actor_manager_start(actor_manager *am, const Escher__TaskSpec *creation, const char *const *env,
                 size_t nenv, int64_t cpu, actor_manager_ended_fn ended, void *ud)
{
    actor *old = esc_strmap_del(am->actors, creation->actor_id);
    if (old)
        actor_free(old);
    actor *a = esc_xcalloc(1, sizeof *a);
    a->am = am;
    a->creation = (Escher__TaskSpec *)esc_pb_dup(&creation->base);
    a->env = esc_xcalloc(nenv + 1, sizeof *a->env);
    for (size_t i = 0; i < nenv; i++)
        a->env[a->nenv++] = esc_xstrdup(env[i]);
    a->cpu = cpu;
    a->ended = ended;
    a->ud = ud;
    /* Started again after its node died: those restarts count against max_restarts. */
    a->restarts = creation->attempt;
    esc_strmap_put(am->actors, creation->actor_id, a);
    /* Set here, not at actor_manager_new: the raylet starts its pool after the manager. */
    worker_pool_on_actor_lost(am->r->pool, on_worker_lost, am);
    ESC_INFO("actor %s (%s) starts here (restarts %u of max_restarts %u)", creation->actor_id,
             creation->name, a->restarts, creation->max_restarts);
    announce(am, creation->actor_id);
    publish(a, "STARTING");
    dispatch(a);
}

const char *actor_manager_credential(actor_manager *am, const char *actor_id)
{
    actor *a = esc_strmap_get(am->actors, actor_id);
    return a ? a->creation->job_credential : NULL;
}

const char *actor_manager_job(actor_manager *am, const char *actor_id)
{
    actor *a = esc_strmap_get(am->actors, actor_id);
    return a ? a->creation->job_id : NULL;
}

static const char *actor_state(const actor *a)
{
    if (a->dead)
        return "DEAD";
    if (a->initialized)
        return "ALIVE";
    return a->restarts ? "RESTARTING" : "STARTING";
}

static unsigned count_calls(const call *c)
{
    unsigned n = 0;
    for (; c; c = c->next)
        n++;
    return n;
}

void actor_manager_each(actor_manager *am, void (*fn)(void *ud, const actor_row *row), void *ud)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(am->actors, &pos, &k, &v)) {
        const actor *a = v;
        actor_row row = {a->creation->actor_id, a->creation->job_id, a->creation->name,
                         actor_state(a), count_calls(a->head), a->nrunning, a->restarts};
        fn(ud, &row);
    }
}

bool actor_manager_kill(actor_manager *am, const char *actor_id, const char *why)
{
    actor *a = esc_strmap_get(am->actors, actor_id);
    if (!a || a->dead)
        return false;
    actor_die(a, why);
    return true;
}

void actor_manager_job_finished(actor_manager *am, const char *job_id)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(am->actors, &pos, &k, &v)) {
        actor *a = v;
        if (!a->dead && !strcmp(a->creation->job_id, job_id))
            actor_die(a, "its job ended");
    }
}

actor_manager *actor_manager_new(struct raylet *r)
{
    actor_manager *am = esc_xcalloc(1, sizeof *am);
    am->r = r;
    am->actors = esc_strmap_new();
    am->gcs = raylet_channel_new(r, r->cfg.gcs_address);
    return am;
}

void actor_manager_free(actor_manager *am)
{
    if (!am)
        return;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(am->actors, &pos, &k, &v))
        actor_free(v);
    esc_strmap_free(am->actors);
    esc_rpc_channel_free(am->gcs);
    free(am);
}
