/* start.h: the state of one `escher start`, shared by cmd_start.c (flags, session,
 * output) and start_daemons.c (spawning the daemons and waiting for them). */
#ifndef ESC_CLI_START_H
#define ESC_CLI_START_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "procs.h"

#define START_TIMEOUT_MS 30000

typedef struct {
    /* flags (NULL / false when not given) */
    bool head, block;
    const char *port, *num_cpus, *num_gpus, *memory, *object_store_memory;
    const char *resources, *labels, *storage, *node_timeout_ms, *node_ip;
    const char *event_history;   /* --event-history, passed to the GCS */
    const char *daemon_key_opt;   /* --daemon-key (joining) */
    const char *bind, *raylet_port, *object_port;
    bool keep;                    /* --keep: the raylet outlives a stopped head */
    const char *dashboard_port;   /* --dashboard-port (head; default "0") */
    const char *metrics_bind;     /* --metrics-bind, passed to both daemons (NULL: theirs) */
    bool no_dashboard;            /* --no-dashboard */
    bool dir_made, dir_created;   /* the session directory: made by this start; new */
    bool started;                 /* every daemon is ready (a failure now keeps the dir) */
    const cli_globals *g;

    /* derived */
    char gcs_bin[PATH_MAX], raylet_bin[PATH_MAX];
    char dir[PATH_MAX];       /* absolute session directory */
    char token[512];
    char daemon_key[512];     /* the daemons' secret (docs/security.md) */
    char operator_key[80];    /* --head only: the operator's secret */
    char ip[64];              /* advertised address of this node */
    char gcs_addr[320];       /* HOST:PORT of the GCS */
    char node_id[64];
    char raylet_addr[320];    /* "" when the GCS did not say */
    cli_proc procs[2];        /* what this command started, in start order */
    size_t nprocs;
    uint64_t deadline_ms;     /* readiness deadline (monotonic) */
    sigset_t sigs;            /* SIGINT, SIGTERM, SIGCHLD: blocked, taken by sigtimedwait */
} start_ctx;

/* Starts escher-gcs and waits until it serves (its port file); fills gcs_addr. Prints
 * the error and returns an exit code. */
int start_gcs(start_ctx *s);

/* Starts escher-raylet and waits until it registered (its node-id file); fills node_id
 * and, when the GCS lists the node, raylet_addr. Prints the error; returns an exit code. */
int start_raylet(start_ctx *s);

/* Asks the GCS for the address under which node_id registered; leaves raylet_addr
 * empty when it can not tell. */
void start_fetch_raylet_address(start_ctx *s);

/* Checks that a GCS answers at gcs_addr and accepts the token (before joining). */
int start_probe_gcs(const start_ctx *s);

/* Stops what this command started (on failure, or at the end of --block), with
 * grace_s seconds between SIGTERM and SIGKILL. */
void start_stop_all(start_ctx *s, double grace_s, bool report);

/* Grace periods: a session that ran gets escher stop's default; one that failed to
 * start has nothing worth waiting for. */
#define START_STOP_GRACE_S 10.0
#define START_FAIL_GRACE_S 2.0

/* Returns an exit code after reporting a started daemon that exited, or 0 when all
 * still run. */
int start_check_children(start_ctx *s);

#endif
