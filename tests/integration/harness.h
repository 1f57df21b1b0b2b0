/* harness.h: starts real escher processes on loopback for integration tests: one GCS,
 * raylets, optionally a private redis-server, all in a temporary directory, and stops
 * them at the end. Binaries come from $ESCHER_BIN_DIR (the build directory). */
#ifndef ESC_HARNESS_H
#define ESC_HARNESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "escher/escher.h"
#include "rpc.h" /* tests also make raw calls to the daemons */

#define H_MAX_RAYLETS 256

typedef struct {
    pid_t pid;
    int port;
    char node_id[80];
    char extra[512];
    /* Set before h_raylet_start: the raylet runs in a mount namespace of its own with an
     * empty tmpfs over this directory, so it (and its workers) cannot see what the test
     * put there: a second "host" on one machine. Needs root and unshare(1). */
    char hide_dir[256];
} h_raylet;

typedef struct {
    char dir[256];
    char token[80];
    char token_file[300];
    char daemon_key[80];      /* the daemons' secret: DIR/daemon_key */
    char daemon_key_file[300];
    char operator_key[80];    /* operator stops: DIR/operator (found by esc_job_stop) */
    char operator_file[300];
    char gcs_addr[64];
    int gcs_port;
    pid_t gcs_pid;
    char storage[128];        /* "" = memory */
    int node_timeout_ms;
    int job_timeout_ms;
    char gcs_extra[256];      /* more GCS flags, space-separated; "" = none */
    h_raylet raylets[H_MAX_RAYLETS];
    int nraylets;
    pid_t redis_pid;
    int redis_port;
} h_cluster;

/* A free TCP port on loopback. */
int h_free_port(void);

/* The value of one sample scraped from http://127.0.0.1:port/metrics: series is the
 * metric's name with its labels exactly as exposed ("escher_gcs_rpc_calls_total{method=
 * \"GetLocations\"}"). False when the endpoint does not answer or has no such sample. */
bool h_metric(int port, const char *series, double *out);

/* Makes the directory, the token, the daemon key and the operator key; no process yet. node_timeout_ms 0 = 2000. */
void h_init(h_cluster *c, int node_timeout_ms);

/* Starts a private redis-server and points the GCS storage at it. Returns 0 or -1. */
int h_redis_start(h_cluster *c);

/* Starts a private redis-server that appends every write to a file in the cluster
 * directory and fsyncs it before answering (appendfsync always), so a `kill -9` loses
 * nothing acknowledged; called again after such a kill, restarts it on the same port
 * from that file. Points the GCS storage at it. Returns 0 once it accepts connections,
 * or -1. */
int h_redis_start_durable(h_cluster *c);

/* Starts (or restarts, on the same port) the GCS and waits until it serves. */
int h_gcs_start(h_cluster *c);

/* Starts raylet i (extra: more flags, e.g. "--resources foo=2", may be NULL) and waits
 * until it registered. Returns 0 or -1. */
int h_raylet_start(h_cluster *c, int i, const char *extra);

/* Sends sig to a process and, for SIGKILL/SIGTERM, reaps it. */
void h_kill(pid_t *pid, int sig);

/* True while the process runs (not exited, not reaped). */
bool h_alive(pid_t pid);

/* Starts the GCS of a cluster made by h_init, then raylets 0..n-1, raylet i with the
 * flags extras[i] (extras or an entry NULL: none). 0, or -1 at the first that fails
 * (what started keeps running until h_stop). */
int h_start_cluster(h_cluster *c, int n, const char *const *extras);

/* cmocka group teardown for a cluster: h_stop(*state); the group setup stores the
 * cluster's address in *state. Returns 0. */
int h_teardown(void **state);

/* Path of the test task library, $ESCHER_BIN_DIR/tests/tasks/libescher_test_tasks.so
 * (build/ when the variable is unset); static storage, valid until the next call. */
const char *h_tasks_lib(void);

/* Connects a client in namespace ns (NULL: default) whose local node is raylet `local`
 * (-1: none). Fails the test on error. */
esc_client *h_connect(h_cluster *c, const char *ns, int local, bool detached);
/* A client of the same job as `of` (esc_connect_opts.join) whose local node is raylet
 * `local`: one driver on several nodes. Disconnect it before `of`. */
esc_client *h_join(h_cluster *c, esc_client *of, int local);

/* Stops everything and removes the directory. A GCS or raylet that does not exit 0 on
 * SIGTERM (a crash, or a leak report under ASan) is counted and its log shown. */
void h_stop(h_cluster *c);

/* Daemons that did not exit cleanly so far; tests fail when it is not 0. */
int h_unclean_exits(void);

/* Milliseconds of a monotonic clock. */
double h_now_ms(void);

/* Prints the last lines of every daemon's log to stderr (for a failure's report). */
void h_show_logs(h_cluster *c, int lines);

/* Polls cond-like check every 20 ms until it returns true or timeout_ms passes. */
bool h_wait_until(bool (*check)(void *), void *arg, int timeout_ms);

/* A fresh path for a marker file (the marked_stamp task creates it when it starts), not
 * existing yet; size >= 64. */
void h_marker_path(char *out, size_t size);

/* Waits until the file at path exists (a task started), then removes it. */
bool h_wait_marker(const char *path, int timeout_ms);

#endif
