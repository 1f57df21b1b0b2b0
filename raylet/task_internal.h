/* task_internal.h: the parts of the task manager (task_manager.h), one concern per file:
 *
 *   task_manager.c  entries, the wait queue, admission and execution, node death and
 *                   job end, demand for status;
 *   task_submit.c   the TaskService's submissions: each spec's checks (its job, through
 *                   job_mirror.h), held submissions of a job not yet applied;
 *   task_spill.c    placement elsewhere: where a task that does not fit here goes, and
 *                   forwarding it there (peers.h);
 *   task_args.c     argument objects: fetching the missing ones, lending them to the
 *                   worker;
 *   task_cancel.c   cancel, withdraw, kill an actor;
 *   task_lineage.c  ends reported by the raylets tasks were forwarded to, and the lineage
 *                   kept to make lost results again (Reconstruct);
 *   task_state.c    where one task is on this raylet (GetTaskState, log following);
 *   state_list.c    the state API: ListTasks, ListActors (and ObjectStore.ListObjects),
 *                   with the record of tasks that ended here lately.
 *
 * Only these files include this header; the rest of the raylet sees task_manager.h. */
#ifndef RAYLET_TASK_INTERNAL_H
#define RAYLET_TASK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accounting.h"
#include "admission.h"
#include "gpu_slots.h"
#include "raylet.h"
#include "rpc.h"
#include "strmap.h"
#include "task.pb-c.h"
#include "task_manager.h"

/* Lineage kept per raylet: the specs of this many ended forwarded tasks at most, the
 * oldest forgotten first (their lost returns can then no longer be made again). */
#define LINEAGE_MAX 100000

typedef struct task_entry {
    admission_entry q;              /* first: the node's queue (admission.h), while waiting */
    task_manager *tm;
    char *spilled_to;               /* node id, while forwarded */
    char *spilled_addr;             /* and that node's raylet */
    unsigned forwards;              /* forwards made: tells a stale forward's outcome */
    struct forward_ctx *forward;    /* the latest forward while unanswered, else NULL */
    Escher__TaskSpec *spec;         /* owned */
    accounting_req *req;              /* names point into spec */
    size_t nreq;
    int64_t gpus;                   /* the GPU quantity requested (fixed point) */
    gpu_grant *grant;               /* the GPU instances it holds while running; NULL
                                       when it holds none (most tasks, and every queued
                                       one: a grant is 780 bytes) */
    char *shape_key;                /* while queued: its shape's key in tm->shapes */
    uint64_t start_ms;              /* wall clock when it last started here; 0 before */
} task_entry;

struct task_manager {
    raylet *r;
    uint64_t ended[TASK_OUTCOMES];  /* runs ended here, by task_outcome (metrics) */
    size_t nqueued;                 /* tasks in the node's queue (r->admission) */
    /* The queue's demand, kept as tasks come and go (shape key -> queued_shape), so a
     * report of it costs one pass over the shapes, not over the queue; queue_version
     * counts the changes (the loop reports demand when it moved). */
    esc_strmap *shapes;
    uint64_t queue_version;
    /* The last task of the current re-examination pass that found no other node: during
     * a pass the view only loses availability (debits), so a task placed like it would
     * find none either. Queues of many tasks of one shape then cost one search per
     * pass, not one per task. */
    const task_entry *stuck;
    uint64_t stuck_pass;
    esc_strmap *running;            /* task id -> task_entry */
    esc_strmap *resizing;           /* actor id -> its resize waiting to grow */
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
    /* Tasks whose node died, while the directory says whether they ended (their first
     * return exists or was lost): by task id. */
    esc_strmap *checking;
    esc_rpc_channel *gcs;           /* for that look */
    esc_rpc_async *checker;         /* and its queue (NULL once stopped) */
    esc_strmap *fetching;           /* task id -> task_entry waiting for argument objects */
    gpu_slots *gpus;                /* which GPU instance each running task holds */
    bool mps;                       /* an MPS daemon ran when the raylet started */
    esc_strmap *actors;             /* actor id -> creation entry holding its resources */
    struct held_submit *held;       /* submissions waiting for their job's event (task_submit.c) */
    /* The tasks that ended here lately, for the state API (state_list.c): a ring of
     * ended_cap rows (raylet --ended-tasks), the oldest overwritten first. */
    Escher__TaskRow **ended_rows;
    size_t ended_cap, ended_next;
};

