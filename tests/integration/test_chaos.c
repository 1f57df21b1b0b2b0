/* test_chaos.c: a bounded chaos run. Five raylets on Redis storage; drivers keep
 * submitting tasks, calling actors, resizing ephemeral resources and reserving gangs
 * while the main thread, as the killer, `kill -9`s raylets, task workers, actor workers
 * and the GCS (each restarted), pauses Redis once and kills it once (restarted from its
 * append-only file). What the design promises is checked throughout and at the end:
 *
 *  - no node is allocated past its capacity: held <= total for every physical resource
 *    of every alive node; for an ephemeral resource held > total is allowed only after
 *    a shrink (docs/resources.md), so held must stay within the largest capacity its
 *    job ever gave it, and must not grow while it is above a total that did not change;
 *  - every task ends with a result or an error with a reason (never "invalid" or
 *    "freed" for a reference its driver holds); none runs again after its result was
 *    read; a run again needs its worker killed, or a raylet killed since it was
 *    submitted;
 *  - no actor runs its init more than 1 + max_restarts times, and a call that reaches
 *    a new worker of an actor finds the init run in that worker (no silent reset);
 *  - a finished job's ephemeral resources disappear within 30 s of its end or of the
 *    GCS's last start, whichever is later (a restarted GCS gives a killed driver's job
 *    a whole job timeout again), and a live job's do not (a GCS restart reloads them);
 *  - a probe task submitted every second finishes within 30 s, throughout;
 *  - the GCS's resident memory stays below a bound; no daemon dies unless killed.
 *
 * At the end one JSON line of figures goes to stdout: faults by kind, tasks and
 * re-runs, violations by kind, the worst probe latency, the GCS's largest RSS.
 *
 * Environment:
 *   ESCHER_CHAOS_SECONDS  how long faults are injected (default 300); the test then
 *                         drains its drivers (up to about two minutes more). At least
 *                         one fault per 3 s of that time must have been injected.
 *   ESCHER_CHAOS_SEED     seed of the random choices (default: the time; printed).
 *   ESCHER_CHAOS_RSS_MB   bound on the GCS's VmRSS (default 512, 2048 under ASan).
 * On a violation the daemons' logs and the run records are copied to
 * /tmp/escher-chaos-<pid>/ before the cluster directory is removed.
 *
 * Drivers are clients of raylet 0, which is the one raylet never killed (a driver's
 * local raylet is where its results arrive; docs/tasks.md, "Known limits"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "escher/esl.h"
#include "harness.h"

#define NSLOTS 5
#define NODE_TIMEOUT_MS 2000
#define STORAGE_TIMEOUT_MS 2000
#define FAULT_PERIOD_MS 1500     /* plus up to 1 s: one fault about every 2-3 s */
#define MAX_DOWN_RAYLETS 2
#define PROBE_LIMIT_MS 30000.0   /* a probe must finish this soon */
#define TASK_LIMIT_MS 120000.0   /* any task must have ended by then */
#define CLEANUP_LIMIT_MS 30000.0 /* a finished job's resources are gone by then */
#define REGISTRY_GRACE_MS 15000.0
#define QUIET_WRITES_MS 3000.0   /* see check_admission */
#define TASK_WINDOW 6
#define NACTORS 3
#define ACTOR_MAX_RESTARTS 3
#define SLOT_MAX 3               /* largest capacity a task driver gives its slot */
#define NO_BOUND INT64_MAX

/* ------------------------------------------------------------------ figures */

enum { F_RAYLET, F_WORKER, F_ACTOR, F_GCS, F_REDIS_PAUSE, F_REDIS_KILL, F_DRIVER, F_N };
static const char *const fault_names[F_N] = {"raylet_kill", "worker_kill", "actor_worker_kill",
                                             "gcs_kill", "redis_pause", "redis_kill",
                                             "driver_kill"};

enum {
    V_PHYSICAL_OVER,     /* held > total for a physical resource */
    V_EPHEMERAL_OVER,    /* held above the largest capacity the resource ever had */
    V_ADMITTED_OVER,     /* held grew while above an unchanged total */
    V_TASK_UNFINISHED,   /* no result and no error within TASK_LIMIT_MS */
    V_NO_REASON,         /* an error without a message */
    V_RESULT_WITHOUT_RUN,
    V_RUN_AFTER_RESULT,  /* a run that started after esc_get returned the result */
    V_RERUN_NO_FAULT,    /* a run again with no fault since the previous run began */
    V_ACTOR_RESTARTS,    /* init ran more than 1 + max_restarts times */
    V_ACTOR_RESET,       /* a call ran in a new worker whose init never ran */
    V_LEFTOVER,          /* a finished job's resources still there */
    V_REGISTRY_LOST,     /* a live job's resource vanished */
    V_PROBE_LATE,
    V_GCS_RSS,
    V_DAEMON_DIED,       /* a daemon exited without being killed, or never came back */
    V_GCS_UNAVAILABLE,   /* no connection for a long time */
    V_UNCLEAN_EXIT,
    V_RESULT_REFUSED,    /* esc_get: a held reference invalid, or its object freed or lost */
    V_N
};
static const char *const v_names[V_N] = {
    "physical_over_capacity", "ephemeral_over_capacity", "admitted_past_capacity",
    "task_unfinished", "error_without_reason", "result_without_run", "run_after_result",
    "rerun_without_fault", "actor_restarts_exceeded", "actor_reset_without_init",
    "leftover_resources", "registry_lost", "probe_late", "gcs_rss", "daemon_died",
    "gcs_unavailable", "unclean_exit", "result_refused"};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_faults[F_N];
static int g_violations[V_N];
static struct {
    long submitted, ok, failed, stranded, unfinished;
    long runs, reruns;
    long probes, actor_calls_ok, actor_calls_failed, actors_created, actors_dead;
    long gangs_ok, gangs_failed, res_ops_ok, res_ops_failed, sessions;
    double worst_probe_ms, worst_cleanup_ms, worst_cleanup_killed_ms;
    long gcs_max_rss_kb;
} g_fig;

static int g_seconds;
static unsigned g_seed;
static long g_rss_limit_kb;
static double g_t0;           /* monotonic ms at the start of the chaos */
static double g_gcs_started;  /* monotonic ms of the GCS's last (re)start (g_mu) */
static atomic_bool g_stop_drivers, g_stop_watch;
static h_cluster C;
static char g_runs_path[400]; /* every task's and actor init's run lines */

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
}

static double since_start_s(void)
{
    return (h_now_ms() - g_t0) / 1000.0;
}

/* HH:MM:SS.mmm of a wall-clock time in ms, as the daemons' logs write it. */
static const char *clock_text(double wall, char *buf, size_t len)
{
    time_t sec = (time_t)(wall / 1000);
    struct tm tm;
    localtime_r(&sec, &tm);
    snprintf(buf, len, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)((long long)wall % 1000));
    return buf;
}

/* Progress and findings on stderr, each with the time since the start and the wall
 * clock (to find the matching lines in the daemons' logs). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char msg[1200], now[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%7.1f s %s] %s\n", since_start_s(), clock_text(wall_ms(), now, sizeof now),
            msg);
}

/* Counts a violation and shows the first few of each kind with what explains them. */
static void violation(int kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(int kind, const char *fmt, ...)
{
    pthread_mutex_lock(&g_mu);
    int n = ++g_violations[kind];
    pthread_mutex_unlock(&g_mu);
    if (n > 10)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    say("VIOLATION %s: %s", v_names[kind], msg);
}

static void bump(long *counter)
{
    pthread_mutex_lock(&g_mu);
    (*counter)++;
    pthread_mutex_unlock(&g_mu);
}

/* Error messages of failed tasks, ids replaced by "<id>", with counts: the report. */
#define MAX_REASONS 32
static struct {
    char text[128];
    long n;
} g_reasons[MAX_REASONS];

/* Whether the n bytes at p are an id: 8 or more hex digits. */
static bool is_id(const char *p, size_t n)
{
    if (n < 8)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdef", p[i]))
            return false;
    return true;
}

/* msg with every id replaced by "<id>", so that failures group by kind. */
static void reason_key(const char *msg, char *key, size_t len)
{
    size_t k = 0;
    for (const char *p = msg; *p && k + 5 < len;) {
        size_t n = strcspn(p, " :,()");
        if (is_id(p, n)) {
            k += (size_t)snprintf(key + k, len - k, "<id>");
        } else {
            n = n ? n : 1;
            size_t put = n < len - 1 - k ? n : len - 1 - k;
            memcpy(key + k, p, put);
            k += put;
        }
        p += n;
    }
    key[k] = 0;
}

static void note_reason(const char *msg)
{
    char key[128];
    reason_key(msg, key, sizeof key);
    static atomic_int shown;
    if (atomic_fetch_add(&shown, 1) < 30)
        say("a task or call failed: %s", msg);
    pthread_mutex_lock(&g_mu);
    int i = 0;
    while (i < MAX_REASONS && g_reasons[i].n && strcmp(g_reasons[i].text, key) != 0)
        i++;
    if (i < MAX_REASONS) {
        snprintf(g_reasons[i].text, sizeof g_reasons[i].text, "%s", key);
        g_reasons[i].n++;
    }
    pthread_mutex_unlock(&g_mu);
}

/* ------------------------------------------------------------------ cluster view */

/* What the killer (the only thread that starts and stops daemons) publishes for the
 * others: they never read C's pids, which the killer rewrites. */
static struct {
    pid_t raylet_pid[NSLOTS];
    char node_id[NSLOTS][80];
    pid_t gcs_pid;
} g_view;

static void publish_view(void)
{
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < NSLOTS; i++) {
        g_view.raylet_pid[i] = C.raylets[i].pid;
        snprintf(g_view.node_id[i], sizeof g_view.node_id[i], "%s", C.raylets[i].node_id);
    }
    g_view.gcs_pid = C.gcs_pid;
    pthread_mutex_unlock(&g_mu);
}

