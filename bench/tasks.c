/* tasks.c: how fast escher runs tasks.
 *
 * One JSON object per line, each with "bench" and "system": "escher":
 *  - noop_makespan: N no-op function tasks submitted asynchronously, then all gathered,
 *    with E ephemeral resources present in the cluster (E in 10, 100, 1000, 10000), on 1
 *    and 10 raylets: nodes, ephemeral_resources, tasks, makespan_s;
 *  - k_resources: one task requesting k distinct ephemeral resources (k in 1, 10, 100,
 *    1000), submit to result: k, median_ms, p99_ms over --runs runs;
 *  - sync_rtt: submit one no-op and get it, repeated: per_s;
 *  - async_throughput: submit N no-ops, then get them all: per_s.
 * The Dask comparison of the issue is not part of this program yet.
 *
 * Usage: tasks [--tasks N] [--runs R] [--quick]   (ESCHER_BIN_DIR: the build directory) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static char LIB[1024];

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int k = (int)(p / 100.0 * n + 0.999999) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void die(const char *what, const esc_status *st)
{
    fprintf(stderr, "tasks: %s: %s %s\n", what, esc_status_name(st->code), st->message);
    exit(1);
}

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

/* Submits n no-ops at once, then gathers them; returns seconds. */
static double burst(esc_client *c, int n)
{
    esc_ref **refs = calloc((size_t)n, sizeof *refs);
    double t0 = h_now_ms();
    for (int i = 0; i < n; i++)
        refs[i] = submit_noop(c, NULL, 0);
    for (int i = 0; i < n; i++)
        get_one(c, refs[i]);
    free(refs);
    return (h_now_ms() - t0) / 1000.0;
}

/* E ephemeral resources spread over the nodes, in one batch. */
static void make_resources(h_cluster *cl, esc_client *c, int nodes, int e, const char *prefix)
{
    esc_batch *b = esc_batch_new();
    char name[64];
    for (int i = 0; i < e; i++) {
        snprintf(name, sizeof name, "%s%d", prefix, i);
        esc_target t = ESC_NODE(cl->raylets[i % nodes].node_id);
        esc_batch_set(b, name, ESC_QTY(1), &t);
    }
    uint64_t seq;
    esc_status st;
    if (esc_batch_commit(c, b, &seq, &st) != ESC_OK ||
        esc_wait_applied(c, seq, NULL, 0, 60000, &st) != ESC_OK)
        die("create resources", &st);
    esc_batch_free(b);
}

static void bench_makespan(h_cluster *cl, esc_client *c, int nodes, int tasks, int quick)
{
    static const int counts[] = {10, 100, 1000, 10000};
    int made = 0;
    for (int k = 0; k < 4; k++) {
        if (quick && counts[k] > 100)
            break;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "m%d_", k);
        make_resources(cl, c, nodes, counts[k] - made, prefix);
        made = counts[k];
        double s = burst(c, tasks);
        printf("{\"bench\": \"noop_makespan\", \"system\": \"escher\", \"nodes\": %d, "
               "\"ephemeral_resources\": %d, \"tasks\": %d, \"makespan_s\": %.3f}\n",
               nodes, counts[k], tasks, s);
        fflush(stdout);
    }
}

static void bench_k_resources(h_cluster *cl, esc_client *c, int runs)
{
    static const int ks[] = {1, 10, 100, 1000};
    for (int i = 0; i < 4; i++) {
        int k = ks[i];
        char prefix[32];
        snprintf(prefix, sizeof prefix, "k%d_", k);
        make_resources(cl, c, 1, k, prefix);
        esc_amount *need = calloc((size_t)k, sizeof *need);
        char **names = calloc((size_t)k, sizeof *names);
        for (int j = 0; j < k; j++) {
            names[j] = malloc(80);
            snprintf(names[j], 80, "%s/%s%d", esc_client_namespace(c), prefix, j);
            need[j] = (esc_amount){.name = names[j], .value = ESC_QTY(1)};
        }
        double *t = calloc((size_t)runs, sizeof *t);
        for (int r = 0; r < runs + 3; r++) {
            double t0 = h_now_ms();
            get_one(c, submit_noop(c, need, (size_t)k));
            if (r >= 3)
                t[r - 3] = h_now_ms() - t0;
        }
        printf("{\"bench\": \"k_resources\", \"system\": \"escher\", \"k\": %d, \"median_ms\": "
               "%.3f, \"p99_ms\": %.3f}\n",
               k, pct(t, runs, 50), pct(t, runs, 99));
        fflush(stdout);
        for (int j = 0; j < k; j++)
            free(names[j]);
        free(names);
        free(need);
        free(t);
    }
}

static void bench_sync_async(esc_client *c, int tasks)
{
    int n = tasks < 2000 ? tasks : 2000;
    double t0 = h_now_ms();
    for (int i = 0; i < n; i++)
        get_one(c, submit_noop(c, NULL, 0));
    double s = (h_now_ms() - t0) / 1000.0;
    printf("{\"bench\": \"sync_rtt\", \"system\": \"escher\", \"tasks\": %d, \"per_s\": %.1f}\n",
           n, n / s);
    s = burst(c, tasks);
    printf("{\"bench\": \"async_throughput\", \"system\": \"escher\", \"tasks\": %d, "
           "\"per_s\": %.1f}\n",
           tasks, tasks / s);
    fflush(stdout);
}

static void with_cluster(int nodes, int tasks, int runs, int quick)
{
    h_cluster cl;
    h_init(&cl, 10000);
    if (h_gcs_start(&cl) != 0) {
        fprintf(stderr, "tasks: cannot start the GCS\n");
        exit(1);
    }
    for (int i = 0; i < nodes; i++) {
        if (h_raylet_start(&cl, i, NULL) != 0) {
            fprintf(stderr, "tasks: cannot start raylet %d\n", i);
            exit(1);
        }
    }
    esc_client *c = h_connect(&cl, "bench", 0, false);
    burst(c, 50); /* warm the workers */
    if (nodes == 1) {
        bench_sync_async(c, tasks);
        bench_k_resources(&cl, c, runs);
    }
    bench_makespan(&cl, c, nodes, tasks, quick);
    esc_disconnect(c);
    h_stop(&cl);
}

int main(int argc, char **argv)
{
    int tasks = 10000, runs = 20, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tasks") && i + 1 < argc)
            tasks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: tasks [--tasks N] [--runs R] [--quick]\n");
            return 2;
        }
    }
    if (tasks < 100 || runs < 5) {
        fprintf(stderr, "tasks: need --tasks >= 100 and --runs >= 5\n");
        return 2;
    }
    const char *bin = getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build";
    snprintf(LIB, sizeof LIB, "%s/bench/task_lib/libescher_bench_tasks.so", bin);
    with_cluster(1, tasks, runs, quick);
    with_cluster(10, tasks, runs, quick);
    return 0;
}
