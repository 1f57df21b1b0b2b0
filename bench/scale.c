/* scale.c: what holds at scale on one machine (docs/benchmarks.md, "Scale").
 *
 *  - nodes: N raylets (250 by default) on loopback with small object stores. The GCS's
 *    CPU and resident memory idle and under a storm of resource writes; a batch of 1000
 *    ephemeral resources applied cluster-wide (spread: 1000 in all over the nodes; every:
 *    each of the 1000 on every node), from commit until wait_applied returns; how long
 *    the GCS takes to declare a killed raylet dead; how long `escher status` takes.
 *  - tasks: a million no-op tasks queued on one node (they request a gate resource of
 *    capacity 0, so none runs until the gate opens): the submission time, the raylet's,
 *    GCS's and driver's memory per queued task, then the time to drain them all once the
 *    gate opens.
 *  - actors: N actors created (each holding a sliver of CPU) and each called once.
 *
 * Every figure is printed as one JSON object per line on stdout; times are medians
 * where repeated. Progress goes to stderr.
 *
 * Usage: scale [nodes|tasks|actors|all|hold] [--nodes N] [--tasks N] [--actors N] [--runs R]
 *        (ESCHER_BIN_DIR: the build directory) */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_stats.h"
#include "harness.h"

static h_cluster g_cl;
static bool g_up;
static char LIB[1024];
static bool g_every = true; /* --no-every: skip 1000 resources on every node */

static void stop_cluster(void)
{
    if (g_up)
        h_stop(&g_cl);
    g_up = false;
}

static void die(const char *what, const esc_status *st)
{
    fprintf(stderr, "scale: %s: %s %s\n", what, st ? esc_status_name(st->code) : "",
            st ? st->message : "");
    stop_cluster();
    exit(1);
}

static void on_signal(int sig)
{
    /* kill(2) is async-signal-safe; the daemons also die with us (PDEATHSIG). */
    for (int i = 0; i < g_cl.nraylets; i++)
        if (g_cl.raylets[i].pid > 0)
            kill(g_cl.raylets[i].pid, SIGKILL);
    if (g_cl.gcs_pid > 0)
        kill(g_cl.gcs_pid, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ------------------------------------------------------------------ /proc */

/* CPU seconds (user + system) a process has used, or -1. */
static double cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command may hold spaces */
    if (!p)
        return -1;
    unsigned long ut = 0, stt = 0;
    /* After ")": state(3) ... utime is field 14, stime 15. */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt) != 2)
        return -1;
    return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
}

/* Resident set size in bytes, or -1. */
static long rss_bytes(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* The resident memory of every escher-worker process on the machine (the actors'). */
static long workers_rss(void)
{
    DIR *d = opendir("/proc");
    long sum = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && !strcmp(comm, "escher-worker\n")) {
            long b = rss_bytes((pid_t)atoi(e->d_name));
            sum += b > 0 ? b : 0;
        }
        fclose(f);
    }
    if (d)
        closedir(d);
    return sum;
}

static long raylets_rss(void)
{
    long sum = 0;
    for (int i = 0; i < g_cl.nraylets; i++)
        if (g_cl.raylets[i].pid > 0 && h_alive(g_cl.raylets[i].pid))
            sum += rss_bytes(g_cl.raylets[i].pid);
    return sum;
}

static double raylets_cpu(void)
{
    double sum = 0;
    for (int i = 0; i < g_cl.nraylets; i++)
        if (g_cl.raylets[i].pid > 0 && h_alive(g_cl.raylets[i].pid))
            sum += cpu_seconds(g_cl.raylets[i].pid);
    return sum;
}

/* The GCS's CPU use in percent of one core over seconds s. */
static double gcs_cpu_pct(double s)
{
    double c0 = cpu_seconds(g_cl.gcs_pid), t0 = h_now_ms();
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    return (cpu_seconds(g_cl.gcs_pid) - c0) / ((h_now_ms() - t0) / 1000.0) * 100.0;
}

/* ------------------------------------------------------------------ nodes */

/* Commits b and waits until every node applied it; false (with st) when either fails. */
static bool commit_wait(esc_client *c, esc_batch *b, esc_status *st)
{
    uint64_t seq;
    return esc_batch_commit(c, b, &seq, st) == ESC_OK &&
           esc_wait_applied(c, seq, NULL, 0, 300000, st) == ESC_OK;
}

