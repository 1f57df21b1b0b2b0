/* cmd_start.c: `escher start --head` (a GCS and a raylet) and `escher start --address`
 * (a raylet joining a cluster): flags, the session directory, and what to print. */
#include "start.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../session.h"
#include "daemon.h"
#include "ids.h"
#include "names.h"
#include "node_ip.h"
#include "qty.h"
#include "session_new.h"
#include "xalloc.h"

static const char usage[] =
    "usage: escher start --head [--port P] [--storage memory|redis://HOST:PORT]\n"
    "                    [--node-timeout-ms N] [--event-history N] [NODE OPTIONS] [--block]\n"
    "                    [--session-dir DIR]\n"
    "       escher start --address HOST:PORT [--token TOKEN] [--daemon-key KEY]\n"
    "                    [NODE OPTIONS] [--block] [--session-dir DIR]\n"
    "\n"
    "--head starts the GCS and a raylet on this machine; --address starts a raylet that\n"
    "joins the cluster whose GCS is at HOST:PORT (token: --token, $ESCHER_TOKEN, or the\n"
    "latest local session's; daemon key: --daemon-key, $ESCHER_DAEMON_KEY, or the latest\n"
    "local session's).\n"
    "\n"
    "  --port P                 GCS port (default 6380; 0 picks a free one)\n"
    "  --storage URI            GCS storage: memory (default) or redis://HOST:PORT[/DB]\n"
    "  --node-timeout-ms N      silence after which a raylet is declared dead\n"
    "  --dashboard-port P       the web dashboard's port on 127.0.0.1 (default 0: any free\n"
    "                           one); its URL, with the token, is printed\n"
    "  --no-dashboard           no web dashboard\n"
    "  --event-history N        events the GCS keeps for `escher events` (default 10000)\n"
    "  --block                  stay in the foreground; SIGINT/SIGTERM stops the session\n"
    "  --session-dir DIR        session directory (default: a new session_<ms>_<pid> under\n"
    "                           $XDG_RUNTIME_DIR/escher, else /tmp/escher-<uid>)\n"
    "  --keep                   (a node) keep retrying when the head stops; by default a\n"
    "                           raylet exits 3 s after the GCS says the cluster stops\n"
    "\n"
    "NODE OPTIONS:\n"
    "  --num-cpus N, --num-gpus N        override detection\n"
    "  --memory BYTES, --object-store-memory BYTES\n"
    "  --resources NAME=QTY,...          static custom resources (not writable later)\n"
    "  --labels K=V,...                  node labels\n"
    "  --node-ip IP                      address advertised to the cluster (default: the\n"
    "                                    --bind address when it is one; joining, the local\n"
    "                                    address that reaches the GCS; a head, the\n"
    "                                    interface that routes outward, else 127.0.0.1)\n"
    "  --bind HOST                       the daemons' listen address (default 0.0.0.0)\n"
    "  --metrics-bind HOST               the Prometheus endpoints' listen address (default\n"
    "                                    127.0.0.1; on a cluster of several hosts, the\n"
    "                                    node's address, so the head's Prometheus reaches it)\n"
    "  --raylet-port P                   the raylet's port (default 0: any free one); it\n"
    "                                    serves tasks and objects on this one port, so\n"
    "                                    there is no --object-port\n";

/* ------------------------------------------------------------------ validation */

static int check_qty(const char *flag, const char *text)
{
    int64_t q;
    bool unb = false;
    if (text && (esc_qty_parse(text, &q, &unb) != 0 || unb || q < 0))
        return cli_usage("%s wants a non-negative number, not \"%s\"", flag, text);
    return 0;
}

/* "NAME=QTY,..." of static custom resources. */
static int check_resources(const char *list)
{
    if (!list)
        return 0;
    char *copy = esc_xstrdup(list), *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq)
            rc = cli_usage("--resources wants NAME=QTY,..., not \"%s\"", t);
        else if ((*eq = '\0', !esc_name_valid(t)))
            rc = cli_usage("invalid resource name \"%s\" in --resources", t);
        else if (esc_name_is_physical(t))
            rc = cli_usage("%s can not be given with --resources (use --num-cpus, "
                           "--num-gpus or --memory)", t);
        else
            rc = check_qty("--resources", eq + 1);
    }
    free(copy);
    return rc;
}

