/* gcs.h: the state of escher-gcs, shared by its modules.
 *
 * Everything here is owned by the event-loop thread: gRPC threads only post handlers to
 * it (rpc.h), so no table needs a lock. Each module owns one table or concern:
 *   event_log.c   sequence numbers, durable commit, the replay ring, broadcast
 *   pubsub.c      Subscribe streams and snapshots
 *   load.c        EV_NODE_LOAD: the nodes' reported availability, beside the log
 *   registry.c    the ephemeral-resource registry and UpdateResources
 *   node_table.c  nodes: register, report, drain, death
 *   job_table.c   jobs and their cleanup
 *   wait_applied.c WaitApplied
 *   status.c      GetClusterStatus
 *   kv.c          the key-value table
 *   object_dir.c  the object directory (in memory only: objects die with their raylet)
 *   persist.c     loading every table from storage at start
 */
#ifndef ESC_GCS_H
#define ESC_GCS_H

#include <stdbool.h>
#include <stdint.h>

#include "gcs.pb-c.h"
#include "loop.h"
#include "rpc.h"
#include "storage.h"
#include "strmap.h"

/* Storage table names. */
#define GCS_T_NODES "nodes"
#define GCS_T_JOBS "jobs"
#define GCS_T_REGISTRY "registry"
#define GCS_T_KV "kv"
#define GCS_T_META "meta"

typedef struct {
    const char *bind;
    int port;
    const char *port_file;
    char *token;
    const char *storage_uri;
    int node_timeout_ms;
    int heartbeat_ms;
    int job_timeout_ms;
    long max_resources_per_job;
} gcs_config;

typedef struct {
    Escher__NodeInfo *info;           /* owned */
    uint64_t last_seen_ms;
    uint64_t applied_seq;
    Escher__ReportNodeRequest *report; /* last report with resources, owned; may be NULL */
    Escher__ReportNodeRequest *published; /* the report last advertised (load.c): owned,
                                         or the same as report; may be NULL */
    bool load_dirty;                  /* reported since the last advertisement */
    bool needs_snapshot;              /* (re)registered in this life: its next subscription
                                         starts from a snapshot, whatever seq it names */
} gcs_node;

typedef struct {
    Escher__JobInfo *info;            /* owned */
    int streams;                      /* live driver streams */
    uint64_t orphan_since_ms;         /* when the last stream dropped (or registration) */
} gcs_job;

typedef struct gcs_sub gcs_sub;
typedef struct gcs_waiter gcs_waiter;
typedef struct gcs_objdir gcs_objdir;

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
    esc_strmap *registry;   /* "node|ns/name" -> Escher__RegistryEntry (owned) */
    esc_strmap *ns_rows;    /* namespace -> (intptr_t) registry rows */
    esc_strmap *jobs;       /* job id -> gcs_job */
    esc_strmap *kv;         /* "ns\nkey" -> gcs_kv_value */
    uint64_t seq;           /* last committed sequence number */
    gcs_ring ring;
    gcs_sub *subs;
    gcs_waiter *waiters;
    gcs_objdir *objdir;     /* object directory (object_dir.c) */
    ev_timer sweep;
    ev_timer load_timer;    /* load.c: coalesces advertisements */
} gcs;

/* ---- event_log.c ---- */
/* Commits ev (owned; its seq is assigned here) with the table writes in b: writes the
 * batch and the new sequence number durably, then runs `apply` (the in-memory change,
 * may be NULL) and broadcasts ev. Returns the seq, or 0 when storage failed (nothing
 * applied; err says why; ev and b are freed either way). */
typedef void (*gcs_apply_fn)(gcs *g, void *ud);
uint64_t gcs_commit(gcs *g, Escher__Event *ev, esc_storage_batch *b, gcs_apply_fn apply,
                    void *ud, char *err, size_t errlen);
/* Writes only the table changes of b (no event). Returns 0 or -1 with err. */
int gcs_write(gcs *g, esc_storage_batch *b, char *err, size_t errlen);
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

/* ---- pubsub.c ---- */
void gcs_pubsub_register(gcs *g);
void gcs_broadcast(gcs *g, const Escher__Event *ev);
void gcs_pubsub_close_all(gcs *g);

/* ---- load.c ---- */
void gcs_load_init(gcs *g);
void gcs_load_stop(gcs *g);
/* Replaces n's last report (owned, may be NULL), keeping the advertised one. */
void gcs_load_set_report(gcs_node *n, Escher__ReportNodeRequest *report);
/* Drops n's reports (its death, or freeing the table). */
void gcs_load_forget(gcs_node *n);
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
 * NULL) as one event of `kind` (node/job fields filled by the caller in ev). */
uint64_t gcs_registry_remove_where(gcs *g, const char *node_id, const char *owner_job,
                                   Escher__Event *ev, esc_storage_batch *b, char *err,
                                   size_t errlen);
/* Adds a loaded row to the registry (startup). */
void gcs_registry_load(gcs *g, Escher__RegistryEntry *e);
void gcs_registry_free(gcs *g);

/* ---- node_table.c ---- */
void gcs_nodes_register(gcs *g);
gcs_node *gcs_node_find(gcs *g, const char *id);
bool gcs_node_alive(const gcs_node *n);
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

/* ---- wait_applied.c ---- */
void gcs_wait_register(gcs *g);
/* Re-checks waiters after a node applied more of the log or died. */
void gcs_wait_recheck(gcs *g);
void gcs_wait_close_all(gcs *g);

/* ---- status.c ---- */
void gcs_status_register(gcs *g);

/* ---- kv.c ---- */
void gcs_kv_register(gcs *g);
void gcs_kv_load(gcs *g, const char *key, const void *value, size_t len);
void gcs_kv_free(gcs *g);

/* ---- object_dir.c ---- */
/* Creates the directory and registers the ObjectDirectory service. */
void gcs_objects_register(gcs *g);
/* Drops every location on a node that died (objects left with none leave too). */
void gcs_objects_node_dead(gcs *g, const char *node_id);
/* Drops every object of a job that ended. */
void gcs_objects_job_ended(gcs *g, const char *job_id);
/* Answers held GetLocations calls UNAVAILABLE (before the server goes). */
void gcs_objects_close_all(gcs *g);
void gcs_objects_free(gcs *g);

/* ---- persist.c ---- */
/* Loads every table from storage. Returns 0, or -1 with err. */
int gcs_persist_load(gcs *g, char *err, size_t errlen);

#endif
