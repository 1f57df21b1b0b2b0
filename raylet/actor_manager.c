/* actor_manager.c: see actor_manager.h. */
#include "actor_manager.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcs.pb-c.h"
#include "log.h"
#include "pbutil.h"
#include "raylet.h"
#include "rpc_async.h"
#include "strmap.h"
#include "task_manager.h"
#include "worker_pool.h"

#define LOCATION_TIMEOUT_MS 5000
#define ACTOR_KV_NS "_actors"

typedef struct call {
    struct call *next;
    Escher__TaskSpec *spec;      /* owned */
} call;

typedef struct actor {
    actor_manager *am;
    Escher__TaskSpec *creation;  /* owned: library, init, job, max_restarts */
    char **env;
    size_t nenv;
    call *head, *tail;           /* calls waiting, in arrival order */
    call *running;               /* the call (or init) on the worker now */
    bool initialized;
    bool dead;
    char why[512];               /* why it died */
    unsigned restarts;
    actor_ended_fn ended;
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
            task_manager_store_error(a->am->r->tasks, c->spec, why);
        protobuf_c_message_free_unpacked(&c->spec->base, NULL);
        free(c);
    }
    a->tail = NULL;
}

static void actor_free(actor *a)
{
    free_calls(a, NULL);
    if (a->running) {
        if (a->running->spec != a->creation)
            protobuf_c_message_free_unpacked(&a->running->spec->base, NULL);
        free(a->running);
    }
    for (size_t i = 0; i < a->nenv; i++)
        free(a->env[i]);
    free(a->env);
    protobuf_c_message_free_unpacked(&a->creation->base, NULL);
    free(a);
}

/* The actor is gone for good: calls fail from now on and its resources go back. */
static void actor_die(actor *a, const char *why)
{
    if (a->dead)
        return;
    a->dead = true;
    snprintf(a->why, sizeof a->why, "actor %.40s died: %.400s", a->creation->actor_id, why);
    ESC_WARN("%s", a->why);
    free_calls(a, a->why);
    worker_pool_actor_ended(a->am->r->pool, a->creation->actor_id);
    if (a->ended)
        a->ended(a->ud);
    a->ended = NULL;
}

/* ------------------------------------------------------------ calls */

static bool worker_died(const Escher__TaskResult *res)
{
    return !res->ok && res->error && strncmp(res->error, "worker died", 11) == 0;
}

static void on_call_done(void *ud, const Escher__TaskResult *res)
{
    actor *a = ud;
    call *c = a->running;
    a->running = NULL;
    bool is_init = c && c->spec == a->creation;
    if (c && !is_init)
        task_manager_store_result(a->am->r->tasks, c->spec, res);
    if (is_init) {
        if (res->ok)
            a->initialized = true;
        task_manager_store_result(a->am->r->tasks, a->creation, res);
        free(c);
        if (!res->ok && !worker_died(res)) {
            actor_die(a, res->error);
            return;
        }
    } else if (c) {
        protobuf_c_message_free_unpacked(&c->spec->base, NULL);
        free(c);
    }
    if (!a->dead && worker_died(res)) {
        if (a->restarts >= a->creation->max_restarts) {
            actor_die(a, res->error);
            return;
        }
        a->restarts++;
        a->initialized = false;
        ESC_WARN("actor %s: %s; restarting it (%u of %u)", a->creation->actor_id, res->error,
                 a->restarts, a->creation->max_restarts);
    }
    if (!a->dead)
        dispatch(a);
}

/* Runs the init (when not done) or the next call on the actor's worker. */
static void dispatch(actor *a)
{
    if (a->dead || a->running)
        return;
    const Escher__TaskSpec *spec = NULL;
    if (!a->initialized) {
        if (!a->creation->function || !*a->creation->function->symbol) {
            a->initialized = true; /* no init: ready at once */
            Escher__TaskResult ok = ESCHER__TASK_RESULT__INIT;
            ok.ok = true;
            if (a->restarts == 0)
                task_manager_store_result(a->am->r->tasks, a->creation, &ok);
        } else {
            a->running = calloc(1, sizeof *a->running);
            a->running->spec = a->creation;
            spec = a->creation;
        }
    }
    if (!spec && a->head) {
        a->running = a->head;
        a->head = a->head->next;
        if (!a->head)
            a->tail = NULL;
        spec = a->running->spec;
    }
    if (!spec)
        return;
    if (worker_pool_run(a->am->r->pool, spec, (const char *const *)a->env, a->nenv,
                        on_call_done, a) != 0) {
        if (a->running->spec != a->creation)
            protobuf_c_message_free_unpacked(&a->running->spec->base, NULL);
        free(a->running);
        a->running = NULL;
        actor_die(a, "cannot start its worker");
    }
}

void actor_call(actor_manager *am, const Escher__TaskSpec *spec)
{
    actor *a = esc_strmap_get(am->actors, spec->actor_id);
    if (!a || a->dead) {
        char why[600];
        snprintf(why, sizeof why, "%s", a ? a->why : "");
        if (!a)
            snprintf(why, sizeof why, "actor %.40s is not hosted on this node (never created "
                     "here, or its node restarted)", spec->actor_id);
        task_manager_store_error(am->r->tasks, spec, why);
        return;
    }
    call *c = calloc(1, sizeof *c);
    c->spec = (Escher__TaskSpec *)esc_pb_dup(&spec->base);
    /* The actor's library runs every method. */
    if (c->spec->function && a->creation->function && !*c->spec->function->library) {
        free(c->spec->function->library);
        c->spec->function->library = strdup(a->creation->function->library);
    }
    if (a->tail)
        a->tail->next = c;
    else
        a->head = c;
    a->tail = c;
    dispatch(a);
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
    esc_rpc_async_call(am->r->async, am->gcs, &escher__gcs__descriptor, "KvPut", &req.base,
                       LOCATION_TIMEOUT_MS, ESC_RPC_IDEMPOTENT, NULL, NULL);
}

void actor_start(actor_manager *am, const Escher__TaskSpec *creation, const char *const *env,
                 size_t nenv, actor_ended_fn ended, void *ud)
{
    actor *old = esc_strmap_del(am->actors, creation->actor_id);
    if (old)
        actor_free(old);
    actor *a = calloc(1, sizeof *a);
    a->am = am;
    a->creation = (Escher__TaskSpec *)esc_pb_dup(&creation->base);
    a->env = calloc(nenv + 1, sizeof *a->env);
    for (size_t i = 0; i < nenv; i++)
        a->env[a->nenv++] = strdup(env[i]);
    a->ended = ended;
    a->ud = ud;
    /* Started again after its node died: those restarts count against max_restarts. */
    a->restarts = creation->attempt;
    esc_strmap_put(am->actors, creation->actor_id, a);
    ESC_INFO("actor %s (%s) starts here", creation->actor_id, creation->name);
    announce(am, creation->actor_id);
    dispatch(a);
}

bool actor_kill(actor_manager *am, const char *actor_id, const char *why)
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
    actor_manager *am = calloc(1, sizeof *am);
    am->r = r;
    am->actors = esc_strmap_new();
    am->gcs = esc_rpc_channel_new(r->cfg.gcs_address, r->cfg.token);
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
