/* task_client.c: esc_task_client, the SDK from inside a task or an actor method (task.h).
 *
 * escher-worker links the whole of libescher and exports it (raylet/CMakeLists.txt), so a
 * task library calls escher.h's functions without linking anything itself. A worker
 * serves one job, so one client per worker process serves every task it runs: made at
 * the first call from what the raylet put in the worker's environment (ESCHER_ADDRESS,
 * ESCHER_TOKEN, ESCHER_JOB_ID, ESCHER_JOB_CREDENTIAL, ESCHER_NODE_ID), which makes
 * esc_connect join the job rather than register one; disconnected when the worker
 * exits (joining clients never end their job). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "escher/escher.h"
#include "escher/task.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static esc_client *g_client;

static void disconnect_at_exit(void)
{
    esc_disconnect(g_client);
    g_client = NULL;
}

/* The worker's client, connected at the first call. */
static int worker_client(esc_client **out, esc_status *st)
{
    const char *job = getenv("ESCHER_JOB_ID");
    if (!job || !*job)
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "not in a worker that escher started for a job (no ESCHER_JOB_ID)");
    pthread_mutex_lock(&g_mu);
    int rc = ESC_OK;
    if (!g_client) {
        esc_connect_opts o = {0};
        rc = esc_connect(&o, &g_client, st);
        if (rc == ESC_OK)
            atexit(disconnect_at_exit);
    }
    *out = g_client;
    pthread_mutex_unlock(&g_mu);
    return rc;
}

int esc_task_client(esc_task_ctx *ctx, esc_client **out, esc_status *st)
{
    if (!ctx || !out)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "esc_task_client: NULL ctx or out");
    *out = NULL;
    esc_client *c = NULL;
    int rc = worker_client(&c, st);
    if (rc != ESC_OK)
        return rc;
    if (strcmp(esc_client_job_id(c), esc_task_job_id(ctx)) != 0)
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "the worker's job %s is not the task's job %s",
                              esc_client_job_id(c), esc_task_job_id(ctx));
    *out = c;
    return ESC_OK;
}