/* ---- task_manager.c */
/* A new entry for spec (owned), its request resolved against the node's table. */
task_entry *task_entry_new(task_manager *tm, Escher__TaskSpec *spec);
void task_entry_free(task_entry *e);
/* Tasks in the node's queue (admission.h), with leases waiting there too. */
void task_enqueue(task_manager *tm, task_entry *e);
void task_dequeue(task_manager *tm, task_entry *e);
/* The queued task behind a (NULL when a is NULL); the entries of other kinds skipped. */
task_entry *task_queued_from(const admission_entry *a);
task_entry *task_find_queued(task_manager *tm, const char *task_id);
/* Admission: the table must fit, and so must the GPU instances. */
bool task_fits_now(task_manager *tm, const task_entry *e);
/* The CPU quota of e's worker (fixed point): what e asks of "CPU", plus the CPU behind
 * the CPU-backed ephemeral resources it holds (units x CPU per unit), which is node CPU it
 * holds all the same (docs/resources.md, "Backed resources"). From e's requests as they
 * are now: call it when e starts to run, and again when an actor's holding changes. */
int64_t task_cpu_quota(const task_manager *tm, const task_entry *e);
/* Places a task that is not queued: here, elsewhere, or in the queue. */
void task_schedule(task_manager *tm, task_entry *e);
/* A queued task's request as status shows it: shape, infeasible, missing names (a new
 * message, count 0; free with protobuf_c_message_free_unpacked). */
Escher__Demand *task_demand_of(task_manager *tm, const task_entry *e);

/* ---- task_submit.c */
void task_submit_handle(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);
void task_submit_handle_batch(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);
/* The mirror of the jobs changed (job_mirror.h): held submissions are judged again. */
void task_submit_jobs_changed(task_manager *tm);
/* Answers the held submissions UNAVAILABLE (shutdown). */
void task_submit_drop_held(task_manager *tm);

/* ---- task_spill.c */
const char *task_spill_target(task_manager *tm, const task_entry *e, const char **node_id);
void task_spill_forward(task_manager *tm, task_entry *e, const char *address,
                        const char *node_id);
/* Holds a withdraw (CancelTask if_queued) of e while its latest forward is unanswered,
 * when the raylet it went to may not hold it yet: the answer (the task is there, or back
 * here) redoes the withdraw (task_cancel_withdraw). False when nothing is unanswered. */
bool task_spill_hold_withdraw(task_entry *e, esc_rpc_ctx *call);
bool task_spill_same_placement(const task_entry *a, const task_entry *b);

/* ---- task_args.c */
bool task_args_wait(task_manager *tm, task_entry *e);
const char *task_args_lend(task_manager *tm, task_entry *e, char *why, size_t len);
void task_args_unlend(task_entry *e);
/* Removes and returns the job's tasks waiting for arguments (*n of them). */
task_entry **task_args_take_job(task_manager *tm, const char *job_id, size_t *n);

/* ---- task_cancel.c */
/* Withdraws the task if it has not started, and answers call (task_cancel.c). */
void task_cancel_withdraw(task_manager *tm, esc_rpc_ctx *call, const char *task_id);
void task_cancel_handle(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);
void task_cancel_handle_kill_actor(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);

/* True when the caller may act on actor_id (kill, resize): it shows the credential of the
 * actor's creation (metadata), or this raylet hosts no such actor; else false with why. */
bool task_actor_caller_ok(task_manager *tm, esc_rpc_ctx *call, const char *actor_id, char *why,
                          size_t len);

/* actor_resize.c: TaskService.ResizeActor; _stop fails the resizes still waiting. */
void actor_resize_handle(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);
void actor_resize_stop(task_manager *tm);

/* ---- task_lineage.c */
void task_lineage_handle_tasks_done(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);
void task_lineage_handle_reconstruct(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);
/* Keeps an ended task's spec (this raylet is its origin) for reconstruction. */
void task_lineage_keep(task_manager *tm, task_entry *e);
/* Forgets the lineage of the job (every job's when job_id is NULL). */
void task_lineage_drop(task_manager *tm, const char *job_id);

/* ---- task_state.c */
void task_state_handle(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);
/* Tells the GCS that a job's entrypoint (TaskSpec.job_entrypoint) now waits in this
 * node's queue (pending, with what it lacks), or no longer does. */
void task_state_report_entrypoint(task_manager *tm, const task_entry *e, bool pending);
/* A job's entrypoint started here: the job's key "<job id>/started" in namespace
 * JOBS_KV_NS (the SDK's job records, client/job_internal.h) becomes this node's id, so
 * `escher job logs --follow` learns where it runs from an event, without looking. */
#define JOBS_KV_NS "_jobs"
void task_state_report_started(task_manager *tm, const task_entry *e);

/* ---- state_list.c */
/* Records that e ended here (ok: FINISHED, else FAILED) in the ring of ended rows. */
void task_list_record_end(task_manager *tm, const task_entry *e, bool ok);
void task_list_handle_tasks(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);
void task_list_handle_actors(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);
/* Frees the ring of ended rows (task_manager_free). */
void task_list_free(task_manager *tm);

#endif
