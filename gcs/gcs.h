/* gcs.h: the state of escher-gcs, shared by its modules.
 *
 * server.c runs its life: gcs_open, gcs_start, the loop, gcs_stop, gcs_close.
 *
 * Everything here is owned by the event-loop thread: gRPC threads only post handlers to
 * it (rpc.h), so no table needs a lock. Each module owns one table or concern:
 *   event_log.c   sequence numbers, durable commit, the replay ring, broadcast
 *   write_queue.c table writes one at a time, each with a storage deadline
 *   pubsub.c      Subscribe streams and snapshots
 *   load.c        EV_NODE_LOAD: the nodes' reported availability, beside the log
 *   registry.c    the ephemeral-resource registry and UpdateResources
 *   node_table.c  nodes: register, report, drain, death
 *   job_table.c   jobs and their cleanup
 *   auth.c        job credentials, namespace ownership, the operator key (docs/security.md);
 *                 the daemon-only calls are refused before any handler runs, from the
 *                 table in runtime/daemon_calls.c
 *   grants.c      GrantNamespace
 *   wait_applied.c WaitApplied
 *   status.c      GetClusterStatus
 *   dashboard.c   the web dashboard: HTTP routes, token, event stream (dashboard.h)
 *   kv.c          the key-value table
 *   packages.c    jobs' packages: SetJobPackage, removal when no running job names one
 *   object_dir.c  the object directory (locations in memory only: objects die with their
 *                 raylet; lost objects stored, table "lost")
 *   persist.c     loading every table from storage at start
 *   metrics.c     the Prometheus endpoint's samples (docs/observability.md)
 *   history.c     the event history and ListEvents (docs/observability.md)
 */
#ifndef ESC_GCS_H
#define ESC_GCS_H

#include <stdbool.h>
#include <stdint.h>

#include "gcs.pb-c.h"
#include "object.pb-c.h"
#include "loop.h"
#include "metrics_http.h"
#include "rpc.h"
#include "storage.h"
#include "strmap.h"

/* Storage table names. */
#define GCS_T_NODES "nodes"
#define GCS_T_JOBS "jobs"
#define GCS_T_REGISTRY "registry"
#define GCS_T_KV "kv"
#define GCS_T_META "meta"
#define GCS_T_LOST "lost"          /* object_dir.c: objects lost with their nodes */
#define GCS_T_HISTORY "history"    /* history.c: the event history, by id */

typedef struct {
    const char *bind;
    int port;
    const char *port_file;
    char *token;
    char *daemon_key;                 /* the daemons' secret (docs/security.md) */
    char *operator_key;               /* NULL: operator stops are refused */
    const char *storage_uri;
    int node_timeout_ms;
    int heartbeat_ms;
    int job_timeout_ms;
    long max_resources_per_job;
    int storage_timeout_ms;           /* a write's deadline for reaching storage */
    int dead_node_retention_ms;       /* how long a dead node stays in the table */
    const char *dashboard_bind;       /* --dashboard-bind (127.0.0.1) */
    int dashboard_port;               /* --dashboard-port; -1: no dashboard */
    const char *dashboard_port_file;  /* --dashboard-port-file, or NULL */
    const char *dashboard_dir;        /* --dashboard-dir, or NULL: found (dashboard.c) */
    const char *metrics_bind;         /* --metrics-bind (127.0.0.1) */
    int metrics_port;                 /* --metrics-port; -1: no endpoint */
    const char *metrics_port_file;    /* --metrics-port-file, or NULL */
    const char *metrics_sd_file;      /* --metrics-sd-file, or NULL (metrics.c) */
    long event_history;               /* --event-history: rows kept (history.c) */
} gcs_config;

/* Storage write latency buckets (seconds), metrics.c. */
#define GCS_WRITE_BUCKETS 12
extern const double gcs_write_bucket_le[GCS_WRITE_BUCKETS];