/* One batch of r resources, spread (resource i on node i mod n) or on every node;
 * returns the milliseconds from commit until every node applied it, or -1 (st says why).
 * Then deletes them (not timed). */
static double apply_run(esc_client *c, int n, int r, bool every, int run, esc_status *st)
{
    esc_batch *b = esc_batch_new();
    char name[64];
    esc_target all = ESC_ALL_NODES;
    for (int i = 0; i < r; i++) {
        snprintf(name, sizeof name, "s%d_%d", run, i);
        esc_target one = ESC_NODE(g_cl.raylets[i % n].node_id);
        esc_batch_set(b, name, ESC_QTY(1), every ? &all : &one);
    }
    double t0 = h_now_ms();
    bool ok = commit_wait(c, b, st);
    double ms = ok ? h_now_ms() - t0 : -1;
    esc_batch_free(b);
    b = esc_batch_new();
    for (int i = 0; i < r; i++) {
        snprintf(name, sizeof name, "s%d_%d", run, i);
        esc_target one = ESC_NODE(g_cl.raylets[i % n].node_id);
        esc_batch_delete(b, name, every ? &all : &one);
    }
    esc_status st2;
    for (int tries = 0; tries < 10 && !commit_wait(c, b, &st2); tries++)
        usleep(1000000); /* a failed apply may have committed anyway: delete what is there */
    esc_batch_free(b);
    return ms;
}

/* Apply runs of 1000 resources; with the CPU the GCS and the raylets spent per run. */
static void bench_apply(esc_client *c, int n, int runs, bool every)
{
    double *t = calloc((size_t)runs, sizeof *t);
    int ok = 0;
    esc_status st = {0};
    double g0 = cpu_seconds(g_cl.gcs_pid), r0 = raylets_cpu();
    for (int i = 0; i < runs; i++) {
        double ms = apply_run(c, n, 1000, every, i, &st);
        fprintf(stderr, "scale: 1000 resources %s on %d nodes, run %d: %.1f ms%s%s\n",
                every ? "on every node" : "spread", n, i, ms, ms < 0 ? " failed: " : "",
                ms < 0 ? st.message : "");
        if (ms >= 0)
            t[ok++] = ms;
    }
    /* The CPU of the runs includes their untimed deletes: an apply and a delete each. */
    double gcs_ms = (cpu_seconds(g_cl.gcs_pid) - g0) * 1000 / (2.0 * runs);
    double ray_ms = (raylets_cpu() - r0) * 1000 / (2.0 * runs);
    qsort(t, (size_t)ok, sizeof *t, cmp_double);
    printf("{\"bench\": \"apply_1000\", \"nodes\": %d, \"placement\": \"%s\", "
           "\"entries\": %d, \"runs\": %d, \"ok\": %d, \"median_ms\": %.1f, \"min_ms\": %.1f, "
           "\"max_ms\": %.1f, \"gcs_cpu_ms_per_batch\": %.1f, \"raylets_cpu_ms_per_batch\": %.1f, "
           "\"error\": \"%s\"}\n",
           n, every ? "every" : "spread", every ? 1000 * n : 1000, runs, ok,
           ok ? percentile(t, ok, 50) : -1, ok ? t[0] : -1, ok ? t[ok - 1] : -1, gcs_ms, ray_ms,
           ok == runs ? "" : esc_status_name(st.code));
    fflush(stdout);
    free(t);
}

/* The write storm: writer threads, each with a client of its own, committing one `set`
 * of a resource on one node after another for a while. */
typedef struct {
    esc_client *c;
    int n, id;
    double until_ms;
    long writes;
} writer;

static void *writer_main(void *p)
{
    writer *w = p;
    char name[32];
    esc_status st;
    for (long i = 0; h_now_ms() < w->until_ms; i++) {
        snprintf(name, sizeof name, "w%d_%ld", w->id, i % 50);
        esc_target t = ESC_NODE(g_cl.raylets[(w->id * 7 + i) % w->n].node_id);
        if (esc_resource_set(w->c, name, ESC_QTY(1) + i % 3, &t, NULL, &st) != ESC_OK)
            die("storm write", &st);
        w->writes++;
    }
    return NULL;
}

