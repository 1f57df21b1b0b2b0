/* gang.c: gang-scheduling latency and competing gangs (docs/benchmarks.md).
 *
 * Starts a GCS and 8 raylets of 16 CPUs each. For gangs of 4, 16 and 64 members (CPU=2
 * each: at most 8 per node, which is also how many worker processes a raylet runs on
 * this 2-core machine, 4 per core; a member admitted beyond that would wait for a
 * worker, and ghosts that wait so deadlock their own gang) and each variant (backed: esl_gang_reserve; ghost: esl_gang_reserve_ghost),
 * RUNS times: reserve, submit the members (each requests the gang resource only),
 * and time from the request to the moment the last member started running (members
 * report their start on the wall clock). The reservation alone is timed too. Then
 * --competing gangs reserved and released in a loop by --clients concurrent clients
 * over the same nodes (16 members of CPU=4: two gangs fit at once), and the leftovers
 * after all released: gang rows still listed plus nodes with CPU still carved or held.
 * One JSON object per line on stdout.
 *
 * Usage: gang [--runs N] [--competing N] [--clients K] [--variants backed,ghost]
 *             [--sizes 4,16,64]   (ESCHER_BIN_DIR: the build directory) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "escher/esl.h"
#include "bench_stats.h"
#include "harness.h"

#define NODES 8
#define MEMBER_SLEEP_MS "50"

static h_cluster C;
static char LIB[1024];

static void die(const char *what, const esc_status *st)
{
    fprintf(stderr, "gang: %s failed: %s %s\n", what, esc_status_name(st->code), st->message);
    h_stop(&C);
    exit(1);
}

static double wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

typedef int (*reserve_fn)(esc_client *, const char *, unsigned, const esl_request *,
                          const esl_gang_opts *, esl_gang **, esc_status *);

/* ------------------------------------------------------------------ latency */

/* One run: reserve, start the members, wait for all. *all_ms: request to last member
 * running; *reserve_ms: the reservation call alone. Returns false (and says why on
 * stderr) when the reservation timed out: counted, not fatal. */
static bool one_run(esc_client *cl, reserve_fn fn, unsigned size, int run, double *all_ms,
                    double *reserve_ms)
{
    esl_request pm = {0};
    esl_request_add(&pm, "CPU", ESC_QTY(2));
    char name[32];
    snprintf(name, sizeof name, "g%d", run);
    esl_gang_opts o = {.timeout_ms = 20000};
    esl_gang *g = NULL;
    esc_status st;
    double w0 = wall_us(), t0 = h_now_ms();
    int rc = fn(cl, name, size, &pm, &o, &g, &st);
    if (rc == ESC_DEADLINE_EXCEEDED) {
        fprintf(stderr, "gang: run %d of %u: %s\n", run, size, st.message);
        esl_request_clear(&pm);
        usleep(200000); /* ghosts give up at the deadline: let them exit */
        return false;
    }
    if (rc != ESC_OK)
        die("reserve", &st);
    *reserve_ms = h_now_ms() - t0;
    const esl_request *req = esl_gang_request(g);
    esc_task_arg a = {.data = MEMBER_SLEEP_MS, .len = strlen(MEMBER_SLEEP_MS)};
    esc_task_spec spec = {.library = LIB, .symbol = "gang_member", .resources = req->v,
                          .nresources = req->n, .args = &a, .nargs = 1};
    esc_ref **refs = calloc(size, sizeof *refs);
    for (unsigned m = 0; m < size; m++)
        if (esc_task_submit(cl, &spec, &refs[m], NULL, &st) != ESC_OK)
            die("submit", &st);
    double last = 0;
    for (unsigned m = 0; m < size; m++) {
        void *d = NULL;
        size_t len;
        if (esc_get(cl, refs[m], 120000, &d, &len, &st) != ESC_OK)
            die("member", &st);
        double started = atof(d);
        if (started > last)
            last = started;
        free(d);
        esc_ref_free(refs[m]);
    }
    free(refs);
    *all_ms = (last - w0) / 1e3;
    if (esl_gang_release(cl, g, &st) != ESC_OK)
        die("release", &st);
    esl_request_clear(&pm);
    return true;
}