typedef struct {
    Escher__NodeInfo *info;           /* owned */
    uint64_t last_seen_ms;
    uint64_t heartbeats_missed;       /* heartbeat periods a report came late by (metrics) */
    uint64_t applied_seq;
    Escher__ReportNodeRequest *report; /* last report with resources, owned; may be NULL */
    Escher__ReportNodeRequest *published; /* the report last advertised (load.c): owned,
                                         or the same as report; may be NULL */
    bool load_dirty;                  /* reported since the last advertisement */
    Escher__ReportNodeRequest *demand; /* the last demand reported (only that), owned */
    bool demand_dirty;                /* demand reported since the last advertisement */
    bool needs_snapshot;              /* (re)registered in this life: its next subscription
                                         starts from a snapshot, whatever seq it names */
    bool death_unstored;              /* declared dead in memory; the event is not yet in
                                         storage (node_table.c retries it) */
    bool death_queued;                /* that event's write is queued or in flight */
    uint64_t dead_since_ms;           /* when it was declared (or loaded) dead */
    bool forget_queued;               /* its removal from storage is queued (node_table.c) */
} gcs_node;

typedef struct {
    Escher__JobInfo *info;            /* owned */
    int streams;                      /* live driver streams */
    uint64_t orphan_since_ms;         /* when the last stream dropped (or registration) */
    bool end_queued;                  /* the sweep queued its end (write_queue.c) */
    /* Its entrypoint waits in a raylet's queue: that raylet's last report (owned; NULL
     * when none waits). Memory only: ListJobs shows it, storage never has it. */
    Escher__ReportEntrypointRequest *pending;
} gcs_job;

typedef struct gcs_sub gcs_sub;
typedef struct gcs_waiter gcs_waiter;
typedef struct gcs_objdir gcs_objdir;
typedef struct gcs_writes gcs_writes;
typedef struct gcs_dash gcs_dash;
typedef struct gcs_history gcs_history;

typedef struct {
    Escher__Event **events;           /* circular, owned */
    size_t cap, head, len;
    size_t ops;                       /* ops held by the events in the ring */
} gcs_ring;

typedef struct gcs {
    gcs_config cfg;
    esc_loop *loop;
    esc_storage *store;
    esc_rpc_server *server;
    esc_strmap *nodes;      /* node id -> gcs_node */
    esc_strmap *forgotten;  /* ids of dead nodes removed from `nodes` (node_table.c) */
    esc_strmap *registry;   /* "node|ns/name" -> Escher__RegistryEntry (owned) */
    esc_strmap *ns_rows;    /* namespace -> (intptr_t) registry rows */
    esc_strmap *jobs;       /* job id -> gcs_job */
    esc_strmap *kv;         /* "ns\nkey" -> gcs_kv_value */
    uint64_t seq;           /* last committed sequence number */
    gcs_ring ring;
    gcs_sub *subs;
    gcs_waiter *waiters;
    gcs_objdir *objdir;     /* object directory (object_dir.c) */
    gcs_writes *writes;     /* writes waiting for their turn (write_queue.c) */
    gcs_dash *dash;         /* the dashboard, or NULL (dashboard.c) */
    gcs_history *history;   /* the event history (history.c) */
    ev_timer sweep;
    ev_timer load_timer;    /* load.c: coalesces advertisements */
    ev_signal stop_all_sig; /* SIGUSR1: stop the whole cluster (main.c) */
    ev_timer stop_all_timer;/* until the raylets hung up, or a deadline */
    uint64_t stop_all_deadline_ms;
    bool clean_stop;        /* the loop ended on a signal: tell the raylets */
    bool stop_all;          /* ... that the whole cluster stops */
    esc_metrics_http *metrics; /* the Prometheus endpoint, or NULL (metrics.c) */
    uint64_t write_buckets[GCS_WRITE_BUCKETS]; /* storage writes per latency bucket */
    uint64_t write_count;   /* storage writes that ended (success or failure) */
    double write_sum_s;     /* their total latency */
} gcs;

/* ---- server.c ---- */
/* Opens storage and loads every table into a new g (cfg copied; its strings must outlive
 * g). 0, or -1 with err; gcs_close must follow either way. */
