/* metrics.c: the GCS's Prometheus samples (docs/observability.md). The endpoint
 * (runtime/metrics_http.c) calls fill on the loop thread, so the tables are read as
 * they are, without locks. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gcs.h"
#include "log.h"

const double gcs_write_bucket_le[GCS_WRITE_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                        0.025,  0.05,  0.1,    0.25,  0.5,
                                                        1,      2.5};

void gcs_metrics_write_done(gcs *g, double seconds)
{
    if (seconds < 0)
        seconds = 0;
    for (size_t i = 0; i < GCS_WRITE_BUCKETS; i++)
        if (seconds <= gcs_write_bucket_le[i])
            g->write_buckets[i]++;
    g->write_count++;
    g->write_sum_s += seconds;
}

static const char *node_state_name(Escher__NodeState s)
{
    switch (s) {
    case ESCHER__NODE_STATE__NODE_ALIVE: return "alive";
    case ESCHER__NODE_STATE__NODE_DRAINING: return "draining";
    case ESCHER__NODE_STATE__NODE_DEAD: return "dead";
    default: return "unknown";
    }
}

static const char *job_state_name(Escher__JobState s)
{
    switch (s) {
    case ESCHER__JOB_STATE__JOB_RUNNING: return "running";
    case ESCHER__JOB_STATE__JOB_FINISHED: return "finished";
    case ESCHER__JOB_STATE__JOB_FAILED: return "failed";
    default: return "unknown";
    }
}

static void fill(void *ud, esc_metrics_text *t)
{
    gcs *g = ud;
    size_t pos = 0;
    const char *key;
    void *val;

    double nodes[3] = {0};
    esc_metrics_header(t, "escher_gcs_nodes", "gauge", "Nodes in the node table, by state.");
    while (esc_strmap_next(g->nodes, &pos, &key, &val)) {
        gcs_node *n = val;
        if (n->info && (unsigned)n->info->state < 3)
            nodes[n->info->state]++;
    }
    for (int s = 0; s < 3; s++)
        esc_metrics_sample(t, "escher_gcs_nodes",
                           (const char *const[]){"state", node_state_name((Escher__NodeState)s),
                                                 NULL},
                           nodes[s]);

    double jobs[3] = {0};
    esc_metrics_header(t, "escher_gcs_jobs", "gauge", "Jobs in the job table, by state.");
    pos = 0;
    while (esc_strmap_next(g->jobs, &pos, &key, &val)) {
        gcs_job *j = val;
        if (j->info && (unsigned)j->info->state < 3)
            jobs[j->info->state]++;
    }
    for (int s = 0; s < 3; s++)
        esc_metrics_sample(t, "escher_gcs_jobs",
                           (const char *const[]){"state", job_state_name((Escher__JobState)s),
                                                 NULL},
                           jobs[s]);

    esc_metrics_header(t, "escher_gcs_log_committed_seq", "gauge",
                       "Sequence number of the last event committed to the log.");
    esc_metrics_sample(t, "escher_gcs_log_committed_seq", NULL, (double)g->seq);

    esc_metrics_header(t, "escher_gcs_node_applied_seq", "gauge",
                       "Last log sequence number each alive or draining node reported as "
                       "applied (apply lag = committed - applied).");
    pos = 0;
    while (esc_strmap_next(g->nodes, &pos, &key, &val)) {
        gcs_node *n = val;
        if (!n->info || n->info->state == ESCHER__NODE_STATE__NODE_DEAD)
            continue;
        esc_metrics_sample(t, "escher_gcs_node_applied_seq",
                           (const char *const[]){"node", key, NULL}, (double)n->applied_seq);
    }

    esc_metrics_header(t, "escher_gcs_rpc_calls_total", "counter",
                       "RPC calls received by the GCS, by method (any outcome).");
    const char *method;
    uint64_t calls;
    for (size_t i = 0; g->server && esc_rpc_server_method_calls(g->server, i, &method, &calls);
         i++)
        esc_metrics_sample(t, "escher_gcs_rpc_calls_total",
                           (const char *const[]){"method", method, NULL}, (double)calls);

    esc_metrics_header(t, "escher_gcs_storage_write_seconds", "histogram",
                       "Latency of the GCS's writes to storage (a log commit or a table "
                       "write), from sending the batch to its answer.");
    char le[32];
    for (size_t i = 0; i < GCS_WRITE_BUCKETS; i++) {
        snprintf(le, sizeof le, "%g", gcs_write_bucket_le[i]);
        esc_metrics_sample(t, "escher_gcs_storage_write_seconds_bucket",
                           (const char *const[]){"le", le, NULL}, (double)g->write_buckets[i]);
    }
    esc_metrics_sample(t, "escher_gcs_storage_write_seconds_bucket",
                       (const char *const[]){"le", "+Inf", NULL}, (double)g->write_count);
    esc_metrics_sample(t, "escher_gcs_storage_write_seconds_sum", NULL, g->write_sum_s);
    esc_metrics_sample(t, "escher_gcs_storage_write_seconds_count", NULL,
                       (double)g->write_count);
}

int gcs_metrics_start(gcs *g)
{
    if (g->cfg.metrics_port < 0)
        return 0;
    char err[512];
    g->metrics = esc_metrics_http_start(esc_loop_ev(g->loop), g->cfg.metrics_bind,
                                        g->cfg.metrics_port, fill, g, err, sizeof err);
    if (!g->metrics) {
        fprintf(stderr, "escher-gcs: %s\n", err);
        return 1;
    }
    int port = esc_metrics_http_port(g->metrics);
    if (g->cfg.metrics_port_file &&
        esc_metrics_write_port_file(g->cfg.metrics_port_file, port) != 0) {
        fprintf(stderr, "escher-gcs: cannot write %s: %s\n", g->cfg.metrics_port_file,
                strerror(errno));
        return 1;
    }
    ESC_INFO("metrics on http://%s:%d/metrics", g->cfg.metrics_bind, port);
    return 0;
}

void gcs_metrics_stop(gcs *g)
{
    esc_metrics_http_stop(g->metrics);
    g->metrics = NULL;
}
