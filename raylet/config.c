/* config.c: the command line of escher-raylet (docs/processes.md) and its checks.
 * Every bad value is reported as one line; main exits 2 on it. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "qty.h"
#include "token_file.h"
#include "xalloc.h"

#define LABEL_KEY_MAX 128
#define LABEL_VALUE_MAX 256

static const char usage[] =
    "usage: escher-raylet --gcs-address HOST:PORT [options]\n"
    "  --token-file F              cluster token (default $ESCHER_TOKEN)\n"
    "  --daemon-key-file F         daemon key (default $ESCHER_DAEMON_KEY)\n"
    "  --bind HOST                 listen address (0.0.0.0)\n"
    "  --port P                    gRPC port (0 picks a free one); the raylet serves\n"
    "                              tasks, leases and objects on this one port\n"
    "  --node-ip IP                address advertised to the cluster (127.0.0.1)\n"
    "  --num-cpus N                CPUs (detected)\n"
    "  --num-gpus N                GPUs (detected through the CUDA runtime)\n"
    "  --memory BYTES              memory (detected)\n"
    "  --object-store-memory BYTES object store capacity (30% of memory)\n"
    "  --resources NAME=QTY,...    static custom resources\n"
    "  --labels K=V,...            node labels\n"
    "  --node-id-file F            write the node id here once registered\n"
    "  --log-dir DIR               task output (worker-ID.out/.err/.idx) and worker logs\n"
    "                              (default /tmp/escher-UID/logs/raylet-PID)\n"
    "  --node-id ID                reuse a node id\n"
    "  --forward-timeout-ms MS     deadline of a call to another raylet (forwarding a\n"
    "                              task); one that misses it is suspect (500)\n"
    "  --ended-tasks N             rows of tasks that ended here kept for `escher list\n"
    "                              tasks` (0..1000000; 0 keeps none; default 1000)\n"
    "  --head                      this node is the head (started with the GCS; escher\n"
    "                              status marks it)\n"
    "  --no-cpu-quota              do not enforce CPU shares with cgroups (default: a\n"
    "                              worker's CPU quota is what its task holds, where a\n"
    "                              cgroup cpu controller is writable)\n"
    "  --exit-on-cluster-stop MS   exit MS after the GCS says the cluster is stopping\n"
    "                              (a clean stop of the GCS; escher start passes 3000\n"
    "                              unless --keep). Default: keep retrying, as through a\n"
    "                              GCS restart. A stop of the whole cluster (escher stop\n"
    "                              --all) makes every raylet exit at once either way\n"
    "  --metrics-port P            serve Prometheus metrics on http://HOST:P/metrics (0\n"
    "                              picks a free port; default: off)\n"
    "  --metrics-bind IP           the metrics listen address (127.0.0.1)\n"
    "  --metrics-port-file F       write the metrics port here once listening\n"
    "  --help, --version\n";

const char *config_usage(void)
{
    return usage;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = esc_xstrdup(v);
}

/* A non-negative, bounded quantity ("4", "0.5"). */
static int parse_count(const char *flag, const char *v, int64_t *out, char *err, size_t errlen)
{
    bool unb = false;
    if (esc_qty_parse(v, out, &unb) != 0 || unb || *out < 0)
        return fail(err, errlen, "%s: expected a non-negative number, got '%s'", flag, v);
    return 0;
}

/* A whole number of bytes that fits a quantity. */
static int parse_bytes(const char *flag, const char *v, uint64_t *out, char *err, size_t errlen)
{
    const uint64_t max = (uint64_t)(ESC_QTY_MAX / ESC_QTY_SCALE);
    if (!*v || strspn(v, "0123456789") != strlen(v))
        return fail(err, errlen, "%s: expected a number of bytes, got '%s'", flag, v);
    errno = 0;
    unsigned long long b = strtoull(v, NULL, 10);
    if (errno || b > max)
        return fail(err, errlen, "%s: %s bytes is more than the largest quantity (%llu)", flag,
                    v, (unsigned long long)max);
    *out = b;
    return 0;
}