/* The node id of a live raylet picked at random ("" when none is up). */
static void random_live_node(unsigned *rs, char *out, size_t len)
{
    out[0] = 0;
    pthread_mutex_lock(&g_mu);
    for (int tries = 0; tries < 2 * NSLOTS && !out[0]; tries++) {
        int i = (int)(rand_r(rs) % NSLOTS);
        if (g_view.raylet_pid[i] > 0)
            snprintf(out, len, "%s", g_view.node_id[i]);
    }
    pthread_mutex_unlock(&g_mu);
}

/* Faults as they happened, to explain re-runs. */
#define MAX_FAULT_RECS 4096
static struct {
    double wall;
    int kind;
    pid_t pid;
    char node[80];
} g_fault_log[MAX_FAULT_RECS];
static int g_nfault_log;

/* at: the wall-clock time read just before the fault was injected. Read after, it could
 * come later than what the fault caused (a worker killed, its task started again on a
 * new worker and logging its start) when this thread is descheduled in between, and that
 * rerun would look unexplained. */
static void record_fault(int kind, pid_t pid, const char *node, double at)
{
    pthread_mutex_lock(&g_mu);
    g_faults[kind]++;
    if (g_nfault_log < MAX_FAULT_RECS) {
        g_fault_log[g_nfault_log].wall = at;
        g_fault_log[g_nfault_log].kind = kind;
        g_fault_log[g_nfault_log].pid = pid;
        snprintf(g_fault_log[g_nfault_log].node, sizeof g_fault_log[0].node, "%s",
                 node ? node : "");
        g_nfault_log++;
    }
    pthread_mutex_unlock(&g_mu);
    say("fault %s pid %d %s", fault_names[kind], (int)pid, node ? node : "");
}

static int raylet_kills_since(double wall)
{
    int n = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nfault_log; i++)
        n += g_fault_log[i].kind == F_RAYLET && g_fault_log[i].wall >= wall;
    pthread_mutex_unlock(&g_mu);
    return n;
}

/* ------------------------------------------------------------------ resource bounds */

/* The largest capacity each job could ever have given each of its resources, and when
 * it last wrote it: what the over-capacity checks compare held with. */
#define MAX_NAMES 4096
static struct {
    char name[128];
    int64_t bound;
    double last_write; /* monotonic ms */
} g_names[MAX_NAMES];
static int g_nnames;

static void note_write(const char *ns, const char *name, int64_t bound)
{
    char full[128];
    snprintf(full, sizeof full, "%s/%s", ns, name);
    pthread_mutex_lock(&g_mu);
    int i = 0;
    while (i < g_nnames && strcmp(g_names[i].name, full) != 0)
        i++;
    if (i == g_nnames && g_nnames < MAX_NAMES) {
        snprintf(g_names[g_nnames].name, sizeof g_names[0].name, "%s", full);
        g_names[g_nnames++].bound = 0;
    }
    if (i < g_nnames) {
        if (bound > g_names[i].bound)
            g_names[i].bound = bound;
        g_names[i].last_write = h_now_ms();
    }
    pthread_mutex_unlock(&g_mu);
}

/* False for a name no driver wrote. */
static bool name_bound(const char *full, int64_t *bound, double *last_write)
{
    bool found = false;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nnames && !found; i++) {
        if (strcmp(g_names[i].name, full) == 0) {
            *bound = g_names[i].bound;
            *last_write = g_names[i].last_write;
            found = true;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return found;
}

/* ------------------------------------------------------------------ task records */

enum { T_TASK, T_PROBE, T_GANG, T_ACTOR };
enum { O_PENDING, O_OK, O_FAILED, O_UNFINISHED, O_STRANDED };

typedef struct {
    char id[ESC_ID_MAX]; /* task id, or actor id */
    int kind, outcome;
    double submit_wall, result_wall; /* result_wall: when esc_get gave OK */
    unsigned max_restarts;           /* actors */
} task_rec;

static task_rec *g_tasks;
static size_t g_ntasks, g_tasks_cap;

static int new_record(int kind)
{
    pthread_mutex_lock(&g_mu);
    if (g_ntasks == g_tasks_cap) {
        g_tasks_cap = g_tasks_cap ? 2 * g_tasks_cap : 1024;
        g_tasks = realloc(g_tasks, g_tasks_cap * sizeof *g_tasks);
        if (!g_tasks)
            abort();
    }
    int idx = (int)g_ntasks++;
    g_tasks[idx] = (task_rec){.kind = kind, .submit_wall = wall_ms()};
    if (kind != T_ACTOR)
        g_fig.submitted++;
    pthread_mutex_unlock(&g_mu);
    return idx;
}

static void set_id(int idx, const char *id)
{
    pthread_mutex_lock(&g_mu);
    snprintf(g_tasks[idx].id, sizeof g_tasks[idx].id, "%s", id);
    pthread_mutex_unlock(&g_mu);
}

/* "t<idx> (<task id>)" for messages; static storage per calling thread. */
static const char *task_name(int idx)
{
    static _Thread_local char buf[ESC_ID_MAX + 32];
    pthread_mutex_lock(&g_mu);
    snprintf(buf, sizeof buf, "t%d (%s)", idx, g_tasks[idx].id);
    pthread_mutex_unlock(&g_mu);
    return buf;
}

static void set_outcome(int idx, int outcome)
{
    pthread_mutex_lock(&g_mu);
    g_tasks[idx].outcome = outcome;
    if (outcome == O_OK)
        g_tasks[idx].result_wall = wall_ms();
    long *fig[] = {NULL, &g_fig.ok, &g_fig.failed, &g_fig.unfinished, &g_fig.stranded};
    (*fig[outcome])++;
    pthread_mutex_unlock(&g_mu);
}

/* Submits chaos_mark for record idx: it appends "t<idx> <us> <node> <pid>" when it
 * starts, then sleeps sleep_ms. */
static int submit_mark(esc_client *cl, int idx, int sleep_ms, const esc_amount *res,
                       size_t nres, esc_ref **ref, esc_status *st)
{
    char tag[32], ms[16];
    snprintf(tag, sizeof tag, "t%d", idx);
    snprintf(ms, sizeof ms, "%d", sleep_ms);
    esc_task_arg args[] = {{.data = g_runs_path, .len = strlen(g_runs_path)},
                           {.data = tag, .len = strlen(tag)},
                           {.data = ms, .len = strlen(ms)}};
    esc_task_spec spec = {.name = "chaos", .library = h_tasks_lib(), .symbol = "chaos_mark",
                          .resources = res, .nresources = nres, .args = args, .nargs = 3,
                          .max_retries = 4};
    char id[ESC_ID_MAX] = "";
    int rc = esc_task_submit(cl, &spec, ref, id, st);
    set_id(idx, id);
    return rc;
}

/* A submission that failed: the task has no result to wait for. */
static void submit_failed(int idx, int rc, const esc_status *st)
{
    if (!st->message[0])
        violation(V_NO_REASON, "task %s: submit %s without a message", task_name(idx),
                  esc_status_name(rc));
    note_reason(st->message);
    set_outcome(idx, O_FAILED);
}

/* Files what esc_get said about record idx. Returns false while it is not ready. */
static bool take_result(int idx, int rc, const esc_status *st)
{
    if (rc == ESC_DEADLINE_EXCEEDED)
        return false;
    if (rc == ESC_OK) {
        set_outcome(idx, O_OK);
        return true;
    }
    if (!st->message[0])
        violation(V_NO_REASON, "task %s: %s without a message", task_name(idx),
                  esc_status_name(rc));
    /* The reference came from esc_task_submit and the driver never releases it, so it
     * is neither invalid nor freed; and its lineage lives on raylet 0, which is never
     * killed, so a lost copy is always made again (docs/tasks.md, rule 3). */
    if (rc == ESC_INVALID_ARGUMENT || rc == ESC_NOT_FOUND)
        violation(V_RESULT_REFUSED, "task %s: esc_get gave %s: %s", task_name(idx),
                  esc_status_name(rc), st->message);
    say("task %s: esc_get gave %s", task_name(idx), esc_status_name(rc));
    note_reason(st->message);
    set_outcome(idx, O_FAILED);
    return true;
}

/* ------------------------------------------------------------------ clients */

/* A client of raylet 0. A GCS that is restarting or waiting on Redis refuses for a
 * while; 60 s without a connection is a violation (and the driver goes on trying). */
static esc_client *connect_driver(const char *ns, bool no_job)
{
    esc_connect_opts o = {.address = C.gcs_addr, .token = C.token, .namespace_ = ns,
                          .node_id = C.raylets[0].node_id, .session_dir = C.dir,
                          .no_job = no_job};
    double t0 = h_now_ms();
    bool reported = false;
    for (;;) {
        esc_client *cl = NULL;
        esc_status st = {0};
        if (esc_connect(&o, &cl, &st) == ESC_OK)
            return cl;
        if (!reported && h_now_ms() - t0 > 60000) {
            violation(V_GCS_UNAVAILABLE, "no connection for %s in 60 s: %s %s", ns,
                      esc_status_name(st.code), st.message);
            reported = true;
        }
        sleep_ms(300);
    }
}

/* Namespaces of finished jobs whose resources must disappear. */
#define MAX_ENDED 256
static struct {
    char ns[64];
    double ended; /* monotonic ms */
    bool killed;  /* its driver was killed: the GCS's job timeout ends the job */
} g_ended[MAX_ENDED];
static int g_nended;

static void job_ended(const char *ns, bool killed)
{
    pthread_mutex_lock(&g_mu);
    if (g_nended < MAX_ENDED) {
        snprintf(g_ended[g_nended].ns, sizeof g_ended[0].ns, "%s", ns);
        g_ended[g_nended].killed = killed;
        g_ended[g_nended++].ended = h_now_ms();
    }
    pthread_mutex_unlock(&g_mu);
}

/* Namespaces of running jobs whose "slot" must stay on raylet 0's node. */
#define MAX_LIVE 16
static struct {
    char ns[64];
    double missing_since; /* 0: seen at the last look */
} g_live[MAX_LIVE];
static int g_nlive;

static void job_live(const char *ns)
{
    pthread_mutex_lock(&g_mu);
    if (g_nlive < MAX_LIVE) {
        snprintf(g_live[g_nlive].ns, sizeof g_live[0].ns, "%s", ns);
        g_live[g_nlive++].missing_since = 0;
    }
    pthread_mutex_unlock(&g_mu);
}

static void job_ending(const char *ns)
{
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nlive; i++)
        if (strcmp(g_live[i].ns, ns) == 0)
            g_live[i] = g_live[--g_nlive];
    pthread_mutex_unlock(&g_mu);
}

