/* esl.h: the ESCHER scheduling library (ESL).
 *
 * A scheduling policy, expressed as ephemeral-resource operations plus the resources a
 * task must request. The raylet's scheduler stays a plain resource matcher: a policy
 * creates, resizes and deletes ephemeral resources (in the client's namespace, under
 * names it generates from a prefix the caller gives), and returns an esl_request that
 * the caller adds to its tasks' resources. Every policy object owns what it created and
 * deletes it when freed (esl_*_free); what is left when the job ends goes with the job.
 *
 * A policy call returns once the nodes it changed applied the change (up to 5 s for a
 * slow node): its tasks are admitted by it from then on, and the cluster status shows it.
 *
 * Threads: a policy object is used by one thread at a time; different objects may be
 * used concurrently. Errors: like escher.h, a status code and a one-line message.
 * Memory: every out-pointer is owned by the caller and freed with the matching _free.
 */
#ifndef ESCHER_ESL_H
#define ESCHER_ESL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "escher/escher.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ requests */

/* Resources a task must request (names are full: "<namespace>/<name>" for ephemeral
 * ones, "CPU" for physical ones). Owned by whoever made it. */
typedef struct {
    esc_amount *v;
    size_t n;
} esl_request;

/* A new request with one entry name=qty added to r (name copied). */
void esl_request_add(esl_request *r, const char *name, int64_t qty);
/* Frees the entries (not r itself) and leaves r empty. */
void esl_request_clear(esl_request *r);

/* AND: out = a + b, repeated names summed (out is cleared first). Before returning it
 * asks the cluster whether some alive node has every ephemeral name of the union with
 * enough capacity: when none has, the composition can never be placed and the call
 * returns FAILED_PRECONDITION naming the names, instead of leaving tasks to wait
 * forever. (Names that exist nowhere yet are allowed: a policy may create them later.) */
int esl_request_and(esc_client *c, const esl_request *a, const esl_request *b,
                    esl_request *out, esc_status *st);

/* The request for the policy resource `name` (short, in the client's namespace), qty
 * units: what tasks carry. It can be made before the policy exists: such tasks wait
 * (event driven) until the resource appears and then run where the policy put it. */
void esl_request_for(esc_client *c, const char *name, int64_t qty, esl_request *out);

/* ------------------------------------------------------------------ placement policies */

/* A placement policy: an ephemeral resource it created on the nodes it chose, and the
 * request its tasks carry. */
typedef struct esl_policy esl_policy;

/* The request the policy's tasks carry (owned by the policy). */
const esl_request *esl_policy_request(const esl_policy *p);
/* The nodes the policy's resource is on now: a copy into *ids, which the caller frees
 * with esl_policy_nodes_free(*ids, n). The set changes on the client's event thread when
 * a node dies (the policy replaces or rebalances), hence a copy taken under its lock.
 * Returns the number of nodes; 0 with *ids NULL when out of memory. */
size_t esl_policy_nodes(esl_policy *p, char ***ids);
void esl_policy_nodes_free(char **ids, size_t n);
/* Deletes the policy's resource on every node (holders keep it until they end) and frees
 * the policy. Returns the delete's code; p is freed either way. NULL is ESC_OK. */
int esl_policy_free(esc_client *c, esl_policy *p, esc_status *st);

/* Co-location: n tasks on one node that has room for all of them. Creates `name` with
 * capacity n on one alive node whose available resources cover n times `each` (the
 * resources each task also requests; may be empty): the client's local node when it
 * has room, else the node with the most room. Tasks carry name=1 (plus `each`); tasks
 * submitted before this call (with esl_request_for) start there too. RESOURCE_EXHAUSTED
 * when no node has room for all n. */
int esl_colocate(esc_client *c, const char *name, unsigned n, const esl_request *each,
                 esl_policy **out, esc_status *st);

/* Anti-affinity: at most one of the policy's tasks per node. Creates `name` with
 * capacity 1 on every alive node; tasks carry name=1. With more tasks than nodes the
 * extra ones wait until one ends. */
int esl_anti_affinity(esc_client *c, const char *name, esl_policy **out, esc_status *st);

/* Static load balancing: `tasks` tasks over `nodes` nodes (0: every alive node), at most
 * ceil(tasks/nodes) on each. Creates `name` with that capacity on the nodes with the most
 * available CPU; tasks carry name=1. INVALID_ARGUMENT for tasks == 0; FAILED_PRECONDITION
 * when fewer nodes are alive than asked for. */
