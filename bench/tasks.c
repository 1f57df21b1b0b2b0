/* tasks.c: how fast escher runs tasks, next to Dask distributed in the same run.
 *
 * One JSON object per line on stdout, each with "bench" and "system" ("escher", "dask",
 * or "host" for the machine lines at the start and the end):
 *  - noop_makespan: N no-op function tasks (`noop` of bench/task_lib) submitted
 *    asynchronously (esc_task_submit in a loop), then all gathered (esc_get in order),
 *    with E ephemeral resources present in the cluster (E in 10, 100, 1000, 10000,
 *    created beforehand by one esc_batch, spread evenly over the nodes), on 1 and 10
 *    raylets: nodes, ephemeral_resources, tasks, makespan_s (median of --reps runs),
 *    submit_s (the submission loop's part). The driver's node is raylet 0, and a task
 *    that requests nothing runs there ("placement": "local"); with --spread, each E
 *    also gets "placement": "spread", where task i requests one unit of spread_j, an
 *    unbounded resource on node j = i mod nodes, so the raylets share the work;
 *  - k_resources: one task requesting k distinct ephemeral resources (k in 1, 10, 100,
 *    1000; each present with capacity 1 on the local node), submit to result: k,
 *    median_ms, p99_ms over --runs runs; each run is interleaved with a peer, the same
 *    task requesting nothing (peer_k0_median_ms), whose difference is what the k
 *    resources cost (sched_delta_ms);
 *  - sync_rtt: submit one no-op and get it, repeated --sync-tasks times: per_s, with
 *    the median submit and get calls and the floor of any call here (a KvGet);
 *  - async_throughput: submit N no-ops without waiting, then get them all: per_s;
 *  - metrics_overhead (--metrics-overhead R, instead of everything above): 2R rounds on
 *    a fresh one-raylet cluster each, alternating without and with the Prometheus
 *    endpoints (--metrics-port on the GCS and the raylet, in the order off, on, on, off,
 *    ... so drift weighs both alike), 1000 ephemeral resources present (a scrape's size
 *    grows with them); with metrics on, a thread scrapes both endpoints every second, as
 *    a Prometheus would. Per round: async throughput (per_s) and makespan_s of --tasks
 *    no-ops, medians of --reps bursts; then one "summary" line: each mode's median over
 *    its rounds and the difference in percent (positive: metrics cost that much);
 *  - the same no-op workloads on Dask distributed (bench/dask_noop.py: a LocalCluster
 *    with as many worker processes as raylets, one thread each), then "bench": "ratio"
 *    lines, escher over dask (per_s: higher is better for escher; makespan_s: lower).
 * Every timed burst runs in a fresh job (a new client, warmed by WARMUP tasks so that
 * its workers exist); after it the job ends and the run waits until every node freed
 * its objects. The ephemeral resources belong to a separate client that stays
 * connected.
 *
 * Dask: the program runs bench/setup-dask.sh (installs Debian's python3-distributed when
 * it is missing) unless --no-dask; when Dask still cannot be imported it says so on one
 * line, measures escher alone and exits 3.
 *
 * Usage: tasks [--tasks N] [--sync-tasks M] [--runs R] [--reps P] [--nodes 1,10]
 *              [--k 1,10,100,1000] [--only makespan,k,sync,async] [--spread]
 *              [--no-dask] [--raylet-flags 'FLAGS'] [--metrics-overhead R]
 * Defaults: N 10000, M 1000, R 50, P 3. --raylet-flags adds raylet flags, for
 * diagnosis (e.g. '--log-dir /dev/shm/x' puts task logs on tmpfs).
 * Environment: ESCHER_BIN_DIR (the build directory, default "build"), ESCHER_BENCH_SRC
 * (where dask_noop.py and setup-dask.sh are; default this source directory), DASK_PYTHON
 * (default /usr/bin/python3, Debian's python, which python3-distributed is for). */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_stats.h"
#include "harness.h"

#ifndef ESC_BENCH_SRC_DIR
#define ESC_BENCH_SRC_DIR "bench"
#endif

#define WARMUP 100
#define MAX_RES 10000

