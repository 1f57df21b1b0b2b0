/* metrics.c: the GCS's Prometheus samples (docs/observability.md). The endpoint
 * (runtime/metrics_http.c) calls fill on the loop thread, so the tables are read as
 * they are, without locks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

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

    esc_metrics_header(t, "escher_gcs_heartbeats_missed_total", "counter",
                       "Heartbeat periods by which an alive node's reports came late (a gap "
                       "of k periods counts k - 1; gaps under 2 periods count nothing).");
    pos = 0;
    while (esc_strmap_next(g->nodes, &pos, &key, &val)) {
        gcs_node *n = val;
        if (gcs_node_alive(n))
            esc_metrics_sample(t, "escher_gcs_heartbeats_missed_total",
                               (const char *const[]){"node", key, NULL},
                               (double)n->heartbeats_missed);
    }

    if (g->server)
        esc_metrics_rpc(t, g->server, "escher_gcs_rpc_calls_total", NULL);

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

/* ------------------------------------------------------------ service discovery */

/* One file_sd_configs entry: {"targets": [address], "labels": {...}}; node_id NULL: no
 * escher_node label (Prometheus drops empty labels anyway). */
static json_t *sd_target(const char *address, const char *role, const char *node_id)
{
    json_t *t = json_pack("{s:[s], s:{s:s}}", "targets", address, "labels", "escher_role", role);
    if (node_id)
        json_object_set_new(json_object_get(t, "labels"), "escher_node", json_string(node_id));
    return t;
}

/* Where others reach the GCS's endpoint: its bind, else its gRPC bind, else the host. */
static void gcs_metrics_address(const gcs *g, char *out, size_t len)
{
    const char *host = g->cfg.metrics_bind;
    char name[256];
    if (esc_metrics_wildcard(host))
        host = g->cfg.bind;
    if (esc_metrics_wildcard(host)) {
        if (gethostname(name, sizeof name) != 0)
            snprintf(name, sizeof name, "localhost");
        name[sizeof name - 1] = '\0';
        host = name;
    }
    esc_host_port(out, len, host, esc_metrics_http_port(g->metrics));
}

/* Rewrites --metrics-sd-file: the GCS's endpoint and every alive or draining node's that
 * has one (NodeInfo.metrics_address), in Prometheus's file_sd_configs format. Prometheus
 * rereads the file when it changes; the rename makes each version whole. */
static void write_sd_file(gcs *g)
{
    if (!g->cfg.metrics_sd_file)
        return;
    json_t *list = json_array();
    if (g->metrics) {
        char addr[300];
        gcs_metrics_address(g, addr, sizeof addr);
        json_array_append_new(list, sd_target(addr, "gcs", NULL));
    }
    size_t pos = 0;
    const char *id;
    void *val;
    while (esc_strmap_next(g->nodes, &pos, &id, &val)) {
        const gcs_node *n = val;
        if (gcs_node_alive(n) && n->info->metrics_address && *n->info->metrics_address)
            json_array_append_new(list, sd_target(n->info->metrics_address, "raylet", id));
    }
    char *text = json_dumps(list, JSON_INDENT(2));
    json_decref(list);
    if (!text || esc_metrics_write_file(g->cfg.metrics_sd_file, text) != 0)
        ESC_WARN("cannot write %s: %s", g->cfg.metrics_sd_file, strerror(errno));
    free(text);
}

void gcs_metrics_event(gcs *g, const Escher__Event *ev)
{
    if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_ADDED ||
        ev->kind == ESCHER__EVENT_KIND__EV_NODE_DEAD)
        write_sd_file(g);
}

int gcs_metrics_start(gcs *g)
{
    if (g->cfg.metrics_port < 0) {
        write_sd_file(g); /* the raylets' endpoints only */
        return 0;
    }
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
    write_sd_file(g); /* the nodes loaded from storage, if any, and this GCS */
    return 0;
}

void gcs_metrics_stop(gcs *g)
{
    esc_metrics_http_stop(g->metrics);
    g->metrics = NULL;
}
