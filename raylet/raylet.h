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
 *    block on: object locations to the GCS, tasks spilled to other raylets;
 *  - worker processes are watched through pidfds on the loop; argument fetches run on
 *    their own short-lived threads (object_fetch.c).
 */
#ifndef RAYLET_H
#define RAYLET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "accounting.h"
#include "object_store.h"
#include "gcs.pb-c.h"
#include "loop.h"
#include "rpc.h"

/* ------------------------------------------------------------ configuration */

/* A named quantity (fixed point) of a resource. */
typedef struct {
    char *name;
    int64_t qty;
    bool unbounded;
} raylet_amount;

typedef struct {
    char *key;
    char *value;
} raylet_label;

/* A loopback or LAN peer answers a forward in well under this; one that does not is
 * suspect (peers.h). */
#define RAYLET_FORWARD_TIMEOUT_MS 500

/* The command line (docs/processes.md), parsed by config.c. */
typedef struct {
    char *gcs_address;
    char *token;
    char *bind;
    int port;
    char *node_ip;
    bool has_num_cpus, has_num_gpus, has_memory, has_object_store_memory;
    int64_t num_cpus;            /* fixed point */
    int64_t num_gpus;            /* fixed point */
    uint64_t memory;             /* bytes */
    uint64_t object_store_memory;/* bytes */
    raylet_amount *resources;    /* static custom resources */
    size_t nresources;
    raylet_label *labels;
    size_t nlabels;
    char *node_id_file;
    char *node_id;               /* NULL: let the GCS assign one */
    char *log_dir;               /* NULL: /tmp/escher/logs/raylet-<pid> */
    int forward_timeout_ms;      /* calls to other raylets (peers.h) */
    bool help;
} raylet_config;

/* Parses argv into cfg (token from --token-file or $ESCHER_TOKEN). Returns 0, or -1
 * with a one-line reason in err. cfg is filled with defaults first and must be freed
 * with raylet_config_free either way. */
int raylet_config_parse(int argc, char **argv, raylet_config *cfg, char *err, size_t errlen);
void raylet_config_free(raylet_config *cfg);
/* The usage text printed by --help. */
const char *raylet_usage(void);

/* ------------------------------------------------------------ node detection */

typedef struct {
    int64_t cpus;          /* whole CPUs usable by this process (affinity, cgroup quota) */
    uint64_t memory;       /* bytes: MemTotal, capped by a cgroup limit */
    int gpus;              /* CUDA devices visible through the runtime, 0 without one */
    uint64_t gpu_memory;   /* bytes of the smallest visible device, 0 when unknown */
} raylet_detected;

/* Detects CPUs and memory; GPUs too when probe_gpus (in a child process, so this one
 * never initializes CUDA). Never fails: what cannot be found is 0. */
void raylet_detect(raylet_detected *d, bool probe_gpus);

/* The node's physical resources and labels, as registered with the GCS. */
typedef struct {
    raylet_amount *physical;
    size_t nphysical;
    raylet_label *labels;
    size_t nlabels;
    char hostname[256];
} raylet_node;

/* Builds the node description from the flags and detection. */
void raylet_node_build(raylet_node *n, const raylet_config *cfg, const raylet_detected *d);
void raylet_node_free(raylet_node *n);

/* ------------------------------------------------------------ files */

/* Reads a token file (trailing whitespace stripped) into a new string; NULL with a
 * reason in err when unreadable or empty. */
char *raylet_read_token_file(const char *path, char *err, size_t errlen);

/* Writes content to path atomically (temp file in the same folder, then rename), so
 * readers never see a partial file. Returns 0 or -1 with errno set. */
int raylet_write_file_atomic(const char *path, const char *content);

/* ------------------------------------------------------------ resource rows */

/* A copy of the accounting table as protobuf rows, in one allocation: free() it. */
typedef struct {
    size_t n;
    Escher__ResourceState **rows;
    size_t cap;                  /* bytes allocated */
} raylet_rows;

/* Copies the table. reuse (may be NULL, taken over) is an earlier copy whose memory is
 * used again when big enough: a big table then costs no fresh pages per copy. */
raylet_rows *raylet_rows_build(const esc_acct *a, raylet_rows *reuse);

/* ------------------------------------------------------------ the raylet */

typedef struct raylet_leases raylet_leases;
typedef struct raylet_link raylet_link;
typedef struct raylet_objects raylet_objects;
typedef struct worker_pool worker_pool;
typedef struct cluster_view cluster_view;
typedef struct task_manager task_manager;
typedef struct esc_rpc_async esc_rpc_async;
typedef struct peers peers;