static char LIB[1024];
/* Placement "spread": task i requests one unit of spread_(i mod g_nspread), an unbounded
 * ephemeral resource on node i mod g_nspread; 0: tasks request nothing. */
static esc_amount g_spread[H_MAX_RAYLETS];
static char g_spread_names[H_MAX_RAYLETS][80];
static int g_nspread;
static h_cluster *g_cluster; /* the running cluster, stopped by die() and on signals */

typedef struct {
    int tasks, sync_tasks, runs, reps;
    int nodes[4], nnodes;
    int ks[8], nks;                 /* k of k_resources */
    bool makespan, k, sync, async, dask;
    bool spread;                    /* also the "spread" placement of noop_makespan */
    const char *raylet_flags;       /* more raylet flags (diagnosis), NULL: none */
    int overhead_rounds;            /* --metrics-overhead: rounds per mode; 0: not run */
} config;

/* What the ratio lines compare: escher's figures, kept as they are measured. */
static double g_escher_sync = -1, g_escher_async = -1, g_escher_makespan[2] = {-1, -1};

static void die(const char *what, const esc_status *st)
{
    fprintf(stderr, "tasks: %s: %s %s\n", what, st ? esc_status_name(st->code) : "",
            st ? st->message : "");
    if (g_cluster)
        h_stop(g_cluster);
    exit(1);
}

