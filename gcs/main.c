/* main.c: escher-gcs. Parses flags, loads storage, serves the Gcs service from one event
 * loop, and shuts down cleanly on SIGTERM/SIGINT. */
#include <errno.h>
#include <signal.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_calls.h"
#include "gcs.h"
#include "metrics_http.h"
#include "ids.h"
#include "log.h"
#include "port_probe.h"
#include "token_file.h"
#include "version.h"

/* What parse_flags returns after --help or --version: exit 0. */
#define CLI_DONE (-1)

static const char usage_text[] =
    "usage: escher-gcs [--bind HOST] [--port P] [--port-file F] [--token-file F]\n"
    "                  [--daemon-key-file F] [--operator-key-file F]\n"
    "                  [--storage memory|redis://HOST:PORT] [--node-timeout-ms N]\n"
    "                  [--heartbeat-ms N] [--job-timeout-ms N] [--max-resources-per-job N]\n"
    "                  [--storage-timeout-ms N] [--dead-node-retention-ms N]\n"
    "                  [--metrics-port P] [--metrics-bind HOST] [--metrics-port-file F]\n"
    "                  [--metrics-sd-file F]\n"
    "                  [--dashboard-port P] [--dashboard-bind HOST]\n"
    "                  [--dashboard-port-file F] [--dashboard-dir DIR]\n"
    "                  [--event-history N] [--help] [--version]\n"
    "  --bind HOST   listen address (default 0.0.0.0)\n"
    "  --port P      port (default 6380; 0 picks a free one, written to --port-file)\n"
    "  --metrics-port P       serve Prometheus metrics on http://HOST:P/metrics (0 picks a\n"
    "                         free port, written to --metrics-port-file; default: off)\n"
    "  --metrics-bind HOST    the metrics listen address (default 127.0.0.1)\n"
    "  --metrics-sd-file F    keep F a Prometheus file_sd_configs list of this GCS's and\n"
    "                         every alive raylet's metrics endpoint (with --metrics-port)\n"
    "  --dashboard-port P     serve the web dashboard on http://HOST:P/ (0 picks a free\n"
    "                         port, written to --dashboard-port-file; default: off); it\n"
    "                         asks for the cluster token (docs/observability.md)\n"
    "  --dashboard-bind HOST  the dashboard listen address (default 127.0.0.1)\n"
    "  --dashboard-dir DIR    the page's files (default: the installed copy)\n"
    "  --event-history N      events kept in the history (`escher events`; default 10000)\n";

static int usage(const char *msg)
{
    fprintf(stderr, "escher-gcs: %s\n", msg);
    fprintf(stderr, "usage: escher-gcs [--bind HOST] [--port P] [--port-file F] [--token-file F]"
                    " [--daemon-key-file F] [--operator-key-file F]"
                    " [--storage memory|redis://HOST:PORT] [--node-timeout-ms N]"
                    " [--heartbeat-ms N] [--job-timeout-ms N] [--max-resources-per-job N]"
                    " [--storage-timeout-ms N] [--dead-node-retention-ms N]"
                    " [--metrics-port P] [--metrics-bind HOST] [--metrics-port-file F]"
                    " [--dashboard-port P] [--dashboard-bind HOST] [--dashboard-port-file F]"
                    " [--dashboard-dir DIR]"
                    " [--event-history N]\n");
    return 2;
}

/* A secret from the file at path, else from the environment variable env (which is
 * then removed, so nothing this process starts inherits it). A file that cannot be read
 * or holds no valid secret prints one line and gives NULL. */
static char *read_secret(const char *path, const char *env_name)
{
    const char *env = getenv(env_name);
    char *from_env = env && *env ? strdup(env) : NULL;
    unsetenv(env_name);
    if (!path)
        return from_env;
    if (from_env)
        memset(from_env, 0, strlen(from_env));
    free(from_env);
    char err[1024];
    char *s = esc_token_file_read(path, err, sizeof err);
    if (!s)
        fprintf(stderr, "escher-gcs: %s\n", err);
    return s;
}

/* Files of the secrets (NULL: from the environment). */
typedef struct {
    const char *token, *daemon_key, *operator_key;
} secret_files;

/* The token and the daemon key are required; the operator key is not (without it,
 * operator stops are refused). 0, or 2 after printing what is missing. */
