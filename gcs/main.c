/* main.c: escher-gcs. Parses flags, loads storage, serves the Gcs service from one event
 * loop, and shuts down cleanly on SIGTERM/SIGINT. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gcs.h"
#include "log.h"
#include "token_file.h"
#include "version.h"
#include "xalloc.h"

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
    char *from_env = env && *env ? esc_xstrdup(env) : NULL;
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

int main(int argc, char **argv)
{
    esc_log_init("escher-gcs", ESC_LOG_INFO);
    gcs_config cfg = {.bind = "0.0.0.0", .port = 6380, .storage_uri = "memory",
                      .node_timeout_ms = 10000, .heartbeat_ms = 1000,
                      .job_timeout_ms = 10000, .max_resources_per_job = 100000,
                      .storage_timeout_ms = 5000, .dead_node_retention_ms = 60000,
                      .metrics_bind = "127.0.0.1", .metrics_port = -1,
                      .dashboard_bind = "127.0.0.1", .dashboard_port = -1,
                      .event_history = GCS_EVENT_HISTORY_DEFAULT};
    secret_files files = {0};
    int rc = parse_flags(argc, argv, &cfg, &files);
    if (rc == CLI_DONE)
        return 0;
    if (rc == 0)
        rc = read_secrets(&cfg, &files);
    if (rc) {
        free_secrets(&cfg);
        return rc;
    }
    gcs g;
    char err[512];
    if (gcs_open(&g, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "escher-gcs: %s\n", err);
        rc = 1;
    } else {
        esc_loop_stop_on_signals(g.loop);
        /* gcs_start prints its own errors. */
        rc = gcs_start(&g);
        if (rc == 0) {
            esc_loop_run(g.loop);
            gcs_stop(&g);
        }
    }
    gcs_close(&g);
    free_secrets(&cfg);
    return rc;
}