static int check_labels(const char *list)
{
    if (!list)
        return 0;
    char *copy = esc_xstrdup(list), *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save))
        if (!strchr(t, '=') || t[0] == '=')
            rc = cli_usage("--labels wants KEY=VALUE,..., not \"%s\"", t);
    free(copy);
    return rc;
}

static int check_uint(const char *flag, const char *text, long long max)
{
    long long v;
    return text ? cli_parse_uint(flag, text, max, &v) : 0;
}

static int check_head_flags(const start_ctx *s)
{
    if (s->storage && strcmp(s->storage, "memory") != 0 && strncmp(s->storage, "redis://", 8) != 0)
        return cli_usage("--storage wants memory or redis://HOST:PORT, not \"%s\"", s->storage);
    int rc = check_uint("--port", s->port, 65535);
    if (!rc)
        rc = check_uint("--dashboard-port", s->dashboard_port, 65535);
    if (!rc)
        rc = check_uint("--node-timeout-ms", s->node_timeout_ms, 86400000);
    if (!rc && s->event_history && (rc = check_uint("--event-history", s->event_history, 1000000)) == 0 &&
        atoll(s->event_history) < 1)
        rc = cli_usage("--event-history wants at least 1");
    return rc;
}

static int check_flags(const start_ctx *s)
{
    if (s->head == (s->g->address != NULL))
        return cli_usage(s->head ? "--head and --address exclude each other"
                                 : "give --head to start a cluster, or --address HOST:PORT "
                                   "to join one");
    if (!s->head && (s->port || s->storage || s->node_timeout_ms || s->event_history))
        return cli_usage("--port, --storage, --node-timeout-ms and --event-history go with "
                         "--head");
    if (!s->head && (s->dashboard_port || s->no_dashboard))
        return cli_usage("--dashboard-port and --no-dashboard go with --head");
    if (s->dashboard_port && s->no_dashboard)
        return cli_usage("--dashboard-port and --no-dashboard exclude each other");
    if (s->object_port)
        return cli_usage("--object-port: the raylet serves objects on its one gRPC port; "
                         "give --raylet-port instead");
    if (s->head && s->daemon_key_opt)
        return cli_usage("--daemon-key goes with --address (a head makes its own)");
    int rc = s->head ? check_head_flags(s) : 0;
    if (!rc)
        rc = check_uint("--raylet-port", s->raylet_port, 65535);
    if (!rc && s->bind && (!*s->bind || strpbrk(s->bind, " ,/")))
        rc = cli_usage("--bind wants a host or IP address, not \"%s\"", s->bind);
    if (!rc)
        rc = check_qty("--num-cpus", s->num_cpus);
    if (!rc)
        rc = check_qty("--num-gpus", s->num_gpus);
    if (!rc)
        rc = check_uint("--memory", s->memory, ESC_QTY_MAX / ESC_QTY_SCALE);
    if (!rc)
        rc = check_uint("--object-store-memory", s->object_store_memory,
                        ESC_QTY_MAX / ESC_QTY_SCALE);
    if (!rc)
        rc = check_resources(s->resources);
    return rc ? rc : check_labels(s->labels);
}

/* ------------------------------------------------------------------ set-up */

static int find_binaries(start_ctx *s)
{
    if (s->head && cli_daemon_find("escher-gcs", "gcs", s->gcs_bin, sizeof s->gcs_bin) != 0)
        return cli_fail("cannot find escher-gcs (looked in $ESCHER_BIN_DIR/gcs, next to "
                        "escher, in ../gcs and on PATH)");
    if (cli_daemon_find("escher-raylet", "raylet", s->raylet_bin, sizeof s->raylet_bin) != 0)
        return cli_fail("cannot find escher-raylet (looked in $ESCHER_BIN_DIR/raylet, next "
                        "to escher, in ../raylet and on PATH)");
    return 0;
}

static bool token_ok(const char *t)
{
    if (!t[0] || strlen(t) >= 512)
        return false;
    for (; *t; t++)
        if (*t <= ' ' || *t > '~')
            return false;
    return true;
}

