/* packages.c: what a job's package costs its tasks (docs/tasks.md, "Packages").
 *
 * One GCS and two raylets on loopback; node 1 has the resource only_b. One JSON object
 * per line on stdout:
 *  - cached_throughput: N no-op tasks (`noop` of bench/task_lib) submitted
 *    asynchronously, then gathered, on the driver's node, in a fresh job each run,
 *    "package": false (absolute library, no package) and true (the same library as
 *    ./libescher_bench_tasks.so in the job's package, already fetched by the warm-up),
 *    runs interleaved: per_s (median of --reps), and the ratio with / without;
 *  - first_task: in a fresh job whose package (the library plus SIZE bytes of random
 *    data, new content each run, so never cached) no node has yet, the first no-op task
 *    on node 1, submit to result (it pays the fetch: download, hash, unpack; and the
 *    start of the job's first worker there), then the second one (cached): first_ms,
 *    cached_ms; next to it, the same two tasks in a fresh job without a package
 *    (first_no_package_ms: the worker start alone), so fetch_ms = first_ms -
 *    first_no_package_ms is what the fetch adds; MB/s of that; medians over --reps, for
 *    SIZE in --sizes (default 0, 1M, 10M, 100M).
 *
 * Usage: packages [--tasks N] [--reps R] [--sizes 0,1048576,...]
 * Defaults: N 10000, R 5. Environment: ESCHER_BIN_DIR (the build directory, default
 * "build"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_stats.h"
#include "harness.h"

#define WARMUP 100
#define MAX_REPS 64
#define MAX_SIZES 8

static h_cluster C;
static char LIB[1024], DIR_[512];
static const esc_amount ON_B[] = {{.name = "only_b", .value = ESC_QTY(1)}};

static void die(const char *what, const esc_status *st)
{
    fprintf(stderr, "packages: %s: %s\n", what, st ? st->message : "");
    h_stop(&C);
    exit(1);
}

static esc_ref *submit(esc_client *cl, const char *lib, bool on_b)
{
    esc_task_spec spec = {.library = lib, .symbol = "noop", .resources = on_b ? ON_B : NULL,
                          .nresources = on_b ? 1 : 0};
    esc_ref *ref;
    esc_status st;
    if (esc_task_submit(cl, &spec, &ref, NULL, &st) != ESC_OK)
        die("submit", &st);
    return ref;
}

static void get(esc_client *cl, esc_ref *ref)
{
    void *v;
    size_t len;
    esc_status st;
    if (esc_get(cl, ref, 120000, &v, &len, &st) != ESC_OK)
        die("get", &st);
    free(v);
    esc_ref_free(ref);
}

/* A package directory: the bench library and `size` random bytes (new each call). */
static void make_package(int n, uint64_t size, char *dir, size_t len)
{
    snprintf(dir, len, "%s/pkg-%d", DIR_, n);
    char cmd[3000];
    /* a truncated command would run a different shell line: fail instead */
    int cmd_len = snprintf(cmd, sizeof cmd,
             "mkdir -p %s && cp %s %s/ && head -c %" PRIu64 " /dev/urandom >%s/data.bin && "
             "echo %d-%d >%s/stamp",
             dir, LIB, dir, size, dir, n, (int)getpid(), dir);
    if (cmd_len < 0 || (size_t)cmd_len >= sizeof cmd)
        die("package directory path too long", NULL);
    if (system(cmd) != 0)
        die("cannot make a package directory", NULL);
}

static esc_client *job_with_package(const char *dir)
{
    esc_client *cl = h_connect(&C, NULL, 0, false);
    esc_status st;
    if (dir && esc_job_package(cl, dir, NULL, &st) != ESC_OK)
        die("esc_job_package", &st);
    return cl;
}

/* Seconds to submit n no-ops then gather them, in a fresh job (package or not). */
static double burst(int n, const char *pkg_dir)
{
    esc_client *cl = job_with_package(pkg_dir);
    const char *lib = pkg_dir ? "./libescher_bench_tasks.so" : LIB;
    esc_ref **refs = calloc((size_t)n, sizeof *refs);
    for (int i = 0; i < WARMUP; i++) /* workers exist, the package is here */
        refs[i] = submit(cl, lib, false);
    for (int i = 0; i < WARMUP; i++)
        get(cl, refs[i]);
    double t0 = h_now_ms();
    for (int i = 0; i < n; i++)
        refs[i] = submit(cl, lib, false);
    for (int i = 0; i < n; i++)
        get(cl, refs[i]);
    double s = (h_now_ms() - t0) / 1000.0;
    free(refs);
    esc_disconnect(cl);
    return s;
}

