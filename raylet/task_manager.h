/* task_manager.h: tasks on this node: admission, spillback, queueing, execution, retry.
 *
 * A task arrives through TaskService.SubmitTask (from a driver, or forwarded by another
 * raylet). Local node first: when the task's resources fit now it holds them
 * (accounting) and runs the task on a worker. Otherwise it is forwarded to another node
 * whose advertised availability fits it now (cluster_view_find_available: busy here,
 * idle there), or, when this node could never fit it (a name absent or a total too
 * small), to a node where it is feasible. Forwards are bounded (ESC_MAX_SPILL_HOPS) and
 * never go back to the raylet that forwarded the task here (its reply_to), so tasks
 * never ping-pong. Otherwise the task waits in a FIFO queue, feasible-but-busy or
 * infeasible, and is re-examined when a log entry, a release or another node's
 * advertisement could place it: event driven, never on a timer.
 *
 * When a task ends its resources are released and its return values (or, for a failed
 * task, error objects naming the failure) go to the node's object store. A task whose
 * worker died is retried while attempts remain (max_retries).
 */
#ifndef RAYLET_TASK_MANAGER_H
#define RAYLET_TASK_MANAGER_H

#include <stdbool.h>
#include <stddef.h>

#include "rpc.h"
#include "task.pb-c.h"

#define ESC_MAX_SPILL_HOPS 2

struct raylet;
typedef struct task_manager task_manager;

task_manager *task_manager_new(struct raylet *r);
/* Registers TaskService on the raylet's server. Returns 0 or -1. */
int task_manager_serve(task_manager *tm, esc_rpc_server *srv);
/* A node died: the tasks this raylet forwarded there are submitted again while their
 * retries last (their return values died with the node), else they fail. */
void task_manager_node_dead(task_manager *tm, const char *node_id);
/* An argument object arrived here (object_fetch.c): tasks that have all theirs are
 * scheduled. */
void task_manager_object_arrived(task_manager *tm, const char *id);
/* An argument object could not be fetched: the tasks waiting for it fail with why. */
void task_manager_object_failed(task_manager *tm, const char *id, const char *why);
/* Drops the job's queued tasks and cancels its running ones. */
/* A package fetch ended (packages.h): the tasks waiting for it are placed again, or,
 * when why is not NULL, fail with it. */
void task_manager_package_ready(task_manager *tm, const char *hash, const char *why);
void task_manager_job_finished(task_manager *tm, const char *job_id);
/* An event of the log was applied: submissions held for their job's event are judged
 * again (task_submit.c). */
void task_manager_log_applied(task_manager *tm);
size_t task_manager_queued(const task_manager *tm);
/* Stops the task manager's own outbound calls (their callbacks are posted to the loop):
 * call before the loop's last drain. */
void task_manager_stop(task_manager *tm);
/* The queued tasks grouped by resource shape, for status: *n Demand messages in a new
 * array; free it with task_manager_demand_free. */
Escher__Demand **task_manager_demand(task_manager *tm, size_t *n);
void task_manager_demand_free(Escher__Demand **d, size_t n);
/* Counts changes of the queue (tasks in and out): demand moved when it did. */
uint64_t task_manager_queue_version(const task_manager *tm);
size_t task_manager_running(const task_manager *tm);
/* Calls fn once per job with tasks queued or running here, with the two counts. A pass
 * over the queue and the running tasks (metrics, at each scrape). */
void task_manager_job_counts(task_manager *tm,
                             void (*fn)(void *ud, const char *job_id, size_t queued,
                                        size_t running),
                             void *ud);
/* How runs of tasks on this node ended (counted since start; metrics): with a result,
 * with an error result (stored for the owner), or retried after a retryable failure. */
typedef enum { TASK_SUCCEEDED, TASK_FAILED, TASK_RETRIED, TASK_OUTCOMES } task_outcome;
uint64_t task_manager_ended(const task_manager *tm, task_outcome o);
/* Whether the task waits or runs on this node (queued, fetching its arguments, or
 * running; not forwarded): its output may still grow here (task_state.c). */
bool task_manager_holds(task_manager *tm, const char *task_id);
/* Whether the task holds its resources here and runs (or is about to start). */
bool task_manager_is_running(task_manager *tm, const char *task_id);
/* Fails queued tasks ("raylet shutting down") and frees the manager; the worker pool
 * must already be freed (it ends the running tasks). */
void task_manager_free(task_manager *tm);

#endif