int gcs_open(gcs *g, const gcs_config *cfg, char *err, size_t errlen);
/* The same with a store already open (taken: gcs_close closes it), whose tables are
 * loaded as a restarted GCS loads them (tests/fuzz/fuzz_gcs_persist.c). */
int gcs_open_store(gcs *g, const gcs_config *cfg, esc_storage *store, char *err, size_t errlen);
/* Starts serving on the loop (storage attached to it, server, endpoints, sweep timer);
 * the caller then runs the loop. 0, or 1 after printing why not. */
int gcs_start(gcs *g);
/* After the loop ended: a clean stop (the raylets hear of it), timers and endpoints
 * stopped. */
void gcs_stop(gcs *g);
/* Ends every call and stream, frees the tables and closes storage. */
void gcs_close(gcs *g);

/* ---- event_log.c ---- */
/* Commits ev (owned; its seq is assigned here) with the table writes in b (owned):
 * once storage has the batch and the new sequence number, runs `apply` (the in-memory
 * change, may be NULL), broadcasts ev, then calls done(g, seq, NULL, ud). When storage
 * fails or misses the write's deadline, nothing is applied and done(g, 0, reason, ud)
 * runs instead. done may run before gcs_commit returns (memory storage). Only from a
 * write run by write_queue.c: one commit at a time. */
typedef void (*gcs_apply_fn)(gcs *g, void *ud);
typedef void (*gcs_done_fn)(gcs *g, uint64_t seq, const char *err, void *ud);
void gcs_commit(gcs *g, Escher__Event *ev, esc_storage_batch *b, gcs_apply_fn apply,
                gcs_done_fn done, void *ud);
/* Writes only the table changes of b (no event), then done(g, 0, NULL or reason, ud);
 * the caller applies its change in done. Same rules as gcs_commit. */
void gcs_write(gcs *g, esc_storage_batch *b, gcs_done_fn done, void *ud);
/* Adds "table[key] = packed msg" to b. */
void gcs_put_msg(esc_storage_batch *b, const char *table, const char *key,
                 const ProtobufCMessage *msg);
void gcs_ring_init(gcs_ring *r, size_t cap);
void gcs_ring_free(gcs_ring *r);
/* Events with seq in (from, g->seq], in order, when all still in the ring: returns the
 * count and sets *first to the index of the first; -1 when some were evicted. */
long gcs_ring_since(const gcs *g, uint64_t from, size_t *first);
Escher__Event *gcs_ring_at(const gcs *g, size_t i);
Escher__Event *gcs_event_new(Escher__EventKind kind);

/* ---- write_queue.c ---- */
typedef void (*gcs_write_fn)(gcs *g, void *ud);
void gcs_writes_init(gcs *g);
/* Registers a method (its handle, &ESC_M_GCS_KV_PUT) whose handler may commit: each call
 * runs only when every write before it is over, or is answered UNAVAILABLE once it
 * waited past --storage-timeout-ms. A registration failure is esc_rpc_server_handle's
 * (the server then refuses to start). */
void gcs_handle_write(gcs *g, const esc_rpc_method *method, esc_rpc_handler fn);
/* The same for one call of a handler that writes only on some paths: fn(call, req, g)
 * runs in its turn. */
void gcs_write_call(gcs *g, esc_rpc_ctx *call, const ProtobufCMessage *req, esc_rpc_handler fn);
/* Queues an internal write: run(g, ud) in its turn, or expire(g, ud) instead when it
 * waited past the storage timeout or the GCS is shutting down. */
void gcs_queue_write(gcs *g, gcs_write_fn run, gcs_write_fn expire, void *ud);
/* Milliseconds left before the deadline of the write now running (at least 1). */
int gcs_write_time_left(gcs *g);
/* event_log.c: a commit starts (false when one is already in flight) and ends. */
bool gcs_write_begin(gcs *g);
void gcs_write_end(gcs *g);
/* Closes the store: the commit in flight fails, waiting writes expire. */
void gcs_writes_close_all(gcs *g);
void gcs_writes_free(gcs *g);