static void bench_storm(int n, double seconds)
{
    enum { WRITERS = 8 };
    writer w[WRITERS];
    pthread_t th[WRITERS];
    double until = h_now_ms() + 500 + seconds * 1000;
    for (int i = 0; i < WRITERS; i++) {
        char ns[16];
        snprintf(ns, sizeof ns, "storm%d", i); /* one namespace per job */
        w[i] = (writer){.c = h_connect(&g_cl, ns, -1, false), .n = n, .id = i, .until_ms = until};
        pthread_create(&th[i], NULL, writer_main, &w[i]);
    }
    usleep(500000); /* the writers get going */
    double cpu = gcs_cpu_pct(seconds);
    long rss = rss_bytes(g_cl.gcs_pid);
    long total = 0;
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(th[i], NULL);
        total += w[i].writes;
        esc_disconnect(w[i].c); /* its resources go with its job */
    }
    printf("{\"bench\": \"write_storm\", \"nodes\": %d, \"writers\": %d, \"seconds\": %.1f, "
           "\"writes_per_s\": %.0f, \"gcs_cpu_pct\": %.1f, \"gcs_rss_bytes\": %ld}\n",
           n, WRITERS, seconds, (double)total / (seconds + 0.5), cpu, rss);
    fflush(stdout);
}

/* `escher status` (text and --json) against the cluster: median wall time of runs. */
static double status_ms(int runs, bool json)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "ESCHER_ADDRESS=%s ESCHER_TOKEN=%s '%s/client/escher' status %s >/dev/null",
             g_cl.gcs_addr, g_cl.token, getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build",
             json ? "--json" : "");
    double *t = calloc((size_t)runs, sizeof *t);
    for (int i = 0; i < runs; i++) {
        double t0 = h_now_ms();
        int rc = system(cmd);
        t[i] = h_now_ms() - t0;
        if (rc != 0)
            die("escher status failed", NULL);
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    double m = percentile(t, runs, 50);
    free(t);
    return m;
}

static bool node_dead(esc_client *c, const char *id)
{
    esc_cluster_status *s = NULL;
    esc_status st;
    if (esc_get_cluster_resources(c, &s, &st) != ESC_OK)
        return false;
    bool dead = false;
    for (size_t i = 0; i < s->nnodes; i++)
        if (!strcmp(s->nodes[i].id, id))
            dead = !strcmp(s->nodes[i].state, "DEAD");
    esc_cluster_status_free(s);
    return dead;
}

/* kill -9 of a raylet until the GCS says DEAD, polled every 10 ms. */
static double death_ms(esc_client *c, int victim)
{
    char id[80];
    snprintf(id, sizeof id, "%s", g_cl.raylets[victim].node_id);
    double t0 = h_now_ms();
    h_kill(&g_cl.raylets[victim].pid, SIGKILL);
    while (!node_dead(c, id)) {
        if (h_now_ms() - t0 > 120000)
            die("a killed raylet was not declared dead within 120 s", NULL);
        usleep(10000);
    }
    return h_now_ms() - t0;
}

static void alive_count(esc_client *c, int *alive, int *dead)
{
    esc_cluster_status *s = NULL;
    esc_status st;
    *alive = *dead = 0;
    if (esc_get_cluster_resources(c, &s, &st) != ESC_OK)
        die("status", &st);
    for (size_t i = 0; i < s->nnodes; i++)
        (*(strcmp(s->nodes[i].state, "DEAD") ? alive : dead))++;
    esc_cluster_status_free(s);
}

/* Starts the GCS (the product's default node timeout) and raylets 0..n-1 with flags;
 * the cluster is stopped by die() and on exit paths. */
#define SMALL_NODE "--num-cpus 1 --memory 268435456 --object-store-memory 8388608 " \
                   "--no-cpu-quota --ended-tasks 10"