typedef struct raylet {
    raylet_config cfg;
    raylet_node node;
    esc_loop *loop;
    esc_acct *acct;
    esc_rpc_server *server;
    raylet_leases *leases;
    raylet_objects *objects;     /* the object store and its service */
    worker_pool *pool;           /* escher-worker processes */
    cluster_view *view;          /* the other nodes, from the event stream */
    task_manager *tasks;         /* TaskService: placement, queue, execution */
    peers *peers;                /* calls to other raylets, suspect peers */
    struct actor_manager *actors;/* the actors hosted here */
    esc_rpc_async *async;        /* outbound calls that must not block the loop */
    struct object_fetcher *fetcher; /* argument objects from other nodes */
    raylet_link *link;
    char address[300];           /* node_ip:port advertised to the cluster */
    char node_id[128];           /* "" until registered */
    bool registered;
    uint64_t applied_seq;        /* last event applied (a snapshot may move it back) */
    bool queue_dirty;            /* a release or an event may let queued requests fit */
    uint64_t published_version;  /* esc_acct_version of the last rows handed to the link */
    uint64_t published_seq;
    bool force_publish;
    uint64_t rows_published_ms;  /* when rows were last copied for the report */
    uint64_t pulled_bytes;       /* object bytes fetched from other nodes (Stats) */
    ev_timer rows_timer;         /* a copy held back by ROWS_MIN_INTERVAL_MS is due */
    ev_prepare flush;            /* runs after each batch of posted work */
    Escher__Event **spent;       /* applied events, freed after the report is handed on */
    size_t nspent, spent_cap;
    bool stopping;
    int exit_code;
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

/* Tells the raylet that the table or the applied seq changed (loop thread): queued
 * requests are re-examined and the report thread is woken at the end of this loop
 * turn, once for however many changes happened in it. */
void raylet_changed(raylet *r, bool may_admit);

/* Runs the pending work at once: re-examines the queue, publishes a report. */
void raylet_flush(raylet *r);

/* ------------------------------------------------------------ leases (lease_service.c) */

raylet_leases *raylet_leases_new(raylet *r);
/* Registers the Raylet service's handlers on the server. */
int raylet_leases_serve(raylet_leases *ls, esc_rpc_server *srv);
/* Grants queued requests that fit now, in FIFO order. */
void raylet_leases_reexamine(raylet_leases *ls);
/* Releases every lease of the job and fails its queued requests. */
void raylet_leases_job_finished(raylet_leases *ls, const char *job_id);
size_t raylet_leases_count(const raylet_leases *ls);
size_t raylet_leases_queued(const raylet_leases *ls);
/* Answers every queued request (not granted) and frees the table. */
void raylet_leases_free(raylet_leases *ls);

/* ------------------------------------------------------------ objects (object_service.c) */

/* The node's object store of `capacity` bytes (object_store_memory) and the state of the
 * ObjectStore service. */
raylet_objects *raylet_objects_new(raylet *r, uint64_t capacity);
/* Registers the ObjectStore service's handlers. Returns 0 or -1. Locations are announced
 * in batches through r->async (announcer.h). */
int raylet_objects_serve(raylet_objects *o, esc_rpc_server *srv);
/* Stores a sealed object (a task's return value, or with is_error its error text) and
 * announces its location to the GCS, with origin (may be NULL: none), the node that can
 * make it again if every copy is lost (TaskSpec.origin). data is copied. Returns ESC_OK, or the store's
 * code (RESOURCE_EXHAUSTED when full, ALREADY_EXISTS), logged; UNAVAILABLE once
 * raylet_objects_free ran (so whatever stores results must be freed before it). Loop
 * thread. */
int raylet_store_object(raylet *r, const char *id, const char *job_id, const char *origin,
                        const void *data, size_t len, bool is_error, const char *error);
/* A read-only view of a sealed object in this node's store (valid until the store
 * changes); false when this node does not hold it. */
bool raylet_object_get(raylet *r, const char *id, object_view *out);
/* Frees every object of the job (its EV_JOB_FINISHED was applied). */
void raylet_objects_job_finished(raylet_objects *o, const char *job_id);
/* Announces every sealed object again (after a snapshot: the GCS may have restarted and
 * lost its directory, which lives only in memory). */
void raylet_objects_reannounce(raylet_objects *o);
/* Sends no more location calls (before r->async is freed); later ones wait for free. */
void raylet_objects_stop(raylet_objects *o);
/* Ends streams in progress, answers puts whose locations never went out, frees the
 * store. */
void raylet_objects_free(raylet_objects *o);

/* ------------------------------------------------------------ events (log_apply.c) */

/* Applies one event of the GCS stream (loop thread); takes ownership of ev, which is
 * kept until raylet_free_spent. */
void raylet_apply_event(raylet *r, Escher__Event *ev);
/* Frees the events applied so far. */
void raylet_free_spent(raylet *r);

/* ------------------------------------------------------------ GCS link (gcs_link.c) */

/* Creates the link (channel to the GCS, the registration message). */
raylet_link *raylet_link_new(raylet *r);
/* Starts the report thread, which registers the node first. Returns 0 or -1. */
int raylet_link_start(raylet_link *l);
/* Hands the report thread the applied seq and, when not NULL, new rows (taking
 * ownership), and wakes it (loop thread). */
void raylet_link_publish(raylet_link *l, uint64_t applied_seq, raylet_rows *rows);
/* A rows buffer the report thread is done with, for raylet_rows_build; may be NULL. */
raylet_rows *raylet_link_take_spare(raylet_link *l);
/* Stops both threads and waits for them (loop thread). */
void raylet_link_stop(raylet_link *l);
void raylet_link_free(raylet_link *l);

#endif