static void on_signal(int sig)
{
    /* kill(2) is async-signal-safe; the daemons also die with us (PDEATHSIG). */
    if (g_cluster) {
        for (int i = 0; i < g_cluster->nraylets; i++)
            if (g_cluster->raylets[i].pid > 0)
                kill(g_cluster->raylets[i].pid, SIGKILL);
        if (g_cluster->gcs_pid > 0)
            kill(g_cluster->gcs_pid, SIGKILL);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ------------------------------------------------------------------ tasks */

static esc_ref *submit_noop(esc_client *c, const esc_amount *res, size_t nres)
{
    esc_task_spec spec = {.library = LIB, .symbol = "noop", .resources = res, .nresources = nres};
    esc_ref *r = NULL;
    esc_status st;
    if (esc_task_submit(c, &spec, &r, NULL, &st) != ESC_OK)
        die("submit", &st);
    return r;
}

static void get_one(esc_client *c, esc_ref *r)
{
    void *v = NULL;
    size_t len;
    esc_status st;
    if (esc_get(c, r, 120000, &v, &len, &st) != ESC_OK)
        die("get", &st);
    free(v);
    esc_ref_free(r);
}

/* Submits n no-ops without waiting, then gathers them all; returns seconds, and in
 * *submit_s (may be NULL) the seconds the submissions took. */
static double burst(esc_client *c, int n, double *submit_s)
{
    esc_ref **refs = calloc((size_t)n, sizeof *refs);
    double t0 = h_now_ms();
    for (int i = 0; i < n; i++)
        refs[i] = g_nspread ? submit_noop(c, &g_spread[i % g_nspread], 1) : submit_noop(c, NULL, 0);
    if (submit_s)
        *submit_s = (h_now_ms() - t0) / 1000.0;
    for (int i = 0; i < n; i++)
        get_one(c, refs[i]);
    double s = (h_now_ms() - t0) / 1000.0;
    free(refs);
    return s;
}

/* A fresh job whose workers are started. It runs in a namespace of its own (admin owns
 * "bench", docs/security.md) and admin grants it "bench", whose resources it requests. */
static esc_client *job(h_cluster *cl, esc_client *admin)
{
    esc_client *c = h_connect(cl, NULL, 0, false);
    esc_status st;
    if (esc_namespace_grant(admin, esc_client_job_id(c), &st) != ESC_OK)
        die("cannot grant the namespace", &st);
    burst(c, WARMUP, NULL);
    return c;
}

/* Ends the job, then waits (at most 10 s) until every node freed its objects, so the
 * next measurement does not overlap with the cleanup of this one. */
static void job_end(h_cluster *cl, esc_client *admin, esc_client *c)
{
    esc_disconnect(c);
    double end = h_now_ms() + 10000;
    for (int i = 0; i < cl->nraylets; i++) {
        esc_object_store_stats s = {0};
        while (esc_object_store_stats_get(admin, cl->raylets[i].node_id, &s, NULL) == ESC_OK &&
               s.objects > 0 && h_now_ms() < end)
            usleep(10000);
    }
}

/* ------------------------------------------------------------------ resources */

/* Creates (or deletes) prefix0..prefix(n-1) spread evenly over the first `nodes` nodes,
 * in one batch, and waits until every node applied it. */
static void resources(h_cluster *cl, esc_client *c, int nodes, int n, const char *prefix,
                      bool del)
{
    esc_batch *b = esc_batch_new();
    char name[64];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s%d", prefix, i);
        esc_target t = ESC_NODE(cl->raylets[i % nodes].node_id);
        if (del)
            esc_batch_delete(b, name, &t);
        else
            esc_batch_set(b, name, ESC_QTY(1), &t);
    }
    uint64_t seq;
    esc_status st;
    if (esc_batch_commit(c, b, &seq, &st) != ESC_OK ||
        esc_wait_applied(c, seq, NULL, 0, 60000, &st) != ESC_OK)
        die(del ? "delete resources" : "create resources", &st);
    esc_batch_free(b);
}

/* ------------------------------------------------------------------ benchmarks */

/* The spread_j resources, one per node, unbounded (untimed). */
static void make_spread(h_cluster *cl, esc_client *admin, int nodes)
{
    esc_batch *b = esc_batch_new();
    for (int j = 0; j < nodes; j++) {
        char name[32];
        snprintf(name, sizeof name, "spread_%d", j);
        esc_target t = ESC_NODE(cl->raylets[j].node_id);
        esc_batch_set_unbounded(b, name, &t);
        snprintf(g_spread_names[j], sizeof g_spread_names[j], "%s/%s",
                 esc_client_namespace(admin), name);
        g_spread[j] = (esc_amount){.name = g_spread_names[j], .value = ESC_QTY(1)};
    }
    uint64_t seq;
    esc_status st;
    if (esc_batch_commit(admin, b, &seq, &st) != ESC_OK ||
        esc_wait_applied(admin, seq, NULL, 0, 60000, &st) != ESC_OK)
        die("create spread resources", &st);
    esc_batch_free(b);
}

static void bench_makespan(h_cluster *cl, esc_client *admin, int nodes, const config *cf)
{
    static const int counts[] = {10, 100, 1000, MAX_RES};
    int made = 0;
    double *t = calloc((size_t)cf->reps, sizeof *t);
    double *sub = calloc((size_t)cf->reps, sizeof *sub);
    if (cf->spread)
        make_spread(cl, admin, nodes);
    for (int k = 0; k < 4; k++) {
        /* The resources of the previous step stay: E in total exist now. */
        char prefix[32];
        snprintf(prefix, sizeof prefix, "m%d_", k);
        resources(cl, admin, nodes, counts[k] - made, prefix, false);
        made = counts[k];
        for (int spread = 0; spread <= (cf->spread ? 1 : 0); spread++) {
            g_nspread = spread ? nodes : 0;
            for (int r = 0; r < cf->reps; r++) {
                esc_client *c = job(cl, admin);
                t[r] = burst(c, cf->tasks, &sub[r]);
                job_end(cl, admin, c);
            }
            double med = pct(t, cf->reps, 50);
            printf("{\"bench\": \"noop_makespan\", \"system\": \"escher\", \"nodes\": %d, "
                   "\"ephemeral_resources\": %d, \"tasks\": %d, \"makespan_s\": %.3f, "
                   "\"min_s\": %.3f, \"max_s\": %.3f, \"submit_s\": %.3f, \"runs\": %d, "
                   "\"placement\": \"%s\"}\n",
                   nodes, counts[k], cf->tasks, med, t[0], t[cf->reps - 1],
                   pct(sub, cf->reps, 50), cf->reps, spread ? "spread" : "local");
            fflush(stdout);
            if (k == 0 && !spread)
                g_escher_makespan[nodes == 1 ? 0 : 1] = med;
        }
        g_nspread = 0;
    }
    for (int k = 0; k < 4; k++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "m%d_", k);
        resources(cl, admin, nodes, counts[k] - (k ? counts[k - 1] : 0), prefix, true);
    }
    free(t);
    free(sub);
}