static void start_cluster(int n, const char *flags)
{
    h_init(&g_cl, 10000);
    snprintf(g_cl.gcs_extra, sizeof g_cl.gcs_extra, "--max-resources-per-job 10000000");
    double t0 = h_now_ms();
    if (h_gcs_start(&g_cl) != 0)
        die("cannot start the GCS", NULL);
    g_up = true;
    for (int i = 0; i < n; i++) {
        if (h_raylet_start(&g_cl, i, flags) != 0)
            die("cannot start a raylet", NULL);
        if ((i + 1) % 50 == 0)
            fprintf(stderr, "scale: %d raylets up after %.1f s\n", i + 1, (h_now_ms() - t0) / 1000);
    }
}

static void bench_nodes(int n, int runs)
{
    double t0 = h_now_ms();
    start_cluster(n, SMALL_NODE);
    double start_s = (h_now_ms() - t0) / 1000.0;
    esc_client *c = h_connect(&g_cl, "scale", 0, false);
    int alive, dead;
    alive_count(c, &alive, &dead);
    usleep(2000000); /* settle: the last raylets' first heartbeats */
    double r0 = raylets_cpu(), tr = h_now_ms();
    double idle_cpu = gcs_cpu_pct(10.0);
    double ray_idle = (raylets_cpu() - r0) / ((h_now_ms() - tr) / 1000.0) * 100.0;
    long rss_one = rss_bytes(g_cl.raylets[0].pid);
    printf("{\"bench\": \"nodes_idle\", \"nodes\": %d, \"alive\": %d, \"start_s\": %.1f, "
           "\"gcs_cpu_pct\": %.1f, \"raylets_cpu_pct\": %.1f, \"gcs_rss_bytes\": %ld, "
           "\"raylets_rss_bytes\": %ld, \"raylet_rss_bytes\": %ld}\n",
           n, alive, start_s, idle_cpu, ray_idle, rss_bytes(g_cl.gcs_pid), raylets_rss(), rss_one);
    fflush(stdout);
    printf("{\"bench\": \"status_cli\", \"nodes\": %d, \"runs\": %d, \"text_median_ms\": %.1f, "
           "\"json_median_ms\": %.1f}\n", n, runs, status_ms(runs, false), status_ms(runs, true));
    fflush(stdout);
    bench_apply(c, n, runs, false);
    if (g_every)
        bench_apply(c, n, runs, true);
    bench_storm(n, 10.0);
    double *d = calloc((size_t)runs, sizeof *d);
    int kills = runs < n - 1 ? runs : n - 1;
    for (int i = 0; i < kills; i++) {
        d[i] = death_ms(c, n - 1 - i);
        fprintf(stderr, "scale: raylet %d declared dead after %.0f ms\n", n - 1 - i, d[i]);
    }
    qsort(d, (size_t)kills, sizeof *d, cmp_double);
    alive_count(c, &alive, &dead);
    printf("{\"bench\": \"node_death\", \"nodes\": %d, \"node_timeout_ms\": %d, \"kills\": %d, "
           "\"median_ms\": %.0f, \"max_ms\": %.0f, \"alive_after\": %d, \"dead_after\": %d}\n",
           n, g_cl.node_timeout_ms, kills, percentile(d, kills, 50), d[kills - 1], alive, dead);
    fflush(stdout);
    free(d);
    esc_disconnect(c);
    stop_cluster();
}

/* `scale hold`: starts the nodes and waits until interrupted, for a look from outside
 * (perf, escher status); prints the address and token. */
static void hold_nodes(int n)
{
    start_cluster(n, SMALL_NODE);
    printf("ESCHER_ADDRESS=%s ESCHER_TOKEN=%s\n", g_cl.gcs_addr, g_cl.token);
    fflush(stdout);
    pause();
}

/* ------------------------------------------------------------------ tasks */