int esl_balance(esc_client *c, const char *name, unsigned tasks, unsigned nodes,
                esl_policy **out, esc_status *st);

/* Data locality: run where `input` lives. Looks the object up in the GCS directory and
 * creates `name` (unbounded) on every node holding a copy; tasks carry name=1, so they
 * run on one of those nodes. With no copy anywhere (not made yet, or freed) the policy
 * constrains nothing: its request is empty and the task runs wherever it fits. */
int esl_locality(esc_client *c, const char *name, const esc_ref *input, esl_policy **out,
                 esc_status *st);

/* ------------------------------------------------------------------ task operations */

/* The producer-creates-resource variant of locality, and signals: operations a task
 * carries (esc_task_spec.on_success) that the runtime commits when the task succeeds. */

/* Adds to b: mark the node the task ran on with `name` (unbounded), so consumers that
 * carry esl_request_for(name, 1) run there. */
void esl_op_mark_here(esc_batch *b, const char *name);

/* Adds to b: one signal on barrier `name` (its capacity grows by 1 on every node). */
void esl_op_signal(esc_batch *b, const char *name);

/* ------------------------------------------------------------------ signal and barrier */

/* A barrier (a DAG edge into one waiting task): the waiter carries `name`=producers and
 * starts once that many producers signalled (each carries esl_op_signal(name), or the
 * caller calls esl_signal). Creates `name` with capacity 0 on every alive node, so the
 * waiter is known to the cluster while it waits. One waiter per barrier: a task with
 * several inputs has one barrier per input edge set, a producer signals each of its
 * consumers' barriers. */
int esl_barrier(esc_client *c, const char *name, unsigned producers, esl_policy **out,
                esc_status *st);

/* Signals barrier `name` once (from the driver, or any client of the job). */
int esl_signal(esc_client *c, const char *name, esc_status *st);

/* ------------------------------------------------------------------ priority and fair queues */

/* Queues of tasks drained in priority order or by weight. Queue i is the ephemeral
 * resource "<name>_<i>", present on every alive node with capacity 0 while it may not
 * start tasks ("present with zero": its tasks are known to the cluster, waiting), and
 * `slots` while it may (tasks carry one unit of it, plus their own resources). A thread
 * of the queues object counts each queue's outstanding tasks (submitted through it, not
 * ended) and sets the capacities whenever the set of non-empty queues changes:
 *  - weights NULL, strict priority: only the first non-empty queue (0 is the highest)
 *    may start tasks. A lower queue starves while a higher one has tasks: by design.
 *  - weights given, weighted fair: every non-empty queue i may run
 *    max(1, slots * w_i / sum of the non-empty queues' weights) tasks per node at once,
 *    so no queue with a positive weight starves.
 * Tasks already running keep their units when their queue's capacity drops. */
typedef struct esl_queues esl_queues;
int esl_queues_new(esc_client *c, const char *name, size_t nqueues, const double *weights,
                   unsigned slots, esl_queues **out, esc_status *st);
/* Submits a task to queue q. refs as in esc_task_submit (the caller frees them). */
int esl_queues_submit(esl_queues *qs, size_t q, const esc_task_spec *spec, esc_ref **refs,
                      esc_status *st);
/* Stops the thread and deletes the queue resources (tasks still waiting then never
 * start). */
void esl_queues_free(esl_queues *qs);

/* ------------------------------------------------------------------ dynamic load balancing */

/* Dynamic load balancing: an unknown stream of tasks shaped like `shape` spread evenly.
 * The resource `name` starts with capacity 1 on every alive node; tasks carry one unit.
 * A thread looks at the cluster status every 100 ms and changes capacities only with
 * esc_resource_add (deltas: no read-modify-write race with any other writer):
 *  - a node that joined gets the resource (+1);
 *  - while tasks carrying it wait, every node whose units are all held and that has
 *    room for one more task gets +1 — all such nodes at once, so the spread stays even;
 *  - a node whose own resources are exhausted (no room for a task) and that has spare
 *    units gets -1, so it stops looking free to the raylets' spillback.
 * A node that dies takes its share with it; nothing else needs to change. */
typedef struct esl_dynamic esl_dynamic;
int esl_dynamic_new(esc_client *c, const char *name, const esl_request *shape,
                    esl_dynamic **out, esc_status *st);