/* A secret a joining node uses: the flag's value, $env, else the latest session's file
 * `name`, copied into out (len bytes). */
static int join_secret(const char *flag_value, const char *env, const char *name,
                       const char *what, const char *flag, char *out, size_t len)
{
    const char *t = flag_value ? flag_value : getenv(env);
    char newest[PATH_MAX];
    char err[1024] = "";
    char *from_file = t && *t ? NULL
                      : esc_session_newest(newest, sizeof newest)
                          ? esc_session_read_secret(newest, name, err, sizeof err)
                          : NULL;
    if (!t || !*t)
        t = from_file;
    if (!t && err[0] && errno != ENOENT)
        return cli_usage("%s", err);
    if (!t) {
        free(from_file);
        return cli_usage("no %s: give %s (printed by `escher start --head`)", what, flag);
    }
    int rc = token_ok(t) ? 0 : cli_usage("the %s must be printable, without spaces", what);
    snprintf(out, len, "%s", t);
    if (from_file)
        memset(from_file, 0, strlen(from_file));
    free(from_file);
    return rc;
}

/* The secrets of a joining node: the cluster token and the daemon key. */
static int join_secrets(start_ctx *s)
{
    int rc = join_secret(s->g->token, "ESCHER_TOKEN", "token", "cluster token", "--token",
                         s->token, sizeof s->token);
    return rc ? rc
              : join_secret(s->daemon_key_opt, "ESCHER_DAEMON_KEY", "daemon_key", "daemon key",
                            "--daemon-key", s->daemon_key, sizeof s->daemon_key);
}

/* A head makes three secrets (docs/security.md): the cluster token for every client,
 * the daemon key for the daemons only, the operator key for operator stops. */
static int make_token(start_ctx *s)
{
    if (!s->head)
        return join_secrets(s);
    if (esc_random_hex(s->token, ESC_TOKEN_HEX / 2) != 0 ||
        esc_random_hex(s->daemon_key, ESC_TOKEN_HEX / 2) != 0 ||
        esc_random_hex(s->operator_key, ESC_TOKEN_HEX / 2) != 0)
        return cli_fail("no randomness from the kernel for the cluster's secrets");
    return 0;
}

/* Makes the session directory and its secrets. Nothing points at it: commands find
 * it as the newest live session under the user's runtime root (session.h) once its
 * daemons run, so a start that fails changes no other command's default. */
static int make_session(start_ctx *s)
{
    const char *explicit_dir = s->g->session_dir ? s->g->session_dir
                                                 : getenv("ESCHER_SESSION_DIR");
    if (explicit_dir && !*explicit_dir)
        explicit_dir = NULL;
    char live[PATH_MAX], pidfile[PATH_MAX + 16];
    if (s->head && !explicit_dir && esc_session_newest(live, sizeof live) &&
        cli_pathf(pidfile, sizeof pidfile, "%s/pids/gcs.pid", live) &&
        access(pidfile, F_OK) == 0)
        return cli_fail("a cluster is already running here (%s); stop it with `escher stop` "
                        "or give another --session-dir",
                        live);
    int rc = cli_session_create(explicit_dir, s->dir, sizeof s->dir, &s->dir_created);
    if (rc)
        return rc;
    s->dir_made = true;
    rc = cli_session_write_secret(s->dir, "token", s->token);
    if (!rc)
        rc = cli_session_write_secret(s->dir, "daemon_key", s->daemon_key);
    if (!rc && s->head)
        rc = cli_session_write_secret(s->dir, "operator", s->operator_key);
    return rc;
}

/* ------------------------------------------------------------------ output */

/* Commands printed as next steps name the session unless it is the default one. */
static const char *session_flag(const start_ctx *s, char *buf, size_t len)
{
    char newest[PATH_MAX], real[PATH_MAX];
    buf[0] = '\0';
    /* The default: $ESCHER_SESSION_DIR, else the newest live session (session.h). */
    const char *env = getenv("ESCHER_SESSION_DIR");
    const char *dflt = env && *env ? env : esc_session_newest(newest, sizeof newest);
    if (!dflt || !realpath(dflt, real) || strcmp(real, s->dir) != 0)
        snprintf(buf, len, " --session-dir %s", s->dir);
    return buf;
}