static void bench_k_resources(h_cluster *cl, esc_client *admin, const config *cf)
{
    esc_client *c = job(cl, admin);
    for (int i = 0; i < cf->nks; i++) {
        int k = cf->ks[i];
        char prefix[32];
        snprintf(prefix, sizeof prefix, "k%d_", k);
        resources(cl, admin, 1, k, prefix, false);
        esc_amount *need = calloc((size_t)k, sizeof *need);
        char **names = calloc((size_t)k, sizeof *names);
        for (int j = 0; j < k; j++) {
            names[j] = malloc(80);
            snprintf(names[j], 80, "%s/%s%d", esc_client_namespace(admin), prefix, j);
            need[j] = (esc_amount){.name = names[j], .value = ESC_QTY(1)};
        }
        double *t = calloc((size_t)cf->runs, sizeof *t);
        double *peer = calloc((size_t)cf->runs, sizeof *peer);
        for (int r = 0; r < cf->runs + 5; r++) { /* 5 warm-up runs */
            double t0 = h_now_ms();
            get_one(c, submit_noop(c, NULL, 0));
            double t1 = h_now_ms();
            get_one(c, submit_noop(c, need, (size_t)k));
            double t2 = h_now_ms();
            if (r >= 5) {
                peer[r - 5] = t1 - t0;
                t[r - 5] = t2 - t1;
            }
        }
        double med = pct(t, cf->runs, 50), p99 = pct(t, cf->runs, 99);
        double pmed = pct(peer, cf->runs, 50);
        printf("{\"bench\": \"k_resources\", \"system\": \"escher\", \"k\": %d, \"median_ms\": "
               "%.3f, \"p99_ms\": %.3f, \"peer_k0_median_ms\": %.3f, \"sched_delta_ms\": %.3f, "
               "\"runs\": %d}\n",
               k, med, p99, pmed, med - pmed, cf->runs);
        fflush(stdout);
        resources(cl, admin, 1, k, prefix, true);
        for (int j = 0; j < k; j++)
            free(names[j]);
        free(names);
        free(need);
        free(t);
        free(peer);
    }
    esc_disconnect(c);
}

/* One round trip after another. Also reported: the median of the submit call and of
 * the get call of a round trip, and, as the floor of any call on this machine, the
 * median round trip of a KvGet of an absent key at the GCS (the cheapest call it
 * serves), measured right after in the same job. */
static void bench_sync(h_cluster *cl, esc_client *admin, const config *cf)
{
    double *rate = calloc((size_t)cf->reps, sizeof *rate);
    int n = cf->sync_tasks * cf->reps;
    double *sub = calloc((size_t)n, sizeof *sub), *get = calloc((size_t)n, sizeof *get);
    double *kv = calloc((size_t)cf->sync_tasks, sizeof *kv);
    int k = 0;
    for (int r = 0; r < cf->reps; r++) {
        esc_client *c = job(cl, admin);
        double t0 = h_now_ms();
        for (int i = 0; i < cf->sync_tasks; i++, k++) {
            double a = h_now_ms();
            esc_ref *ref = submit_noop(c, NULL, 0);
            double b = h_now_ms();
            get_one(c, ref);
            sub[k] = b - a;
            get[k] = h_now_ms() - b;
        }
        rate[r] = cf->sync_tasks / ((h_now_ms() - t0) / 1000.0);
        if (r == cf->reps - 1) {
            for (int i = 0; i < cf->sync_tasks; i++) {
                void *v = NULL;
                size_t len;
                esc_status st;
                double a = h_now_ms();
                if (esc_kv_get(c, "bench", "absent", &v, &len, &st) != ESC_NOT_FOUND)
                    die("kv_get", &st);
                kv[i] = h_now_ms() - a;
            }
        }
        job_end(cl, admin, c);
    }
    g_escher_sync = pct(rate, cf->reps, 50);
    printf("{\"bench\": \"sync_rtt\", \"system\": \"escher\", \"tasks\": %d, \"per_s\": %.1f, "
           "\"min_per_s\": %.1f, \"max_per_s\": %.1f, \"submit_median_ms\": %.3f, "
           "\"get_median_ms\": %.3f, \"kv_get_rtt_median_ms\": %.3f, \"runs\": %d}\n",
           cf->sync_tasks, g_escher_sync, rate[0], rate[cf->reps - 1], pct(sub, n, 50),
           pct(get, n, 50), pct(kv, cf->sync_tasks, 50), cf->reps);
    fflush(stdout);
    free(rate);
    free(sub);
    free(get);
    free(kv);
}