static void end_session(esc_client *cl, const char *ns)
{
    job_ending(ns);
    esc_disconnect(cl);
    job_ended(ns, false);
    bump(&g_fig.sessions);
}

/* ------------------------------------------------------------------ monitor */

static long gcs_rss_kb(void)
{
    pthread_mutex_lock(&g_mu);
    pid_t pid = g_view.gcs_pid;
    pthread_mutex_unlock(&g_mu);
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static void check_rss(void)
{
    long kb = gcs_rss_kb();
    pthread_mutex_lock(&g_mu);
    bool first_over = kb > g_rss_limit_kb && g_fig.gcs_max_rss_kb <= g_rss_limit_kb;
    if (kb > g_fig.gcs_max_rss_kb)
        g_fig.gcs_max_rss_kb = kb;
    pthread_mutex_unlock(&g_mu);
    if (first_over)
        violation(V_GCS_RSS, "GCS VmRSS %ld kB above %ld kB", kb, g_rss_limit_kb);
}

static const esc_node_status *find_node(const esc_cluster_status *s, const char *id)
{
    for (size_t i = 0; s && i < s->nnodes; i++)
        if (strcmp(s->nodes[i].id, id) == 0)
            return &s->nodes[i];
    return NULL;
}

/* Admission past capacity: while a node applied no log entry between two looks and
 * nobody wrote the resource lately, its total stayed the same; admission then needs
 * held <= total after every start, so a held above total can only have shrunk. */
static void check_admission(const esc_node_status *prev, const esc_node_status *n,
                            const esc_resource_info *r, double prev_at)
{
    const esc_resource_info *p = esc_node_resource(prev, r->name);
    int64_t bound;
    double last_write;
    if (!p || p->deleted || p->unbounded || prev->applied_seq != n->applied_seq ||
        p->total != r->total || r->held <= p->held || r->held <= r->total)
        return;
    if (!name_bound(r->name, &bound, &last_write) || prev_at - last_write < QUIET_WRITES_MS)
        return;
    violation(V_ADMITTED_OVER,
              "node %s %s: held %lld -> %lld with total %lld unchanged at seq %llu", n->id,
              r->name, (long long)p->held, (long long)r->held, (long long)r->total,
              (unsigned long long)n->applied_seq);
}

static void check_row(const esc_node_status *n, const esc_resource_info *r,
                      const esc_node_status *prev, double prev_at)
{
    if (r->unbounded)
        return;
    if (!r->ephemeral) {
        if (r->held > r->total)
            violation(V_PHYSICAL_OVER, "node %s %s: held %lld > total %lld", n->id, r->name,
                      (long long)r->held, (long long)r->total);
        return;
    }
    int64_t bound;
    double last_write;
    if (name_bound(r->name, &bound, &last_write) && r->held > bound)
        violation(V_EPHEMERAL_OVER, "node %s %s: held %lld > largest capacity ever %lld",
                  n->id, r->name, (long long)r->held, (long long)bound);
    if (prev && !r->deleted)
        check_admission(prev, n, r, prev_at);
}

static bool ns_has_rows(const esc_cluster_status *s, const char *ns, char *where, size_t len)
{
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *n = &s->nodes[i];
        for (size_t j = 0; strcmp(n->state, "ALIVE") == 0 && j < n->nresources; j++) {
            const esc_resource_info *r = &n->resources[j];
            if (r->namespace_ && strcmp(r->namespace_, ns) == 0) {
                snprintf(where, len, "%s on %s (total %lld held %lld%s)", r->name, n->id,
                         (long long)r->total, (long long)r->held, r->deleted ? " deleted" : "");
                return true;
            }
        }
    }
    return false;
}

static void check_cleanup(const esc_cluster_status *s)
{
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nended; i++) {
        char where[400];
        double age = h_now_ms() - g_ended[i].ended;
        /* A restarted GCS never saw the driver's liveness stream, so it gives a killed
         * driver's job a whole job timeout again: the deadline runs from the later of
         * the job's end and the GCS's last start. */
        double since = h_now_ms() - (g_gcs_started > g_ended[i].ended ? g_gcs_started
                                                                       : g_ended[i].ended);
        bool left = ns_has_rows(s, g_ended[i].ns, where, sizeof where);
        if (left && since < CLEANUP_LIMIT_MS)
            continue;
        if (left) {
            pthread_mutex_unlock(&g_mu);
            violation(V_LEFTOVER, "job %s ended %.0f s ago (%.0f s after the GCS's last start),"
                      " still has %s", g_ended[i].ns, age / 1000, since / 1000, where);
            pthread_mutex_lock(&g_mu);
        } else {
            double *worst = g_ended[i].killed ? &g_fig.worst_cleanup_killed_ms
                                              : &g_fig.worst_cleanup_ms;
            *worst = age > *worst ? age : *worst;
        }
        g_ended[i--] = g_ended[--g_nended];
    }
    pthread_mutex_unlock(&g_mu);
}

/* A live job's slot exists on raylet 0's node (set on all nodes, never deleted while
 * the job runs), so a status that lacks it for long lost it: a GCS restart that did
 * not reload the registry, or a job ended behind its driver's back. */