static int parse_port(const char *flag, const char *v, int *out, char *err, size_t errlen)
{
    *out = 0; /* set on every path: GCC at -O3 can not see that a failure is never read */
    char *end;
    errno = 0;
    long p = strtol(v, &end, 10);
    if (!*v || *end || errno || p < 0 || p > 65535)
        return fail(err, errlen, "%s: expected a port 0..65535, got '%s'", flag, v);
    *out = (int)p;
    return 0;
}

/* Milliseconds, 1 .. one hour. */
static int parse_ms(const char *flag, const char *v, int *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long ms = strtol(v, &end, 10);
    if (!*v || *end || errno || ms < 1 || ms > 3600000)
        return fail(err, errlen, "%s: expected milliseconds 1..3600000, got '%s'", flag, v);
    *out = (int)ms;
    return 0;
}

static int parse_ended_tasks(const char *flag, const char *v, int *out, char *err,
                             size_t errlen)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno || n < 0 || n > RAYLET_ENDED_TASKS_MAX)
        return fail(err, errlen, "%s: expected a count 0..%d, got '%s'", flag,
                    RAYLET_ENDED_TASKS_MAX, v);
    *out = (int)n;
    return 0;
}

static bool is_ip(const char *v)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, v, buf) == 1 || inet_pton(AF_INET6, v, buf) == 1;
}

/* An IP address or a host name. */
static bool is_host(const char *v)
{
    if (is_ip(v))
        return true;
    size_t n = strlen(v);
    if (n == 0 || n > 253)
        return false;
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_')
            return false;
    return true;
}

/* HOST:PORT, with [v6]:PORT accepted. */
static int check_host_port(const char *flag, const char *v, char *err, size_t errlen)
{
    const char *colon = strrchr(v, ':');
    if (!colon || colon == v)
        return fail(err, errlen, "%s: expected HOST:PORT, got '%s'", flag, v);
    int port;
    char perr[8];
    if (parse_port(flag, colon + 1, &port, perr, sizeof perr) != 0 || port == 0)
        return fail(err, errlen, "%s: expected HOST:PORT with a port 1..65535, got '%s'", flag,
                    v);
    char host[300];
    size_t hl = (size_t)(colon - v);
    if (hl >= sizeof host)
        return fail(err, errlen, "%s: host too long in '%s'", flag, v);
    memcpy(host, v, hl);
    host[hl] = 0;
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        host[hl - 1] = 0;
        unsigned char buf[16];
        if (inet_pton(AF_INET6, host + 1, buf) != 1)
            return fail(err, errlen, "%s: bad IPv6 address in '%s'", flag, v);
        return 0;
    }
    if (!is_host(host))
        return fail(err, errlen, "%s: bad host in '%s'", flag, v);
    return 0;
}

/* Splits "a=b,c=d" and calls fn for each pair; empty text gives no pairs. */
static int each_pair(const char *flag, const char *text,
                     int (*fn)(raylet_config *, const char *, const char *, const char *, char *,
                               size_t),
                     raylet_config *cfg, char *err, size_t errlen)
{
    char *copy = esc_xstrdup(text);
    int rc = 0;
    if (*copy) {
        /* strtok_r would skip empty items; walk by hand so "a=1,,b=2" is an error. */
        char *item = copy;
        for (;;) {
            char *comma = strchr(item, ',');
            if (comma)
                *comma = 0;
            char *eq = strchr(item, '=');
            if (!eq || eq == item) {
                rc = fail(err, errlen, "%s: expected NAME=VALUE items, got '%s'", flag, item);
                break;
            }
            *eq = 0;
            if ((rc = fn(cfg, flag, item, eq + 1, err, errlen)) != 0)
                break;
            if (!comma)
                break;
            item = comma + 1;
        }
    }
    free(copy);
    return rc;
}