/* ---- pubsub.c ---- */
void gcs_pubsub_register(gcs *g);
void gcs_broadcast(gcs *g, const Escher__Event *ev);
/* Ends every subscription; after a clean stop (g->clean_stop) raylets first get
 * EV_CLUSTER_STOPPING (stop_all from g->stop_all). */
void gcs_pubsub_close_all(gcs *g);
/* Sends EV_CLUSTER_STOPPING to every raylet's stream (stop_all from g->stop_all). */
void gcs_pubsub_stopping(gcs *g);
/* How many raylets are subscribed. */
size_t gcs_pubsub_raylets(const gcs *g);

/* ---- metrics.c ---- */
/* Starts the endpoint when --metrics-port is given; 0, or 1 after printing why not. */
int gcs_metrics_start(gcs *g);
void gcs_metrics_stop(gcs *g);
/* A storage write took `seconds` (event_log.c). */
void gcs_metrics_write_done(gcs *g, double seconds);
/* The event is broadcast (pubsub.c): a node that came or went rewrites the
 * service-discovery file. */
void gcs_metrics_event(gcs *g, const Escher__Event *ev);

/* ---- load.c ---- */
void gcs_load_init(gcs *g);
void gcs_load_stop(gcs *g);
/* Replaces n's last report (owned, may be NULL), keeping the advertised one. */
void gcs_load_set_report(gcs_node *n, Escher__ReportNodeRequest *report);
/* Drops n's reports (its death, or freeing the table). */
void gcs_load_forget(gcs_node *n);
/* Keeps the queued demand of a report that has it (copied) to advertise it. */
void gcs_load_set_demand(gcs *g, gcs_node *n, const Escher__ReportNodeRequest *report);
/* n reported new rows: they are advertised within the next period. */
void gcs_load_reported(gcs *g, gcs_node *n);
/* Every alive node's full rows, for a (re)subscribing raylet; rows point into the
 * reports: send it at once, then gcs_load_full_event_free. */
Escher__Event *gcs_load_full_event(gcs *g);
void gcs_load_full_event_free(Escher__Event *ev);

/* ---- registry.c ---- */
void gcs_registry_register(gcs *g);
/* The registry key of (node, full name) into out (ESC_FULLNAME_MAX + 40 bytes). */
void gcs_registry_key(const char *node_id, const char *name, char *out, size_t len);
/* Commits the removal of every registry row matching (node_id or NULL, owner job or
 * NULL) as one event of `kind` (node/job fields filled by the caller in ev), then
 * done as gcs_commit's. */
void gcs_registry_remove_where(gcs *g, const char *node_id, const char *owner_job,
                               Escher__Event *ev, esc_storage_batch *b, gcs_done_fn done,
                               void *ud);
/* Adds a loaded row to the registry (startup). */
void gcs_registry_load(gcs *g, Escher__RegistryEntry *e);
void gcs_registry_free(gcs *g);

/* ---- node_table.c ---- */
void gcs_nodes_register(gcs *g);
gcs_node *gcs_node_find(gcs *g, const char *id);
bool gcs_node_alive(const gcs_node *n);
/* True for a node that died and was since removed from the table (this GCS's life). */
bool gcs_node_forgotten(gcs *g, const char *id);
void gcs_nodes_sweep(gcs *g, uint64_t now);
void gcs_nodes_free(gcs *g);
void gcs_node_load(gcs *g, Escher__NodeInfo *info);

/* ---- job_table.c ---- */
void gcs_jobs_register(gcs *g);
gcs_job *gcs_job_find(gcs *g, const char *id);
void gcs_job_stream_opened(gcs *g, const char *job_id);
void gcs_job_stream_closed(gcs *g, const char *job_id);
void gcs_jobs_sweep(gcs *g, uint64_t now);
void gcs_jobs_free(gcs *g);
void gcs_job_load(gcs *g, Escher__JobInfo *info);
/* A new EV_JOB_UPDATED event carrying a copy of row (the raylets' mirror of the jobs). */
Escher__Event *gcs_job_event(const Escher__JobInfo *row);