const esl_request *esl_dynamic_request(const esl_dynamic *d);
/* Stops the thread and deletes the resource everywhere. */
void esl_dynamic_free(esl_dynamic *d);

/* ------------------------------------------------------------------ bin-packing */

/* Bin-packing: as few nodes as possible for an unknown stream of tasks shaped like
 * `shape` (what each task requests besides). The resource `name` (unbounded) lives on
 * the active nodes only; tasks carry one unit (esl_binpack_request). The first active
 * node is the client's local node when it has room for one task, else the first alive
 * node that has. A thread looks at the cluster status every 100 ms: when tasks that
 * carry the resource wait on some node and no active node has room for one more, it
 * activates one more node (the inactive alive node with the most room) — the active set
 * grows only when a task does not fit. It never shrinks while the object lives. */
typedef struct esl_binpack esl_binpack;
int esl_binpack_new(esc_client *c, const char *name, const esl_request *shape,
                    esl_binpack **out, esc_status *st);
const esl_request *esl_binpack_request(const esl_binpack *b);
/* How many nodes are active now. */
size_t esl_binpack_active(esl_binpack *b);
/* Stops the thread and deletes the resource from the active nodes. */
void esl_binpack_free(esl_binpack *b);

/* ------------------------------------------------------------------ hierarchical fair sharing */

/* Hierarchical fair sharing: users with weights share a set of nodes, whole nodes at a
 * time. User u's tasks carry one unit of "<name>_<u>" (esl_share_request), which exists
 * with capacity `slots` on the nodes granted to u. A thread (every 100 ms) counts each
 * user's outstanding tasks (submitted through esl_share_submit, not ended) and grants
 * nodes max-min fairly by weight: a user gets at most the nodes its tasks can use
 * (ceil(outstanding / slots)); what one does not use is lent to those that want more;
 * when the owner wants it back it is reclaimed — the node's grant moves in one batch, and
 * the borrower's running tasks finish there (their units are kept until they end; no
 * preemption). Grants stay where they are when the counts do not change.
 *
 * A child share divides only what its parent granted to one user: its nodes are that
 * user's current nodes, and its tasks also carry the parent user's unit, so they run
 * only there, also while a grant moves. */
typedef struct esl_share esl_share;
/* nodes NULL: every alive node (when the share starts). weights[i] > 0. */
int esl_share_new(esc_client *c, const char *name, const char *const *nodes, size_t nnodes,
                  const double *weights, size_t nusers, unsigned slots, esl_share **out,
                  esc_status *st);
/* A child share over what `parent` grants its user `user`. */
int esl_share_child(esl_share *parent, size_t user, const char *name, const double *weights,
                    size_t nusers, unsigned slots, esl_share **out, esc_status *st);
/* Submits a task of user u (its resources plus the user's unit, and the parent's). */
int esl_share_submit(esl_share *s, size_t u, const esc_task_spec *spec, esc_ref **refs,
                     esc_status *st);
/* The nodes granted to user u now: *ids (and each string) are the caller's to free. */
size_t esl_share_nodes(esl_share *s, size_t u, char ***ids);
/* Stops the thread and deletes the share's resources (free children first). */
void esl_share_free(esl_share *s);

/* ------------------------------------------------------------------ soft constraints */

/* Soft constraints, and OR: the task runs exactly once, on the first of the preferences
 * (each an extra request on top of the spec's own resources, its hard constraints) that
 * can hold it within wait_ms; the last preference waits without limit. Returns at once:
 * refs (spec->num_returns of them, the caller frees them) resolve when the attempt that
 * ran ends. A background thread submits the first preference, and whenever an attempt
 * has not started after wait_ms it withdraws it (esc_task_withdraw: no trace) and submits
 * the next one under the same task id; an attempt that started is left to run. *out is
 * the caller's (esl_soft_free). */
typedef struct esl_soft esl_soft;
int esl_soft_submit(esc_client *c, const esc_task_spec *spec, const esl_request *prefs,
                    size_t nprefs, int wait_ms, esc_ref **refs, esl_soft **out,
                    esc_status *st);
/* Waits until the task was left on a preference and returns its index. */
size_t esl_soft_chosen(esl_soft *s);
/* Waits for the background thread and frees s (not the task). */
void esl_soft_free(esl_soft *s);

/* ------------------------------------------------------------------ gang */