static void bench_tasks(int ntasks)
{
    start_cluster(1, "--num-cpus 2 --ended-tasks 1000");
    esc_client *c = h_connect(&g_cl, "scale", 0, false);
    esc_target here = ESC_NODE(g_cl.raylets[0].node_id);
    esc_status st;
    uint64_t seq;
    /* Present with capacity 0: a queue; tasks wait for it, none runs. */
    if (esc_resource_set(c, "gate", 0, &here, &seq, &st) != ESC_OK ||
        esc_wait_applied(c, seq, NULL, 0, 60000, &st) != ESC_OK)
        die("gate", &st);
    char gate[128];
    snprintf(gate, sizeof gate, "%s/gate", esc_client_namespace(c));
    esc_amount need = {.name = gate, .value = ESC_QTY(1)};
    esc_task_spec spec = {.library = LIB, .symbol = "noop", .resources = &need, .nresources = 1};
    esc_ref **refs = calloc((size_t)ntasks, sizeof *refs);
    long raylet0 = rss_bytes(g_cl.raylets[0].pid), gcs0 = rss_bytes(g_cl.gcs_pid),
         me0 = rss_bytes(getpid());
    double t0 = h_now_ms();
    for (int i = 0; i < ntasks; i++) {
        if (esc_task_submit(c, &spec, &refs[i], NULL, &st) != ESC_OK)
            die("submit", &st);
        if ((i + 1) % 100000 == 0)
            fprintf(stderr, "scale: %d submitted after %.1f s\n", i + 1, (h_now_ms() - t0) / 1000);
    }
    double submit_s = (h_now_ms() - t0) / 1000.0;
    /* Submission returns before the raylet has every task; wait until its queue holds
     * them all (the node's demand), so the memory measured is the queued tasks'. */
    unsigned queued = 0;
    double tq = h_now_ms();
    while (queued < (unsigned)ntasks && h_now_ms() - tq < 600000) {
        esc_cluster_status *s = NULL;
        if (esc_get_cluster_status(c, &s, &st) == ESC_OK) {
            queued = 0;
            for (size_t i = 0; i < s->nnodes; i++)
                for (size_t k = 0; k < s->nodes[i].ndemand; k++)
                    queued += s->nodes[i].demand[k].count;
            esc_cluster_status_free(s);
        }
        if (queued < (unsigned)ntasks)
            usleep(200000);
    }
    double queued_s = (h_now_ms() - t0) / 1000.0;
    long raylet1 = rss_bytes(g_cl.raylets[0].pid), gcs1 = rss_bytes(g_cl.gcs_pid),
         me1 = rss_bytes(getpid());
    fprintf(stderr, "scale: %u queued after %.1f s; opening the gate\n", queued, queued_s);
    double t1 = h_now_ms();
    if (esc_resource_set(c, "gate", ESC_QTY(2), &here, NULL, &st) != ESC_OK)
        die("open the gate", &st);
    for (int i = 0; i < ntasks; i++) {
        void *v = NULL;
        size_t len;
        if (esc_get(c, refs[i], 600000, &v, &len, &st) != ESC_OK)
            die("get", &st);
        free(v);
        esc_ref_free(refs[i]);
        if ((i + 1) % 100000 == 0)
            fprintf(stderr, "scale: %d done after %.1f s\n", i + 1, (h_now_ms() - t1) / 1000);
    }
    double drain_s = (h_now_ms() - t1) / 1000.0;
    free(refs);
    printf("{\"bench\": \"queued_tasks\", \"tasks\": %d, \"queued_seen\": %u, "
           "\"submit_s\": %.1f, \"all_queued_s\": %.1f, \"drain_s\": %.1f, \"total_s\": %.1f, "
           "\"raylet_bytes_per_queued_task\": %.0f, \"gcs_bytes_per_queued_task\": %.0f, "
           "\"driver_bytes_per_task\": %.0f, \"raylet_rss_queued_bytes\": %ld}\n",
           ntasks, queued, submit_s, queued_s, drain_s, queued_s + drain_s,
           (double)(raylet1 - raylet0) / ntasks, (double)(gcs1 - gcs0) / ntasks,
           (double)(me1 - me0) / ntasks, raylet1);
    fflush(stdout);
    esc_disconnect(c);
    stop_cluster();
}

/* ------------------------------------------------------------------ actors */