static void check_registry(const esc_cluster_status *s)
{
    const esc_node_status *n0 = find_node(s, C.raylets[0].node_id);
    if (!n0 || strcmp(n0->state, "ALIVE") != 0)
        return;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nlive; i++) {
        char full[sizeof g_live[0].ns + 8];
        snprintf(full, sizeof full, "%.63s/slot", g_live[i].ns);
        if (esc_node_resource(n0, full)) {
            g_live[i].missing_since = 0;
            continue;
        }
        if (!g_live[i].missing_since)
            g_live[i].missing_since = h_now_ms();
        if (h_now_ms() - g_live[i].missing_since > REGISTRY_GRACE_MS) {
            pthread_mutex_unlock(&g_mu);
            violation(V_REGISTRY_LOST, "%s missing on node 0 for %.0f s while its job runs",
                      full, REGISTRY_GRACE_MS / 1000);
            pthread_mutex_lock(&g_mu);
            g_live[i].missing_since = h_now_ms();
        }
    }
    pthread_mutex_unlock(&g_mu);
}

static void check_status(const esc_cluster_status *s, const esc_cluster_status *prev,
                         double prev_at)
{
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *n = &s->nodes[i];
        if (strcmp(n->state, "ALIVE") != 0)
            continue;
        const esc_node_status *p = find_node(prev, n->id);
        for (size_t j = 0; j < n->nresources; j++)
            check_row(n, &n->resources[j], p, prev_at);
    }
    check_cleanup(s);
    check_registry(s);
}

static void *monitor_main(void *arg)
{
    (void)arg;
    esc_client *cl = connect_driver("chaos-monitor", true);
    esc_cluster_status *prev = NULL;
    double prev_at = 0;
    while (!atomic_load(&g_stop_watch)) {
        check_rss();
        esc_cluster_status *s = NULL;
        double at = h_now_ms();
        if (esc_get_cluster_resources(cl, &s, NULL) == ESC_OK) {
            check_status(s, prev, prev_at);
            esc_cluster_status_free(prev);
            prev = s;
            prev_at = at;
        }
        sleep_ms(250);
    }
    esc_cluster_status_free(prev);
    esc_disconnect(cl);
    return NULL;
}

/* ------------------------------------------------------------------ probe */

static void probe_once(esc_client *cl)
{
    int idx = new_record(T_PROBE);
    esc_amount cpu[] = {{.name = "CPU", .value = ESC_QTY(0.25)}};
    esc_ref *ref = NULL;
    esc_status st = {0};
    double t0 = h_now_ms();
    int rc = submit_mark(cl, idx, 0, cpu, 1, &ref, &st);
    if (rc != ESC_OK) {
        submit_failed(idx, rc, &st);
        return;
    }
    void *v = NULL;
    size_t len;
    rc = esc_get(cl, ref, (int)TASK_LIMIT_MS, &v, &len, &st);
    free(v);
    double took = h_now_ms() - t0;
    if (!take_result(idx, rc, &st))
        set_outcome(idx, O_UNFINISHED);
    esc_ref_free(ref);
    pthread_mutex_lock(&g_mu);
    g_fig.probes++;
    if (took > g_fig.worst_probe_ms)
        g_fig.worst_probe_ms = took;
    pthread_mutex_unlock(&g_mu);
    if (rc == ESC_DEADLINE_EXCEEDED)
        violation(V_TASK_UNFINISHED, "probe %s: no result in %.0f s", task_name(idx),
                  took / 1000);
    if (took > PROBE_LIMIT_MS)
        violation(V_PROBE_LATE, "probe %s took %.1f s (%s %s)", task_name(idx), took / 1000,
                  esc_status_name(rc), st.message);
}

static void *probe_main(void *arg)
{
    (void)arg;
    esc_client *cl = connect_driver("chaos-probe", false);
    while (!atomic_load(&g_stop_watch)) {
        double t0 = h_now_ms();
        probe_once(cl);
        double left = 1000 - (h_now_ms() - t0);
        if (left > 0)
            sleep_ms((int)left);
    }
    end_session(cl, "chaos-probe");
    return NULL;
}

/* ------------------------------------------------------------------ task drivers */

typedef struct {
    int id;
    unsigned rs;
    esc_client *cl;
    char ns[64];
    struct {
        int idx;
        esc_ref *ref;
        double submitted;
    } pending[TASK_WINDOW];
    int npending;
} task_driver;

static void count_op(int rc)
{
    bump(rc == ESC_OK ? &g_fig.res_ops_ok : &g_fig.res_ops_failed);
}

/* The slot that every task of the driver needs: a capacity in 1..SLOT_MAX on all
 * nodes, sometimes shrunk by one and grown back (deltas), never more than SLOT_MAX. */
static void slot_op(task_driver *d)
{
    esc_target all = ESC_ALL_NODES;
    uint64_t seq = 0;
    note_write(d->ns, "slot", ESC_QTY(SLOT_MAX));
    if (rand_r(&d->rs) % 3) {
        int rc = esc_resource_set(d->cl, "slot", ESC_QTY(1 + rand_r(&d->rs) % SLOT_MAX), &all,
                                  &seq, NULL);
        count_op(rc);
        if (rc == ESC_OK && rand_r(&d->rs) % 4 == 0)
            count_op(esc_wait_applied(d->cl, seq, NULL, 0, 5000, NULL));
        return;
    }
    int rc = esc_resource_add(d->cl, "slot", ESC_QTY(-1), &all, &seq, NULL);
    count_op(rc);
    /* Only after a shrink that committed: an add that failed may have committed too,
     * and growing back after it could pass SLOT_MAX. */
    if (rc == ESC_OK)
        count_op(esc_resource_add(d->cl, "slot", ESC_QTY(1), &all, &seq, NULL));
}

/* Resources no task requests (held stays 0): node targets, deletes and batches that
 * keep the log, the registry and their replay busy. */
static void churn_op(task_driver *d)
{
    char name[16], other[16], node[80];
    snprintf(name, sizeof name, "churn%u", rand_r(&d->rs) % 4);
    snprintf(other, sizeof other, "churn%u", rand_r(&d->rs) % 4);
    note_write(d->ns, name, NO_BOUND);
    note_write(d->ns, other, NO_BOUND);
    random_live_node(&d->rs, node, sizeof node);
    esc_target one = ESC_NODE(node), all = ESC_ALL_NODES;
    uint64_t seq;
    switch (rand_r(&d->rs) % 4) {
    case 0:
        count_op(esc_resource_set(d->cl, name, ESC_QTY(rand_r(&d->rs) % 6), &one, &seq, NULL));
        break;
    case 1:
        count_op(esc_resource_add(d->cl, name, ESC_QTY(1), &all, &seq, NULL));
        break;
    case 2:
        count_op(esc_resource_delete(d->cl, name, &one, &seq, NULL));
        break;
    default: {
        esc_batch *b = esc_batch_new();
        esc_batch_set(b, name, ESC_QTY(2), &one);
        esc_batch_add(b, other, ESC_QTY(-1), &all);
        esc_batch_set(b, "churn-b", ESC_QTY(rand_r(&d->rs) % 3), &all);
        note_write(d->ns, "churn-b", NO_BOUND);
        count_op(esc_batch_commit(d->cl, b, &seq, NULL));
        esc_batch_free(b);
    }
    }
}

static void submit_one(task_driver *d)
{
    char slot[96];
    snprintf(slot, sizeof slot, "%s/slot", d->ns);
    esc_amount res[] = {{.name = "CPU", .value = ESC_QTY(0.5)},
                        {.name = slot, .value = ESC_QTY(1)}};
    int idx = new_record(T_TASK);
    esc_ref *ref = NULL;
    esc_status st = {0};
    int rc = submit_mark(d->cl, idx, 100 + (int)(rand_r(&d->rs) % 1400), res, 2, &ref, &st);
    if (rc != ESC_OK) {
        submit_failed(idx, rc, &st);
        return;
    }
    d->pending[d->npending].idx = idx;
    d->pending[d->npending].ref = ref;
    d->pending[d->npending].submitted = h_now_ms();
    d->npending++;
}

/* Waits up to wait_ms for the oldest task; false while it is not ready. */
static bool reap_oldest(task_driver *d, int wait_ms)
{
    void *v = NULL;
    size_t len;
    esc_status st = {0};
    int idx = d->pending[0].idx;
    int rc = esc_get(d->cl, d->pending[0].ref, wait_ms, &v, &len, &st);
    free(v);
    bool done = take_result(idx, rc, &st);
    if (!done && h_now_ms() - d->pending[0].submitted > TASK_LIMIT_MS) {
        violation(V_TASK_UNFINISHED, "task %s: no result in %.0f s", task_name(idx),
                  TASK_LIMIT_MS / 1000);
        set_outcome(idx, O_UNFINISHED);
        esc_cancel(d->cl, d->pending[0].ref, NULL);
        done = true;
    }
    if (done) {
        esc_ref_free(d->pending[0].ref);
        memmove(&d->pending[0], &d->pending[1], --d->npending * sizeof d->pending[0]);
    }
    return done;
}