static void bench_latency(esc_client *cl, const char *variant, reserve_fn fn, unsigned size,
                          int runs)
{
    double *all = calloc((size_t)runs, sizeof *all);
    double *res = calloc((size_t)runs, sizeof *res);
    double a, r;
    one_run(cl, fn, size, -1, &a, &r); /* warm-up: starts the workers */
    int n = 0, failed = 0;
    for (int i = 0; i < runs; i++) {
        if (one_run(cl, fn, size, i, &all[n], &res[n]))
            n++;
        else
            failed++;
    }
    qsort(all, (size_t)n, sizeof *all, cmp_double);
    qsort(res, (size_t)n, sizeof *res, cmp_double);
    printf("{\"variant\": \"%s\", \"gang_size\": %u, \"nodes\": %d, \"runs\": %d, "
           "\"timed_out\": %d, \"median_ms\": %.3f, \"p99_ms\": %.3f, "
           "\"reserve_median_ms\": %.3f, \"reserve_p99_ms\": %.3f}\n",
           variant, size, NODES, n, failed, n ? percentile(all, n, 50) : -1,
           n ? percentile(all, n, 99) : -1, n ? percentile(res, n, 50) : -1,
           n ? percentile(res, n, 99) : -1);
    fflush(stdout);
    free(all);
    free(res);
}

/* ------------------------------------------------------------------ competition */

typedef struct {
    int id;
    reserve_fn fn;
    int *next;            /* shared count of gangs started, under mu */
    int total;
    pthread_mutex_t *mu;
    int ok, timed_out, failed;
    unsigned attempts;
    double *lat;          /* reservation times of the ok ones */
    int nlat;
} competitor;

static bool take_one(competitor *me)
{
    pthread_mutex_lock(me->mu);
    bool go = *me->next < me->total;
    if (go)
        (*me->next)++;
    pthread_mutex_unlock(me->mu);
    return go;
}

static void *compete(void *p)
{
    competitor *me = p;
    char ns[16];
    snprintf(ns, sizeof ns, "cmp%d", me->id);
    esc_client *cl = h_connect(&C, ns, me->id % NODES, false);
    esl_request pm = {0};
    esl_request_add(&pm, "CPU", ESC_QTY(4));
    while (take_one(me)) {
        esl_gang *g = NULL;
        esc_status st;
        esl_gang_opts o = {.timeout_ms = 5000, .attempt_ms = 200};
        double t0 = h_now_ms();
        int rc = me->fn(cl, "g", 16, &pm, &o, &g, &st);
        if (rc == ESC_OK) {
            me->lat[me->nlat++] = h_now_ms() - t0;
            me->ok++;
            me->attempts += esl_gang_attempts(g);
            if (esl_gang_release(cl, g, &st) != ESC_OK)
                me->failed++;
        } else if (rc == ESC_DEADLINE_EXCEEDED) {
            me->timed_out++;
        } else {
            fprintf(stderr, "gang: competitor %d: %s %s\n", me->id, esc_status_name(rc),
                    st.message);
            me->failed++;
        }
    }
    esl_request_clear(&pm);
    esc_disconnect(cl);
    return NULL;
}

/* Gang rows still listed, plus nodes with CPU carved or held, once reports settle. */
static int leftovers(esc_client *cl)
{
    int left = 0;
    for (int tries = 0; tries < 100; tries++) {
        esc_cluster_status *s = NULL;
        esc_status st;
        if (esc_get_cluster_resources(cl, &s, &st) != ESC_OK)
            die("status", &st);
        left = 0;
        for (size_t n = 0; n < s->nnodes; n++) {
            for (size_t r = 0; r < s->nodes[n].nresources; r++) {
                const esc_resource_info *ri = &s->nodes[n].resources[r];
                if (ri->ephemeral)
                    left++;
                else if (!strcmp(ri->name, "CPU") && (ri->carved || ri->held))
                    left++;
            }
        }
        esc_cluster_status_free(s);
        if (left == 0)
            break;
        usleep(50000); /* a release's report can lag by the raylet's row interval */
    }
    return left;
}

