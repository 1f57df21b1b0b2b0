/* actor_manager.h: the actors hosted by this raylet.
 *
 * An actor is created by a task with actor_creation set: it is placed like any task
 * (admission, spillback, queue), and once admitted here it keeps its resources for its
 * whole life. Its state lives in its own worker process (worker_pool: the tasks of an
 * actor run on the actor's worker only). Its method calls are sent by callers straight
 * to this raylet and run one at a time in arrival order; with max_concurrency N > 1 (its
 * creation spec's), up to N at once on N threads of its worker, started in arrival order
 * and ending in any order (the init still runs alone, before any call). The actor's
 * address is
 * published in the GCS key-value store (namespace "_actors"), where callers look it up.
 * Every loss of the actor's worker that nobody asked for (a crash or kill -9, while a
 * call runs or while it is idle: worker_pool_on_actor_lost) is handled the same way: while
 * restarts remain (max_restarts) the restart is counted, logged, and a new worker runs
 * the init again (its state is lost) before any further call (once every call that ran
 * on the lost worker has failed with the loss's error); then, or after a kill or
 * its job's end, the actor is dead: its resources are released and every later call and
 * every waiting one ends as an error object ("actor ... died: why"), never a hang. The
 * actor's state (STARTING, ALIVE, RESTARTING, DEAD, with its restart count) is published
 * in the GCS key-value store (namespace "_actor_state"; docs/tasks.md).
 */
#ifndef RAYLET_ACTOR_MANAGER_H
#define RAYLET_ACTOR_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "task.pb-c.h"

struct raylet;
typedef struct actor_manager actor_manager;

/* Called once when a started actor ends for good (its resources can be released). */
typedef void (*actor_manager_ended_fn)(void *ud);

actor_manager *actor_manager_new(struct raylet *r);
void actor_manager_free(actor_manager *am);

/* Starts an admitted actor from its creation spec (copied) with the task environment its
 * worker keeps (env copied) and the CPU quota its calls run under (cpu, fixed point: what
 * it holds, the CPU behind its CPU-backed resources included). Runs the spec's function
 * as the actor's init when it names one; the creation's return object is stored when the
 * actor is ready (or failed). */
void actor_manager_start(actor_manager *am, const Escher__TaskSpec *creation, const char *const *env,
                 size_t nenv, int64_t cpu, actor_manager_ended_fn ended, void *ud);

/* Queues a method call (spec copied; actor_id set, actor_creation not). A call for an
 * actor this raylet never hosted or that died ends at once as error objects. Argument
 * objects not here are fetched; the call (and those behind it) waits for them. */
void actor_manager_call(actor_manager *am, const Escher__TaskSpec *call);

/* An object arrived here: calls that waited for it as an argument may run. */
void actor_manager_object_arrived(actor_manager *am, const char *id);

/* Fetching an object failed: the waiting calls that need it end as error objects. */
void actor_manager_object_failed(actor_manager *am, const char *id, const char *why);

/* The actor was resized: its later calls (and a restart's init) run on holding's
 * resources, which are copied, under CPU quota cpu (as for actor_manager_start). */
void actor_manager_resized(actor_manager *am, const char *actor_id,
                           const Escher__TaskSpec *holding, int64_t cpu);

/* The credential of the job that created actor_id (from its creation spec), or NULL when
 * this raylet hosts no such actor. */
const char *actor_manager_credential(actor_manager *am, const char *actor_id);

/* The job that created actor_id (its creation spec's job_id), or NULL when this raylet
 * hosts no such actor. */
const char *actor_manager_job(actor_manager *am, const char *actor_id);

/* What the state API shows of an actor hosted here (strings owned by the manager). */
typedef struct {
    const char *actor_id;
    const char *job_id;
    const char *name;        /* its creation spec's name */
    const char *state;       /* STARTING, ALIVE, RESTARTING, DEAD */
    unsigned pending_calls;  /* queued, not started */
    unsigned running_calls;
    unsigned restarts;
} actor_row;

/* Calls fn for every actor this raylet hosts or hosted (dead ones stay while the manager
 * keeps them to answer calls). fn must not change the manager. */
void actor_manager_each(actor_manager *am, void (*fn)(void *ud, const actor_row *row), void *ud);

/* Kills an actor hosted here. Returns false when there is none alive by that id. */
bool actor_manager_kill(actor_manager *am, const char *actor_id, const char *why);

/* Kills the actors of a job that ended. */
void actor_manager_job_finished(actor_manager *am, const char *job_id);

#endif
