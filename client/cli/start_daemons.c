/* start_daemons.c: spawning escher-gcs and escher-raylet for `escher start` and waiting
 * until each is ready (docs/processes.md: gcs.port, then node_id). */
#include "start.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "../session.h"
#include "daemon.h"
#include "gcs.pb-c.h"
#include "ids.h"
#include "rpc.h"

#define POLL_MS 50
#define MAX_ARGS 40

/* ------------------------------------------------------------------ arguments */

typedef struct {
    char *v[MAX_ARGS + 1];
    int n;
    char store[MAX_ARGS][PATH_MAX + 32]; /* backing for formatted arguments */
} argv_buf;

static void arg(argv_buf *a, const char *s)
{
    if (a->n < MAX_ARGS)
        a->v[a->n++] = (char *)s;
    a->v[a->n] = NULL;
}

/* Adds "name value" when value is set. */
static void opt(argv_buf *a, const char *name, const char *value)
{
    if (!value)
        return;
    arg(a, name);
    arg(a, value);
}

/* Adds "name <dir>/<file>". */
static void opt_file(argv_buf *a, const char *name, const char *dir, const char *file)
{
    char *slot = a->store[a->n];
    snprintf(slot, sizeof a->store[0], "%s/%s", dir, file);
    arg(a, name);
    arg(a, slot);
}

/* ------------------------------------------------------------------ children */

static void describe_exit(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, len, "stopped");
}

/* "gcs" from "escher-gcs", for the log file's name. */
static const char *short_name(const cli_proc *p)
{
    return strncmp(p->name, "escher-", 7) == 0 ? p->name + 7 : p->name;
}

static const char *log_path(const start_ctx *s, const cli_proc *p, char *buf, size_t len)
{
    if (!cli_pathf(buf, len, "%s/logs/%s.log", s->dir, short_name(p)))
        buf[0] = '\0';
    return buf;
}

/* A daemon that could not listen because its port is taken says "port N is in use"
 * (runtime/port_probe.c): relayed as one line that says what to do. */
static bool port_in_use(const cli_proc *p, const char *last)
{
    const char *at = strstr(last, "port ");
    long port;
    char *end;
    if (!at || !strstr(at, " is in use"))
        return false;
    port = strtol(at + 5, &end, 10);
    if (end == at + 5 || strncmp(end, " is in use", 10) != 0)
        return false;
    bool gcs = !strcmp(p->name, "escher-gcs");
    cli_fail("port %ld is in use; pass %s 0 for any free port", port,
             gcs ? "--port" : "--raylet-port");
    return true;
}

int start_check_children(start_ctx *s)
{
    for (size_t i = 0; i < s->nprocs; i++) {
        int status;
        if (waitpid(s->procs[i].pid, &status, WNOHANG) != s->procs[i].pid)
            continue;
        char how[64], log[PATH_MAX + 16], last[512];
        describe_exit(status, how, sizeof how);
        log_path(s, &s->procs[i], log, sizeof log);
        cli_last_line(log, last, sizeof last);
        if (port_in_use(&s->procs[i], last))
            return CLI_EXIT_FAIL;
        /* A start that fails removes its session directory, log included: the line
         * says what went wrong. */
        if (!s->started)
            return cli_fail("%s %s; last log line: %s", s->procs[i].name, how,
                            last[0] ? last : "(none)");
        return cli_fail("%s %s; last log line: %s (log: %s)", s->procs[i].name, how,
                        last[0] ? last : "(none)", log);
    }
    return 0;
}

void start_stop_all(start_ctx *s, double grace_s, bool report)
{
    /* Stop in reverse start order: the raylet before the GCS it reports to. */
    for (size_t i = s->nprocs; i-- > 0;) {
        cli_procs_stop(&s->procs[i], 1, grace_s, false, report);
        /* A daemon that died early may leave children in its group; the group is ours
         * (we made it with setsid moments ago), so nothing of it may outlive us. */
        kill(-s->procs[i].pid, SIGKILL);
    }
}

/* ------------------------------------------------------------------ readiness */

typedef bool (*ready_fn)(start_ctx *s);

/* Sleeps POLL_MS unless SIGINT or SIGTERM arrives first; returns that signal or 0. */
static int nap(const start_ctx *s)
{
    struct timespec ts = {0, POLL_MS * 1000000L};
    int sig = sigtimedwait(&s->sigs, NULL, &ts);
    return sig == SIGINT || sig == SIGTERM ? sig : 0;
}

static int wait_ready(start_ctx *s, const cli_proc *p, ready_fn ready, const char *what)
{
    for (;;) {
        if (ready(s))
            return 0;
        int rc = start_check_children(s);
        if (rc != 0)
            return rc;
        if (esc_now_ms() >= s->deadline_ms) {
            char log[PATH_MAX + 16], last[512];
            log_path(s, p, log, sizeof log);
            cli_last_line(log, last, sizeof last);
            return cli_fail("%s did not %s within %d s%s%s", p->name, what,
                            START_TIMEOUT_MS / 1000, last[0] ? "; last log line: " : "", last);
        }
        if (nap(s))
            return cli_fail("interrupted while waiting for %s", p->name);
    }
}

static bool gcs_ready(start_ctx *s)
{
    char *text = esc_session_read(s->dir, "gcs.port");
    long port = text ? strtol(text, NULL, 10) : 0;
    free(text);
    if (port <= 0 || port > 65535)
        return false;
    snprintf(s->gcs_addr, sizeof s->gcs_addr, "%s:%ld", s->ip, port);
    return true;
}