static void bench_async(h_cluster *cl, esc_client *admin, const config *cf)
{
    double *rate = calloc((size_t)cf->reps, sizeof *rate);
    double *sub = calloc((size_t)cf->reps, sizeof *sub);
    for (int r = 0; r < cf->reps; r++) {
        esc_client *c = job(cl, admin);
        rate[r] = cf->tasks / burst(c, cf->tasks, &sub[r]);
        job_end(cl, admin, c);
    }
    g_escher_async = pct(rate, cf->reps, 50);
    printf("{\"bench\": \"async_throughput\", \"system\": \"escher\", \"tasks\": %d, "
           "\"per_s\": %.1f, \"min_per_s\": %.1f, \"max_per_s\": %.1f, "
           "\"submit_per_s\": %.1f, \"runs\": %d}\n",
           cf->tasks, g_escher_async, rate[0], rate[cf->reps - 1],
           cf->tasks / pct(sub, cf->reps, 50), cf->reps);
    fflush(stdout);
    free(rate);
    free(sub);
}

static void with_cluster(int nodes, const config *cf)
{
    static h_cluster cl;
    h_init(&cl, 10000);
    g_cluster = &cl;
    if (h_gcs_start(&cl) != 0)
        die("cannot start the GCS", NULL);
    for (int i = 0; i < nodes; i++)
        if (h_raylet_start(&cl, i, cf->raylet_flags) != 0)
            die("cannot start a raylet", NULL);
    esc_client *admin = h_connect(&cl, "bench", 0, false); /* owns the resources */
    if (nodes == 1) {
        if (cf->sync)
            bench_sync(&cl, admin, cf);
        if (cf->async)
            bench_async(&cl, admin, cf);
        if (cf->k)
            bench_k_resources(&cl, admin, cf);
    }
    if (cf->makespan)
        bench_makespan(&cl, admin, nodes, cf);
    esc_disconnect(admin);
    h_stop(&cl);
    g_cluster = NULL;
}

/* ------------------------------------------------------------------ metrics overhead */

/* A Prometheus stand-in: GETs /metrics on every port each second until told to stop. */
typedef struct {
    int ports[2];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    long scrapes, bytes, failures;
} scraper;

/* One GET /metrics on 127.0.0.1:port; the bytes read, or -1. */
static long scrape_once(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    long got = 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
        char buf[65536];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            got += n;
    } else {
        got = -1;
    }
    close(fd);
    return got;
}