static int read_secrets(gcs_config *c, const secret_files *f)
{
    c->token = read_secret(f->token, "ESCHER_TOKEN");
    c->daemon_key = read_secret(f->daemon_key, "ESCHER_DAEMON_KEY");
    c->operator_key = read_secret(f->operator_key, "ESCHER_OPERATOR_KEY");
    /* A file given but not read: read_secret printed why, in one line. */
    if ((f->token && !c->token) || (f->daemon_key && !c->daemon_key) ||
        (f->operator_key && !c->operator_key))
        return 2;
    const char *missing = !c->token ? "cluster token (give --token-file or set ESCHER_TOKEN)"
                          : !c->daemon_key ? "daemon key (give --daemon-key-file or set "
                                             "ESCHER_DAEMON_KEY)"
                          : NULL;
    if (!missing)
        return 0;
    fprintf(stderr, "escher-gcs: no %s\n", missing);
    return 2;
}

static void free_secret(char *s)
{
    if (s)
        memset(s, 0, strlen(s));
    free(s);
}

static void free_secrets(gcs_config *c)
{
    free_secret(c->token);
    free_secret(c->daemon_key);
    free_secret(c->operator_key);
}

static bool parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int parse_flags(int argc, char **argv, gcs_config *c, secret_files *files)
{
    static const struct option opts[] = {
        {"bind", required_argument, 0, 'b'},          {"port", required_argument, 0, 'p'},
        {"port-file", required_argument, 0, 'f'},     {"token-file", required_argument, 0, 't'},
        {"storage", required_argument, 0, 's'},       {"node-timeout-ms", required_argument, 0, 'n'},
        {"heartbeat-ms", required_argument, 0, 'h'},  {"job-timeout-ms", required_argument, 0, 'j'},
        {"max-resources-per-job", required_argument, 0, 'q'},
        {"storage-timeout-ms", required_argument, 0, 'w'},
        {"dead-node-retention-ms", required_argument, 0, 'r'},
        {"daemon-key-file", required_argument, 0, 'd'},
        {"operator-key-file", required_argument, 0, 'o'},
        {"metrics-port", required_argument, 0, 'm'},
        {"metrics-bind", required_argument, 0, 'M'},
        {"metrics-port-file", required_argument, 0, 'F'},
        {"metrics-sd-file", required_argument, 0, 'S'},
        {"dashboard-port", required_argument, 0, 'D'},
        {"dashboard-bind", required_argument, 0, 'B'},
        {"dashboard-port-file", required_argument, 0, 'P'},
        {"dashboard-dir", required_argument, 0, 'W'},
        {"event-history", required_argument, 0, 'E'},
        {"help", no_argument, 0, 'H'},                {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    int o;
    long v;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'H': fputs(usage_text, stdout); return CLI_DONE;
        case 'V': printf("escher-gcs %s\n", ESC_VERSION); return CLI_DONE;
        case 'b': c->bind = optarg; break;
        case 'p': if (!parse_int(optarg, 0, 65535, &v)) return usage("bad --port"); c->port = (int)v; break;
        case 'f': c->port_file = optarg; break;
        case 'm': if (!parse_int(optarg, 0, 65535, &v)) return usage("bad --metrics-port"); c->metrics_port = (int)v; break;
        case 'M': c->metrics_bind = optarg; break;
        case 'F': c->metrics_port_file = optarg; break;
        case 'S': c->metrics_sd_file = optarg; break;
        case 'D': if (!parse_int(optarg, 0, 65535, &v)) return usage("bad --dashboard-port"); c->dashboard_port = (int)v; break;
        case 'B': c->dashboard_bind = optarg; break;
        case 'P': c->dashboard_port_file = optarg; break;
        case 'W': c->dashboard_dir = optarg; break;
        case 'E': if (!parse_int(optarg, 1, 1000000, &v)) return usage("bad --event-history (1..1000000 events)"); c->event_history = v; break;
        case 't': files->token = optarg; break;
        case 'd': files->daemon_key = optarg; break;
        case 'o': files->operator_key = optarg; break;
        case 's': c->storage_uri = optarg; break;
        case 'n': if (!parse_int(optarg, 50, 86400000, &v)) return usage("bad --node-timeout-ms"); c->node_timeout_ms = (int)v; break;
        case 'h': if (!parse_int(optarg, 10, 60000, &v)) return usage("bad --heartbeat-ms"); c->heartbeat_ms = (int)v; break;
        case 'j': if (!parse_int(optarg, 50, 86400000, &v)) return usage("bad --job-timeout-ms"); c->job_timeout_ms = (int)v; break;
        case 'q': if (!parse_int(optarg, 1, 100000000, &v)) return usage("bad --max-resources-per-job"); c->max_resources_per_job = v; break;
        case 'w': if (!parse_int(optarg, 10, 3600000, &v)) return usage("bad --storage-timeout-ms"); c->storage_timeout_ms = (int)v; break;
        case 'r': if (!parse_int(optarg, 0, 86400000, &v)) return usage("bad --dead-node-retention-ms"); c->dead_node_retention_ms = (int)v; break;
        default: return usage("unknown flag");
        }
    }
    if (optind != argc)
        return usage("unexpected argument");
    return 0;
}