static void task_session(task_driver *d, int session)
{
    snprintf(d->ns, sizeof d->ns, "chaos-t%d-%d", d->id, session);
    d->cl = connect_driver(d->ns, false);
    esc_target all = ESC_ALL_NODES;
    note_write(d->ns, "slot", ESC_QTY(SLOT_MAX));
    while (esc_resource_set(d->cl, "slot", ESC_QTY(SLOT_MAX), &all, NULL, NULL) != ESC_OK)
        sleep_ms(500); /* the GCS may be restarting */
    job_live(d->ns);
    double end = h_now_ms() + 30000 + rand_r(&d->rs) % 30000;
    double next_op = 0;
    while (h_now_ms() < end && !atomic_load(&g_stop_drivers)) {
        while (d->npending < TASK_WINDOW)
            submit_one(d);
        reap_oldest(d, 500);
        if (h_now_ms() >= next_op) {
            (rand_r(&d->rs) % 2 ? slot_op : churn_op)(d);
            next_op = h_now_ms() + 300 + rand_r(&d->rs) % 700;
        }
    }
    while (d->npending)
        reap_oldest(d, 1000);
    /* Half the sessions delete their resources themselves; the job's end must remove
     * the other half's (and whatever churn is left). */
    if (rand_r(&d->rs) % 2)
        count_op(esc_resource_delete(d->cl, "slot", &all, NULL, NULL));
    end_session(d->cl, d->ns);
}

static void *task_driver_main(void *arg)
{
    task_driver *d = arg;
    for (int s = 0; !atomic_load(&g_stop_drivers); s++)
        task_session(d, s);
    return NULL;
}

/* ------------------------------------------------------------------ actor driver */

/* Pids of actor workers as their calls reported them: the killer's actor targets. */
#define MAX_ACTOR_PIDS 64
static pid_t g_actor_pids[MAX_ACTOR_PIDS]; /* a ring of the latest ones */
static unsigned g_actor_pid_next;

static bool actor_pid_known(pid_t pid)
{
    bool found = false;
    for (int i = 0; i < MAX_ACTOR_PIDS && !found; i++)
        found = g_actor_pids[i] == pid;
    return found;
}

static void note_actor_pid(pid_t pid)
{
    pthread_mutex_lock(&g_mu);
    if (!actor_pid_known(pid))
        g_actor_pids[g_actor_pid_next++ % MAX_ACTOR_PIDS] = pid;
    pthread_mutex_unlock(&g_mu);
}

static bool is_actor_pid(pid_t pid)
{
    pthread_mutex_lock(&g_mu);
    bool found = actor_pid_known(pid);
    pthread_mutex_unlock(&g_mu);
    return found;
}

typedef struct {
    esc_actor *a;
    int idx;          /* record of its init runs, tag "t<idx>" */
    pid_t last_pid;
    long long last_count;
    int failures;     /* calls failed in a row */
} actor_slot;

/* Whether a run line of tag shows pid: the init ran in that worker. */
static bool init_ran_in(int idx, pid_t pid)
{
    FILE *f = fopen(g_runs_path, "r");
    char line[512], tag[32];
    snprintf(tag, sizeof tag, "t%d", idx);
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        char t[64], node[128];
        long long us;
        int p;
        found = sscanf(line, "%63s %lld %127s %d", t, &us, node, &p) == 4 &&
                strcmp(t, tag) == 0 && p == pid;
    }
    if (f)
        fclose(f);
    return found;
}

static void actor_create(esc_client *cl, actor_slot *s)
{
    s->idx = new_record(T_ACTOR);
    s->last_pid = 0;
    s->last_count = 0;
    s->failures = 0;
    char tag[32];
    snprintf(tag, sizeof tag, "t%d", s->idx);
    esc_task_arg init_args[] = {{.data = g_runs_path, .len = strlen(g_runs_path)},
                                {.data = tag, .len = strlen(tag)}};
    esc_amount cpu[] = {{.name = "CPU", .value = ESC_QTY(0.25)}};
    esc_actor_spec spec = {.name = "chaos-actor", .library = h_tasks_lib(),
                           .init_symbol = "chaos_mark", .resources = cpu, .nresources = 1,
                           .max_restarts = ACTOR_MAX_RESTARTS, .init_args = init_args,
                           .ninit_args = 2};
    pthread_mutex_lock(&g_mu);
    g_tasks[s->idx].max_restarts = ACTOR_MAX_RESTARTS;
    g_fig.actors_created++;
    pthread_mutex_unlock(&g_mu);
    s->a = NULL;
    while (esc_actor_create(cl, &spec, &s->a, NULL) != ESC_OK)
        sleep_ms(500);
    set_id(s->idx, esc_actor_id(s->a));
}

/* A call's "<pid> <count>": a new pid must be a worker whose init ran. */
static void actor_result(actor_slot *s, const char *v)
{
    int pid = 0;
    long long count = 0;
    if (sscanf(v, "%d %lld", &pid, &count) != 2)
        return;
    note_actor_pid(pid);
    if (pid != s->last_pid && !init_ran_in(s->idx, pid))
        violation(V_ACTOR_RESET,
                  "actor %s: call ran in worker %d (count %lld) whose init never ran"
                  " (previous worker %d)", task_name(s->idx), pid, count,
                  (int)s->last_pid);
    s->last_pid = pid;
    s->last_count = count;
    s->failures = 0;
}

/* After a failed call: replaces the actor once it is dead (or, after ten failures in
 * a row, kills and replaces it: a creation that failed may never say DEAD); its
 * restarts so far must stay within max_restarts. */
static void actor_failed(esc_client *cl, actor_slot *s)
{
    esc_actor_info info;
    s->failures++;
    if (esc_actor_get_info(cl, s->a, &info, NULL) != ESC_OK)
        return;
    if (info.restarts > info.max_restarts)
        violation(V_ACTOR_RESTARTS, "actor %s: info says %u restarts of max %u",
                  task_name(s->idx), info.restarts, info.max_restarts);
    if (info.state != ESC_ACTOR_DEAD && s->failures < 10)
        return;
    if (info.state != ESC_ACTOR_DEAD)
        esc_actor_kill(cl, s->a, NULL);
    bump(&g_fig.actors_dead);
    esc_actor_free(s->a);
    actor_create(cl, s);
}

static void actor_call(esc_client *cl, actor_slot *s)
{
    esc_ref *ref = NULL;
    esc_status st = {0};
    int rc = esc_actor_call(cl, s->a, "chaos_step", NULL, 0, 1, &ref, &st);
    if (rc == ESC_OK) {
        void *v = NULL;
        size_t len;
        rc = esc_get(cl, ref, 60000, &v, &len, &st);
        if (rc == ESC_OK)
            actor_result(s, v);
        free(v);
    }
    esc_ref_free(ref);
    bump(rc == ESC_OK ? &g_fig.actor_calls_ok : &g_fig.actor_calls_failed);
    if (rc == ESC_OK)
        return;
    if (rc != ESC_DEADLINE_EXCEEDED && !st.message[0])
        violation(V_NO_REASON, "actor %s call: %s without a message", task_name(s->idx),
                  esc_status_name(rc));
    note_reason(st.message);
    actor_failed(cl, s);
}

static void *actor_driver_main(void *arg)
{
    unsigned rs = g_seed + 77;
    (void)arg;
    for (int session = 0; !atomic_load(&g_stop_drivers); session++) {
        char ns[64];
        snprintf(ns, sizeof ns, "chaos-a-%d", session);
        esc_client *cl = connect_driver(ns, false);
        actor_slot slots[NACTORS];
        for (int i = 0; i < NACTORS; i++)
            actor_create(cl, &slots[i]);
        double end = h_now_ms() + 40000 + rand_r(&rs) % 40000;
        while (h_now_ms() < end && !atomic_load(&g_stop_drivers)) {
            actor_call(cl, &slots[rand_r(&rs) % NACTORS]);
            sleep_ms(100 + (int)(rand_r(&rs) % 400)); /* idle spells: idle actors die too */
        }
        for (int i = 0; i < NACTORS; i++)
            esc_actor_free(slots[i].a);
        end_session(cl, ns);
    }
    return NULL;
}

/* ------------------------------------------------------------------ gang driver */