static void *scraper_main(void *arg)
{
    scraper *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        pthread_mutex_unlock(&s->mu);
        for (int i = 0; i < 2; i++) {
            long n = scrape_once(s->ports[i]);
            s->scrapes++;
            if (n > 0)
                s->bytes += n;
            else
                s->failures++;
        }
        pthread_mutex_lock(&s->mu);
        /* The scrape interval (Prometheus's own is a timer too), cut short by stop. */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static int read_port(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    int port = -1;
    if (!f || fscanf(f, "%d", &port) != 1)
        die("cannot read a metrics port file", NULL);
    fclose(f);
    return port;
}

/* One round: a fresh cluster, with metrics or not; *per_s and *makespan_s its medians. */
static void overhead_round(const config *cf, bool metrics, int round, double *per_s,
                           double *makespan_s)
{
    static h_cluster cl;
    h_init(&cl, 10000);
    g_cluster = &cl;
    char raylet_flags[700] = "";
    if (metrics) {
        if (snprintf(cl.gcs_extra, sizeof cl.gcs_extra,
                     "--metrics-port 0 --metrics-port-file %s/gcs.metrics_port",
                     cl.dir) >= (int)sizeof cl.gcs_extra ||
            snprintf(raylet_flags, sizeof raylet_flags,
                     "--metrics-port 0 --metrics-port-file %s/raylet.metrics_port",
                     cl.dir) >= (int)sizeof raylet_flags)
            die("the cluster directory's path is too long", NULL);
    }
    if (h_gcs_start(&cl) != 0 || h_raylet_start(&cl, 0, raylet_flags) != 0)
        die("cannot start the cluster", NULL);
    esc_client *admin = h_connect(&cl, "bench", 0, false);
    resources(&cl, admin, 1, 1000, "o_", false);
    scraper sc = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    pthread_t th;
    if (metrics) {
        sc.ports[0] = read_port(cl.dir, "gcs.metrics_port");
        sc.ports[1] = read_port(cl.dir, "raylet.metrics_port");
        pthread_create(&th, NULL, scraper_main, &sc);
    }
    double *t = calloc((size_t)cf->reps, sizeof *t);
    for (int r = 0; r < cf->reps; r++) {
        esc_client *c = job(&cl, admin);
        t[r] = burst(c, cf->tasks, NULL);
        job_end(&cl, admin, c);
    }
    if (metrics) {
        pthread_mutex_lock(&sc.mu);
        sc.stop = true;
        pthread_cond_signal(&sc.cv);
        pthread_mutex_unlock(&sc.mu);
        pthread_join(th, NULL);
    }
    *makespan_s = pct(t, cf->reps, 50);
    *per_s = cf->tasks / *makespan_s;
    printf("{\"bench\": \"metrics_overhead\", \"system\": \"escher\", \"round\": %d, "
           "\"metrics\": %s, \"tasks\": %d, \"ephemeral_resources\": 1000, "
           "\"per_s\": %.1f, \"makespan_s\": %.4f, \"runs\": %d, \"scrapes\": %ld, "
           "\"scrape_failures\": %ld, \"scrape_bytes_mean\": %.0f}\n",
           round, metrics ? "true" : "false", cf->tasks, *per_s, *makespan_s, cf->reps,
           sc.scrapes, sc.failures, sc.scrapes ? (double)sc.bytes / (double)sc.scrapes : 0);
    fflush(stdout);
    free(t);
    esc_disconnect(admin);
    h_stop(&cl);
    g_cluster = NULL;
}

/* Rounds off, on, on, off, off, on, ...; then each mode's medians and the difference. */
static void bench_metrics_overhead(const config *cf)
{
    int n = cf->overhead_rounds;
    double *rate[2], *span[2];
    for (int m = 0; m < 2; m++) {
        rate[m] = calloc((size_t)n, sizeof *rate[m]);
        span[m] = calloc((size_t)n, sizeof *span[m]);
    }
    int done[2] = {0, 0};
    for (int r = 0; r < 2 * n; r++) {
        int m = (r % 4 == 1 || r % 4 == 2) ? 1 : 0;
        overhead_round(cf, m == 1, r, &rate[m][done[m]], &span[m][done[m]]);
        done[m]++;
    }
    double off_rate = pct(rate[0], n, 50), on_rate = pct(rate[1], n, 50);
    double off_span = pct(span[0], n, 50), on_span = pct(span[1], n, 50);
    printf("{\"bench\": \"metrics_overhead\", \"system\": \"escher\", \"summary\": true, "
           "\"rounds_per_mode\": %d, \"tasks\": %d, \"off_per_s\": %.1f, \"on_per_s\": %.1f, "
           "\"throughput_cost_pct\": %.2f, \"off_makespan_s\": %.4f, \"on_makespan_s\": %.4f, "
           "\"makespan_cost_pct\": %.2f}\n",
           n, cf->tasks, off_rate, on_rate, 100.0 * (off_rate - on_rate) / off_rate, off_span,
           on_span, 100.0 * (on_span - off_span) / off_span);
    fflush(stdout);
    for (int m = 0; m < 2; m++) {
        free(rate[m]);
        free(span[m]);
    }
}

/* ------------------------------------------------------------------ dask */

static const char *src_dir(void)
{
    const char *d = getenv("ESCHER_BENCH_SRC");
    return d && *d ? d : ESC_BENCH_SRC_DIR;
}

static const char *dask_python(void)
{
    const char *p = getenv("DASK_PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

/* Runs setup-dask.sh (a no-op when Dask is there); true when Dask can be imported. */
static bool dask_ready(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "DASK_PYTHON='%s' '%s/setup-dask.sh' 1>&2", dask_python(),
             src_dir());
    if (system(cmd) != 0) {
        fprintf(stderr, "tasks: Dask distributed is unavailable (%s/setup-dask.sh failed; "
                        "install python3-distributed, or pass --no-dask): measuring escher "
                        "only\n", src_dir());
        return false;
    }
    return true;
}

/* The first number after "key": in a JSON line, or -1. */
static double json_num(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    return p ? atof(p + strlen(pat)) : -1;
}

/* Runs dask_noop.py, echoing its lines; fills the figures the ratios need. */
static bool run_dask(int workers, const char *what, const config *cf, double *sync,
                     double *async, double *makespan)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' '%s/dask_noop.py' --workers %d --tasks %d --sync-tasks %d --reps %d "
             "--what %s",
             dask_python(), src_dir(), workers, cf->tasks, cf->sync_tasks, cf->reps, what);
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    char line[4096];
    while (fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        fflush(stdout);
        if (strstr(line, "\"bench\": \"sync_rtt\""))
            *sync = json_num(line, "per_s");
        else if (strstr(line, "\"bench\": \"async_throughput\""))
            *async = json_num(line, "per_s");
        else if (strstr(line, "\"bench\": \"noop_makespan\""))
            *makespan = json_num(line, "makespan_s");
    }
    int rc = pclose(p);
    if (rc != 0)
        fprintf(stderr, "tasks: dask_noop.py --workers %d failed (status %d)\n", workers, rc);
    return rc == 0;
}