static void on_sweep(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    gcs *g = t->data;
    uint64_t now = esc_now_ms();
    gcs_nodes_sweep(g, now);
    gcs_jobs_sweep(g, now);
}

/* SIGUSR1 (`escher stop --all`): every raylet is told to exit now; the GCS itself
 * stops once they hung up (or after STOP_ALL_WAIT_MS), so raylets go first. */
#define STOP_ALL_WAIT_MS 5000

static void on_stop_all_tick(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    gcs *g = t->data;
    if (gcs_pubsub_raylets(g) == 0 || esc_now_ms() >= g->stop_all_deadline_ms)
        esc_loop_stop(g->loop);
}

static void on_stop_all(struct ev_loop *ev, ev_signal *w, int revents)
{
    (void)revents;
    gcs *g = w->data;
    if (g->stop_all)
        return;
    ESC_INFO("stopping the whole cluster (SIGUSR1): %zu raylet(s) told to exit",
             gcs_pubsub_raylets(g));
    g->stop_all = true;
    gcs_pubsub_stopping(g);
    g->stop_all_deadline_ms = esc_now_ms() + STOP_ALL_WAIT_MS;
    ev_timer_init(&g->stop_all_timer, on_stop_all_tick, 0.05, 0.05);
    g->stop_all_timer.data = g;
    ev_timer_start(ev, &g->stop_all_timer);
}

static void register_services(gcs *g)
{
    gcs_nodes_register(g);
    gcs_pubsub_register(g);
    gcs_registry_register(g);
    gcs_wait_register(g);
    gcs_status_register(g);
    gcs_jobs_register(g);
    gcs_grants_register(g);
    gcs_kv_register(g);
    gcs_packages_register(g);
    gcs_objects_register(g);
    gcs_history_register(g);
}

static void gcs_free_tables(gcs *g)
{
    gcs_nodes_free(g);
    gcs_registry_free(g);
    gcs_jobs_free(g);
    gcs_kv_free(g);
    gcs_objects_free(g);
    gcs_ring_free(&g->ring);
    gcs_history_free(g);
}