static int add_resource(raylet_config *cfg, const char *flag, const char *name, const char *v,
                        char *err, size_t errlen)
{
    if (!esc_name_valid(name))
        return fail(err, errlen,
                    "%s: bad resource name '%s' (1..64 chars of A-Za-z0-9_.-, not starting "
                    "with '.')",
                    flag, name);
    if (esc_name_is_physical(name))
        return fail(err, errlen, "%s: '%s' is set by its own flag or by detection", flag, name);
    for (size_t i = 0; i < cfg->nresources; i++)
        if (!strcmp(cfg->resources[i].name, name))
            return fail(err, errlen, "%s: resource '%s' given twice", flag, name);
    int64_t q = 0;
    bool unb = false;
    if (esc_qty_parse(v, &q, &unb) != 0 || (!unb && q < 0))
        return fail(err, errlen, "%s: bad quantity '%s' for '%s'", flag, v, name);
    cfg->resources = esc_xrealloc(cfg->resources, (cfg->nresources + 1) * sizeof *cfg->resources);
    cfg->resources[cfg->nresources++] = (raylet_amount){esc_xstrdup(name), q, unb};
    return 0;
}

static bool label_key_valid(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > LABEL_KEY_MAX)
        return false;
    for (const char *p = k; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_.-/", *p))
            return false;
    return true;
}

static bool label_value_valid(const char *v)
{
    if (strlen(v) > LABEL_VALUE_MAX)
        return false;
    for (const char *p = v; *p; p++)
        if (!isgraph((unsigned char)*p))
            return false;
    return true;
}

static int add_label(raylet_config *cfg, const char *flag, const char *key, const char *v,
                     char *err, size_t errlen)
{
    if (!label_key_valid(key))
        return fail(err, errlen, "%s: bad label key '%s' (1..%d chars of A-Za-z0-9_.-/)", flag,
                    key, LABEL_KEY_MAX);
    if (!label_value_valid(v))
        return fail(err, errlen, "%s: bad value for label '%s' (up to %d printable chars)",
                    flag, key, LABEL_VALUE_MAX);
    for (size_t i = 0; i < cfg->nlabels; i++)
        if (!strcmp(cfg->labels[i].key, key))
            return fail(err, errlen, "%s: label '%s' given twice", flag, key);
    cfg->labels = esc_xrealloc(cfg->labels, (cfg->nlabels + 1) * sizeof *cfg->labels);
    cfg->labels[cfg->nlabels++] = (raylet_label){esc_xstrdup(key), esc_xstrdup(v)};
    return 0;
}

enum {
    OPT_GCS_ADDRESS = 1000,
    OPT_TOKEN_FILE,
    OPT_DAEMON_KEY_FILE,
    OPT_BIND,
    OPT_PORT,
    OPT_NODE_IP,
    OPT_NUM_CPUS,
    OPT_NUM_GPUS,
    OPT_MEMORY,
    OPT_OBJECT_STORE_MEMORY,
    OPT_RESOURCES,
    OPT_LABELS,
    OPT_NODE_ID_FILE,
    OPT_NODE_ID,
    OPT_LOG_DIR,
    OPT_FORWARD_TIMEOUT_MS,
    OPT_ENDED_TASKS,
    OPT_NO_CPU_QUOTA,
    OPT_HEAD,
    OPT_HELP,
    OPT_VERSION,
    OPT_EXIT_ON_STOP,
    OPT_METRICS_PORT,
    OPT_METRICS_BIND,
    OPT_METRICS_PORT_FILE,
};

static const struct option long_opts[] = {
    {"gcs-address", required_argument, NULL, OPT_GCS_ADDRESS},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"daemon-key-file", required_argument, NULL, OPT_DAEMON_KEY_FILE},
    {"bind", required_argument, NULL, OPT_BIND},
    {"port", required_argument, NULL, OPT_PORT},
    {"node-ip", required_argument, NULL, OPT_NODE_IP},
    {"num-cpus", required_argument, NULL, OPT_NUM_CPUS},
    {"num-gpus", required_argument, NULL, OPT_NUM_GPUS},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"object-store-memory", required_argument, NULL, OPT_OBJECT_STORE_MEMORY},
    {"resources", required_argument, NULL, OPT_RESOURCES},
    {"labels", required_argument, NULL, OPT_LABELS},
    {"node-id-file", required_argument, NULL, OPT_NODE_ID_FILE},
    {"node-id", required_argument, NULL, OPT_NODE_ID},
    {"log-dir", required_argument, NULL, OPT_LOG_DIR},
    {"forward-timeout-ms", required_argument, NULL, OPT_FORWARD_TIMEOUT_MS},
    {"ended-tasks", required_argument, NULL, OPT_ENDED_TASKS},
    {"no-cpu-quota", no_argument, NULL, OPT_NO_CPU_QUOTA},
    {"head", no_argument, NULL, OPT_HEAD},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"exit-on-cluster-stop", required_argument, NULL, OPT_EXIT_ON_STOP},
    {"metrics-port", required_argument, NULL, OPT_METRICS_PORT},
    {"metrics-bind", required_argument, NULL, OPT_METRICS_BIND},
    {"metrics-port-file", required_argument, NULL, OPT_METRICS_PORT_FILE},
    {NULL, 0, NULL, 0},
};