/* Gang scheduling: every member of a gang starts, or none holds anything.
 *
 * esl_gang_reserve carves room for `members` tasks, each needing `per_member` (physical
 * names only, e.g. CPU=1), out of chosen nodes in ONE atomic batch of backed ephemeral
 * resources (esc_batch_set_backed): on each chosen node the resource "<ns>/<name>" gets
 * capacity k (members placed there) backed by per_member, so the node moves k x
 * per_member out of its available physical resources. Once every chosen node reports
 * its part carved, the gang is reserved: each member then requests "<ns>/<name>"=1
 * (esl_gang_request) and nothing else, and the plain scheduler places it on a node
 * with a carved slot. An attempt whose carves do not all complete within its time is
 * rolled back by one batch delete (nothing stays carved) and retried after a random
 * backoff until the deadline: competing gangs never deadlock (every attempt ends) and
 * never leak (every failed attempt is deleted; a job's resources also go with the
 * job). See docs/esl.md for placement, livelock and the ghost-task variant. */
typedef struct esl_gang esl_gang;

typedef struct {
    int timeout_ms;     /* the whole reservation, retries included (0: 10000) */
    /* How long one attempt waits for its carves before it rolls back and retries after
     * a random backoff (0: a quarter of timeout_ms, at least 100 ms). */
    int attempt_ms;
    bool pack;          /* fill nodes one after another instead of round-robin */
    /* Ghost variant only: the ghost program (NULL: escher-gang-ghost in
     * $ESCHER_BIN_DIR, else on $PATH). */
    const char *ghost_program;
} esl_gang_opts;

/* Reserves a gang (see above) named `name` (a short name, unique among the client's
 * live gangs and resources) of `members` members. On ESC_OK *out is the reservation
 * (the caller releases it with esl_gang_release). Returns INVALID_ARGUMENT for a bad
 * name, no members or a per_member entry that is not physical; FAILED_PRECONDITION
 * when the name is in use or the alive nodes could never hold the gang (their total
 * physical capacity is too small); DEADLINE_EXCEEDED (nothing left reserved) when no
 * attempt completed in time; or a call's code. opts may be NULL (defaults). */
int esl_gang_reserve_opts(esc_client *c, const char *name, unsigned members,
                          const esl_request *per_member, const esl_gang_opts *opts,
                          esl_gang **out, esc_status *st);

/* esl_gang_reserve_opts with timeout_ms and the other options at their defaults. */
int esl_gang_reserve(esc_client *c, const char *name, unsigned members,
                     const esl_request *per_member, int timeout_ms, esl_gang **out,
                     esc_status *st);

/* The ghost-task variant (the paper's application-level gang, for comparison): one
 * ghost task per member, placed by the plain scheduler with per_member; each ghost
 * reports its node in the KV store and waits. When all are placed, one batch of backed
 * resources is set on their nodes (pending: the ghosts hold the physical resources)
 * and the ghosts are told to exit: a ghost's release carves its place into the gang
 * resource before the raylet admits anything else, so no other task can take it.
 * Same result and same release as esl_gang_reserve; on timeout the ghosts are told to
 * exit and the batch (if any) is deleted. The ghosts are command tasks of the
 * client's job (opts->ghost_program). */
int esl_gang_reserve_ghost(esc_client *c, const char *name, unsigned members,
                           const esl_request *per_member, const esl_gang_opts *opts,
                           esl_gang **out, esc_status *st);

/* What each member task requests: "<ns>/<name>"=1 (owned by the gang). */
const esl_request *esl_gang_request(const esl_gang *g);

/* Number of chosen nodes, and node i's id with how many members it holds (*members
 * may be NULL); strings owned by the gang. */
size_t esl_gang_nnodes(const esl_gang *g);
const char *esl_gang_node(const esl_gang *g, size_t i, unsigned *members);

/* Attempts the reservation took (1 when the first one completed). */
unsigned esl_gang_attempts(const esl_gang *g);

/* Deletes the gang's resources (one batch: members still running keep their slot
 * until they end, then the physical resources go back), waits until the nodes applied
 * the delete (so the name is free again) and frees g (always, also on error; NULL is
 * fine). Returns ESC_OK or the delete's (or the wait's) code. */
int esl_gang_release(esc_client *c, esl_gang *g, esc_status *st);

#ifdef __cplusplus
}
#endif

#endif
