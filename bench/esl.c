/* esl.c: what ESL placement costs. The same workloads with and without a policy's
 * request, in the same run, on 4 raylets of 4 CPUs (loopback):
 *  - throughput: N no-op tasks submitted, then gathered, with no request and carrying a
 *    co-location group's unit (a group of N on one node: the placement is the same, the
 *    request is what differs) — the per-task cost of carrying a policy;
 *  - latency: 4 tasks of 100 ms, with no request (all fit the local node), co-located
 *    (esl_colocate, created in the timed part), and anti-affine (esl_anti_affinity,
 *    created in the timed part: one per node, so three are spilled) — what setting up a
 *    policy and placing by it adds to a small job.
 * One JSON object per line: {"bench": "esl_overhead", "workload", "policy", "tasks",
 * "median_s", "min_s", "max_s", "runs"}.
 *
 * Usage: esl [--tasks N] [--reps R]   (ESCHER_BIN_DIR: the build directory) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escher/esl.h"
#include "bench_stats.h"
#include "harness.h"

#define NODES 4

static char LIB[1024];

static void die(const char *what, const esc_status *st)
{
    fprintf(stderr, "esl: %s failed: %s %s\n", what, esc_status_name(st->code), st->message);
    exit(1);
}

/* Submits n tasks fn(arg) carrying req, then gathers them; returns seconds. */
static double run_tasks(esc_client *c, int n, const char *fn, const char *arg,
                        const esl_request *req)
{
    esc_ref **refs = calloc((size_t)n, sizeof *refs);
    esc_task_arg a = {.data = arg, .len = strlen(arg)};
    esc_task_spec spec = {.library = LIB, .symbol = fn, .args = &a, .nargs = 1,
                          .resources = req ? req->v : NULL, .nresources = req ? req->n : 0};
    esc_status st;
    double t0 = h_now_ms();
    for (int i = 0; i < n; i++)
        if (esc_task_submit(c, &spec, &refs[i], NULL, &st) != ESC_OK)
            die("submit", &st);
    for (int i = 0; i < n; i++) {
        void *v = NULL;
        size_t len;
        if (esc_get(c, refs[i], 120000, &v, &len, &st) != ESC_OK)
            die("get", &st);
        free(v);
        esc_ref_free(refs[i]);
    }
    free(refs);
    return (h_now_ms() - t0) / 1000.0;
}

static void report(const char *workload, const char *policy, int tasks, double *t, int reps)
{
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("{\"bench\": \"esl_overhead\", \"workload\": \"%s\", \"policy\": \"%s\", \"tasks\": %d, "
           "\"median_s\": %.4f, \"min_s\": %.4f, \"max_s\": %.4f, \"runs\": %d}\n",
           workload, policy, tasks, t[reps / 2], t[0], t[reps - 1], reps);
    fflush(stdout);
}

static void throughput(esc_client *c, int n, int reps)
{
    double *none = calloc((size_t)reps, sizeof *none), *co = calloc((size_t)reps, sizeof *co);
    esl_request empty = {0};
    esc_status st;
    for (int r = 0; r < reps; r++) {
        none[r] = run_tasks(c, n, "noop", "", NULL);
        esl_policy *p = NULL;
        char name[32];
        snprintf(name, sizeof name, "tp%d", r);
        if (esl_colocate(c, name, (unsigned)n, &empty, &p, &st) != ESC_OK)
            die("colocate", &st);
        co[r] = run_tasks(c, n, "noop", "", esl_policy_request(p));
        esl_policy_free(c, p, NULL);
    }
    report("throughput", "none", n, none, reps);
    report("throughput", "colocate", n, co, reps);
    free(none);
    free(co);
}

static void latency(esc_client *c, int reps)
{
    double *t[3];
    for (int k = 0; k < 3; k++)
        t[k] = calloc((size_t)reps, sizeof *t[k]);
    esl_request empty = {0};
    esc_status st;
    for (int r = 0; r < reps; r++) {
        t[0][r] = run_tasks(c, 4, "sleep_ms", "100", NULL);
        char name[32];
        esl_policy *p = NULL;
        double t0 = h_now_ms();
        snprintf(name, sizeof name, "lc%d", r);
        if (esl_colocate(c, name, 4, &empty, &p, &st) != ESC_OK)
            die("colocate", &st);
        run_tasks(c, 4, "sleep_ms", "100", esl_policy_request(p));
        t[1][r] = (h_now_ms() - t0) / 1000.0;
        esl_policy_free(c, p, NULL);
        t0 = h_now_ms();
        snprintf(name, sizeof name, "la%d", r);
        if (esl_anti_affinity(c, name, &p, &st) != ESC_OK)
            die("anti_affinity", &st);
        run_tasks(c, 4, "sleep_ms", "100", esl_policy_request(p));
        t[2][r] = (h_now_ms() - t0) / 1000.0;
        esl_policy_free(c, p, NULL);
    }
    report("latency", "none", 4, t[0], reps);
    report("latency", "colocate", 4, t[1], reps);
    report("latency", "anti_affinity", 4, t[2], reps);
    for (int k = 0; k < 3; k++)
        free(t[k]);
}

int main(int argc, char **argv)
{
    int n = 2000, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tasks") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: esl [--tasks N] [--reps R]\n");
            return 2;
        }
    }
    if (n < 1 || reps < 1) {
        fprintf(stderr, "esl: --tasks and --reps must be positive\n");
        return 2;
    }
    const char *bin = getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build";
    snprintf(LIB, sizeof LIB, "%s/bench/task_lib/libescher_bench_tasks.so", bin);
    if (access(LIB, R_OK) != 0) {
        fprintf(stderr, "esl: no %s (set ESCHER_BIN_DIR to the build directory)\n", LIB);
        return 1;
    }
    h_cluster cl;
    h_init(&cl, 3000);
    if (h_gcs_start(&cl) != 0)
        return 1;
    for (int i = 0; i < NODES; i++)
        if (h_raylet_start(&cl, i, "--num-cpus 4") != 0)
            return 1;
    esc_client *c = h_connect(&cl, "eslbench", 0, false);
    run_tasks(c, 100, "noop", "", NULL); /* workers up */
    throughput(c, n, reps);
    latency(c, reps);
    esc_disconnect(c);
    h_stop(&cl);
    return 0;
}