static bool raylet_ready(start_ctx *s)
{
    char *id = esc_session_read(s->dir, "node_id");
    if (id)
        snprintf(s->node_id, sizeof s->node_id, "%s", id);
    free(id);
    return id != NULL;
}

/* ------------------------------------------------------------------ spawning */

static int spawn(start_ctx *s, const char *name, argv_buf *a)
{
    cli_proc *p = &s->procs[s->nprocs];
    snprintf(p->name, sizeof p->name, "escher-%s", name);
    if (!cli_pathf(p->pidfile, sizeof p->pidfile, "%s/pids/%s.pid", s->dir, name))
        return cli_fail("session directory path too long: %s", s->dir);
    char log[PATH_MAX + 16];
    log_path(s, p, log, sizeof log);
    p->pid = cli_daemon_spawn(a->v, log, p);
    if (p->pid < 0)
        return cli_fail("cannot start %s: %s", a->v[0], strerror(errno));
    s->nprocs++;
    return 0;
}

int start_gcs(start_ctx *s)
{
    static argv_buf a;
    memset(&a, 0, sizeof a);
    arg(&a, s->gcs_bin);
    opt(&a, "--port", s->port ? s->port : "6380");
    opt(&a, "--bind", s->bind);
    opt_file(&a, "--port-file", s->dir, "gcs.port");
    opt(&a, "--metrics-port", "0");
    opt_file(&a, "--metrics-port-file", s->dir, "gcs.metrics_port");
    opt(&a, "--metrics-bind", s->metrics_bind);
    opt_file(&a, "--metrics-sd-file", s->dir, "prometheus_sd.json");
    if (!s->no_dashboard) {
        opt(&a, "--dashboard-port", s->dashboard_port ? s->dashboard_port : "0");
        opt_file(&a, "--dashboard-port-file", s->dir, "gcs.dashboard_port");
    }
    opt_file(&a, "--token-file", s->dir, "token");
    opt_file(&a, "--daemon-key-file", s->dir, "daemon_key");
    opt_file(&a, "--operator-key-file", s->dir, "operator");
    opt(&a, "--storage", s->storage);
    opt(&a, "--node-timeout-ms", s->node_timeout_ms);
    opt(&a, "--event-history", s->event_history);
    int rc = spawn(s, "gcs", &a);
    return rc ? rc : wait_ready(s, &s->procs[s->nprocs - 1], gcs_ready, "start serving");
}

int start_raylet(start_ctx *s)
{
    static argv_buf a;
    memset(&a, 0, sizeof a);
    arg(&a, s->raylet_bin);
    opt(&a, "--gcs-address", s->gcs_addr);
    opt_file(&a, "--token-file", s->dir, "token");
    opt_file(&a, "--daemon-key-file", s->dir, "daemon_key");
    opt(&a, "--node-ip", s->ip);
    opt(&a, "--bind", s->bind);
    opt(&a, "--port", s->raylet_port);
    /* A head's clean stop ends this raylet too, unless it is to outlast the head. */
    if (!s->keep)
        opt(&a, "--exit-on-cluster-stop", "3000");
    opt_file(&a, "--node-id-file", s->dir, "node_id");
    opt_file(&a, "--log-dir", s->dir, "logs/tasks");
    opt(&a, "--metrics-port", "0");
    opt_file(&a, "--metrics-port-file", s->dir, "raylet.metrics_port");
    opt(&a, "--metrics-bind", s->metrics_bind);
    if (s->head)
        arg(&a, "--head");
    opt(&a, "--num-cpus", s->num_cpus);
    opt(&a, "--num-gpus", s->num_gpus);
    opt(&a, "--memory", s->memory);
    opt(&a, "--object-store-memory", s->object_store_memory);
    opt(&a, "--resources", s->resources);
    opt(&a, "--labels", s->labels);
    int rc = spawn(s, "raylet", &a);
    return rc ? rc : wait_ready(s, &s->procs[s->nprocs - 1], raylet_ready, "register");
}

/* ------------------------------------------------------------------ GCS queries */

/* GetClusterStatus straight over the binding: `escher start` must not register a job
 * of its own just to look. */
static int cluster_status(const start_ctx *s, Escher__GetClusterStatusReply **out,
                          esc_status *st)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(s->gcs_addr, s->token);
    Escher__GetClusterStatusRequest req = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    ProtobufCMessage *m = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_GCS_GET_CLUSTER_STATUS, &req.base, &m, 5000, 0, st);
    esc_rpc_channel_free(ch);
    *out = (Escher__GetClusterStatusReply *)m;
    return rc;
}

int start_probe_gcs(const start_ctx *s)
{
    Escher__GetClusterStatusReply *r;
    esc_status st;
    if (cluster_status(s, &r, &st) != ESC_OK)
        return cli_fail("cannot join the GCS at %s: %s: %s", s->gcs_addr,
                        esc_status_name(st.code), st.message);
    protobuf_c_message_free_unpacked(&r->base, NULL);
    return 0;
}

/* The raylet's own address as it registered it (it picks a free port itself). */
void start_fetch_raylet_address(start_ctx *s)
{
    Escher__GetClusterStatusReply *r;
    esc_status st;
    s->raylet_addr[0] = '\0';
    if (cluster_status(s, &r, &st) != ESC_OK)
        return;
    for (size_t i = 0; i < r->n_nodes; i++) {
        const Escher__NodeInfo *n = r->nodes[i]->node;
        if (n && !strcmp(n->node_id, s->node_id))
            snprintf(s->raylet_addr, sizeof s->raylet_addr, "%s", n->address);
    }
    protobuf_c_message_free_unpacked(&r->base, NULL);
}