static void bench_competing(esc_client *cl, const char *variant, reserve_fn fn, int total,
                            int clients)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    int next = 0;
    competitor *cs = calloc((size_t)clients, sizeof *cs);
    pthread_t *th = calloc((size_t)clients, sizeof *th);
    double t0 = h_now_ms();
    for (int i = 0; i < clients; i++) {
        cs[i] = (competitor){.id = i, .fn = fn, .next = &next, .total = total, .mu = &mu,
                             .lat = calloc((size_t)total, sizeof(double))};
        pthread_create(&th[i], NULL, compete, &cs[i]);
    }
    int ok = 0, timed_out = 0, failed = 0, nlat = 0;
    unsigned attempts = 0;
    double *lat = calloc((size_t)total + 1, sizeof *lat);
    for (int i = 0; i < clients; i++) {
        pthread_join(th[i], NULL);
        ok += cs[i].ok;
        timed_out += cs[i].timed_out;
        failed += cs[i].failed;
        attempts += cs[i].attempts;
        memcpy(lat + nlat, cs[i].lat, (size_t)cs[i].nlat * sizeof *lat);
        nlat += cs[i].nlat;
        free(cs[i].lat);
    }
    double secs = (h_now_ms() - t0) / 1e3;
    qsort(lat, (size_t)nlat, sizeof *lat, cmp_double);
    printf("{\"variant\": \"%s\", \"competing_gangs\": %d, \"clients\": %d, \"gang_size\": 16, "
           "\"nodes\": %d, \"reserved\": %d, \"timed_out\": %d, \"failed\": %d, "
           "\"attempts_per_gang\": %.2f, \"reserve_median_ms\": %.3f, \"reserve_p99_ms\": %.3f, "
           "\"seconds\": %.1f, \"leaked_reservations\": %d}\n",
           variant, ok + timed_out + failed, clients, NODES, ok, timed_out, failed,
           ok ? (double)attempts / ok : 0.0, nlat ? percentile(lat, nlat, 50) : 0.0,
           nlat ? percentile(lat, nlat, 99) : 0.0, secs, leftovers(cl));
    fflush(stdout);
    free(lat);
    free(cs);
    free(th);
}

/* ------------------------------------------------------------------ main */

static bool listed(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; (p = strstr(p, item)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

static void start_cluster(void)
{
    h_init(&C, 10000);
    if (h_gcs_start(&C) != 0) {
        fprintf(stderr, "gang: GCS did not start\n");
        exit(1);
    }
    for (int i = 0; i < NODES; i++) {
        if (h_raylet_start(&C, i, "--num-cpus 16") != 0) {
            fprintf(stderr, "gang: raylet %d did not start\n", i);
            h_stop(&C);
            exit(1);
        }
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: gang [--runs N] [--competing N] [--clients N] "
                    "[--variants backed,ghost] [--sizes 4,16,64]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int runs = 20, competing = 1000, clients = 3;
    const char *variants = "backed,ghost", *sizes = "4,16,64";
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc)
            return usage();
        if (!strcmp(argv[i], "--runs"))
            runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--competing"))
            competing = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--clients"))
            clients = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--variants"))
            variants = argv[i + 1];
        else if (!strcmp(argv[i], "--sizes"))
            sizes = argv[i + 1];
        else
            return usage();
    }
    if (runs < 1 || competing < 0 || clients < 1)
        return usage();
    const char *bin = getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build";
    snprintf(LIB, sizeof LIB, "%s/bench/task_lib/libescher_bench_tasks.so", bin);
    if (access(LIB, R_OK) != 0) {
        fprintf(stderr, "gang: no %s (set ESCHER_BIN_DIR to the build directory)\n", LIB);
        return 1;
    }
    start_cluster();
    esc_client *cl = h_connect(&C, "bench", 0, false);
    struct { const char *name; reserve_fn fn; } vs[] = {
        {"backed", esl_gang_reserve_opts},
        {"ghost", esl_gang_reserve_ghost},
    };
    unsigned all_sizes[] = {4, 16, 64};
    for (size_t v = 0; v < 2; v++) {
        if (!listed(variants, vs[v].name))
            continue;
        for (size_t k = 0; k < 3; k++) {
            char sz[16];
            snprintf(sz, sizeof sz, "%u", all_sizes[k]);
            if (listed(sizes, sz))
                bench_latency(cl, vs[v].name, vs[v].fn, all_sizes[k], runs);
        }
    }
    /* The competing run last: its line carries competing_gangs and leaked_reservations. */
    if (competing > 0)
        bench_competing(cl, "backed", esl_gang_reserve_opts, competing, clients);
    esc_disconnect(cl);
    h_stop(&C);
    return h_unclean_exits() ? 1 : 0;
}