static void gang_members(esc_client *cl, esl_gang *g, unsigned members, unsigned *rs)
{
    const esl_request *req = esl_gang_request(g);
    int idx[4];
    esc_ref *refs[4] = {0};
    double reserved = wall_ms();
    for (unsigned m = 0; m < members; m++) {
        esc_status st = {0};
        idx[m] = new_record(T_GANG);
        int rc = submit_mark(cl, idx[m], 300 + (int)(rand_r(rs) % 500), req->v, req->n,
                             &refs[m], &st);
        if (rc != ESC_OK)
            submit_failed(idx[m], rc, &st);
    }
    for (unsigned m = 0; m < members; m++) {
        if (!refs[m])
            continue;
        void *v = NULL;
        size_t len;
        esc_status st = {0};
        int rc = esc_get(cl, refs[m], 60000, &v, &len, &st);
        free(v);
        if (!take_result(idx[m], rc, &st)) {
            /* A member waits for its slot forever when the slot's node died: nothing
             * recreates a gang's resources (docs/esl.md). Anything else is lost. */
            if (raylet_kills_since(reserved - 1000) > 0) {
                set_outcome(idx[m], O_STRANDED);
            } else {
                violation(V_TASK_UNFINISHED, "gang member %s: no result in 60 s",
                          task_name(idx[m]));
                set_outcome(idx[m], O_UNFINISHED);
            }
            esc_cancel(cl, refs[m], NULL);
        }
        esc_ref_free(refs[m]);
    }
}

static void gang_once(esc_client *cl, const char *ns, int n, unsigned *rs)
{
    char name[32];
    snprintf(name, sizeof name, "g%d", n);
    unsigned members = 2 + rand_r(rs) % 2;
    esl_request per = {0};
    esl_request_add(&per, "CPU", ESC_QTY(1));
    esl_gang *g = NULL;
    note_write(ns, name, (int64_t)members * ESC_QTY_UNIT);
    int rc = esl_gang_reserve(cl, name, members, &per, 15000, &g, NULL);
    esl_request_clear(&per);
    bump(rc == ESC_OK ? &g_fig.gangs_ok : &g_fig.gangs_failed);
    if (rc != ESC_OK)
        return;
    gang_members(cl, g, members, rs);
    note_write(ns, name, (int64_t)members * ESC_QTY_UNIT);
    esl_gang_release(cl, g, NULL);
}

static void *gang_driver_main(void *arg)
{
    unsigned rs = g_seed + 99;
    (void)arg;
    int n = 0;
    for (int session = 0; !atomic_load(&g_stop_drivers); session++) {
        char ns[64];
        snprintf(ns, sizeof ns, "chaos-g-%d", session);
        esc_client *cl = connect_driver(ns, false);
        double end = h_now_ms() + 40000 + rand_r(&rs) % 40000;
        while (h_now_ms() < end && !atomic_load(&g_stop_drivers)) {
            gang_once(cl, ns, n++, &rs);
            sleep_ms(300);
        }
        end_session(cl, ns);
    }
    return NULL;
}

/* ------------------------------------------------------------------ killer */

static struct {
    double down_until[NSLOTS]; /* monotonic ms; 0: up */
    unsigned rs;
    double start;              /* monotonic ms when faults began */
    bool redis_paused, redis_killed;
    pid_t driver_pid;          /* a driver process to be killed (see kill_driver_step) */
    int driver_fd;             /* it writes a line there once its job holds resources */
    char driver_ns[64];
    double driver_at;          /* monotonic ms of its start, or of the last kill */
} K;

static bool is_raylet_pid(pid_t ppid)
{
    for (int i = 0; i < NSLOTS; i++)
        if (C.raylets[i].pid > 0 && C.raylets[i].pid == ppid)
            return true;
    return false;
}

/* Live escher-worker children of live raylets, actor workers or the others; *slot of
 * each gets the raylet's slot. */
static int list_workers(bool actors, pid_t *out, int *slot, int max)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max) {
        char path[300], comm[64], st;
        int pid, ppid;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fscanf(f, "%d (%63[^)]) %c %d", &pid, comm, &st, &ppid) == 4 && st != 'Z' &&
            strcmp(comm, "escher-worker") == 0 && is_raylet_pid(ppid) &&
            is_actor_pid(pid) == actors) {
            for (int i = 0; i < NSLOTS; i++)
                if (C.raylets[i].pid == ppid)
                    slot[n] = i;
            out[n++] = pid;
        }
        fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static bool kill_worker(bool actors)
{
    pid_t pids[256];
    int slots[256];
    int n = list_workers(actors, pids, slots, 256);
    if (!n)
        return false;
    int k = (int)(rand_r(&K.rs) % (unsigned)n);
    double at = wall_ms();
    if (kill(pids[k], SIGKILL) != 0)
        return false;
    record_fault(actors ? F_ACTOR : F_WORKER, pids[k], C.raylets[slots[k]].node_id, at);
    return true;
}

static bool kill_raylet(void)
{
    int down = 0;
    for (int i = 1; i < NSLOTS; i++)
        down += K.down_until[i] > 0;
    if (down >= MAX_DOWN_RAYLETS)
        return false;
    int i;
    do
        i = 1 + (int)(rand_r(&K.rs) % (NSLOTS - 1));
    while (K.down_until[i] > 0);
    pid_t pid = C.raylets[i].pid;
    double at = wall_ms();
    h_kill(&C.raylets[i].pid, SIGKILL);
    record_fault(F_RAYLET, pid, C.raylets[i].node_id, at);
    /* Back before or after it is declared dead (node timeout 2 s). */
    K.down_until[i] = h_now_ms() + 500 + rand_r(&K.rs) % 6000;
    publish_view();
    return true;
}

static void restart_gcs(void)
{
    for (int tries = 0; tries < 5; tries++) {
        if (h_gcs_start(&C) == 0) {
            say("GCS back (pid %d)", (int)C.gcs_pid);
            pthread_mutex_lock(&g_mu);
            g_gcs_started = h_now_ms();
            pthread_mutex_unlock(&g_mu);
            publish_view();
            return;
        }
        h_kill(&C.gcs_pid, SIGKILL);
        sleep_ms(1000);
    }
    violation(V_DAEMON_DIED, "the GCS did not start again in 5 tries (see gcs.log)");
}

static void kill_gcs(void)
{
    pid_t pid = C.gcs_pid;
    double at = wall_ms();
    h_kill(&C.gcs_pid, SIGKILL);
    record_fault(F_GCS, pid, NULL, at);
    publish_view();
    sleep_ms((int)(rand_r(&K.rs) % 1500));
    restart_gcs();
}

static void pause_redis(void)
{
    double at = wall_ms();
    kill(C.redis_pid, SIGSTOP);
    record_fault(F_REDIS_PAUSE, C.redis_pid, NULL, at);
    /* Longer than the storage timeout and the node timeout. */
    sleep_ms(5000);
    kill(C.redis_pid, SIGCONT);
}

static void kill_redis(void)
{
    pid_t pid = C.redis_pid;
    double at = wall_ms();
    h_kill(&C.redis_pid, SIGKILL);
    record_fault(F_REDIS_KILL, pid, NULL, at);
    sleep_ms(1000);
    if (h_redis_start_durable(&C) != 0)
        violation(V_DAEMON_DIED, "redis did not start again on port %d", C.redis_port);
}

/* Restarts raylets whose downtime is over, in their slot (same port, same flags). */
static void restart_raylets(bool all)
{
    for (int i = 1; i < NSLOTS; i++) {
        if (!K.down_until[i] || (!all && h_now_ms() < K.down_until[i]))
            continue;
        if (h_raylet_start(&C, i, NULL) == 0) {
            say("raylet %d back as node %s (pid %d, port %d)", i, C.raylets[i].node_id,
                (int)C.raylets[i].pid, C.raylets[i].port);
            K.down_until[i] = 0;
            publish_view();
            continue;
        }
        h_kill(&C.raylets[i].pid, SIGKILL);
        if (h_now_ms() - K.down_until[i] > 60000) {
            violation(V_DAEMON_DIED, "raylet %d did not start again for 60 s (raylet.%d.log)",
                      i, i);
            K.down_until[i] = h_now_ms();
        }
    }
}

/* ------------------------------------------------------------------ killed drivers */

/* A driver process that the killer `kill -9`s: its job ends by the GCS's job timeout,
 * and its resources (held by its running tasks) must go with it. The driver is this
 * program run again (gRPC does not survive a plain fork of a process that used it):
 *   test_chaos --driver GCS_ADDR TOKEN NODE_ID NAMESPACE RUNS_PATH
 * It sets "held" on all nodes, starts two long tasks that hold one unit each, writes
 * "ready" on stdout and waits to be killed. */
