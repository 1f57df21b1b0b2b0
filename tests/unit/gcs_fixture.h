/* gcs_fixture.h: a whole GCS in the test's own process (gcs/server.c's life: memory
 * storage, its gRPC server on 127.0.0.1, its loop on a thread of its own), so tests and
 * fuzz targets reach its modules through their real handlers and look at its tables
 * from the loop thread, where they live. */
#ifndef ESC_GCS_FIXTURE_H
#define ESC_GCS_FIXTURE_H

#include <pthread.h>

#include "gcs.h"
#include "rpc.h"

/* The timeouts the fixture starts with: long enough that the GCS's own sweep never
 * fires during a test, which calls the sweeps itself with a `now` of its choosing. */
#define GCSF_NODE_TIMEOUT_MS 600000
#define GCSF_JOB_TIMEOUT_MS 600000
#define GCSF_RETENTION_MS 3600000

typedef struct {
    gcs g;
    gcs_config cfg;
    pthread_t loop_thread;
    char addr[64];
    char token[40];
    char daemon_key[40];
    char operator_key[40];
    esc_rpc_channel *daemon; /* carries the token and the daemon key, as a raylet's */
} gcs_fixture;

/* Starts the GCS (max_resources_per_job: its quota, 0 for the default) and opens
 * f->daemon. 0, or -1 after printing why. */
int gcsf_start(gcs_fixture *f, long max_resources_per_job);
/* Stops the loop, closes the GCS and frees everything. */
void gcsf_stop(gcs_fixture *f);

/* Runs fn(g, ud) on the loop thread and returns once it ran: the one safe way to read
 * or change the GCS's tables from the test. */
void gcsf_on_loop(gcs_fixture *f, void (*fn)(gcs *g, void *ud), void *ud);

/* A channel with the token only (a driver's); free with esc_rpc_channel_free. */
esc_rpc_channel *gcsf_channel(gcs_fixture *f);

/* Registers a node with the daemon channel: address "127.0.0.1:<port>", `cpus` CPUs
 * (whole units), no labels. Writes its id into
 * id_out (64 bytes). Returns the status code. */
int gcsf_register_node(gcs_fixture *f, int port, long cpus, char id_out[64]);

/* Registers a job in namespace ns (ch: a driver's channel, which then carries the
 * job's id and credential). Writes its id into id_out (64 bytes) and, when cred_out is
 * not NULL, its credential (80 bytes). Returns the code. */
int gcsf_register_job(gcs_fixture *f, esc_rpc_channel *ch, const char *ns, char id_out[64],
                      char *cred_out);

#endif
