/* metrics.c: the raylet's Prometheus samples (docs/observability.md). The endpoint
 * (runtime/metrics_http.c) calls fill on the loop thread, which owns the accounting
 * table and the task and worker tables. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "accounting.h"
#include "log.h"
#include "metrics_http.h"
#include "qty.h"
#include "raylet.h"
#include "rpc.h"
#include "task_manager.h"
#include "worker_pool.h"

/* Splits an accounting name: "<ns>/<name>" is ephemeral, anything else physical (the
 * namespace label is then ""). */
static void split_name(const char *full, char *ns, size_t nslen, const char **name)
{
    const char *slash = strchr(full, '/');
    if (!slash) {
        ns[0] = '\0';
        *name = full;
        return;
    }
    snprintf(ns, nslen, "%.*s", (int)(slash - full), full);
    *name = slash + 1;
}

static void resource_family(esc_metrics_text *t, const raylet *r, const char *metric,
                            const char *help, int which)
{
    esc_metrics_header(t, metric, "gauge", help);
    size_t n = accounting_count(r->acct);
    for (size_t i = 0; i < n; i++) {
        accounting_row row;
        if (!accounting_row_at(r->acct, i, &row) || row.deleted)
            continue;
        char ns[256];
        const char *name;
        split_name(row.name, ns, sizeof ns, &name);
        double total = row.unbounded ? INFINITY : esc_qty_to_double(row.total);
        double held = esc_qty_to_double(row.held);
        double v = which == 0 ? total : which == 1 ? held : total - held;
        const char *labels[] = {"node",      r->node_id, "resource", name, "namespace", ns,
                                "kind", row.physical ? "physical" : "ephemeral", NULL};
        esc_metrics_sample(t, metric, labels, v);
    }
}

static void fill(void *ud, esc_metrics_text *t)
{
    raylet *r = ud;
    const char *node[] = {"node", r->node_id, NULL};
    resource_family(t, r, "escher_resource_total",
                    "Capacity of a resource on this node, in units of the resource "
                    "(+Inf when unbounded).", 0);
    resource_family(t, r, "escher_resource_held",
                    "Quantity of a resource held by running tasks, actors and leases.", 1);
    resource_family(t, r, "escher_resource_available",
                    "Capacity minus held (negative after a shrink below held).", 2);

    esc_metrics_header(t, "escher_raylet_tasks_queued", "gauge",
                       "Tasks waiting on this node (for resources, arguments or packages).");
    esc_metrics_sample(t, "escher_raylet_tasks_queued", node,
                       r->tasks ? (double)task_manager_queued(r->tasks) : 0);
    esc_metrics_header(t, "escher_raylet_tasks_running", "gauge",
                       "Tasks running on this node.");
    esc_metrics_sample(t, "escher_raylet_tasks_running", node,
                       r->tasks ? (double)task_manager_running(r->tasks) : 0);

    static const char *const outcomes[TASK_OUTCOMES] = {"succeeded", "failed", "retried"};
    esc_metrics_header(t, "escher_raylet_tasks_ended_total", "counter",
                       "Runs of tasks that ended on this node, by outcome: succeeded, failed "
                       "(an error result for the owner) or retried (a retryable failure, "
                       "run again).");
    for (int o = 0; o < TASK_OUTCOMES; o++)
        esc_metrics_sample(t, "escher_raylet_tasks_ended_total",
                           (const char *const[]){"node", r->node_id, "outcome", outcomes[o],
                                                 NULL},
                           r->tasks ? (double)task_manager_ended(r->tasks, (task_outcome)o)
                                    : 0);

    esc_metrics_header(t, "escher_raylet_workers_started_total", "counter",
                       "Worker processes this node forked.");
    esc_metrics_sample(t, "escher_raylet_workers_started_total", node,
                       r->pool ? (double)worker_pool_started(r->pool) : 0);

    size_t size = r->pool ? worker_pool_size(r->pool) : 0;
    size_t busy = r->pool ? worker_pool_busy(r->pool) : 0;
    esc_metrics_header(t, "escher_raylet_workers", "gauge",
                       "Worker processes of this node, busy (running or starting for a "
                       "task) or idle (the rest, stopping ones included).");
    esc_metrics_sample(t, "escher_raylet_workers",
                       (const char *const[]){"node", r->node_id, "state", "busy", NULL},
                       (double)busy);
    esc_metrics_sample(t, "escher_raylet_workers",
                       (const char *const[]){"node", r->node_id, "state", "idle", NULL},
                       (double)(size - busy));

    esc_metrics_header(t, "escher_raylet_log_applied_seq", "gauge",
                       "Sequence number of the last GCS log event applied on this node.");
    esc_metrics_sample(t, "escher_raylet_log_applied_seq", node, (double)r->applied_seq);
}

int raylet_metrics_start(raylet *r, char *err, size_t errlen)
{
    if (r->cfg.metrics_port < 0)
        return 0;
    r->metrics = esc_metrics_http_start(esc_loop_ev(r->loop), r->cfg.metrics_bind,
                                        r->cfg.metrics_port, fill, r, err, errlen);
    if (!r->metrics)
        return -1;
    int port = esc_metrics_http_port(r->metrics);
    if (r->cfg.metrics_port_file &&
        esc_metrics_write_port_file(r->cfg.metrics_port_file, port) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", r->cfg.metrics_port_file,
                 strerror(errno));
        return -1;
    }
    /* Others reach a wildcard bind at the node's address (its gRPC server's host). */
    const char *host = esc_metrics_wildcard(r->cfg.metrics_bind) ? r->cfg.node_ip
                                                                  : r->cfg.metrics_bind;
    esc_host_port(r->metrics_address, sizeof r->metrics_address, host, port);
    ESC_INFO("metrics on http://%s/metrics", r->metrics_address);
    return 0;
}

void raylet_metrics_stop(raylet *r)
{
    esc_metrics_http_stop(r->metrics);
    r->metrics = NULL;
}
