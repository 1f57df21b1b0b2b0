/* raylet.h: the state of escher-raylet shared by its modules.
 *
 * Threads (docs/raylet.md):
 *  - the loop thread (the main thread, an esc_loop) owns everything in struct raylet
 *    except the link's own locked fields: the accounting table, the leases and their
 *    queue, the applied sequence number;
 *  - the gRPC server's completion-queue thread hands calls to the loop (esc_loop_post);
 *  - the report thread (gcs_link.c) registers the node, then sends ReportNode;
 *  - the subscription thread (gcs_link.c) reads the GCS event stream and posts each
 *    event to the loop, where log_apply.c applies it;
 *  - the outbound sender thread (runtime/rpc_async.c) makes the calls the loop must not
 *    block on: object locations and other writes to the GCS;
 *  - one sender thread per peer raylet (peers.c): tasks forwarded, withdrawn, and the
 *    notices of their ends;
 *  - worker processes are watched through pidfds on the loop; argument objects are
 *    fetched by a pool of FETCH_THREADS threads (object_fetch.c); each package fetch
 *    runs on a thread of its own (packages.c).
 */
#ifndef RAYLET_H
#define RAYLET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "accounting.h"
#include "config.h"
#include "gcs.pb-c.h"
#include "loop.h"
#include "node_info.h"
#include "rpc.h"

/* ------------------------------------------------------------ the raylet */

typedef struct lease_service lease_service;
typedef struct gcs_link gcs_link;
typedef struct object_service object_service;
typedef struct actor_manager actor_manager;
typedef struct object_fetcher object_fetcher;
typedef struct worker_pool worker_pool;
typedef struct cluster_view cluster_view;
typedef struct task_manager task_manager;
typedef struct esc_rpc_async esc_rpc_async;
typedef struct peers peers;
typedef struct admission admission;
typedef struct results results;
typedef struct log_service log_service;
typedef struct packages packages;
typedef struct job_mirror job_mirror;

typedef struct raylet {
    raylet_config cfg;
    node_info node;
    esc_loop *loop;
    accounting *acct;
    esc_rpc_server *server;
    admission *admission;        /* the one queue of leases and tasks waiting to fit */
    lease_service *leases;
    object_service *objects;     /* the object store and its service */
    worker_pool *pool;           /* escher-worker processes */
    struct cpu_quota *quota;     /* workers' CPU quotas; NULL: shares not enforced */
    char cpu_shares[300];        /* how shares are enforced, or why not (NodeInfo) */
    cluster_view *view;          /* the other nodes, from the event stream */
    task_manager *tasks;         /* TaskService: placement, queue, execution */
    peers *peers;                /* calls to other raylets, suspect peers */
    results *results;            /* tasks' returns: stored, and owners told */
    struct actor_manager *actors;/* the actors hosted here */
    esc_rpc_async *async;        /* outbound calls that must not block the loop */
    struct object_fetcher *fetcher; /* argument objects from other nodes */
    log_service *logs;           /* StreamLogs: tasks' output read from log_dir */
    char log_dir[4096];          /* where workers write tasks' output */
    packages *packages;          /* jobs' packages unpacked on this node */
    job_mirror *jobs;            /* the running jobs, from the event log (job_mirror.h) */
    gcs_link *link;
    char address[300];           /* node_ip:port advertised to the cluster */
    char node_id[128];           /* "" until registered */
    bool registered;
    uint64_t applied_seq;        /* last event applied (a snapshot may move it back) */
    bool queue_dirty;            /* a release or an event may let queued requests fit */
    uint64_t published_version;  /* accounting_version of the last rows handed to the link */
    uint64_t published_seq;
    uint64_t published_queue_version; /* task_manager_queue_version of the last demand */
    bool force_publish;
    uint64_t rows_published_ms;  /* when rows were last copied for the report */
    uint64_t pulled_bytes;       /* object bytes fetched from other nodes (Stats) */
    ev_timer rows_timer;         /* a copy held back by ROWS_MIN_INTERVAL_MS is due */
    ev_prepare flush;            /* runs after each batch of posted work */
    Escher__Event **spent;       /* applied events, freed after the report is handed on */
    size_t nspent, spent_cap;
    ev_timer stop_timer;         /* the cluster stopped: exit when it fires */
    bool stopping;
    int exit_code;
    struct esc_metrics_http *metrics; /* the Prometheus endpoint, or NULL (metrics.c) */
    char metrics_address[300];  /* host:port of that endpoint as others reach it, or "" */
} raylet;

/* Sets up a raylet whose cfg is parsed: detection, accounting, loop, gRPC server,
 * GCS link threads. Returns 0, or -1 with a one-line reason in err (then call
 * raylet_shutdown anyway). */
int raylet_start(raylet *r, char *err, size_t errlen);
/* Runs the loop until a stop signal or raylet_fail. */
void raylet_run(raylet *r);
/* Stops the threads and the server, runs what was posted, frees everything. Returns
 * the exit code. */
int raylet_shutdown(raylet *r);

/* Stops the loop with an exit code (loop thread). */
void raylet_fail(raylet *r, int code);
/* The GCS said the cluster is stopping (EV_CLUSTER_STOPPING): with stop_all, stop now;
 * else stop after --exit-on-cluster-stop unless the GCS is back first (or never,
 * without that flag). Loop thread. */
void raylet_cluster_stopping(raylet *r, bool stop_all);
/* A new snapshot from the GCS: it is back, a pending exit is called off. */
void raylet_cluster_back(raylet *r);

/* Tells the raylet that the table or the applied seq changed (loop thread): queued
 * requests are re-examined and the report thread is woken at the end of this loop
 * turn, once for however many changes happened in it. */
void raylet_changed(raylet *r, bool may_admit);

/* metrics.c: starts the endpoint when --metrics-port is given (0, or -1 with a reason
 * in err), and stops it (loop thread; NULL-safe). */
int raylet_metrics_start(raylet *r, char *err, size_t errlen);
void raylet_metrics_stop(raylet *r);

/* Runs the pending work at once: re-examines the queue, publishes a report. */
void raylet_flush(raylet *r);

/* A channel of this raylet's own to the GCS or a peer raylet at address: it carries the
 * token and the daemon key (docs/security.md). Any thread. */
struct esc_rpc_channel *raylet_channel_new(const raylet *r, const char *address);

#endif