/* The metrics endpoints the daemons wrote (docs/observability.md), one line each. */
static void print_metrics(const start_ctx *s)
{
    static const char *const files[][2] = {{"gcs.metrics_port", "GCS"},
                                           {"raylet.metrics_port", "raylet"}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *port = esc_session_read(s->dir, files[i][0]);
        if (port && *port)
            printf("  metrics   http://127.0.0.1:%s/metrics (%s)\n", port, files[i][1]);
        free(port);
    }
    if (s->head)
        printf("  discovery %s/prometheus_sd.json (Prometheus file_sd_configs)\n", s->dir);
}

/* The dashboard's URL with the token, to paste into a browser: the first visit turns
 * the token into a cookie (docs/observability.md, "Dashboard"). */
static void print_dashboard(const start_ctx *s)
{
    char *port = s->head ? esc_session_read(s->dir, "gcs.dashboard_port") : NULL;
    if (port && *port)
        printf("  dashboard http://127.0.0.1:%s/?token=%s\n", port, s->token);
    free(port);
}

static void print_started(const start_ctx *s)
{
    char flag[PATH_MAX + 16];
    session_flag(s, flag, sizeof flag);
    printf("Started escher %s.\n", s->head ? "head node" : "node");
    printf("  session   %s\n", s->dir);
    printf("  GCS       %s\n", s->gcs_addr);
    printf("  node      %s%s%s%s\n", s->node_id, s->raylet_addr[0] ? " (raylet " : "",
           s->raylet_addr, s->raylet_addr[0] ? ")" : "");
    print_metrics(s);
    print_dashboard(s);
    if (s->head) {
        printf("\nTo add a node to this cluster, run on it:\n");
        printf("  escher start --address %s --token %s --daemon-key %s\n", s->gcs_addr,
               s->token, s->daemon_key);
        printf("(the daemon key is for nodes only: never give it to a job or a client)\n");
    }
    char cmds[3][PATH_MAX + 64];
    snprintf(cmds[0], sizeof cmds[0], "escher status%s", flag);
    snprintf(cmds[1], sizeof cmds[1], "escher resource set NAME QTY%s", flag);
    snprintf(cmds[2], sizeof cmds[2], "escher stop%s", flag);
    int w = (int)strlen(cmds[1]);
    printf("\nNext steps:\n");
    printf("  %-*s  nodes and their resources\n", w, cmds[0]);
    printf("  %-*s  create an ephemeral resource on this node\n", w, cmds[1]);
    printf("  %-*s  stop what this session started\n", w, cmds[2]);
    if (s->block)
        printf("\nRunning in the foreground; press Ctrl-C to stop.\n");
    fflush(stdout);
}

/* ------------------------------------------------------------------ run */

/* --block: waits for SIGINT/SIGTERM (then stops everything: exit 0) or for a daemon
 * to die (then stops the rest: exit 1). */
static int block(start_ctx *s)
{
    for (;;) {
        struct timespec second = {1, 0};
        int sig = sigtimedwait(&s->sigs, NULL, &second);
        if (sig == SIGINT || sig == SIGTERM) {
            printf("\nStopping (signal %d).\n", sig);
            start_stop_all(s, START_STOP_GRACE_S, true);
            return CLI_EXIT_OK;
        }
        int rc = start_check_children(s);
        if (rc != 0) {
            start_stop_all(s, START_STOP_GRACE_S, true);
            return rc;
        }
    }
}

static int run_daemons(start_ctx *s)
{
    s->deadline_ms = esc_now_ms() + START_TIMEOUT_MS;
    int rc = s->head ? start_gcs(s) : 0;
    if (rc == 0 && s->head) {
        if (cli_session_write(s->dir, "gcs_address", s->gcs_addr) != 0)
            rc = cli_fail("cannot write %s/gcs_address: %s", s->dir, strerror(errno));
    }
    if (rc == 0)
        rc = start_raylet(s);
    if (rc != 0) {
        start_stop_all(s, START_FAIL_GRACE_S, false);
        return rc;
    }
    start_fetch_raylet_address(s);
    if (s->raylet_addr[0] && cli_session_write(s->dir, "raylet_address", s->raylet_addr) != 0)
        cli_warn("cannot write %s/raylet_address: %s", s->dir, strerror(errno));
    return 0;
}

