/* worker_pool.h: the raylet's pool of escher-worker processes.
 *
 * The raylet forks and reuses escher-worker processes per job. A worker connects back
 * over a Unix socket and speaks framed protobuf-c (worker.proto) on libev watchers. The
 * pool runs one task at a time per worker (except on the worker of an actor created
 * with max_concurrency N > 1: up to N of its tasks at once, see worker_pool_run); it reuses an idle worker of the same job, or
 * starts a new one; a worker idle for longer than the idle timeout is stopped. Each
 * task's stdout and stderr go to its worker's capture files in the log directory
 * (worker-<id>.out/.err, indexed by task in worker-<id>.idx; docs/workers.md), so
 * `escher logs TASK_ID` can show them. A worker that dies while running a task
 * (crash, kill) turns into a failed result that names the signal or exit code.
 *
 * A worker serves one job and one task environment (the env strings of worker_pool_run,
 * e.g. CUDA_VISIBLE_DEVICES): they are set in its process environment when it starts,
 * so libraries that read them once at init (the CUDA runtime) see them, and it is reused
 * only for tasks with the same job and the same set of strings (order does not matter).
 * Workers also get ESCHER_JOB_ID, ESCHER_LOG_DIR and ESCHER_PACKAGE_ROOT; their own stderr goes to
 * <log_dir>/worker-<worker id>.log (removed when empty). Each worker leads its own
 * process group; kills go to the group, so what a command task started dies with it, and
 * workers die with the raylet (PR_SET_PDEATHSIG). See docs/workers.md.
 *
 * Owned by the raylet's loop thread (which must be the thread that lives as long as the
 * workers: the parent-death signal follows the forking thread); callbacks run on that
 * thread. Works on any libev loop: exits are watched through pidfds (Linux >= 5.3), or
 * ev_child on libev's default loop, which reaps all children itself.
 */
#ifndef RAYLET_WORKER_POOL_H
#define RAYLET_WORKER_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ev.h>

#include "cpu_quota.h"
#include "task.pb-c.h"

typedef struct worker_pool worker_pool;

/* The most tasks an actor's worker runs at once (escher.h's ESC_ACTOR_MAX_CONCURRENCY). */
#define WORKER_MAX_CONCURRENCY 64

typedef struct {
    const char *worker_exe;   /* path of escher-worker */
    const char *socket_path;  /* Unix socket the pool listens on */
    const char *log_dir;      /* the workers' capture files go here */
    const char *package_root; /* the node's package cache (packages.h), given to workers
                                 as ESCHER_PACKAGE_ROOT; NULL: none */
    int max_workers;          /* 0: number of CPUs * 4. Workers of plain tasks not
                                 stopping; tasks beyond wait in a FIFO. An idle worker of
                                 another job/env is stopped to make room when all slots
                                 are taken. Actors' workers are not counted: an actor
                                 holds its resources as long as its worker lives, so
                                 admission bounds them. */
    double idle_timeout_s;    /* 0: 60 s. An idle worker is then sent Exit (killed if it
                                 has not exited 5 s later). */
    cpu_quota *quota;         /* NULL: CPU shares not enforced. Else each worker gets a
                                 cgroup whose quota is the CPU its task holds (an actor's
                                 worker: what its creation holds); borrowed, must outlive
                                 the pool */
} worker_pool_config;

/* Called once per task when it ended. result is owned by the pool and valid only during
 * the call; result->ok is false for failures (task returned non-zero, command exited
 * non-zero, worker died: result->error says which, e.g. "worker died: signal 11
 * (SIGSEGV)", with exit_code / term_signal set too). It may call worker_pool_run,
 * _cancel and _job_ended, but never worker_pool_free. It can run inside
 * worker_pool_cancel, worker_pool_job_ended and worker_pool_free. */
typedef void (*worker_done_fn)(void *ud, const Escher__TaskResult *result);

/* Creates the pool and starts listening: a stale socket at socket_path is replaced (any
 * other kind of file there is an error), log_dir is created if missing (one level).
 * Returns NULL with a one-line reason in err (worker_exe not executable, cannot listen,
 * no pidfd support). */
worker_pool *worker_pool_new(struct ev_loop *loop, const worker_pool_config *cfg, char *err,
                             size_t errlen);

