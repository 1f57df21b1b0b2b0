/* ephemeral.c: how fast ephemeral resources are created and applied cluster-wide.
 *
 * For 1 and 10 raylets and r in {10, 100, 1000, 5000} resources spread evenly over the
 * nodes: commit the creation of all r as one batch and wait until every node has applied
 * it (wait_applied); median and p99 over RUNS runs. Then the round trip of one `set`, and
 * the resident memory of an idle GCS and raylet. One JSON object per line on stdout.
 *
 * Usage: ephemeral [--runs N] [--rtt-samples N] [--rtt-only]   (ESCHER_BIN_DIR: the build directory) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_stats.h"
#include "harness.h"

static void die(const char *what, const esc_status *st)
{
    fprintf(stderr, "ephemeral: %s failed: %s %s\n", what, esc_status_name(st->code), st->message);
    exit(1);
}

/* One timed run: create r resources over the nodes in one batch, wait until applied. */
static double create_run(h_cluster *c, esc_client *cl, int nodes, int r, int run)
{
    esc_batch *b = esc_batch_new();
    char name[64];
    for (int i = 0; i < r; i++) {
        snprintf(name, sizeof name, "r%d_%d", run, i);
        esc_target t = ESC_NODE(c->raylets[i % nodes].node_id);
        esc_batch_set(b, name, ESC_QTY(1), &t);
    }
    esc_status st;
    uint64_t seq;
    double t0 = h_now_ms();
    if (esc_batch_commit(cl, b, &seq, &st) != ESC_OK)
        die("create", &st);
    if (esc_wait_applied(cl, seq, NULL, 0, 60000, &st) != ESC_OK)
        die("wait_applied", &st);
    double ms = h_now_ms() - t0;
    esc_batch_free(b);

    /* Clean up (not timed) so each run starts from the same registry size. */
    b = esc_batch_new();
    for (int i = 0; i < r; i++) {
        snprintf(name, sizeof name, "r%d_%d", run, i);
        esc_target t = ESC_NODE(c->raylets[i % nodes].node_id);
        esc_batch_delete(b, name, &t);
    }
    if (esc_batch_commit(cl, b, &seq, &st) != ESC_OK ||
        esc_wait_applied(cl, seq, NULL, 0, 60000, &st) != ESC_OK)
        die("cleanup", &st);
    esc_batch_free(b);
    return ms;
}

static void bench_create(h_cluster *c, esc_client *cl, int nodes, int r, int runs)
{
    double *t = calloc((size_t)runs, sizeof *t);
    create_run(c, cl, nodes, r, -1); /* warm-up, not counted */
    for (int i = 0; i < runs; i++)
        t[i] = create_run(c, cl, nodes, r, i);
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    double med = percentile(t, runs, 50);
    printf("{\"nodes\": %d, \"resources\": %d, \"runs\": %d, \"median_ms\": %.3f, "
           "\"p99_ms\": %.3f, \"per_resource_ms\": %.5f}\n",
           nodes, r, runs, med, percentile(t, runs, 99), med / r);
    fflush(stdout);
    free(t);
}

/* The round trip of one `set`, interleaved with its peer in the same run: a KV read,
 * the cheapest call the GCS serves, which is the floor any write could reach. */
static void bench_rtt(esc_client *cl, int samples)
{
    double *set = calloc((size_t)samples, sizeof *set);
    double *kv = calloc((size_t)samples, sizeof *kv);
    esc_status st;
    for (int i = 0; i < samples + 50; i++) {
        double t0 = h_now_ms();
        if (esc_resource_set(cl, "rtt", ESC_QTY(1 + i % 7), NULL, NULL, &st) != ESC_OK)
            die("set", &st);
        double t1 = h_now_ms();
        void *v = NULL;
        size_t len;
        if (esc_kv_get(cl, "bench", "absent", &v, &len, &st) != ESC_NOT_FOUND)
            die("kv_get", &st);
        double t2 = h_now_ms();
        if (i >= 50) {
            set[i - 50] = t1 - t0;
            kv[i - 50] = t2 - t1;
        }
    }
    qsort(set, (size_t)samples, sizeof *set, cmp_double);
    qsort(kv, (size_t)samples, sizeof *kv, cmp_double);
    printf("{\"set_rtt_median_ms\": %.4f, \"set_rtt_p99_ms\": %.4f, \"kv_get_rtt_median_ms\": "
           "%.4f, \"kv_get_rtt_p99_ms\": %.4f, \"samples\": %d}\n",
           percentile(set, samples, 50), percentile(set, samples, 99),
           percentile(kv, samples, 50), percentile(kv, samples, 99), samples);
    fflush(stdout);
    free(set);
    free(kv);
}

static double rss_mb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    double kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb / 1024.0;
}

static void start_cluster(h_cluster *c, int nodes)
{
    h_init(c, 10000);
    if (h_gcs_start(c) != 0) {
        fprintf(stderr, "ephemeral: cannot start the GCS\n");
        exit(1);
    }
    for (int i = 0; i < nodes; i++) {
        if (h_raylet_start(c, i, NULL) != 0) {
            fprintf(stderr, "ephemeral: cannot start raylet %d\n", i);
            exit(1);
        }
    }
}

int main(int argc, char **argv)
{
    int runs = 7, samples = 1000;
    bool rtt_only = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--runs"))
            runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rtt-samples"))
            samples = atoi(argv[i + 1]);
    }
    for (int i = 1; i < argc; i++)
        rtt_only |= !strcmp(argv[i], "--rtt-only");
    if (runs < 5 || samples < 10) {
        fprintf(stderr, "ephemeral: need --runs >= 5 and --rtt-samples >= 10\n");
        return 2;
    }
    static const int counts[] = {10, 100, 1000, 5000};
    static const int node_counts[] = {1, 10};
    for (int k = 0; k < 2; k++) {
        h_cluster c;
        start_cluster(&c, node_counts[k]);
        esc_client *cl = h_connect(&c, "bench", 0, false);
        if (k == 0) {
            sleep(1); /* let the daemons settle before reading idle memory */
            printf("{\"idle_gcs_rss_mb\": %.1f, \"idle_raylet_rss_mb\": %.1f}\n",
                   rss_mb(c.gcs_pid), rss_mb(c.raylets[0].pid));
            bench_rtt(cl, samples);
            if (rtt_only) {
                esc_disconnect(cl);
                h_stop(&c);
                return 0;
            }
        }
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
            bench_create(&c, cl, node_counts[k], counts[i], runs);
        esc_disconnect(cl);
        h_stop(&c);
    }
    return 0;
}
