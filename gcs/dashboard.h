/* dashboard.h: the GCS dashboard's parts (docs/observability.md, "Dashboard").
 *   dashboard.c       the HTTP routes, the token check, the event stream and the
 *                     capacity history kept per registry row
 *   dashboard_json.c  the GCS tables as JSON documents (jansson)
 * Everything runs on the GCS loop thread. */
#ifndef ESC_GCS_DASHBOARD_H
#define ESC_GCS_DASHBOARD_H

#include <jansson.h>

#include "gcs.h"
#include "http_server.h"

/* Capacity changes kept per registry row (the page's history plots). */
#define GCS_DASH_HISTORY 32

/* The history of one registry row: the last GCS_DASH_HISTORY capacities it had, oldest
 * first, each at the wall-clock time (ms) its event was committed. */
typedef struct {
    uint64_t t_ms[GCS_DASH_HISTORY];
    uint64_t seq[GCS_DASH_HISTORY];
    int64_t value[GCS_DASH_HISTORY];
    bool unbounded[GCS_DASH_HISTORY];
    size_t start, len;
} gcs_dash_history;

/* The row's history (registry key, gcs_registry_key), or NULL when none was seen. */
const gcs_dash_history *gcs_dashboard_history(const gcs *g, const char *key);

/* ---- dashboard_json.c: new references, NULL only when out of memory ---- */
/* A quantity as a JSON number of units (null when unbounded). */
json_t *gcs_dash_qty(int64_t q, bool unbounded);
/* Every node: id, address, hostname, state, labels, applied_seq, its resource rows
 * (name, total, held, available, ephemeral...) and its queued demand. */
json_t *gcs_dash_nodes(gcs *g);
/* Per resource name, the sums over alive nodes. */
json_t *gcs_dash_totals(gcs *g);
/* Queued demand by shape, per node, with what is missing. */
json_t *gcs_dash_demand(gcs *g);
/* The registry: one row per (node, ephemeral resource) with owner, namespace, the
 * node's held/available for it and its capacity history. */
json_t *gcs_dash_resources(gcs *g);
/* The jobs with their state. */
json_t *gcs_dash_jobs(gcs *g);
/* ---- dashboard_tasks.c ---- */
/* Answers GET /api/jobs/<job_id>/tasks (the caller checked the token): asks every alive
 * node's raylet for the job's tasks and answers {"tasks": [...], "total": N,
 * "unreachable": [node ids]} once all replied or timed out (2 s each). 404 for a job the
 * GCS does not know. */
void gcs_dash_job_tasks(gcs *g, esc_http_req *r, const char *job_id);

/* ---- dashboard_logs.c ---- */
/* Answers GET /api/tasks/<task_id>/logs?node=<node_id> (the caller checked the token):
 * the last 64 KiB of the task's output as that node's raylet serves it, {"task_id",
 * "node", "found", "truncated", "text", "error"}; 404 when node_id names no alive node. */
void gcs_dash_task_logs(gcs *g, esc_http_req *r, const char *task_id, const char *node_id);

/* One event of the GCS's broadcast as the stream sends it. */
json_t *gcs_dash_event(const Escher__Event *ev, uint64_t wall_ms);

#endif