static void bench_actors(int nactors)
{
    start_cluster(1, "--num-cpus 1000 --no-cpu-quota");
    esc_client *c = h_connect(&g_cl, "scale", 0, false);
    esc_amount need = {.name = "CPU", .value = ESC_QTY(1) / 100}; /* 0.01 CPU */
    esc_actor_spec spec = {.name = "a", .library = LIB, .resources = &need, .nresources = 1};
    esc_actor **a = calloc((size_t)nactors, sizeof *a);
    esc_ref **r = calloc((size_t)nactors, sizeof *r);
    esc_status st;
    long raylet0 = rss_bytes(g_cl.raylets[0].pid);
    double t0 = h_now_ms();
    for (int i = 0; i < nactors; i++)
        if (esc_actor_create(c, &spec, &a[i], &st) != ESC_OK)
            die("actor create", &st);
    double create_s = (h_now_ms() - t0) / 1000.0;
    int ok = 0;
    for (int i = 0; i < nactors; i++) {
        if (esc_actor_call(c, a[i], "noop", NULL, 0, 1, &r[i], &st) != ESC_OK)
            die("actor call", &st);
        if ((i + 1) % 500 == 0)
            fprintf(stderr, "scale: %d actors called after %.1f s\n", i + 1, (h_now_ms() - t0) / 1000);
    }
    double called_s = (h_now_ms() - t0) / 1000.0;
    for (int i = 0; i < nactors; i++) {
        void *v = NULL;
        size_t len;
        if (esc_get(c, r[i], 600000, &v, &len, &st) == ESC_OK)
            ok++;
        else if (ok == i)
            fprintf(stderr, "scale: actor %d: %s %s\n", i, esc_status_name(st.code), st.message);
        free(v);
        esc_ref_free(r[i]);
    }
    double all_s = (h_now_ms() - t0) / 1000.0;
    long raylet1 = rss_bytes(g_cl.raylets[0].pid);
    printf("{\"bench\": \"actors\", \"actors\": %d, \"calls_ok\": %d, \"create_submit_s\": %.1f, "
           "\"calls_submitted_s\": %.1f, \"all_answered_s\": %.1f, \"raylet_rss_delta_bytes\": %ld, "
           "\"workers_rss_bytes\": %ld}\n",
           nactors, ok, create_s, called_s, all_s, raylet1 - raylet0, workers_rss());
    fflush(stdout);
    for (int i = 0; i < nactors; i++) {
        esc_actor_kill(c, a[i], &st);
        esc_actor_free(a[i]);
    }
    free(a);
    free(r);
    esc_disconnect(c);
    stop_cluster();
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr, "usage: scale [nodes|tasks|actors|all|hold] [--nodes N] [--tasks N] "
                    "[--actors N] [--runs R] [--no-every]\n");
    exit(2);
}

static int int_arg(const char *s, int lo, int hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == 0 || *end || v < lo || v > hi) {
        fprintf(stderr, "scale: %s: not a whole number in %d..%d\n", s, lo, hi);
        exit(2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    const char *what = "all";
    int nodes = 250, tasks = 1000000, actors = 10000, runs = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nodes = int_arg(argv[++i], 2, H_MAX_RAYLETS);
        else if (!strcmp(argv[i], "--tasks") && i + 1 < argc)
            tasks = int_arg(argv[++i], 1, 10000000);
        else if (!strcmp(argv[i], "--actors") && i + 1 < argc)
            actors = int_arg(argv[++i], 1, 100000);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = int_arg(argv[++i], 1, 100);
        else if (!strcmp(argv[i], "--no-every"))
            g_every = false;
        else if (argv[i][0] != '-' && i == 1)
            what = argv[i];
        else
            usage();
    }
    if (strcmp(what, "nodes") && strcmp(what, "tasks") && strcmp(what, "actors") &&
        strcmp(what, "all") && strcmp(what, "hold"))
        usage();
    /* Each raylet holds sockets to the GCS and to every client; a driver of 250 nodes
     * needs more descriptors than the usual 1024. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    const char *bin = getenv("ESCHER_BIN_DIR");
    snprintf(LIB, sizeof LIB, "%s/bench/task_lib/libescher_bench_tasks.so", bin ? bin : "build");
    if (!strcmp(what, "hold"))
        hold_nodes(nodes);
    if (!strcmp(what, "nodes") || !strcmp(what, "all"))
        bench_nodes(nodes, runs);
    if (!strcmp(what, "tasks") || !strcmp(what, "all"))
        bench_tasks(tasks);
    if (!strcmp(what, "actors") || !strcmp(what, "all"))
        bench_actors(actors);
    return 0;
}