/* ---- wait_applied.c ---- */
void gcs_wait_register(gcs *g);
/* Re-checks waiters after a node applied more of the log or died. */
void gcs_wait_recheck(gcs *g);
void gcs_wait_close_all(gcs *g);

/* ---- status.c ---- */
void gcs_status_register(gcs *g);

/* ---- dashboard.c (docs/observability.md, "Dashboard") ---- */
/* Starts the dashboard when --dashboard-port is given; 0, or 1 after printing why not. */
int gcs_dashboard_start(gcs *g);
/* Ends its event streams and stops serving (nothing when not started). */
void gcs_dashboard_stop(gcs *g);
/* An event of the broadcast (pubsub.c): kept for the page and sent to its streams. */
void gcs_dashboard_event(gcs *g, const Escher__Event *ev);

/* ---- packages.c ---- */
void gcs_packages_register(gcs *g);
/* A job that named package hash ("" none) ended: the package's keys go when no running
 * job names it any more (an internal write, queued). */
void gcs_packages_job_ended(gcs *g, const char *hash);

/* ---- auth.c (docs/security.md) ---- */
#define GCS_CREDENTIAL_BYTES 32      /* a job's credential: 256 random bits, as hex */
#define GCS_SHARED_NS "default"      /* the CLI's namespace, shared by every job */
/* SHA-256 of a credential, as 64 hex digits and a NUL. */
void gcs_auth_hash(const char *credential, char out[65]);
/* A new random credential (malloc'd hex) and its hash; NULL when no randomness. */
char *gcs_auth_new_credential(char hash_out[65]);
/* True when credential is job j's. */
bool gcs_auth_matches(const gcs_job *j, const char *credential);
/* True when the call proves it is job j: body_credential when not empty, else the
 * call's metadata (job id and credential). */
bool gcs_auth_is_job(const esc_rpc_ctx *call, const gcs_job *j, const char *body_credential);
/* The job the call says it is (*out, NULL: it names none). PERMISSION_DENIED, with why,
 * when it names a job without that job's credential. */
int gcs_auth_caller(gcs *g, const esc_rpc_ctx *call, gcs_job **out, char *why, size_t len);
/* True when the call carries the operator key (an operator stop); else false with a
 * one-line why. */
bool gcs_auth_is_operator(gcs *g, const esc_rpc_ctx *call, char *why, size_t len);
/* The job a reader acts for, into out ("" none): body_job with body_credential when
 * body_job is set (a raylet acting for a task's job), else the call's metadata.
 * PERMISSION_DENIED, with why, when the credential is not that job's. */
int gcs_auth_reader(gcs *g, const esc_rpc_ctx *call, const char *body_job,
                    const char *body_credential, char *out, size_t outlen, char *why,
                    size_t len);
/* Shared namespaces: "", `default` and the system's ('_' first). */
bool gcs_ns_shared(const char *ns);
/* The running job that owns namespace ns, or NULL (shared, or no running job in it). */
gcs_job *gcs_ns_owner(gcs *g, const char *ns);
/* True when owner granted its whole namespace to job_id (what actor calls and objects
 * need; a prefix grant does not count). */
bool gcs_ns_granted(const gcs_job *owner, const char *job_id);
/* The one answer to "may job job_id touch name `name` of owner's namespace" (owner not
 * NULL): ESC_OK when
 * owner granted job_id its whole namespace, or a prefix that name starts with (name: a
 * resource name after "ns/", a KV key, or the key prefix of KvKeys or a watch; NULL: the
 * whole namespace). Else PERMISSION_DENIED with a one-line why that names the prefixes
 * job_id holds, if any. job_id NULL: a caller with no job. */
int gcs_grant_covers(const gcs_job *owner, const char *job_id, const char *name, char *why,
                     size_t len);
/* ESC_OK when caller (NULL: a caller with no job) may touch name `name` (NULL: the whole
 * namespace) of namespace ns: a shared or unowned namespace, its own, or a grant
 * (gcs_grant_covers). Else PERMISSION_DENIED with a one-line why. */