static int killed_driver_main(char **argv)
{
    esc_connect_opts o = {.address = argv[2], .token = argv[3], .node_id = argv[4],
                          .namespace_ = argv[5]};
    esc_client *cl = NULL;
    esc_target all = ESC_ALL_NODES;
    if (esc_connect(&o, &cl, NULL) != ESC_OK ||
        esc_resource_set(cl, "held", ESC_QTY(2), &all, NULL, NULL) != ESC_OK)
        return 1;
    char held[96];
    snprintf(held, sizeof held, "%s/held", argv[5]);
    esc_amount res[] = {{.name = held, .value = ESC_QTY(1)}};
    /* Tag "d...": not a record of the parent's, which reads only "t<idx>" lines. */
    esc_task_arg args[] = {{.data = argv[6], .len = strlen(argv[6])},
                           {.data = "d", .len = 1}, {.data = "600000", .len = 6}};
    esc_task_spec spec = {.name = "chaos-held", .library = h_tasks_lib(),
                          .symbol = "chaos_mark", .resources = res, .nresources = 1,
                          .args = args, .nargs = 3};
    for (int i = 0; i < 2; i++) {
        esc_ref *ref = NULL;
        if (esc_task_submit(cl, &spec, &ref, NULL, NULL) != ESC_OK)
            return 1;
        esc_ref_free(ref);
    }
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}

static void spawn_driver(void)
{
    static int n;
    int fds[2];
    if (pipe(fds) != 0)
        return;
    snprintf(K.driver_ns, sizeof K.driver_ns, "chaos-k-%d", n++);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], 1);
        close(fds[0]);
        execl("/proc/self/exe", "test_chaos", "--driver", C.gcs_addr, C.token,
              C.raylets[0].node_id, K.driver_ns, g_runs_path, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    K.driver_pid = pid;
    K.driver_fd = fds[0];
    K.driver_at = h_now_ms();
}

/* Ends the driver process (its job is then the GCS's to end) and watches its
 * namespace go. */
static void end_driver(bool ready)
{
    pid_t pid = K.driver_pid;
    double at = wall_ms();
    h_kill(&K.driver_pid, SIGKILL);
    close(K.driver_fd);
    if (ready)
        record_fault(F_DRIVER, pid, K.driver_ns, at);
    job_ended(K.driver_ns, true);
    K.driver_at = h_now_ms();
}

/* One step of the killed-driver fault: about every 20 s a driver starts; once it says
 * it is ready it is killed. One that is not ready within 60 s (it could not connect,
 * say) is killed too, without counting as a fault. */
static void kill_driver_step(bool stopping)
{
    if (!K.driver_pid) {
        if (!stopping && h_now_ms() - K.driver_at > 20000)
            spawn_driver();
        return;
    }
    struct pollfd p = {.fd = K.driver_fd, .events = POLLIN};
    char line[16] = "";
    bool ready = poll(&p, 1, 0) == 1 && read(K.driver_fd, line, sizeof line - 1) > 0 &&
                 strncmp(line, "ready", 5) == 0;
    if (ready || stopping || h_now_ms() - K.driver_at > 60000 || !h_alive(K.driver_pid))
        end_driver(ready);
}

/* A daemon that exited although nobody killed it crashed: counted and restarted. */
static void check_daemons(void)
{
    for (int i = 0; i < NSLOTS; i++) {
        if (K.down_until[i] || h_alive(C.raylets[i].pid))
            continue;
        violation(V_DAEMON_DIED, "raylet %d (pid %d) exited by itself (raylet.%d.log)", i,
                  (int)C.raylets[i].pid, i);
        C.raylets[i].pid = 0;
        K.down_until[i] = h_now_ms();
    }
    if (!h_alive(C.redis_pid)) {
        violation(V_DAEMON_DIED, "redis (pid %d) exited by itself (redis.log)", (int)C.redis_pid);
        C.redis_pid = 0;
        if (h_redis_start_durable(&C) != 0)
            violation(V_DAEMON_DIED, "redis did not start again on port %d", C.redis_port);
    }
    if (!h_alive(C.gcs_pid)) {
        violation(V_DAEMON_DIED, "the GCS (pid %d) exited by itself (gcs.log)", (int)C.gcs_pid);
        C.gcs_pid = 0;
        restart_gcs();
    }
}

static void inject_one(void)
{
    double elapsed = h_now_ms() - K.start, span = g_seconds * 1000.0;
    if (!K.redis_paused && elapsed > 0.35 * span) {
        K.redis_paused = true;
        pause_redis();
        return;
    }
    if (!K.redis_killed && elapsed > 0.65 * span) {
        K.redis_killed = true;
        kill_redis();
        return;
    }
    /* Weights: workers 35, actor workers 20, raylets 30, GCS 15; a kind that finds no
     * target falls through to the next. */
    unsigned r = rand_r(&K.rs) % 100;
    if (r < 35 && kill_worker(false))
        return;
    if (r < 55 && kill_worker(true))
        return;
    if (r < 85 && kill_raylet())
        return;
    if (r >= 85) {
        kill_gcs();
        return;
    }
    if (!kill_worker(false))
        kill_gcs();
}

/* Runs on the main thread: the harness's daemons die with the thread that started
 * them (PR_SET_PDEATHSIG), so the thread that restarts them must outlive the test. */
static void killer_run(void)
{
    double next = h_now_ms() + FAULT_PERIOD_MS;
    K.start = h_now_ms();
    double stop = K.start + g_seconds * 1000.0;
    while (h_now_ms() < stop) {
        restart_raylets(false);
        check_daemons();
        kill_driver_step(false);
        if (h_now_ms() < next) {
            sleep_ms(100);
            continue;
        }
        inject_one();
        next = h_now_ms() + FAULT_PERIOD_MS + rand_r(&K.rs) % 1000;
    }
    restart_raylets(true);
    check_daemons();
    kill_driver_step(true);
}

/* ------------------------------------------------------------------ final checks */

typedef struct {
    int idx;
    long long us;
    char node[80];
    int pid;
} run_line;

static int by_task_then_time(const void *a, const void *b)
{
    const run_line *x = a, *y = b;
    if (x->idx != y->idx)
        return x->idx < y->idx ? -1 : 1;
    return x->us < y->us ? -1 : x->us > y->us;
}

static run_line *read_runs(size_t *n)
{
    FILE *f = fopen(g_runs_path, "r");
    size_t cap = 4096;
    run_line *v = malloc(cap * sizeof *v);
    *n = 0;
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        run_line r;
        if (sscanf(line, "t%d %lld %79s %d", &r.idx, &r.us, r.node, &r.pid) != 4 || r.idx < 0 ||
            (size_t)r.idx >= g_ntasks)
            continue;
        if (*n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        v[(*n)++] = r;
    }
    if (f)
        fclose(f);
    qsort(v, *n, sizeof *v, by_task_then_time);
    return v;
}

/* A fault that may have made the task run again before `next`: the worker of `prev`
 * killed while it ran, or a raylet killed after the task was submitted (the one it ran
 * on, or one it was forwarded through: rule 1 of docs/tasks.md, "When a node fails",
 * submits it again when that node is declared dead). A raylet killed before the task
 * was submitted never had it, so its death explains nothing; a GCS restart explains
 * nothing either (running tasks keep running). */
static bool fault_between(double submitted, const run_line *prev, const run_line *next)
{
    double to = next->us / 1000.0;
    for (int i = 0; i < g_nfault_log; i++) {
        double at = g_fault_log[i].wall;
        int k = g_fault_log[i].kind;
        if ((k == F_WORKER || k == F_ACTOR) && g_fault_log[i].pid == prev->pid &&
            at >= prev->us / 1000.0 - 50 && at <= to)
            return true;
        if (k == F_RAYLET && at >= submitted && at <= to)
            return true;
    }
    return false;
}

static void check_task_runs(int idx, const run_line *r, size_t n)
{
    const task_rec *t = &g_tasks[idx];
    if (t->kind == T_ACTOR) {
        if (n > 1 + t->max_restarts)
            violation(V_ACTOR_RESTARTS, "actor %s: init ran %zu times, max_restarts %u",
                      task_name(idx), n, t->max_restarts);
        return;
    }
    g_fig.runs += (long)n;
    g_fig.reruns += n > 1 ? (long)n - 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char a[32], b[32];
        if (!fault_between(t->submit_wall, &r[i - 1], &r[i]))
            violation(V_RERUN_NO_FAULT, "task %s ran on %s (pid %d) at %s, again on %s (pid %d)"
                      " at %s, with no fault in between", task_name(idx), r[i - 1].node,
                      r[i - 1].pid, clock_text(r[i - 1].us / 1000.0, a, sizeof a), r[i].node,
                      r[i].pid, clock_text(r[i].us / 1000.0, b, sizeof b));
    }
    if (t->outcome != O_OK)
        return;
    if (!n || r[0].us / 1000.0 > t->result_wall)
        violation(V_RESULT_WITHOUT_RUN, "task %s: result read with no run before it",
                  task_name(idx));
    for (size_t i = 0; i < n; i++) {
        char a[32], b[32];
        if (r[i].us / 1000.0 > t->result_wall)
            violation(V_RUN_AFTER_RESULT, "task %s ran on %s (pid %d) at %s, after its result"
                      " was read at %s (run %zu of %zu)", task_name(idx), r[i].node, r[i].pid,
                      clock_text(r[i].us / 1000.0, a, sizeof a),
                      clock_text(t->result_wall, b, sizeof b), i + 1, n);
    }
}