/* Runs spec (arguments already resolved: every TaskArg carries inline data) on a worker
 * of spec->job_id. env: extra "KEY=VALUE" strings for this task (CUDA_VISIBLE_DEVICES),
 * may be NULL. cpu: the CPU the task holds (fixed point, the CPU behind its CPU-backed
 * resources included; an actor's calls: what the actor holds now), its worker's CPU quota while it runs when the pool has a quota (0: no
 * quota). The pool copies what it needs. done is called exactly once, also when
 * the task is cancelled or the pool is freed first, never inside this call.
 * An actor's tasks carry the actor's spec->max_concurrency (its creation's): the worker
 * the first of them starts runs up to that many (at most WORKER_MAX_CONCURRENCY) at once,
 * on as many threads, and takes the next one while it runs others; with 0 or 1 it runs
 * them one at a time, without a thread. The caller bounds how many it gives at once.
 * Returns 0,
 * or -1 when no worker can be started (fork failed), the spec is over the frame limit
 * (256 MiB), or the pool is being freed; then done is not called. */
int worker_pool_run(worker_pool *p, const Escher__TaskSpec *spec, const char *const *env,
                    size_t nenv, int64_t cpu, worker_done_fn done, void *ud);

/* The CPU spec asks for (fixed point, the sum of its plain "CPU" amounts; a task's cpu
 * argument adds the CPU behind its CPU-backed resources, raylet task_cpu_quota). */
int64_t worker_pool_spec_cpu(const Escher__TaskSpec *spec);

/* Cancels a task: a queued one is dropped; a running (or starting) one has its worker
 * killed (SIGKILL to its process group). done is called before this returns, with
 * ok = false, error "cancelled". The other tasks that worker runs (a concurrent actor's)
 * end as in any death of their worker ("worker died: signal 9 (SIGKILL)"), when it is
 * reaped. Returns false when the pool has no such task. */
bool worker_pool_cancel(worker_pool *p, const char *task_id);

/* A task whose spec names an actor (actor_id) runs on that actor's own worker: the
 * first one starts it, later ones reuse it; it serves no other task and is never
 * stopped for being idle or to make room. This ends it: idle, it is asked to exit;
 * busy, it is killed and its tasks (all those it runs) end (before this returns) with
 * "actor killed"; a task of the actor still queued in the pool ends the same way. */
void worker_pool_actor_ended(worker_pool *p, const char *actor_id);

/* The CPU an actor holds changed (it was resized): its worker's quota follows at once,
 * also while a call runs. Nothing when the pool has no quota or no worker of the actor. */
void worker_pool_set_actor_cpu(worker_pool *p, const char *actor_id, int64_t cpu);

/* Called when an actor's worker is lost although neither worker_pool_actor_ended nor
 * worker_pool_job_ended asked for it: it died (crash, kill -9, busy or idle), lost its
 * connection, never connected, or was killed by worker_pool_cancel. The actor's state
 * is gone with it. Called once per worker, as soon as the pool knows, and always before
 * the tasks it was running (if any) end; why is one line ("worker died: signal 9
 * (SIGKILL)"). A task of the actor given to the pool after the loss and before this
 * call ends with that same error. May call worker_pool_run and _actor_ended. */
typedef void (*worker_actor_lost_fn)(void *ud, const char *actor_id, const char *why);

/* Sets (or, fn NULL, clears) the actor-loss callback. NULL p is a no-op. */
void worker_pool_on_actor_lost(worker_pool *p, worker_actor_lost_fn fn, void *ud);

/* Asks the idle workers of a job to exit, kills its busy ones, and drops its queued
 * tasks; running and queued tasks end (before this returns) with error "job ended".
 * The processes are reaped from the loop as they exit. */
void worker_pool_job_ended(worker_pool *p, const char *job_id);

/* Number of worker processes not yet reaped (stopping ones included), and of those
 * running a task (or starting for one). */
size_t worker_pool_size(const worker_pool *p);
size_t worker_pool_busy(const worker_pool *p);
/* Worker processes forked since the pool started. */
uint64_t worker_pool_started(const worker_pool *p);
/* How many tasks were given a worker that was already running and idle, ever. */
uint64_t worker_pool_reused(const worker_pool *p);

/* Kills every worker and reaps it (waits for it), fails running and queued tasks with
 * "raylet shutting down", removes the socket file, frees the pool. NULL is a no-op.
 * worker_pool_run, _cancel, _actor_ended and _job_ended also take NULL (a pool already
 * freed: events that arrive while the raylet shuts down): -1, false, nothing. */
void worker_pool_free(worker_pool *p);

#endif
