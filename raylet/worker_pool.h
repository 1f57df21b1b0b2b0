/* worker_pool.h: the raylet's pool of escher-worker processes.
 *
 * The raylet forks and reuses escher-worker processes per job. A worker connects back
 * over a Unix socket and speaks framed protobuf-c (worker.proto) on libev watchers. The
 * pool runs one task at a time per worker; it reuses an idle worker of the same job, or
 * starts a new one; a worker idle for longer than the idle timeout is stopped. Each
 * task's stdout and stderr go to files in the log directory (task-<task_id>.out/.err),
 * so `escher logs TASK_ID` can show them. A worker that dies while running a task
 * (crash, kill) turns into a failed result that names the signal or exit code.
 *
 * Owned by the raylet's loop thread; callbacks run on that thread.
 */
#ifndef RAYLET_WORKER_POOL_H
#define RAYLET_WORKER_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <ev.h>

#include "task.pb-c.h"

typedef struct worker_pool worker_pool;

typedef struct {
    const char *worker_exe;   /* path of escher-worker */
    const char *socket_path;  /* Unix socket the pool listens on */
    const char *log_dir;      /* task-<id>.out/.err files go here */
    int max_workers;          /* 0: number of CPUs * 4 */
    double idle_timeout_s;    /* 0: 60 s */
} worker_pool_config;

/* Called once per task when it ended. result is owned by the pool and valid only during
 * the call; result->ok is false for failures (task returned non-zero, command exited
 * non-zero, worker died: result->error says which, e.g. "worker died: signal 11
 * (SIGSEGV)"). */
typedef void (*worker_done_fn)(void *ud, const Escher__TaskResult *result);

/* Creates the pool and starts listening. Returns NULL with a one-line reason in err. */
worker_pool *worker_pool_new(struct ev_loop *loop, const worker_pool_config *cfg, char *err,
                             size_t errlen);

/* Runs spec (arguments already resolved: every TaskArg carries inline data) on a worker
 * of spec->job_id. env: extra "KEY=VALUE" strings for this task (CUDA_VISIBLE_DEVICES),
 * may be NULL. The pool copies what it needs. done is called exactly once, also when
 * the task is cancelled or the pool is freed first. Returns 0, or -1 when no worker can
 * be started (then done is not called). */
int worker_pool_run(worker_pool *p, const Escher__TaskSpec *spec, const char *const *env,
                    size_t nenv, worker_done_fn done, void *ud);

/* Cancels a running task: its worker is killed (SIGKILL) and done is called with
 * ok = false, error "cancelled". Returns false when no such task runs. */
bool worker_pool_cancel(worker_pool *p, const char *task_id);

/* Stops and reaps the idle workers of a job and kills its running ones (their tasks end
 * with error "job ended"). */
void worker_pool_job_ended(worker_pool *p, const char *job_id);

/* Number of worker processes, and of those running a task. */
size_t worker_pool_size(const worker_pool *p);
size_t worker_pool_busy(const worker_pool *p);

/* Kills every worker, fails running tasks with "raylet shutting down", frees the pool. */
void worker_pool_free(worker_pool *p);

#endif