int gcs_ns_access(gcs *g, const gcs_job *caller, const char *ns, const char *name, char *why,
                  size_t len);

/* ---- grants.c ---- */
void gcs_grants_register(gcs *g);

/* ---- kv.c ---- */
void gcs_kv_register(gcs *g);
void gcs_kv_load(gcs *g, const char *key, const void *value, size_t len);
void gcs_kv_free(gcs *g);
/* The rows that want(ud, ns, key) accepts, as event entries (values over the events'
 * limit omitted, as in EV_KV); NULL-terminated, freed with gcs_kv_rows_free. */
typedef bool (*gcs_kv_filter)(void *ud, const char *ns, const char *key);
Escher__KvEntry **gcs_kv_rows(gcs *g, gcs_kv_filter want, void *ud, size_t *n);
void gcs_kv_rows_free(Escher__KvEntry **rows, size_t n);

/* ---- object_dir.c ---- */
/* Creates the directory (before gcs_persist_load). */
void gcs_objects_init(gcs *g);
/* persist.c: a row of the lost table (owned); jobs are loaded first. */
void gcs_objects_load_lost(gcs *g, Escher__ObjectLocation *row);
/* Registers the ObjectDirectory service. */
void gcs_objects_register(gcs *g);
/* Drops every location on a node that died (objects left with none leave too). */
void gcs_objects_node_dead(gcs *g, const char *node_id);
/* Writes the lost-object rows not stored yet (after a failed write: object_dir.c). */
void gcs_objects_sweep(gcs *g);
/* Drops every object of a job that ended. */
void gcs_objects_job_ended(gcs *g, const char *job_id);
/* Answers held GetLocations calls UNAVAILABLE (before the server goes). */
void gcs_objects_close_all(gcs *g);
void gcs_objects_free(gcs *g);

/* ---- history.c (docs/observability.md, "Event history: escher events") ---- */
#define GCS_EVENT_HISTORY_DEFAULT 10000
void gcs_history_init(gcs *g);
void gcs_history_free(gcs *g);
void gcs_history_register(gcs *g);
/* Loads the stored rows (startup, before the store is attached): 0, or -1. */
int gcs_history_load(gcs *g);
/* A new row of kind with every string empty (owned by the caller until staged). */
Escher__HistoryEvent *gcs_history_row(Escher__HistoryKind kind);
/* Sets the row's node, job and namespace (NULL: leave as is), copied. */
void gcs_history_set(Escher__HistoryEvent *r, const char *node_id, const char *job_id,
                     const char *ns);
/* Sets the row's entrypoint (copied, cut at 256 bytes): a resource change's writer's. */
void gcs_history_set_entrypoint(Escher__HistoryEvent *r, const char *entrypoint);
/* Stages row r (taken) for the next gcs_commit or gcs_write, which must follow in the
 * same loop turn: the row is stored with that commit's batch and seq, and is in the
 * history once (and only if) the commit is. */
void gcs_history_stage(gcs *g, Escher__HistoryEvent *r);
/* Stage a node's or a job's row (copies what it needs). */
void gcs_history_stage_node(gcs *g, Escher__HistoryKind kind, const Escher__NodeInfo *n);
void gcs_history_stage_job(gcs *g, Escher__HistoryKind kind, const Escher__JobInfo *j);
/* event_log.c: the staged rows go into b (ids, time, seq, ops from ev when not NULL;
 * the row past the bound deleted); then landed(ok) when the commit is over. */
void gcs_history_flush(gcs *g, esc_storage_batch *b, uint64_t seq, const Escher__Event *ev);
void gcs_history_landed(gcs *g, bool ok);
/* node_table.c: a report's task events (bounded; the excess is counted as dropped). */
void gcs_history_report(gcs *g, const Escher__ReportNodeRequest *req);

/* ---- persist.c ---- */
/* Loads every table from storage. Returns 0, or -1 with err. */
int gcs_persist_load(gcs *g, char *err, size_t errlen);

#endif