static void ratio(const char *of, const char *metric, int nodes, double e, double d)
{
    if (e <= 0 || d <= 0)
        return;
    printf("{\"bench\": \"ratio\", \"system\": \"escher/dask\", \"of\": \"%s\", \"metric\": "
           "\"%s\", \"nodes\": %d, \"escher\": %.3f, \"dask\": %.3f, \"ratio\": %.2f}\n",
           of, metric, nodes, e, d, e / d);
    fflush(stdout);
}

/* ------------------------------------------------------------------ main */

/* The machine, and how busy it is (the 1-minute load average), at the start and the
 * end of a run: the numbers mean little on a machine that others load meanwhile. */
static void machine_line(const char *when)
{
    char model[128] = "?", line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            snprintf(model, sizeof model, "%s", colon + 2);
            model[strcspn(model, "\n\"\\")] = 0;
            break;
        }
    }
    if (f)
        fclose(f);
    double load = -1;
    f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &load) != 1)
        load = -1;
    if (f)
        fclose(f);
    printf("{\"bench\": \"machine\", \"system\": \"host\", \"when\": \"%s\", \"cpus\": %ld, "
           "\"cpu\": \"%s\", \"loadavg_1m\": %.2f}\n",
           when, sysconf(_SC_NPROCESSORS_ONLN), model, load);
    fflush(stdout);
}

/* "a,b,c" into v (at most cap numbers in [lo, hi]). */
static bool parse_list(const char *s, int *v, int *n, int cap, int lo, int hi)
{
    *n = 0;
    for (const char *p = s; *p && *n < cap;) {
        int x = atoi(p);
        if (x < lo || x > hi)
            return false;
        v[(*n)++] = x;
        p = strchr(p, ',');
        if (!p)
            break;
        p++;
    }
    return *n > 0;
}

static bool parse_only(const char *s, config *cf)
{
    cf->makespan = cf->k = cf->sync = cf->async = false;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (!strcmp(w, "makespan"))
            cf->makespan = true;
        else if (!strcmp(w, "k"))
            cf->k = true;
        else if (!strcmp(w, "sync"))
            cf->sync = true;
        else if (!strcmp(w, "async"))
            cf->async = true;
        else
            return false;
    }
    return true;
}