/* Files named on the command line (NULL: from the environment). */
typedef struct {
    char *token, *daemon_key;
} secret_files;

static int parse_one(raylet_config *cfg, int opt, const char *flag, const char *v,
                     secret_files *files, char *err, size_t errlen)
{
    switch (opt) {
    case OPT_GCS_ADDRESS:
        if (check_host_port(flag, v, err, errlen) != 0)
            return -1;
        set_str(&cfg->gcs_address, v);
        return 0;
    case OPT_TOKEN_FILE:
        if (!*v)
            return fail(err, errlen, "%s: empty path", flag);
        set_str(&files->token, v);
        return 0;
    case OPT_DAEMON_KEY_FILE:
        if (!*v)
            return fail(err, errlen, "%s: empty path", flag);
        set_str(&files->daemon_key, v);
        return 0;
    case OPT_BIND:
        if (!is_host(v))
            return fail(err, errlen, "%s: expected a host or IP address, got '%s'", flag, v);
        set_str(&cfg->bind, v);
        return 0;
    case OPT_PORT:
        return parse_port(flag, v, &cfg->port, err, errlen);
    case OPT_NODE_IP:
        if (!is_ip(v))
            return fail(err, errlen, "%s: expected an IP address, got '%s'", flag, v);
        set_str(&cfg->node_ip, v);
        return 0;
    case OPT_NUM_CPUS:
        cfg->has_num_cpus = true;
        return parse_count(flag, v, &cfg->num_cpus, err, errlen);
    case OPT_NUM_GPUS:
        cfg->has_num_gpus = true;
        return parse_count(flag, v, &cfg->num_gpus, err, errlen);
    case OPT_MEMORY:
        cfg->has_memory = true;
        return parse_bytes(flag, v, &cfg->memory, err, errlen);
    case OPT_OBJECT_STORE_MEMORY:
        cfg->has_object_store_memory = true;
        return parse_bytes(flag, v, &cfg->object_store_memory, err, errlen);
    case OPT_RESOURCES:
        return each_pair(flag, v, add_resource, cfg, err, errlen);
    case OPT_LABELS:
        return each_pair(flag, v, add_label, cfg, err, errlen);
    case OPT_NODE_ID_FILE:
        if (!*v)
            return fail(err, errlen, "%s: empty path", flag);
        set_str(&cfg->node_id_file, v);
        return 0;
    case OPT_NODE_ID:
        if (!esc_name_valid(v))
            return fail(err, errlen, "%s: bad node id '%s' (1..64 chars of A-Za-z0-9_.-)", flag,
                        v);
        set_str(&cfg->node_id, v);
        return 0;
    case OPT_LOG_DIR:
        if (!*v)
            return fail(err, errlen, "%s: empty path", flag);
        set_str(&cfg->log_dir, v);
        return 0;
    case OPT_FORWARD_TIMEOUT_MS:
        return parse_ms(flag, v, &cfg->forward_timeout_ms, err, errlen);
    case OPT_ENDED_TASKS:
        return parse_ended_tasks(flag, v, &cfg->ended_tasks, err, errlen);
    case OPT_NO_CPU_QUOTA:
        cfg->no_cpu_quota = true;
        return 0;
    case OPT_HEAD:
        cfg->head = true;
        return 0;
    case OPT_HELP:
        cfg->help = true;
        return 0;
    case OPT_EXIT_ON_STOP:
        if (!strcmp(v, "0")) {
            cfg->exit_on_stop_ms = 0;
            return 0;
        }
        return parse_ms(flag, v, &cfg->exit_on_stop_ms, err, errlen);
    case OPT_VERSION:
        cfg->version = true;
        return 0;
    case OPT_METRICS_PORT:
        return parse_port(flag, v, &cfg->metrics_port, err, errlen);
    case OPT_METRICS_BIND:
        if (!is_ip(v))
            return fail(err, errlen, "%s: expected an IP address, got '%s'", flag, v);
        set_str(&cfg->metrics_bind, v);
        return 0;
    case OPT_METRICS_PORT_FILE:
        if (!*v)
            return fail(err, errlen, "%s: empty path", flag);
        set_str(&cfg->metrics_port_file, v);
        return 0;
    }
    return fail(err, errlen, "unknown option");
}