static void bench_cached(int n, int reps)
{
    char dir[600];
    make_package(0, 0, dir, sizeof dir);
    double with[MAX_REPS], without[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        without[r] = n / burst(n, NULL);
        with[r] = n / burst(n, dir);
    }
    double a = pct(without, reps, 50), b = pct(with, reps, 50);
    printf("{\"bench\":\"cached_throughput\",\"package\":false,\"tasks\":%d,\"per_s\":%.0f,"
           "\"min\":%.0f,\"max\":%.0f}\n",
           n, a, pct(without, reps, 0), pct(without, reps, 100));
    printf("{\"bench\":\"cached_throughput\",\"package\":true,\"tasks\":%d,\"per_s\":%.0f,"
           "\"min\":%.0f,\"max\":%.0f,\"ratio\":%.3f}\n",
           n, b, pct(with, reps, 0), pct(with, reps, 100), b / a);
    fflush(stdout);
}

static double one_task_ms(esc_client *cl, const char *lib)
{
    double t0 = h_now_ms();
    get(cl, submit(cl, lib, true));
    return h_now_ms() - t0;
}

static void bench_first(uint64_t size, int reps, int *serial)
{
    double first[MAX_REPS], cached[MAX_REPS], bare[MAX_REPS], fetch[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        esc_client *cl = job_with_package(NULL);
        bare[r] = one_task_ms(cl, LIB);
        one_task_ms(cl, LIB);
        esc_disconnect(cl);
        char dir[600];
        make_package(++*serial, size, dir, sizeof dir);
        cl = job_with_package(dir);
        first[r] = one_task_ms(cl, "./libescher_bench_tasks.so");
        cached[r] = one_task_ms(cl, "./libescher_bench_tasks.so");
        fetch[r] = first[r] - bare[r];
        esc_disconnect(cl);
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            die("rm", NULL);
    }
    double f = pct(fetch, reps, 50);
    printf("{\"bench\":\"first_task\",\"data_bytes\":%" PRIu64 ",\"first_ms\":%.2f,"
           "\"cached_ms\":%.2f,\"first_no_package_ms\":%.2f,\"fetch_ms\":%.2f,"
           "\"fetch_MBps\":%.1f,\"reps\":%d}\n",
           size, pct(first, reps, 50), pct(cached, reps, 50), pct(bare, reps, 50), f,
           f > 0 ? (double)size / 1e6 / (f / 1000.0) : 0.0, reps);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int n = 10000, reps = 5;
    uint64_t sizes[MAX_SIZES] = {0, 1 << 20, 10 << 20, 100 << 20};
    int nsizes = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--tasks"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sizes")) {
            nsizes = 0;
            for (char *p = strtok(argv[i + 1], ","); p && nsizes < MAX_SIZES; p = strtok(NULL, ","))
                sizes[nsizes++] = strtoull(p, NULL, 10);
        }
    }
    if (reps < 1 || reps > MAX_REPS || n < WARMUP) {
        fprintf(stderr, "packages: --reps 1..%d, --tasks >= %d\n", MAX_REPS, WARMUP);
        return 2;
    }
    const char *bin = getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build";
    snprintf(LIB, sizeof LIB, "%s/bench/task_lib/libescher_bench_tasks.so", bin);
    if (access(LIB, R_OK) != 0) {
        fprintf(stderr, "packages: no %s (set ESCHER_BIN_DIR to the build directory)\n", LIB);
        return 2;
    }
    h_init(&C, 10000);
    snprintf(DIR_, sizeof DIR_, "%.400s/bench-src", C.dir);
    mkdir(DIR_, 0755);
    if (h_start_cluster(&C, 2, (const char *const[]){NULL, "--resources only_b=1"}) != 0)
        die("cannot start the cluster", NULL);
    bench_cached(n, reps);
    int serial = 0;
    for (int i = 0; i < nsizes; i++)
        bench_first(sizes[i], reps, &serial);
    h_stop(&C);
    return 0;
}