static void usage(void)
{
    fprintf(stderr, "usage: tasks [--tasks N] [--sync-tasks M] [--runs R] [--reps P] "
                    "[--nodes 1,10] [--k 1,10,100,1000] [--only makespan,k,sync,async] [--no-dask] "
                    "[--spread] [--raylet-flags 'FLAGS'] [--metrics-overhead R]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    config cf = {.tasks = 10000, .sync_tasks = 1000, .runs = 50, .reps = 3, .nodes = {1, 10},
                 .nnodes = 2, .ks = {1, 10, 100, 1000}, .nks = 4, .makespan = true, .k = true, .sync = true, .async = true,
                 .dask = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--tasks") && v)
            cf.tasks = atoi(v), i++;
        else if (!strcmp(a, "--sync-tasks") && v)
            cf.sync_tasks = atoi(v), i++;
        else if (!strcmp(a, "--runs") && v)
            cf.runs = atoi(v), i++;
        else if (!strcmp(a, "--reps") && v)
            cf.reps = atoi(v), i++;
        else if (!strcmp(a, "--nodes") && v) {
            if (!parse_list(v, cf.nodes, &cf.nnodes, 4, 1, H_MAX_RAYLETS))
                usage();
            i++;
        } else if (!strcmp(a, "--k") && v) {
            if (!parse_list(v, cf.ks, &cf.nks, 8, 1, MAX_RES))
                usage();
            i++;
        } else if (!strcmp(a, "--only") && v) {
            if (!parse_only(v, &cf))
                usage();
            i++;
        } else if (!strcmp(a, "--raylet-flags") && v)
            cf.raylet_flags = v, i++;
        else if (!strcmp(a, "--metrics-overhead") && v) {
            if ((cf.overhead_rounds = atoi(v)) < 1)
                usage();
            i++;
        }
        else if (!strcmp(a, "--spread"))
            cf.spread = true;
        else if (!strcmp(a, "--no-dask"))
            cf.dask = false;
        else
            usage();
    }
    if (cf.tasks < 100 || cf.sync_tasks < 10 || cf.runs < 20 || cf.reps < 1) {
        fprintf(stderr, "tasks: need --tasks >= 100, --sync-tasks >= 10, --runs >= 20, "
                        "--reps >= 1\n");
        return 2;
    }
    const char *bin = getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build";
    snprintf(LIB, sizeof LIB, "%s/bench/task_lib/libescher_bench_tasks.so", bin);
    if (access(LIB, R_OK) != 0) {
        fprintf(stderr, "tasks: no %s (set ESCHER_BIN_DIR to the build directory)\n", LIB);
        return 2;
    }
    char abs[PATH_MAX]; /* workers run in the raylet's directory */
    if (realpath(LIB, abs) && strlen(abs) < sizeof LIB)
        memcpy(LIB, abs, strlen(abs) + 1);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);

    machine_line("start");
    if (cf.overhead_rounds > 0) {
        bench_metrics_overhead(&cf);
        machine_line("end");
        return 0;
    }
    bool dask = cf.dask && dask_ready();
    for (int i = 0; i < cf.nnodes; i++)
        with_cluster(cf.nodes[i], &cf);
    if (!dask) {
        machine_line("end");
        return cf.dask ? 3 : 0;
    }

    /* Dask in the same run, then the ratios. */
    double dsync = -1, dasync = -1, dmk[2] = {-1, -1}, unused = -1;
    bool ok = true;
    for (int i = 0; i < cf.nnodes; i++) {
        int w = cf.nodes[i];
        bool first = i == 0 && w == 1;
        char what[64];
        snprintf(what, sizeof what, "%s%s%s", first && cf.sync ? "sync," : "",
                 first && cf.async ? "async," : "", cf.makespan ? "makespan" : "");
        if (!strcmp(what, ""))
            continue;
        size_t l = strlen(what);
        if (what[l - 1] == ',')
            what[l - 1] = 0;
        ok &= run_dask(w, what, &cf, first ? &dsync : &unused, first ? &dasync : &unused,
                       w == 1 ? &dmk[0] : w == 10 ? &dmk[1] : &unused);
    }
    ratio("sync_rtt", "per_s", 1, g_escher_sync, dsync);
    ratio("async_throughput", "per_s", 1, g_escher_async, dasync);
    ratio("noop_makespan", "makespan_s", 1, g_escher_makespan[0], dmk[0]);
    ratio("noop_makespan", "makespan_s", 10, g_escher_makespan[1], dmk[1]);
    machine_line("end");
    return ok ? 0 : 3;
}