static int serve(gcs *g)
{
    char err[512], addr[300];
    snprintf(addr, sizeof addr, "%s:%d", g->cfg.bind, g->cfg.port);
    /* From here on writes reach storage from the loop, without blocking it; the loading
     * before this point could stay synchronous, as nothing was served yet. */
    if (esc_storage_attach(g->store, esc_loop_ev(g->loop), err, sizeof err) != 0) {
        fprintf(stderr, "escher-gcs: %s\n", err);
        return 1;
    }
    if (esc_port_probe(g->cfg.bind, g->cfg.port, err, sizeof err) != 0) {
        fprintf(stderr, "escher-gcs: %s\n", err);
        return 1;
    }
    g->server = esc_rpc_server_new(addr, g->cfg.token, esc_loop_post, g->loop, err, sizeof err);
    if (!g->server) {
        fprintf(stderr, "escher-gcs: %s\n", err);
        return 1;
    }
    /* The GCS stores strings and echoes them back (entrypoints, KV keys, labels): one
     * that is not UTF-8 would break every strict client reading it later. */
    esc_rpc_server_require_utf8(g->server);
    register_services(g);
    if (esc_daemon_calls_apply(g->server, g->cfg.daemon_key) != 0) {
        fprintf(stderr, "escher-gcs: bad daemon-only call table\n");
        return 1;
    }
    gcs_load_init(g);
    if (gcs_metrics_start(g) != 0)
        return 1;
    if (gcs_dashboard_start(g) != 0)
        return 1;
    if (esc_rpc_server_start(g->server) != 0) {
        fprintf(stderr, "escher-gcs: cannot start the server\n");
        return 1;
    }
    int port = esc_rpc_server_port(g->server);
    if (g->cfg.port_file && esc_metrics_write_port_file(g->cfg.port_file, port) != 0) {
        fprintf(stderr, "escher-gcs: cannot write %s: %s\n", g->cfg.port_file, strerror(errno));
        return 1;
    }
    ESC_INFO("serving on %s:%d (storage %s)", g->cfg.bind, port, g->cfg.storage_uri);
    double period = g->cfg.node_timeout_ms / 4000.0;
    ev_timer_init(&g->sweep, on_sweep, period, period > 0.25 ? 0.25 : period);
    g->sweep.data = g;
    ev_timer_start(esc_loop_ev(g->loop), &g->sweep);
    ev_signal_init(&g->stop_all_sig, on_stop_all, SIGUSR1);
    g->stop_all_sig.data = g;
    ev_signal_start(esc_loop_ev(g->loop), &g->stop_all_sig);
    ev_unref(esc_loop_ev(g->loop)); /* the watcher alone does not keep the loop running */
    esc_loop_run(g->loop);
    /* The loop ends on SIGTERM/SIGINT or after a stop of the whole cluster: a clean
     * stop, which the raylets hear of (gcs_pubsub_close_all). */
    g->clean_stop = true;
    ev_ref(esc_loop_ev(g->loop));
    ev_signal_stop(esc_loop_ev(g->loop), &g->stop_all_sig);
    if (g->stop_all)
        ev_timer_stop(esc_loop_ev(g->loop), &g->stop_all_timer);
    ev_timer_stop(esc_loop_ev(g->loop), &g->sweep);
    gcs_load_stop(g);
    gcs_metrics_stop(g);
    gcs_dashboard_stop(g);
    ESC_INFO("shutting down");
    return 0;
}

int main(int argc, char **argv)
{
    esc_log_init("escher-gcs", ESC_LOG_INFO);
    gcs g;
    memset(&g, 0, sizeof g);
    g.cfg = (gcs_config){.bind = "0.0.0.0", .port = 6380, .storage_uri = "memory",
                         .node_timeout_ms = 10000, .heartbeat_ms = 1000,
                         .job_timeout_ms = 10000, .max_resources_per_job = 100000,
                         .storage_timeout_ms = 5000, .dead_node_retention_ms = 60000,
                         .metrics_bind = "127.0.0.1", .metrics_port = -1,
                         .dashboard_bind = "127.0.0.1", .dashboard_port = -1,
                         .event_history = GCS_EVENT_HISTORY_DEFAULT};
    secret_files files = {0};
    int rc = parse_flags(argc, argv, &g.cfg, &files);
    if (rc == CLI_DONE)
        return 0;
    if (rc == 0)
        rc = read_secrets(&g.cfg, &files);
    char err[512];
    if (rc == 0 && !(g.store = esc_storage_open(g.cfg.storage_uri, err, sizeof err))) {
        fprintf(stderr, "escher-gcs: %s\n", err);
        rc = 1;
    }
    if (rc) {
        free_secrets(&g.cfg);
        return rc;
    }
    g.loop = esc_loop_new();
    esc_loop_stop_on_signals(g.loop);
    g.nodes = esc_strmap_new();
    g.registry = esc_strmap_new();
    g.ns_rows = esc_strmap_new();
    g.jobs = esc_strmap_new();
    g.kv = esc_strmap_new();
    gcs_ring_init(&g.ring, 65536);
    gcs_writes_init(&g);
    gcs_objects_init(&g);
    gcs_history_init(&g);
    /* serve prints its own errors; err is only the loading's. */
    err[0] = '\0';
    if (gcs_persist_load(&g, err, sizeof err) == 0) {
        rc = serve(&g);
    } else {
        fprintf(stderr, "escher-gcs: %s\n", err[0] ? err : "cannot load the stored state");
        rc = 1;
    }
    gcs_writes_close_all(&g); /* closes the store */
    gcs_pubsub_close_all(&g);
    gcs_wait_close_all(&g);
    gcs_objects_close_all(&g);
    gcs_metrics_stop(&g); /* when serve failed after starting it */
    gcs_dashboard_stop(&g);
    esc_rpc_server_free(g.server);
    esc_loop_drain(g.loop);
    gcs_free_tables(&g);
    gcs_writes_free(&g);
    esc_loop_free(g.loop);
    esc_storage_close(g.store);
    free_secrets(&g.cfg);
    return rc;
}