static void final_checks(void)
{
    size_t n;
    run_line *runs = read_runs(&n);
    size_t i = 0;
    for (size_t idx = 0; idx < g_ntasks; idx++) {
        size_t j = i;
        while (j < n && runs[j].idx == (int)idx)
            j++;
        check_task_runs((int)idx, runs + i, j - i);
        i = j;
    }
    free(runs);
}

/* ------------------------------------------------------------------ report */

static json_t *counts(const char *const *names, const int *v, int n)
{
    json_t *o = json_object();
    int total = 0;
    for (int i = 0; i < n; i++) {
        json_object_set_new(o, names[i], json_integer(v[i]));
        total += v[i];
    }
    json_object_set_new(o, "total", json_integer(total));
    return o;
}

static void print_report(void)
{
    json_t *reasons = json_object();
    for (int i = 0; i < MAX_REASONS && g_reasons[i].n; i++)
        json_object_set_new(reasons, g_reasons[i].text, json_integer(g_reasons[i].n));
    json_t *o = json_pack(
        "{s:s, s:i, s:i, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o},"
        " s:{s:I, s:I, s:I, s:I}, s:{s:I, s:I}, s:{s:I, s:I, s:I}, s:o,"
        " s:{s:I, s:f}, s:f, s:f, s:I}",
        "test", "chaos", "seconds", g_seconds, "seed", (int)g_seed, "faults",
        counts(fault_names, g_faults, F_N), "tasks", "submitted", (json_int_t)g_fig.submitted,
        "ok", (json_int_t)g_fig.ok, "failed", (json_int_t)g_fig.failed, "stranded",
        (json_int_t)g_fig.stranded, "unfinished", (json_int_t)g_fig.unfinished, "runs",
        (json_int_t)g_fig.runs, "reruns", (json_int_t)g_fig.reruns, "failure_reasons", reasons,
        "actors", "created", (json_int_t)g_fig.actors_created, "died",
        (json_int_t)g_fig.actors_dead, "calls_ok", (json_int_t)g_fig.actor_calls_ok,
        "calls_failed", (json_int_t)g_fig.actor_calls_failed, "gangs", "reserved",
        (json_int_t)g_fig.gangs_ok, "failed", (json_int_t)g_fig.gangs_failed, "resources",
        "ops_ok", (json_int_t)g_fig.res_ops_ok, "ops_failed", (json_int_t)g_fig.res_ops_failed,
        "jobs_ended", (json_int_t)g_fig.sessions, "violations",
        counts(v_names, g_violations, V_N), "probe", "count", (json_int_t)g_fig.probes,
        "worst_latency_ms", g_fig.worst_probe_ms, "worst_cleanup_ms", g_fig.worst_cleanup_ms,
        "worst_cleanup_killed_driver_ms", g_fig.worst_cleanup_killed_ms,
        "gcs_max_rss_kb", (json_int_t)g_fig.gcs_max_rss_kb);
    char *s = json_dumps(o, JSON_COMPACT);
    printf("%s\n", s);
    fflush(stdout);
    free(s);
    json_decref(o);
}

static int total_violations(void)
{
    int n = 0;
    for (int i = 0; i < V_N; i++)
        n += g_violations[i];
    return n;
}

/* The daemons' logs and the run lines, kept for whoever explains the violations; the
 * lines that name an unfinished task (its runs, its forwards, its node's death) are
 * printed too, since a CI run shows only the test's output. */
static void keep_logs(void)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p /tmp/escher-chaos-%d && cp %s/*.log %s /tmp/escher-chaos-%d/",
             (int)getpid(), C.dir, g_runs_path, (int)getpid());
    if (system(cmd) == 0)
        fprintf(stderr, "logs kept in /tmp/escher-chaos-%d\n", (int)getpid());
    for (size_t i = 0, shown = 0; i < g_ntasks && shown < 3; i++) {
        if (g_tasks[i].outcome != O_UNFINISHED || !g_tasks[i].id[0])
            continue;
        shown++;
        fprintf(stderr, "what the logs say of t%zu (%s):\n", i, g_tasks[i].id);
        snprintf(cmd, sizeof cmd, "grep -H -e '%s' -e '^t%zu ' %s/*.log %s | head -20 >&2",
                 g_tasks[i].id, i, C.dir, g_runs_path);
        if (system(cmd) != 0)
            fprintf(stderr, "(grep failed)\n");
    }
}

/* ------------------------------------------------------------------ the test */

static void configure(void)
{
    const char *s = getenv("ESCHER_CHAOS_SECONDS");
    g_seconds = s && atoi(s) > 0 ? atoi(s) : 300;
    s = getenv("ESCHER_CHAOS_SEED");
    g_seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL);
#if defined(__SANITIZE_ADDRESS__)
    long mb = 2048; /* ASan's shadow memory and quarantine count in the RSS */
#else
    long mb = 512;
#endif
    s = getenv("ESCHER_CHAOS_RSS_MB");
    g_rss_limit_kb = (s && atol(s) > 0 ? atol(s) : mb) * 1024;
    K.rs = g_seed;
    fprintf(stderr, "chaos: %d s of faults, seed %u, GCS RSS bound %ld MiB\n", g_seconds, g_seed,
            g_rss_limit_kb / 1024);
}

static void start_cluster(void)
{
    h_init(&C, NODE_TIMEOUT_MS);
    /* The product's job timeout: a GCS restart or a Redis pause lasts seconds, and a
     * live driver's job must outlive them. */
    C.job_timeout_ms = 10000;
    snprintf(C.gcs_extra, sizeof C.gcs_extra, "--storage-timeout-ms %d", STORAGE_TIMEOUT_MS);
    snprintf(g_runs_path, sizeof g_runs_path, "%s/runs.txt", C.dir);
    assert_int_equal(h_redis_start_durable(&C), 0);
    assert_int_equal(h_start_cluster(&C, NSLOTS, NULL), 0);
    for (int i = 0; i < NSLOTS; i++)
        say("raylet %d is node %s (pid %d, port %d)", i, C.raylets[i].node_id,
            (int)C.raylets[i].pid, C.raylets[i].port);
    publish_view();
}

/* Waits (with a deadline) until every finished job's resources are gone or reported. */
static bool cleanup_done(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_mu);
    bool done = g_nended == 0;
    pthread_mutex_unlock(&g_mu);
    return done;
}

static void test_chaos(void **state)
{
    (void)state;
    g_t0 = h_now_ms();
    configure();
    start_cluster();
    pthread_t watch[2], drivers[4];
    task_driver td[2] = {{.id = 0, .rs = g_seed + 1}, {.id = 1, .rs = g_seed + 2}};
    pthread_create(&watch[0], NULL, monitor_main, NULL);
    pthread_create(&watch[1], NULL, probe_main, NULL);
    pthread_create(&drivers[0], NULL, task_driver_main, &td[0]);
    pthread_create(&drivers[1], NULL, task_driver_main, &td[1]);
    pthread_create(&drivers[2], NULL, actor_driver_main, NULL);
    pthread_create(&drivers[3], NULL, gang_driver_main, NULL);
    killer_run();
    say("faults stopped; draining the drivers");
    atomic_store(&g_stop_drivers, true);
    for (int i = 0; i < 4; i++)
        pthread_join(drivers[i], NULL);
    /* The monitor still runs: it removes ended jobs as their resources go. */
    h_wait_until(cleanup_done, NULL, (int)CLEANUP_LIMIT_MS + 5000);
    atomic_store(&g_stop_watch, true);
    pthread_join(watch[0], NULL);
    pthread_join(watch[1], NULL);
    say("drained; checking the run lines");
    final_checks();
    check_daemons();
    if (total_violations())
        keep_logs();
    h_stop(&C);
    g_violations[V_UNCLEAN_EXIT] += h_unclean_exits();
    for (int i = 0; i < MAX_REASONS && g_reasons[i].n; i++)
        fprintf(stderr, "failure reason: %5ld  %s\n", g_reasons[i].n, g_reasons[i].text);
    print_report();
    int faults = 0;
    for (int i = 0; i < F_N; i++)
        faults += g_faults[i];
    assert_int_equal(total_violations(), 0);
    assert_true(faults >= g_seconds / 3);
    free(g_tasks);
}

int main(int argc, char **argv)
{
    if (argc == 7 && strcmp(argv[1], "--driver") == 0)
        return killed_driver_main(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chaos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
