/* escher.h: the escher C SDK (libescher), core part: connecting, ephemeral resources,
 * cluster status, the key-value store and objects.
 *
 * Every client is a job. A job has a namespace; the ephemeral resources it creates live
 * in that namespace ("<namespace>/<name>") and are removed when the job ends (the client
 * disconnects or its process disappears) unless the client was connected as detached.
 *
 * Quantities are 64-bit fixed point in units of 1/10000 (ESC_QTY(0.25) is a quarter).
 *
 * Errors: every call returns a status code (ESC_OK = 0, else a gRPC code such as
 * ESC_INVALID_ARGUMENT or ESC_PERMISSION_DENIED from rpc.h's list) and, when st is not
 * NULL, fills st with the code and a one-line message. Functions are thread-safe: many
 * threads may share one client.
 *
 * Out of memory: a buffer whose size the caller chose (an object or KV value read back,
 * a task's packed arguments, an esc_buf of task.h) or the cluster's contents decide (the
 * arrays of esc_kv_keys, esc_list_jobs, esc_list_events) that cannot be allocated fails
 * its call with ESC_RESOURCE_EXHAUSTED, message "out of memory (N bytes)" (esc_buf: -1),
 * and the caller keeps going. The SDK's own small bookkeeping (ids, strings, requests,
 * per-row copies) aborts the process with one line on stderr instead: the SDK runs on
 * gRPC core, whose allocator (gpr_malloc) aborts in the same situation, so a process
 * that short of memory could not count on its calls anyway; many of these allocations
 * are on the SDK's own threads, with no call to return an error from.
 */
#ifndef ESCHER_H
#define ESCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h" /* esc_status and the status codes */