/* A joining node's session records the GCS before anything starts. */
static int prepare_join(start_ctx *s)
{
    snprintf(s->gcs_addr, sizeof s->gcs_addr, "%s", s->g->address);
    int rc = start_probe_gcs(s);
    if (rc == 0 && cli_session_write(s->dir, "gcs_address", s->gcs_addr) != 0)
        rc = cli_fail("cannot write %s/gcs_address: %s", s->dir, strerror(errno));
    return rc;
}

static int start(start_ctx *s)
{
    int rc = check_flags(s);
    if (!rc)
        rc = find_binaries(s);
    if (!rc)
        rc = make_token(s);
    if (!rc)
        rc = make_session(s);
    if (!rc && !s->head)
        rc = prepare_join(s);
    if (!rc)
        rc = run_daemons(s);
    if (rc) {
        /* A failed start leaves nothing behind: no directory (or, in one that was
         * there before, none of the files it wrote). */
        if (s->dir_made)
            cli_session_discard(s->dir, s->dir_created);
        return rc;
    }
    s->started = true;
    print_started(s);
    return s->block ? block(s) : CLI_EXIT_OK;
}

int cmd_start(const cli_globals *g, int argc, char **argv)
{
    start_ctx *s = esc_xcalloc(1, sizeof *s);
    s->g = g;
    const cli_opt opts[] = {
        {"--head", NULL, &s->head},
        {"--block", NULL, &s->block},
        {"--port", &s->port, NULL},
        {"--num-cpus", &s->num_cpus, NULL},
        {"--num-gpus", &s->num_gpus, NULL},
        {"--memory", &s->memory, NULL},
        {"--object-store-memory", &s->object_store_memory, NULL},
        {"--resources", &s->resources, NULL},
        {"--labels", &s->labels, NULL},
        {"--storage", &s->storage, NULL},
        {"--node-timeout-ms", &s->node_timeout_ms, NULL},
        {"--event-history", &s->event_history, NULL},
        {"--node-ip", &s->node_ip, NULL},
        {"--bind", &s->bind, NULL},
        {"--raylet-port", &s->raylet_port, NULL},
        {"--object-port", &s->object_port, NULL},
        {"--keep", NULL, &s->keep},
        {"--dashboard-port", &s->dashboard_port, NULL},
        {"--metrics-bind", &s->metrics_bind, NULL},
        {"--no-dashboard", NULL, &s->no_dashboard},
        {"--daemon-key", &s->daemon_key_opt, NULL},
        {NULL, NULL, NULL},
    };
    const char *pos[1];
    int npos;
    int rc = cli_parse(argc, argv, opts, pos, 0, &npos, usage);
    if (rc == 0) {
        /* The advertised address: --node-ip; else the one address the daemons listen
         * on (--bind); else, joining, the local address that reaches the GCS (a GCS on
         * 127.0.0.1 gives 127.0.0.1); else the interface that routes outward. */
        if (s->node_ip)
            snprintf(s->ip, sizeof s->ip, "%s", s->node_ip);
        else if (cli_bind_specific(s->bind))
            snprintf(s->ip, sizeof s->ip, "%s", s->bind);
        else if (s->head || !g->address ||
                 cli_node_ip_toward(g->address, s->ip, sizeof s->ip) != 0)
            cli_node_ip(s->ip, sizeof s->ip);
        /* Signals are taken synchronously (sigtimedwait) so that Ctrl-C during start-up
         * or under --block stops what was started instead of leaving it behind. */
        sigemptyset(&s->sigs);
        sigaddset(&s->sigs, SIGINT);
        sigaddset(&s->sigs, SIGTERM);
        sigaddset(&s->sigs, SIGCHLD);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_BLOCK, &s->sigs, NULL);
        rc = start(s);
    }
    memset(s, 0, sizeof *s); /* the secrets */
    free(s);
    return rc == CLI_HELP ? CLI_EXIT_OK : rc;
}