/* *out from the file at path, else from the environment variable env. */
static int read_secret(const char *path, const char *env, const char *what, const char *flag,
                       char **out, char *err, size_t errlen)
{
    if (path) {
        *out = esc_token_file_read(path, err, errlen);
        return *out ? 0 : -1;
    }
    const char *v = getenv(env);
    if (v && *v) {
        *out = esc_xstrdup(v);
        return 0;
    }
    return fail(err, errlen, "no %s: give %s F or set %s", what, flag, env);
}

int config_parse(int argc, char **argv, raylet_config *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->bind = esc_xstrdup("0.0.0.0");
    cfg->node_ip = esc_xstrdup("127.0.0.1");
    cfg->forward_timeout_ms = RAYLET_FORWARD_TIMEOUT_MS;
    cfg->ended_tasks = RAYLET_ENDED_TASKS;
    cfg->exit_on_stop_ms = -1;
    cfg->metrics_port = -1;
    cfg->metrics_bind = esc_xstrdup("127.0.0.1");
    secret_files files = {0};
    int rc = 0;

    opterr = 0;
    optind = 0; /* full re-initialization, so the parser can run more than once */
    for (;;) {
        int idx = -1;
        int opt = getopt_long(argc, argv, ":", long_opts, &idx);
        if (opt == -1)
            break;
        if (opt == '?') {
            rc = fail(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
            break;
        }
        if (opt == ':') {
            rc = fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
            break;
        }
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", idx >= 0 ? long_opts[idx].name : "?");
        if ((rc = parse_one(cfg, opt, flag, optarg ? optarg : "", &files, err, errlen)) != 0)
            break;
    }
    if (rc == 0 && optind < argc)
        rc = fail(err, errlen, "unexpected argument '%s'", argv[optind]);
    if (rc == 0 && !cfg->help && !cfg->version && !cfg->gcs_address)
        rc = fail(err, errlen, "--gcs-address HOST:PORT is required");
    if (rc == 0 && !cfg->help && !cfg->version)
        rc = read_secret(files.token, "ESCHER_TOKEN", "cluster token", "--token-file",
                         &cfg->token, err, errlen);
    if (rc == 0 && !cfg->help && !cfg->version)
        rc = read_secret(files.daemon_key, "ESCHER_DAEMON_KEY", "daemon key",
                         "--daemon-key-file", &cfg->daemon_key, err, errlen);
    /* Workers and the commands they run inherit this environment: never the key. */
    unsetenv("ESCHER_DAEMON_KEY");
    free(files.token);
    free(files.daemon_key);
    return rc;
}

void config_free(raylet_config *cfg)
{
    free(cfg->gcs_address);
    if (cfg->token) {
        memset(cfg->token, 0, strlen(cfg->token));
        free(cfg->token);
    }
    if (cfg->daemon_key) {
        memset(cfg->daemon_key, 0, strlen(cfg->daemon_key));
        free(cfg->daemon_key);
    }
    free(cfg->bind);
    free(cfg->node_ip);
    for (size_t i = 0; i < cfg->nresources; i++)
        free(cfg->resources[i].name);
    free(cfg->resources);
    for (size_t i = 0; i < cfg->nlabels; i++) {
        free(cfg->labels[i].key);
        free(cfg->labels[i].value);
    }
    free(cfg->labels);
    free(cfg->node_id_file);
    free(cfg->node_id);
    free(cfg->log_dir);
    free(cfg->metrics_bind);
    free(cfg->metrics_port_file);
    memset(cfg, 0, sizeof *cfg);
}
