/* metrics.c: the raylet's Prometheus samples (docs/observability.md). The endpoint
 * (runtime/metrics_http.c) calls fill on the loop thread, which owns the accounting
 * table and the task and worker tables. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "actor_manager.h"
#include "ids.h"
#include "log.h"
#include "metrics_http.h"
#include "object_service.h"
#include "qty.h"
#include "raylet.h"
#include "rpc.h"
#include "task_manager.h"
#include "worker_pool.h"
#include "xalloc.h"

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

/* ------------------------------------------------------------ families */

static void object_families(esc_metrics_text *t, const raylet *r, const char *const *node)
{
    object_store_stats st = {0};
    if (r->objects)
        object_service_stats(r->objects, &st);
    esc_metrics_header(t, "escher_raylet_object_store_objects", "gauge",
                       "Objects in this node's store (sealed and being written).");
    esc_metrics_sample(t, "escher_raylet_object_store_objects", node, (double)st.objects);
    esc_metrics_header(t, "escher_raylet_object_store_bytes", "gauge",
                       "Bytes the objects of this node's store take (written or reserved).");
    esc_metrics_sample(t, "escher_raylet_object_store_bytes", node, (double)st.used);
    esc_metrics_header(t, "escher_raylet_object_store_capacity_bytes", "gauge",
                       "Capacity of this node's object store.");
    esc_metrics_sample(t, "escher_raylet_object_store_capacity_bytes", node,
                       (double)st.capacity);
}

static const char *const actor_states[] = {"STARTING", "ALIVE", "RESTARTING", "DEAD"};
#define NACTOR_STATES (sizeof actor_states / sizeof actor_states[0])

static void count_actor(void *ud, const actor_row *row)
{
    unsigned *n = ud;
    for (size_t i = 0; i < NACTOR_STATES; i++)
        if (!strcmp(row->state, actor_states[i]))
            n[i]++;
}

static void actor_family(esc_metrics_text *t, const raylet *r)
{
    unsigned n[NACTOR_STATES] = {0};
    if (r->actors)
        actor_manager_each(r->actors, count_actor, n);
    esc_metrics_header(t, "escher_raylet_actors", "gauge",
                       "Actors this node hosts, by state (dead ones while kept).");
    for (size_t i = 0; i < NACTOR_STATES; i++) {
        char state[16];
        size_t k = 0;
        for (; actor_states[i][k] && k < sizeof state - 1; k++)
            state[k] = (char)(actor_states[i][k] | 0x20); /* lower case, as other states */
        state[k] = '\0';
        esc_metrics_sample(t, "escher_raylet_actors",
                           (const char *const[]){"node", r->node_id, "state", state, NULL},
                           (double)n[i]);
    }
}

/* A shape as one label value: "CPU:1,ns/x:2", names in the order the queue keeps. */
static void shape_label(const Escher__Demand *d, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < d->n_shape && off < len; i++) {
        char q[40];
        esc_qty_format(d->shape[i]->value, q, sizeof q);
        off += (size_t)snprintf(out + off, len - off, "%s%s:%s", i ? "," : "",
                                d->shape[i]->name, q);
    }
}

/* At most this many shapes get a series of their own; the rest are summed under
 * shape="other", so a queue of many shapes cannot blow up the label set. */
#define DEMAND_SHAPES_MAX 32

static void demand_family(esc_metrics_text *t, const raylet *r)
{
    esc_metrics_header(t, "escher_raylet_demand_tasks", "gauge",
                       "Tasks queued on this node by the resources they ask for (shape).");
    if (!r->tasks)
        return;
    size_t n = 0;
    Escher__Demand **d = task_manager_demand(r->tasks, &n);
    double other = 0;
    char shape[512];
    for (size_t i = 0; i < n; i++) {
        if (i >= DEMAND_SHAPES_MAX) {
            other += d[i]->count;
            continue;
        }
        shape_label(d[i], shape, sizeof shape);
        esc_metrics_sample(t, "escher_raylet_demand_tasks",
                           (const char *const[]){"node", r->node_id, "shape", shape, NULL},
                           (double)d[i]->count);
    }
    if (n > DEMAND_SHAPES_MAX)
        esc_metrics_sample(t, "escher_raylet_demand_tasks",
                           (const char *const[]){"node", r->node_id, "shape", "other", NULL},
                           other);
    task_manager_demand_free(d, n);
}

/* At most this many jobs get series of their own, those with the most tasks here; the
 * rest are summed under job="other" (a job id label is bounded by the cap, not by how
 * many jobs a cluster runs). */
#define JOB_SERIES_MAX 20

typedef struct {
    char job[ESC_OBJECT_ID_MAX]; /* a job id (16 hex digits), with room to spare */
    size_t queued, running;
} job_count;

typedef struct {
    job_count *v;
    size_t n, cap;
} job_counts;

static void add_job_count(void *ud, const char *job_id, size_t queued, size_t running)
{
    job_counts *jc = ud;
    if (jc->n == jc->cap) {
        jc->cap = jc->cap ? 2 * jc->cap : 16;
        jc->v = esc_xrealloc(jc->v, jc->cap * sizeof *jc->v);
    }
    job_count *c = &jc->v[jc->n++];
    snprintf(c->job, sizeof c->job, "%s", job_id);
    c->queued = queued;
    c->running = running;
}

static int most_tasks_first(const void *a, const void *b)
{
    const job_count *x = a, *y = b;
    size_t nx = x->queued + x->running, ny = y->queued + y->running;
    return nx < ny ? 1 : nx > ny ? -1 : strcmp(x->job, y->job);
}

static void job_sample(esc_metrics_text *t, const raylet *r, const char *job, size_t queued,
                       size_t running)
{
    esc_metrics_sample(t, "escher_raylet_job_tasks",
                       (const char *const[]){"node", r->node_id, "job", job, "state",
                                             "queued", NULL},
                       (double)queued);
    esc_metrics_sample(t, "escher_raylet_job_tasks",
                       (const char *const[]){"node", r->node_id, "job", job, "state",
                                             "running", NULL},
                       (double)running);
}

static void job_family(esc_metrics_text *t, const raylet *r)
{
    esc_metrics_header(t, "escher_raylet_job_tasks", "gauge",
                       "Tasks queued and running on this node, by job (the 20 jobs with the "
                       "most here; the rest as job=\"other\").");
    if (!r->tasks)
        return;
    job_counts jc = {0};
    task_manager_job_counts(r->tasks, add_job_count, &jc);
    if (jc.n)
        qsort(jc.v, jc.n, sizeof *jc.v, most_tasks_first);
    size_t oq = 0, orun = 0;
    for (size_t i = 0; i < jc.n; i++) {
        if (i < JOB_SERIES_MAX) {
            job_sample(t, r, jc.v[i].job, jc.v[i].queued, jc.v[i].running);
        } else {
            oq += jc.v[i].queued;
            orun += jc.v[i].running;
        }
    }
    if (jc.n > JOB_SERIES_MAX)
        job_sample(t, r, "other", oq, orun);
    free(jc.v);
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
    esc_metrics_header(t, "escher_raylet_worker_reuses_total", "counter",
                       "Tasks given a worker that was already running and idle.");
    esc_metrics_sample(t, "escher_raylet_worker_reuses_total", node,
                       r->pool ? (double)worker_pool_reused(r->pool) : 0);

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

    object_families(t, r, node);
    actor_family(t, r);
    demand_family(t, r);
    job_family(t, r);
    if (r->server)
        esc_metrics_rpc(t, r->server, "escher_raylet_rpc_calls_total", node);
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