#ifdef __cplusplus
extern "C" {
#endif

#define ESC_QTY_UNIT 10000LL
/* A quantity from a number of units: ESC_QTY(1.5) == 15000. */
#define ESC_QTY(x) ((int64_t)((x) * (double)ESC_QTY_UNIT + ((x) < 0 ? -0.5 : 0.5)))

/* Room for a task or object id and its NUL (same as ESC_OBJECT_ID_MAX in runtime/ids.h). */
#define ESC_ID_MAX 80

typedef struct esc_client esc_client;

typedef struct {
    /* GCS address "host:port". NULL: $ESCHER_ADDRESS, else "gcs_address" in the session
     * directory. */
    const char *address;
    /* Cluster token. NULL: $ESCHER_TOKEN, else "token" in the session directory. */
    const char *token;
    /* NULL: $ESCHER_SESSION_DIR, else the newest live session of the user under
       $XDG_RUNTIME_DIR/escher or /tmp/escher-<uid> (docs/deploy.md). */
    const char *session_dir;
    /* The job's namespace. NULL: "job-<job id>". */
    const char *namespace_;
    /* The caller's local node, target of ESC_TARGET_LOCAL. NULL: $ESCHER_NODE_ID, else
     * "node_id" in the session directory, else none (local writes then fail). */
    const char *node_id;
    /* Resources created by this client outlive it. */
    bool detached;
    /* A short-lived client (the CLI): no liveness stream; the job ends at esc_disconnect
     * or, if the process dies first, after the GCS's job timeout. */
    bool short_lived;
    /* Default deadline of each call in milliseconds (0: 10000). */
    int timeout_ms;
    /* Register a new job even in a process that escher runs for a job (see below). */
    bool new_job;
    /* Register no job: for a client that only reads (cluster status, jobs, KV gets).
     * Registering is a write, which waits for the GCS's storage; such a client does
     * not, so it answers while storage is slow or down. Calls that need a job (writes,
     * tasks, objects) fail with FAILED_PRECONDITION "unknown job". */
    bool no_job;
    /* Join the job of this client (same process) instead of registering one: a driver
     * that talks to the cluster from several nodes (a client per local node). The new
     * client acts as that job (its namespace, its credential), gets node events like a
     * driver unless short_lived, and never ends the job; disconnect it before `join`.
     * NULL: none. */
    const esc_client *join;
} esc_connect_opts;

/* Connects to the cluster and registers a new job. On success *out owns the client
 * (free it with esc_disconnect). opts may be NULL for all defaults.
 *
 * The GCS gives the job a credential of its own, which the client sends on every call
 * (docs/security.md): the cluster token admits the client, the credential says which
 * job it is. A namespace belongs to the running job registered in it: registering
 * another job in it is PERMISSION_DENIED, except in the shared namespace "default"
 * (the CLI's) and in namespaces no running job has. Another job uses a namespace only
 * when its owner grants it (esc_namespace_grant), or the names in it that start with a
 * prefix (esc_namespace_grant_prefix).
 *
 * In a process that escher runs for a job (a job's entrypoint, a command task: they
 * have $ESCHER_JOB_ID and $ESCHER_JOB_CREDENTIAL), the client joins that job instead,
 * unless new_job is set: what
 * it creates belongs to the job and goes when the job ends, and esc_disconnect does not
 * end the job (whoever submitted it does). Joining fails with NOT_FOUND or
 * FAILED_PRECONDITION when the job is unknown or has ended, or runs in another
 * namespace than opts->namespace_, and with PERMISSION_DENIED without the job's
 * credential. */
int esc_connect(const esc_connect_opts *opts, esc_client **out, esc_status *st);

/* Finishes the job (its non-detached resources are removed) and frees the client. */
void esc_disconnect(esc_client *c);

/* Calls fn(ud, node_id) on the client's event thread each time the GCS declares a node
 * dead. Only a driver gets events (a client connected with short_lived gets none):
 * returns FAILED_PRECONDITION there. fn must return soon and must not call
 * esc_on_node_dead or esc_off_node_dead; it may call anything else. At most 64 at once
 * (RESOURCE_EXHAUSTED). */
typedef void (*esc_node_dead_fn)(void *ud, const char *node_id);
int esc_on_node_dead(esc_client *c, esc_node_dead_fn fn, void *ud, esc_status *st);
/* Removes what esc_on_node_dead added (the same fn and ud); once it returns, fn is not
 * running and will not run for it. */
void esc_off_node_dead(esc_client *c, esc_node_dead_fn fn, void *ud);

/* The job id, namespace, local node id ("" when unknown) and GCS address of the client
 * (owned by the client). */
const char *esc_client_job_id(const esc_client *c);
const char *esc_client_namespace(const esc_client *c);
const char *esc_client_node_id(const esc_client *c);
const char *esc_client_address(const esc_client *c);
/* The job's credential (owned by the client; "" with no job): for a process that the
 * driver starts itself and that should join the job (give it $ESCHER_JOB_ID and
 * $ESCHER_JOB_CREDENTIAL). Whoever holds it acts as the job: keep it secret. */
const char *esc_client_job_credential(const esc_client *c);

/* Lets job job_id use the namespace of c's job (its ephemeral resources: tasks may
 * request them and the job may set, add and delete them, naming the namespace; its KV
 * keys), until esc_namespace_revoke or the end of c's job. Grants are stored with c's
 * job and shown by `escher status`. Granting again is a no-op. Returns ESC_OK;
 * NOT_FOUND when no running job job_id exists; FAILED_PRECONDITION when c has no job
 * or its namespace is shared ("default"); PERMISSION_DENIED when c is not the job (a
 * client that joined it is). */
int esc_namespace_grant(esc_client *c, const char *job_id, esc_status *st);
/* Like esc_namespace_grant, limited to names that start with prefix (copied; not empty):
 * in c's namespace, job job_id may then only request (tasks, actors) and set, add and
 * delete the ephemeral resources whose name (after "ns/") starts with prefix, and
 * get, put and delete the KV keys that start with prefix; listing keys (esc_kv_keys)
 * and watching (KV or resources) only with a key or name prefix that itself starts
 * with prefix. Anything else of the namespace is PERMISSION_DENIED with one line naming
 * the prefix; so are c's actors and objects, which need esc_namespace_grant. A job may
 * hold several prefixes from one job; a whole grant covers them all (granting a prefix
 * then is a no-op, and esc_namespace_grant replaces the prefix grants). Granting the
 * same (job_id, prefix) again is a no-op. Stored with c's job like esc_namespace_grant
 * and shown by esc_list_jobs (prefix_grants) and `escher status`. Returns the codes of
 * esc_namespace_grant, and INVALID_ARGUMENT for a NULL or empty prefix (use
 * esc_namespace_grant), one longer than 1024 bytes or holding a control character;
 * RESOURCE_EXHAUSTED when c's job holds 256 prefix grants already. */
int esc_namespace_grant_prefix(esc_client *c, const char *job_id, const char *prefix,
                               esc_status *st);
/* Takes back every grant of c's namespace to job_id, whole and prefix
 * (esc_namespace_grant, esc_namespace_grant_prefix): the job's later calls on the
 * namespace are PERMISSION_DENIED (resources it created there stay until deleted or
 * its end). Revoking what was not granted is a no-op. Same codes as
 * esc_namespace_grant. */
int esc_namespace_revoke(esc_client *c, const char *job_id, esc_status *st);

/* ------------------------------------------------------------------ resources */

typedef struct {
    const char *name;
    int64_t value;      /* fixed point */
    bool unbounded;
} esc_amount;

typedef enum {
    ESC_TARGET_LOCAL = 0,    /* the client's local node */
    ESC_TARGET_NODE = 1,     /* node_id */
    ESC_TARGET_SELECTOR = 2, /* num_nodes nodes (default 1) with `where` available */
    ESC_TARGET_ALL = 3,      /* every alive node */
    ESC_TARGET_LABELS = 4,   /* every alive node carrying all of `labels` (and having
                                `where` available, when given); num_nodes 0: all of
                                them (at least one), K: K of them */
} esc_target_kind;

/* A node label (escher start --labels K=V,...). */
typedef struct {
    const char *key;
    const char *value;
} esc_label;

typedef struct {
    esc_target_kind kind;
    const char *node_id;
    const esc_amount *where;  /* names: physical ("CPU") or full ("ns/name"); a short
                                 name is a raylet's static custom resource of that
                                 name if the node has one, else the client's
                                 namespace */
    size_t nwhere;
    unsigned num_nodes;
    const esc_label *labels;  /* ESC_TARGET_LABELS: key=value pairs a node must carry */
    size_t nlabels;
} esc_target;

/* Targets built in place: ESC_LOCAL, ESC_NODE("id"), ESC_ALL_NODES. */
#define ESC_LOCAL ((esc_target){.kind = ESC_TARGET_LOCAL})
#define ESC_NODE(id) ((esc_target){.kind = ESC_TARGET_NODE, .node_id = (id)})
#define ESC_ALL_NODES ((esc_target){.kind = ESC_TARGET_ALL})

/* Sets the capacity of ephemeral resource `name` (short name, client's namespace) on the
 * target nodes to qty (>= 0), creating it if absent. seq (may be NULL) gets the sequence
 * number of the committed log entry. target NULL means the local node. */
int esc_resource_set(esc_client *c, const char *name, int64_t qty, const esc_target *target,
                     uint64_t *seq, esc_status *st);

/* esc_resource_set naming the namespace explicitly (NULL: the client's). Only the
 * client's own namespace, and namespaces whose owner granted them to the client's job
 * (esc_namespace_grant; esc_namespace_grant_prefix: the names with that prefix), are
 * writable: any other is PERMISSION_DENIED from the GCS. */
int esc_resource_set_ns(esc_client *c, const char *ns, const char *name, int64_t qty,
                        const esc_target *target, uint64_t *seq, esc_status *st);

/* A backed resource: like esc_resource_set, and each unit of capacity is carved out of
 * the node's physical resources at `backing` (nbacking physical names, e.g. CPU=1,
 * each > 0, copied): the node moves qty x backing out of its available physical
 * resources (it shows as held there, and in `carved`), and the resource admits only
 * what is carved. Carving is all-or-nothing per node; until the physical quantity is
 * free the resource is `pending` (capacity 0 if new), and the node carves it as soon
 * as enough is released, before admitting other work. Deleting it (or shrinking it)
 * gives the physical resources back (held units when their holders release). The
 * backing belongs to the resource: later sets and adds keep it; a set naming a
 * different one for a live resource is INVALID_ARGUMENT (delete it first), as are a
 * backing name that is not a physical resource of the node, a quantity <= 0, or a
 * capacity whose carve is out of range. */
int esc_resource_set_backed(esc_client *c, const char *name, int64_t qty,
                            const esc_amount *backing, size_t nbacking,
                            const esc_target *target, uint64_t *seq, esc_status *st);

/* Sets an unbounded capacity (an unbounded resource has no backing). */
int esc_resource_set_unbounded(esc_client *c, const char *name, const esc_target *target,
                               uint64_t *seq, esc_status *st);

/* Adds a signed delta to the capacity. An absent resource is created with max(delta, 0);
 * a present one is not clamped, so deltas commute and concurrent adds from many clients
 * never lose each other's updates (a negative capacity admits nothing). */
int esc_resource_add(esc_client *c, const char *name, int64_t delta, const esc_target *target,
                     uint64_t *seq, esc_status *st);

/* Deletes the resource on the target nodes (holders keep it until they release). */
int esc_resource_delete(esc_client *c, const char *name, const esc_target *target,
                        uint64_t *seq, esc_status *st);

/* An atomic batch of operations on many names and nodes: all commit, or none. */
typedef struct esc_batch esc_batch;

/* A new empty batch, owned by the caller (esc_batch_free). */
esc_batch *esc_batch_new(void);
void esc_batch_free(esc_batch *b);
/* Queue one operation (same meaning as the single calls; strings are copied). */
void esc_batch_set(esc_batch *b, const char *name, int64_t qty, const esc_target *target);
void esc_batch_set_unbounded(esc_batch *b, const char *name, const esc_target *target);
/* A backed set (see esc_resource_set_backed); backing is copied. */
void esc_batch_set_backed(esc_batch *b, const char *name, int64_t qty,
                          const esc_amount *backing, size_t nbacking, const esc_target *target);
void esc_batch_add(esc_batch *b, const char *name, int64_t delta, const esc_target *target);
void esc_batch_delete(esc_batch *b, const char *name, const esc_target *target);
/* Number of queued operations. */
size_t esc_batch_size(const esc_batch *b);
/* Commits the batch as one log entry; the batch stays owned by the caller and may be
 * committed again. */
int esc_batch_commit(esc_client *c, esc_batch *b, uint64_t *seq, esc_status *st);

/* Blocks until every listed node (all alive nodes when n == 0) has applied the log up to
 * seq, so that their admission uses the new capacities. Returns ESC_OK, or
 * ESC_DEADLINE_EXCEEDED after timeout_ms. */
int esc_wait_applied(esc_client *c, uint64_t seq, const char *const *node_ids, size_t n,
                     int timeout_ms, esc_status *st);

/* ------------------------------------------------------------------ status */

typedef struct {
    char *name;           /* physical name or full ephemeral name */
    int64_t total, held, available;
    bool unbounded;       /* total and available are unlimited (their numbers mean
                             nothing); held still counts */
    bool deleted;         /* deleted while held */
    bool ephemeral;
    char *namespace_;     /* ephemeral only, else NULL */
    char *owner;          /* owning job id; "" when detached; NULL for physical */
    bool backed;          /* ephemeral with a backing (esc_resource_set_backed) */
    bool pending;         /* backed and not all carved yet: total is the carved part */
    /* Backed: capacity units carved. Physical: the part of `held` that backs ephemeral
     * resources (already inside held, not counted twice). */
    int64_t carved;
    esc_amount *backing;  /* backed: physical per unit of capacity (owned by the
                             status), from the registry; else NULL */
    size_t nbacking;
} esc_resource_info;

typedef struct {
    char *id;
    char *address;
    char *state;          /* "ALIVE", "DRAINING", "DEAD" */
    uint64_t applied_seq;
    esc_resource_info *resources;
    size_t nresources;
    struct esc_demand *demand;   /* tasks queued on this node, grouped by shape */
    size_t ndemand;
    bool cpu_shares_enforced;    /* each worker runs under a CPU quota equal to the CPU its
                                    task holds (cgroups; docs/workers.md) */
    char *cpu_shares;            /* enforced: how ("cgroup v1", "cgroup v2"); else why not;
                                    "" from a node that does not say */
    esc_label *labels;           /* the node's labels (strings owned by the status) */
    size_t nlabels;
    bool head;                   /* started with the GCS (escher start --head) */
} esc_node_status;

/* Tasks waiting on a node that ask for the same resources. */
typedef struct esc_demand {
    esc_amount *shape;    /* names and quantities asked for (strings owned by the status) */
    size_t nshape;
    unsigned count;       /* how many tasks wait with this shape */
    bool infeasible;      /* no alive node has (enough of) every resource of the shape */
    char **missing;       /* names that exist on no alive node */
    size_t nmissing;
} esc_demand;

typedef struct {
    uint64_t seq;           /* every alive node has applied the log up to here */
    uint64_t committed_seq; /* the last committed log entry */
    esc_node_status *nodes;
    size_t nnodes;
} esc_cluster_status;

/* Fetches per-node total, held and available of every resource (available = total -
 * held; it is negative after a shrink below what is held), and each alive node's queued
 * demand, all as the raylets last reported them to the GCS (one call to the GCS, none to
 * the raylets). Each node's resources are sorted: physical ones first, then ephemeral
 * ones, each by name. *out is owned by the caller (esc_cluster_status_free). */
int esc_get_cluster_status(esc_client *c, esc_cluster_status **out, esc_status *st);
void esc_cluster_status_free(esc_cluster_status *s);

/* Like esc_get_cluster_status without the queued demand (ndemand is 0): cheap enough to
 * poll. Freed the same way. */
int esc_get_cluster_resources(esc_client *c, esc_cluster_status **out, esc_status *st);

/* Finds one resource of a node in a status (NULL when absent). */
const esc_resource_info *esc_node_resource(const esc_node_status *n, const char *name);

/* ------------------------------------------------------------------ jobs */

/* A grant of the names that start with prefix (esc_namespace_grant_prefix). */
typedef struct {
    char *job_id;         /* the grantee */
    char *prefix;
} esc_prefix_grant;

typedef struct {
    char *id;
    char *namespace_;
    char *state;          /* "RUNNING", "FINISHED", "FAILED" */
    char *entrypoint;     /* the driver's command line */
    uint64_t start_ms, end_ms; /* wall clock; end_ms is 0 while running */
    uint32_t driver_pid;
    /* A running job made by esc_job_submit (escher/jobs.h) whose entrypoint waits in a
     * raylet's queue, as that raylet last told the GCS: its node ("" when it does not
     * wait), the names it asks for that no alive node has (npending_missing), and
     * whether no alive node could ever hold it. esc_job_status asks the raylets
     * themselves. */
    char *pending_node;
    char **pending_missing;
    size_t npending_missing;
    bool pending_infeasible;
    /* The jobs this job granted its namespace (esc_namespace_grant), in grant order. */
    char **grants;
    size_t ngrants;
    /* Its prefix grants (esc_namespace_grant_prefix), in grant order. */
    esc_prefix_grant *prefix_grants;
    size_t nprefix_grants;
} esc_job_info;

/* Lists every job the GCS knows. On ESC_OK *jobs (owned by the caller, freed with
 * esc_jobs_free) holds *n entries. */
int esc_list_jobs(esc_client *c, esc_job_info **jobs, size_t *n, esc_status *st);
void esc_jobs_free(esc_job_info *jobs, size_t n);

/* ------------------------------------------------------------------ event history */

/* The cluster's event history, kept by the GCS (docs/observability.md, "Event history:
 * escher events"): bounded (escher-gcs --event-history, default 10000 entries), stored
 * with Redis storage so it outlives a GCS restart. Each entry has its own order number
 * (id: from 1, +1 per entry, never reused) and, when it was a resource-log commit, the
 * log's seq. Kinds and the fields each fills: */
typedef enum {
    ESC_HIST_NODE_ADDED = 0,    /* node_id, address, hostname */
    ESC_HIST_NODE_DRAINING = 1, /* node_id */
    ESC_HIST_NODE_DEAD = 2,     /* node_id; ops: its ephemeral resources, removed */
    ESC_HIST_JOB_STARTED = 3,   /* job_id, namespace_, entrypoint */
    ESC_HIST_JOB_ENDED = 4,     /* job_id, namespace_, job_state; ops: its resources */
    ESC_HIST_RESOURCES = 5,     /* seq, job_id, namespace_ and entrypoint of the writer
                                   (the CLI's short-lived job shows its command line),
                                   ops */
    ESC_HIST_TASK_FAILED = 6,   /* task_id, task_name, job_id, node_id, attempt,
                                   max_retries, error: the task's last attempt failed */
    ESC_HIST_TASK_RETRIED = 7,  /* the same; attempt is the one that now runs */
    ESC_HIST_TASK_EVENTS_DROPPED = 8, /* dropped: task events lost since the last such
                                         entry, by the raylets and the GCS together */
} esc_history_kind;
#define ESC_HIST_KINDS 9

/* The kind's name ("node_added", "node_draining", "node_dead", "job_started",
 * "job_ended", "resources", "task_failed", "task_retried", "task_events_dropped");
 * "unknown" out of range. Static storage. */
const char *esc_history_kind_name(esc_history_kind k);
/* The kind named name (as above): true and *out, or false for an unknown name. */
bool esc_history_kind_parse(const char *name, esc_history_kind *out);

/* One resource change of an entry, as the log committed it. */
typedef struct {
    char *op;             /* "set", "add" or "delete" */
    char *node_id;
    char *name;           /* full name, "<namespace>/<name>" */
    int64_t value;        /* set: the capacity; add: the delta; delete: 0 (1/10000 units) */
    bool unbounded;
} esc_history_op;

/* One entry. Strings are never NULL ("" when the kind does not use them). */
typedef struct {
    uint64_t id;          /* the history's order number */
    uint64_t time_ms;     /* wall clock, milliseconds since the Unix epoch */
    esc_history_kind kind;
    uint64_t seq;         /* the resource log's seq of the commit; 0: not a log entry */
    char *node_id;
    char *job_id;         /* the job; for ESC_HIST_RESOURCES the writer ("" when the
                             caller may not see it) */
    char *namespace_;     /* that job's namespace */
    char *job_state;      /* ESC_HIST_JOB_ENDED: "FINISHED" or "FAILED"; else "" */
    char *address, *hostname;  /* ESC_HIST_NODE_ADDED */
    char *entrypoint;     /* ESC_HIST_JOB_STARTED, ESC_HIST_RESOURCES (the writer's),
                             cut at 256 bytes */
    char *task_id, *task_name, *error; /* task kinds; error cut at 512 bytes */
    uint32_t attempt, max_retries;
    uint64_t dropped;     /* ESC_HIST_TASK_EVENTS_DROPPED */
    esc_history_op *ops;  /* at most 16 (the first of the commit's) */
    size_t nops;
    uint32_t ops_total;   /* how many the commit had; for a job, less the ops held here
                             that it may not see (ops past the first 16 are not kept,
                             so not checked) */
} esc_history_event;

/* What to list. Zeroed (or NULL): every entry the caller may see, oldest first. */
typedef struct {
    uint64_t after_id;            /* only entries with id > after_id */
    uint32_t limit;               /* at most this many (0 or > 1000: 1000) */
    const esc_history_kind *kinds;/* only these kinds (nkinds 0: all) */
    size_t nkinds;
    const char *node_id;          /* only entries of this node (its id, or an op on it) */
    const char *job_id;           /* only entries of this job */
} esc_history_filter;

/* About the history as a whole, as of the answer. */
typedef struct {
    uint64_t last_id;     /* the newest id: list again with after_id = last_id to follow */
    uint64_t first_id;    /* the oldest id still held (older ones were cut at the bound) */
    uint32_t hidden;      /* entries skipped because the caller may not see them */
    uint32_t bound;       /* entries the GCS keeps */
} esc_history_page;

/* Lists history entries (filter NULL: all), oldest first. Visibility: a client with no
 * job (esc_connect_opts.no_job: the CLI) sees every entry; a job sees node entries, its
 * own, and those of namespaces it may use (its own, shared, granted); of a resource
 * change it sees only the ops on such names (and the writer only when it may see the
 * writer's namespace); the rest are counted in page->hidden. On ESC_OK *events (owned
 * by the caller, freed with esc_history_free) holds *n entries and page (may be NULL)
 * is filled. INVALID_ARGUMENT for a kind out of range or nkinds > ESC_HIST_KINDS;
 * UNIMPLEMENTED from a GCS older than the history. */
int esc_list_events(esc_client *c, const esc_history_filter *filter,
                    esc_history_event **events, size_t *n, esc_history_page *page,
                    esc_status *st);
void esc_history_free(esc_history_event *events, size_t n);

/* Ends a running job (job_id NULL: the client's own) as FINISHED, or FAILED when failed
 * is set: its non-detached ephemeral resources and its objects are removed, and every
 * raylet drops its queued tasks and kills its running ones. Ending a job that has ended
 * already is ESC_OK and changes nothing; an unknown job is ESC_NOT_FOUND; another job
 * than c's is PERMISSION_DENIED (an operator, with the operator key, stops one with
 * esc_job_stop, escher/jobs.h). A client whose
 * own job was ended this way must still be freed with esc_disconnect. */
int esc_job_finish(esc_client *c, const char *job_id, bool failed, esc_status *st);

/* ------------------------------------------------------------------ events */

typedef enum {
    ESC_EVENT_RESET,         /* the rows start again (first event, or after the GCS lost
                                what a reconnect missed): RESOURCE and KV events of every
                                followed row follow, with this seq */
    ESC_EVENT_RESOURCE,      /* a followed row after a change: node_id, name, total,
                                unbounded; deleted when it is gone */
    ESC_EVENT_NODE_ADDED,    /* node_id */
    ESC_EVENT_NODE_DRAINING, /* node_id */
    ESC_EVENT_NODE_DEAD,     /* node_id (its ephemeral rows went with it) */
    ESC_EVENT_JOB_FINISHED,  /* job_id */
    ESC_EVENT_KV,            /* a followed key-value row after a put or delete: kv_ns,
                                key, value/value_len (value NULL with value_omitted when
                                longer than ESC_EVENT_KV_VALUE_MAX bytes: esc_kv_get
                                reads it); deleted when it is gone */
    ESC_EVENT_LOAD,          /* (filter.loads) a node's availability row as its raylet
                                last reported it: node_id, name (a physical resource or
                                a followed one), total, held, unbounded, deleted. Not in
                                the log: seq is the last committed one, reports come at
                                most every 50 ms per node, and after a (re)connect every
                                node's rows come again */
    ESC_EVENT_DEMAND,        /* (filter.loads) a node's queued tasks by shape changed:
                                node_id, demand[0..ndemand) (all of them; none when its
                                queue emptied). Not in the log, like LOAD */
} esc_event_kind;

/* Key-value values up to this many bytes travel in ESC_EVENT_KV events. */
#define ESC_EVENT_KV_VALUE_MAX 4096

/* One event; strings and value are valid only during the callback. */
typedef struct {
    esc_event_kind kind;
    uint64_t seq;            /* the log's sequence (ascending; LOAD events repeat it) */
    const char *node_id;
    const char *name;        /* resources: full name, "ns/name" */
    const char *job_id;
    int64_t total;           /* fixed point */
    int64_t held;            /* LOAD: held on the node, fixed point */
    bool unbounded;
    bool deleted;
    const char *kv_ns;       /* KV: the row's namespace and key */
    const char *key;
    const void *value;       /* KV: the value (value_len bytes), NULL when deleted or omitted */
    size_t value_len;
    bool value_omitted;
    const esc_demand *demand; /* DEMAND: the node's queue by shape */
    size_t ndemand;
} esc_event;

typedef void (*esc_event_fn)(void *ud, const esc_event *ev);
typedef struct esc_watch esc_watch;

/* Key-value rows to follow: the keys of namespace ns (NULL: the client's) that start
 * with prefix (NULL or "": every key). */
typedef struct {
    const char *ns;
    const char *prefix;
} esc_kv_filter;

/* What a watch follows besides node and job events (all fields may be zero). */
typedef struct {
    const char *const *resources; /* rows of the resources whose full names start with
                                     one of these ("ns/" a namespace, "ns/gpu" a family;
                                     each in a namespace c's job may use) */
    size_t nresources;
    const esc_kv_filter *kv;      /* key-value rows (namespaces c's job may use) */
    size_t nkv;
    bool loads;                   /* ESC_EVENT_LOAD and ESC_EVENT_DEMAND: availability
                                     of physical resources and of the followed
                                     resources, and the nodes' queued demand */
    uint64_t from_seq;            /* resume after this seq (an event's seq an earlier
                                     watch delivered); 0: start with a RESET */
} esc_watch_filter;

/* Follows the cluster as filter says (copied; NULL: node and job events only). Events
 * come in log order on the watch's own thread (one per watch), starting with
 * ESC_EVENT_RESET and the followed rows (or, with from_seq, the changes after it when
 * the GCS still holds them); after a lost connection the watch resumes where it stopped,
 * or starts again with a RESET. fn must not call esc_unsubscribe on its own watch. *out
 * is freed with esc_unsubscribe.
 * Returns ESC_OK; INVALID_ARGUMENT (NULL client, fn or out, a resource prefix without
 * '/', a key-value namespace with a newline); INTERNAL when the thread cannot start. A
 * prefix or namespace the job may not use ends the stream with PERMISSION_DENIED at the
 * GCS, and the watch then delivers nothing (it retries). */
int esc_subscribe(esc_client *c, const esc_watch_filter *filter, esc_event_fn fn, void *ud,
                  esc_watch **out, esc_status *st);

/* Stops the watch: no callback runs after it returns. NULL is a no-op. */
void esc_unsubscribe(esc_watch *w);

/* ------------------------------------------------------------------ key-value */

/* In the key-value calls a NULL ns means the client's namespace. */

/* Stores value under (ns, key). With overwrite false an existing key is kept and
 * *added (may be NULL) is false. */
int esc_kv_put(esc_client *c, const char *ns, const char *key, const void *value, size_t len,
               bool overwrite, bool *added, esc_status *st);
/* Reads (ns, key): ESC_OK with *value (malloc'd, caller frees; one NUL byte follows
 * the *len bytes, so text can be used as a C string), or ESC_NOT_FOUND. */
int esc_kv_get(esc_client *c, const char *ns, const char *key, void **value, size_t *len,
               esc_status *st);
int esc_kv_del(esc_client *c, const char *ns, const char *key, bool *deleted, esc_status *st);
/* Lists the keys of ns that start with prefix (NULL or "": all). On ESC_OK *keys (owned
 * by the caller, freed with esc_kv_keys_free) holds *n strings. */
int esc_kv_keys(esc_client *c, const char *ns, const char *prefix, char ***keys, size_t *n,
                esc_status *st);
void esc_kv_keys_free(char **keys, size_t n);

/* ------------------------------------------------------------------ objects */

/* Objects are immutable byte values kept in the memory of a node's raylet (its object
 * store, of object_store_memory bytes). A reference names one by its id; the GCS keeps
 * which nodes hold a copy, and a reader on another node pulls it from one of them in
 * chunks. An object lives until its owner releases it or its job ends (or its node
 * dies). A failed task's return is an error object: reading it gives its error. */
typedef struct esc_ref esc_ref;

/* Stores len bytes (copied) as a new object in the store of the client's local node.
 * On ESC_OK *out is a new reference (the caller frees it with esc_ref_free; that does
 * not free the object) and the object is registered at the GCS: the job's clients can
 * read or release it at once. Returns FAILED_PRECONDITION when the client has no local
 * node, RESOURCE_EXHAUSTED ("object store full (used X of Y bytes ...)") when it does not
 * fit, or a call's code. The object belongs to the client's job: only that job and jobs
 * it granted its namespace (esc_namespace_grant) read, locate or release it
 * (docs/security.md, "Objects"). */
int esc_put(esc_client *c, const void *data, size_t len, esc_ref **out, esc_status *st);

/* Reads an object, waiting until some node holds it: timeout_ms > 0 waits at most that
 * long, 0 does not wait, < 0 waits without limit. Prefers a copy on the local node,
 * else pulls one from another node (trying the next copy when a node fails). On ESC_OK
 * *data (malloc'd, the caller frees it; one NUL byte follows the *len bytes) holds the
 * value. A task's return whose every copy died with its node is made again by running
 * the task again (docs/tasks.md, "When a node fails"), and the get waits for it.
 * Returns DEADLINE_EXCEEDED when no node held it in time, NOT_FOUND when every copy was
 * freed meanwhile or was lost with no node left that can make it again, ABORTED with the
 * task's error text in st for an error object (then *data is NULL), PERMISSION_DENIED
 * when the object belongs to a job that is not c's and did not grant c's job its
 * namespace, or a call's code. */
int esc_get(esc_client *c, const esc_ref *ref, int timeout_ms, void **data, size_t *len,
            esc_status *st);

/* Frees the object on every node that holds it (its locations leave the GCS directory).
 * Releasing an object that is gone already is ESC_OK. The reference itself stays valid
 * (esc_ref_free frees it). PERMISSION_DENIED for another job's object (as esc_get). */
int esc_ref_release(esc_client *c, const esc_ref *ref, esc_status *st);

/* The object id of a reference (owned by the reference). */
const char *esc_ref_id(const esc_ref *ref);

/* A new reference to the object with this id (copied), e.g. one received from another
 * process; NULL when the id is not a valid object id (1-79 of A-Z a-z 0-9 _ . -). */
esc_ref *esc_ref_from_id(const char *id);

/* Frees a reference (NULL is fine); the object is untouched. */
void esc_ref_free(esc_ref *ref);

/* Where an object is: what a data-locality policy reads. */
typedef struct {
    uint64_t size;         /* bytes */
    bool is_error;         /* a failed task's error object */
    size_t n;              /* nodes holding a copy; 0 when none does now */
    char **node_ids;       /* n node ids */
    char **addresses;      /* their raylets' addresses, same order */
} esc_object_locations;

/* Asks the GCS which nodes hold the object now (no waiting). *out is owned by the
 * caller (esc_object_locations_free); an unknown object gives ESC_OK with n == 0;
 * PERMISSION_DENIED for another job's object (as esc_get). */
int esc_ref_locations(esc_client *c, const esc_ref *ref, esc_object_locations **out,
                      esc_status *st);
void esc_object_locations_free(esc_object_locations *l);

typedef struct {
    uint64_t capacity;     /* bytes: the node's object_store_memory */
    uint64_t used;         /* bytes held by objects (also ones still being written) */
    uint32_t objects;
    uint64_t pulled_bytes; /* object bytes the node fetched from other nodes (task
                              arguments), since it started: data moved between nodes */
} esc_object_store_stats;

/* The object store usage of a node (node_id NULL: the client's local node). */
int esc_object_store_stats_get(esc_client *c, const char *node_id,
                               esc_object_store_stats *out, esc_status *st);

/* ------------------------------------------------------------------ tasks */

/* One argument of a task: inline bytes (copied at submission), or a reference to an
 * object whose value the worker fetches before the task runs. */
typedef struct {
    const void *data;
    size_t len;
    const esc_ref *ref;   /* set: this argument is the object's value */
} esc_task_arg;

/* What to run and with what. Exactly one of `symbol` (a C function exported from the
 * shared library `library`, see escher/task.h) or `argv` (a command line) is set. A
 * relative `library` is taken inside the job's package (esc_job_package), and must stay
 * inside it; an absolute one, anywhere (without a package, relative to the worker's
 * cwd).
 * Resource names are taken literally: physical ("CPU", "GPU"), static custom ("accel"),
 * or an ephemeral resource's full name ("ns/name"; esc_client_namespace gives yours). */
typedef struct {
    const char *name;                 /* for logs; NULL: the symbol or argv[0] */
    const char *library, *symbol;
    const char *const *argv;          /* NULL-terminated */
    const char *const *env;           /* NULL-terminated "KEY=VALUE", may be NULL */
    const char *cwd;                  /* may be NULL */
    const esc_amount *resources;
    size_t nresources;
    const esc_task_arg *args;
    size_t nargs;
    unsigned num_returns;             /* 0 means 1 */
    unsigned max_retries;             /* retries after the worker process dies */
    /* Resource operations committed, as one atomic batch in the submitting job, when the
     * task succeeds; ESC_LOCAL targets mean the node it ran on. A producer marks where
     * its output lives, a task signals the tasks that wait for it (esl.h). The batch is
     * copied at submission; NULL: none. */
    const esc_batch *on_success;
} esc_task_spec;

/* Submits a task to the client's local raylet, which runs it there, spills it to a node
 * that can hold its resources, or queues it until one can. Returns at once. On ESC_OK
 * refs[0..num_returns-1] are new references to the return values (the caller frees each
 * with esc_ref_free; read them with esc_get, which waits for the task), and task_id
 * (when not NULL, ESC_ID_MAX bytes) gets the task's id. A failed task's returns
 * are error objects: esc_get gives ABORTED with the failure ("task returned 3", "worker
 * died: signal 11 (SIGSEGV)", "cancelled"). A task the raylet refuses makes error
 * objects with the refusal's code: PERMISSION_DENIED when it requests an ephemeral
 * resource of a namespace that another running job owns and did not grant c's job
 * (docs/security.md, "Raylet checks"); a task whose argument is such a job's object
 * fails (ABORTED, "PERMISSION_DENIED: ..." in the text). */
int esc_task_submit(esc_client *c, const esc_task_spec *spec, esc_ref **refs, char *task_id,
                    esc_status *st);

/* Cancels the task that produces ref: a queued task never runs, a running one is killed.
 * Its returns become error objects "cancelled". ESC_NOT_FOUND when the task is neither
 * queued nor running on the local raylet (finished, or placed on another node);
 * PERMISSION_DENIED when it is another job's (docs/security.md). */
int esc_cancel(esc_client *c, const esc_ref *ref, esc_status *st);

/* Withdraws the task that produces ref if it has not started (queued, waiting for its
 * arguments, or queued on the node it was forwarded to): it leaves no trace — no error
 * objects — so the same task may be submitted again. ESC_OK when withdrawn;
 * FAILED_PRECONDITION when it has started (it runs on); NOT_FOUND when it is not waiting
 * anywhere this raylet knows (finished; a task on its way to another node is waited for
 * there, not missed); PERMISSION_DENIED when it is another job's. */
int esc_task_withdraw(esc_client *c, const esc_ref *ref, esc_status *st);

/* Waits until at least num_ready of the n objects exist (or timeout_ms passes; < 0: no
 * limit). ready[i] tells which; *nready how many. ESC_OK even when fewer are ready at the
 * timeout: the caller reads *nready. An object of a job that c's job may not read never
 * counts as ready (esc_get tells PERMISSION_DENIED). One whose every copy was lost with
 * its node counts as ready: it existed, and esc_get makes it again. The wait is woken by
 * events (the results of c's own tasks, the GCS directory for other objects), never by
 * a period. */
int esc_wait(esc_client *c, const esc_ref *const *refs, size_t n, size_t num_ready,
             int timeout_ms, bool *ready, size_t *nready, esc_status *st);

/* ------------------------------------------------------------------ packages */

/* Room for a package hash (SHA-256 in lowercase hex) and its NUL. */
#define ESC_PACKAGE_HASH_MAX 65
/* The largest package esc_job_package takes, as a tar stream. */
#define ESC_PACKAGE_LIMIT (1ull << 30)

/* Makes the files under dir the job's package, so that its tasks find them on every node
 * (docs/tasks.md, "Packages"). dir is packed with the system's tar (symlinks stay links),
 * hashed with SHA-256 and stored once in the GCS (content already there is not sent
 * again). Every task and actor submitted afterwards through any client of the job
 * (clients that join the job learn it at esc_connect) names the package: the node that
 * runs it fetches it first, once, verifies its hash and keeps it in its package cache
 * until no job that uses it runs there any more. A function's relative `library` is then
 * taken inside the package (an absolute one is used as is: system libraries), and a
 * command without an absolute cwd starts in it. Tasks submitted before the call have no
 * package. The GCS drops the package when the last job that names it ends.
 * hash (may be NULL; ESC_PACKAGE_HASH_MAX bytes) gets the package's hash.
 * Returns ESC_OK (also for the job's own package again); INVALID_ARGUMENT when dir is
 * not a readable directory; RESOURCE_EXHAUSTED over ESC_PACKAGE_LIMIT bytes;
 * FAILED_PRECONDITION when the job has another package already, another call is under
 * way on this client, or the client has no job (no_job); INTERNAL when tar fails (its first line in st); or the code of a
 * GCS call. */
int esc_job_package(esc_client *c, const char *dir, char *hash, esc_status *st);

/* ------------------------------------------------------------------ actors */

/* An actor: a worker process that holds its resources for its whole life, keeps state
 * between calls (static data of its library) and runs its method calls one at a time, in
 * the order each caller made them; or, created with max_concurrency N > 1, up to N of them
 * at once on N threads of that one process (the state is shared, as in Ray's threaded
 * actors). */
typedef struct esc_actor esc_actor;

/* The most calls an actor runs at once (esc_actor_spec.max_concurrency). */
#define ESC_ACTOR_MAX_CONCURRENCY 64

typedef struct {
    const char *name;            /* for logs */
    const char *library;         /* the shared library of its methods (ESC_TASK functions) */
    const char *init_symbol;     /* run first, once per (re)start; NULL: none */
    const esc_amount *resources; /* held for the actor's life; placement as for tasks */
    size_t nresources;
    unsigned max_restarts;       /* restarts after its worker dies (state is lost), busy or
                                    idle alike; 0: the first death is final (dead) */
    const esc_task_arg *init_args; /* the init's arguments (bytes only, no references),
                                      the same at every (re)start */
    size_t ninit_args;
    /* How many of its calls may run at once. 0 or 1 (the default): one at a time, in the
     * order they arrive at its node (one caller's: the order made), on the worker's only
     * thread. N in 2..ESC_ACTOR_MAX_CONCURRENCY: up to N at once, on a pool of N threads
     * in its one worker process, started in the order they arrive but ending in any
     * order; a caller that needs one call's effect before the next waits for its result
     * (esc_get). Then:
     *  - its methods must be thread-safe: they share the library's static state, and
     *    ctx, arg and ret stay per call. The init runs alone, before any call (also at a
     *    restart).
     *  - it holds its resources once, not once per call: N calls share them (and its
     *    CPU quota).
     *  - esc_actor_kill ends every running call as "actor killed" (the waiting ones as
     *    "actor ... died: killed", as for a serial actor); a death of its worker
     *    fails every running call with the error one call gets ("worker died: ..."), and
     *    the waiting calls run on the restarted worker, after the init (or fail as
     *    "actor ... died" with no restart left); cancelling one running call kills the
     *    worker, so the others fail as in a death.
     *  - a call that starts after esc_actor_resize answered sees the new holding
     *    (esc_actor_held) even while an older call still runs: a long method does not
     *    hold up the calls that tell it its share.
     *  - its calls' output (stdout, stderr) interleaves in the worker's capture files:
     *    `escher logs TASK_ID` of a call shows what was written from its start to the
     *    next call's start, exact only while it ran alone (else mixed with the calls
     *    beside it); prefix the lines with esc_task_id where they must be told apart. */
    unsigned max_concurrency;
} esc_actor_spec;

/* Creates an actor: placed like a task (it may wait for its resources); returns at once.
 * *out is the caller's handle (esc_actor_free; the actor lives on until killed or its
 * job ends). INVALID_ARGUMENT (nothing is created) without a library, with a reference
 * among init_args, or with max_concurrency over ESC_ACTOR_MAX_CONCURRENCY. */
int esc_actor_create(esc_client *c, const esc_actor_spec *spec, esc_actor **out,
                     esc_status *st);

/* Calls method (an ESC_TASK function of the actor's library) with args on the actor.
 * Waits (up to 60 s) until the actor is placed, then returns at once with num_returns
 * references (0 means 1), read with esc_get. Calls of one caller run in the order made
 * (with max_concurrency > 1: start in that order, and may overlap and end in any order).
 * A call of a dead actor returns references to error objects ("actor ... died: ...");
 * FAILED_PRECONDITION when the actor's creation failed (st says why); PERMISSION_DENIED
 * when c's job is not the actor's and the actor's job did not grant it its namespace. */
int esc_actor_call(esc_client *c, esc_actor *a, const char *method, const esc_task_arg *args,
                   size_t nargs, unsigned num_returns, esc_ref **refs, esc_status *st);

/* Kills the actor: a running call (every one, with max_concurrency > 1) ends as "actor
 * killed", later calls fail, its resources are released. ESC_NOT_FOUND when it is not alive; PERMISSION_DENIED when c is not the
 * actor's job. */
int esc_actor_kill(esc_client *c, esc_actor *a, esc_status *st);

/* Changes what the actor holds on its node to resources[0..n) (a name left out goes to
 * 0; the actor's own ephemeral resources named in full, "ns/name"): what shrinks is
 * released at once; what grows waits, in the node's queue like any request, until the
 * node admits the difference or timeout_ms passes (0: try once). The actor's worker gets
 * the new CPU quota at once (where shares are enforced), and its calls see the new
 * holding from the next one on (esc_actor_held, task.h). GPUs cannot change (their
 * instances are fixed when the worker starts). held (may be NULL) gets what it holds now
 * (*nheld amounts, freed with esc_amounts_free).
 * Returns ESC_OK; DEADLINE_EXCEEDED when the growth did not fit in time (the actor then
 * holds its old holding less what shrank; held is left empty); INVALID_ARGUMENT (a nameless or negative amount, a
 * change of GPUs); NOT_FOUND when the actor is not alive; FAILED_PRECONDITION when
 * another resize of it waits; PERMISSION_DENIED when c is not the actor's job; ABORTED
 * when the actor ended while the growth waited; or the code of the call to its raylet. */
int esc_actor_resize(esc_client *c, esc_actor *a, const esc_amount *resources, size_t n,
                     int timeout_ms, esc_amount **held, size_t *nheld, esc_status *st);

/* Frees what esc_actor_resize returned in held. */
void esc_amounts_free(esc_amount *v, size_t n);

/* The actor's id (owned by the handle). */
const char *esc_actor_id(const esc_actor *a);

/* Where an actor is in its life, as its host last published it. */
typedef enum {
    ESC_ACTOR_PENDING,    /* not placed yet (no host has published anything) */
    ESC_ACTOR_STARTING,   /* placed; its init runs */
    ESC_ACTOR_ALIVE,      /* ready for calls */
    ESC_ACTOR_RESTARTING, /* its worker was lost; a restart runs its init again */
    ESC_ACTOR_DEAD,       /* killed, its job ended, or its worker lost with no restart left */
} esc_actor_state;

typedef struct {
    esc_actor_state state;
    unsigned restarts;     /* restarts so far (worker losses and node deaths together) */
    unsigned max_restarts;
    char node_id[128];     /* its host ("" while pending) */
    char why[512];         /* DEAD: why it died; else why it lost its last worker, or "" */
} esc_actor_info;

/* Reads the actor's state as its host published it in the GCS (docs/tasks.md, "Actors").
 * ESC_OK with state PENDING when nothing is published yet. */
int esc_actor_get_info(esc_client *c, const esc_actor *a, esc_actor_info *out, esc_status *st);
/* The same by actor id (what esc_actor_list gives), for actors of any job. */
int esc_actor_info_of(esc_client *c, const char *actor_id, esc_actor_info *out,
                      esc_status *st);
/* The ids of every actor whose host published a state, dead ones included; *ids is the
 * caller's (esc_kv_keys_free(*ids, *n)). */
int esc_actor_list(esc_client *c, char ***ids, size_t *n, esc_status *st);

/* The state's name: "PENDING", "STARTING", "ALIVE", "RESTARTING", "DEAD". */
const char *esc_actor_state_name(esc_actor_state s);

/* Frees the handle (the actor is untouched). */
void esc_actor_free(esc_actor *a);

/* ------------------------------------------------------------------ state API */

/* `escher list` (docs/observability.md, "State API: escher list"): the cluster's nodes,
 * jobs, resources, tasks, actors and objects as rows. Nodes, jobs and resources come
 * from the GCS (one GetClusterStatus or ListJobs call); tasks, actors and objects from
 * the raylets: one call to every alive node (or to the one node of the filter), made one
 * after the other, each with a deadline of ESC_LIST_NODE_TIMEOUT_MS. A node that does
 * not answer in time is named in info.unreachable and its rows are missing; the call is
 * still ESC_OK.
 *
 * Visibility: nodes, jobs and resources are everyone's who holds the cluster token (as
 * `escher status`). Tasks, actors and objects: a client in a job sees its job's rows
 * and those of jobs that granted it their whole namespace; a client with no job (the
 * CLI's reader) sees every row. Enforced by the raylets (docs/security.md). */

#define ESC_LIST_DEFAULT_LIMIT 1000
#define ESC_LIST_NODE_TIMEOUT_MS 2000

/* Filters; every field may be left zero. Strings are only read during the call. */
typedef struct {
    const char *job_id;   /* NULL or "": every job. Nodes: INVALID_ARGUMENT */
    /* NULL or "": any. Else one of the kind's states, any case:
     *   nodes      ALIVE, DRAINING, DEAD
     *   jobs       RUNNING, FINISHED, FAILED
     *   resources  PHYSICAL, EPHEMERAL
     *   tasks      QUEUED, WAITING_FOR_ARGS, RUNNING, FINISHED, FAILED
     *   actors     STARTING, ALIVE, RESTARTING, DEAD
     *   objects    SEALED, UNSEALED
     * Another name is INVALID_ARGUMENT, naming the kind's states. */
    const char *state;
    const char *node_id;  /* NULL or "": every node. Jobs: INVALID_ARGUMENT. Tasks, actors,
                             objects: a node that is not alive is NOT_FOUND */
    size_t limit;         /* rows at most; 0: ESC_LIST_DEFAULT_LIMIT */
} esc_list_filter;

/* What every list says besides its rows. */
typedef struct {
    size_t total;         /* rows that matched the filter, before the limit */
    bool truncated;       /* total > rows returned: the list was cut at the limit */
    char **unreachable;   /* ids of the nodes that did not answer (their rows are missing) */
    size_t nunreachable;
} esc_list_info;

/* Nodes: rows point into status (the whole cluster status, owned by the list). */
typedef struct {
    esc_list_info info;
    const esc_node_status **nodes;
    size_t n;
    esc_cluster_status *status;
} esc_node_table;

/* Resources: one row per node and resource; res points into status. job_id filters on
 * the owner (ephemeral resources only). */
typedef struct {
    const char *node_id;
    const esc_resource_info *res;
} esc_resource_row;
typedef struct {
    esc_list_info info;
    esc_resource_row *rows;
    size_t n;
    esc_cluster_status *status;
} esc_resource_table;

/* Jobs: the rows of esc_list_jobs, newest start first. */
typedef struct {
    esc_list_info info;
    esc_job_info *jobs;
    size_t n;
} esc_job_table;

/* A task as the raylet where it is knows it. */
typedef struct {
    char *task_id;
    char *job_id;
    char *name;           /* the spec's name, else its function's symbol, else argv[0] */
    char *state;          /* QUEUED, WAITING_FOR_ARGS, RUNNING, FINISHED, FAILED */
    char *node_id;
    char *actor_id;       /* an actor's creation: the actor, else "" */
    esc_amount *resources;/* requested (names owned by the list) */
    size_t nresources;
    unsigned attempt;     /* retries made so far */
    unsigned max_retries;
    uint64_t start_ms;    /* wall clock of its (last) start; 0 when not started */
    uint64_t end_ms;      /* wall clock of its end; 0 while it has not ended */
} esc_task_row;
typedef struct {
    esc_list_info info;
    esc_task_row *rows;   /* not ended first (by task id), then ended ones, latest first */
    size_t n;
} esc_task_table;

typedef struct {
    char *actor_id;
    char *job_id;
    char *name;
    char *node_id;
    char *state;          /* STARTING, ALIVE, RESTARTING, DEAD */
    esc_amount *resources;/* held now; none once dead (names owned by the list) */
    size_t nresources;
    unsigned pending_calls, running_calls, restarts;
} esc_actor_row;
typedef struct {
    esc_list_info info;
    esc_actor_row *rows;  /* by actor id */
    size_t n;
} esc_actor_table;

/* An object, merged over the nodes that hold a copy. */
typedef struct {
    char *object_id;
    char *job_id;         /* owner job; "" none */
    uint64_t size;        /* bytes */
    char **node_ids;      /* nodes holding a copy */
    size_t nnodes;
    bool sealed;          /* every copy complete */
    bool pinned;          /* a reader streams some copy out now */
    bool spilled;         /* always false: stores keep objects in memory */
    bool is_error;        /* a failed task's error object */
} esc_object_row;
typedef struct {
    esc_list_info info;
    esc_object_row *rows; /* by object id */
    size_t n;
} esc_object_table;

/* Each lists what the filter (NULL: none) selects into *out, owned by the caller and
 * freed with the matching _free (NULL is fine). Returns ESC_OK, INVALID_ARGUMENT (a
 * filter that does not apply, a bad state), NOT_FOUND (node_id not alive, for tasks,
 * actors and objects), PERMISSION_DENIED (a raylet refused the client's job credential),
 * or the GCS call's code; *out is NULL unless ESC_OK. */
int esc_list_nodes(esc_client *c, const esc_list_filter *f, esc_node_table **out,
                   esc_status *st);
int esc_list_resources(esc_client *c, const esc_list_filter *f, esc_resource_table **out,
                       esc_status *st);
/* The jobs: esc_list_jobs with a filter (that name predates the state API and keeps its
 * signature). */
int esc_list_jobs_filtered(esc_client *c, const esc_list_filter *f, esc_job_table **out,
                           esc_status *st);
int esc_list_tasks(esc_client *c, const esc_list_filter *f, esc_task_table **out,
                   esc_status *st);
int esc_list_actors(esc_client *c, const esc_list_filter *f, esc_actor_table **out,
                    esc_status *st);
int esc_list_objects(esc_client *c, const esc_list_filter *f, esc_object_table **out,
                     esc_status *st);
void esc_node_table_free(esc_node_table *l);
void esc_resource_table_free(esc_resource_table *l);
void esc_job_table_free(esc_job_table *l);
void esc_task_table_free(esc_task_table *l);
void esc_actor_table_free(esc_actor_table *l);
void esc_object_table_free(esc_object_table *l);

#ifdef __cplusplus
}
#endif
#endif
