/* test_tasks.c: task functions for the worker tests (libescher_test_tasks.so). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "escher/escher.h"
#include "escher/task.h"

/* Returns its first argument. */
ESC_TASK(echo)
{
    (void)ctx;
    return esc_buf_set(ret, arg, len);
}

/* Two native-endian int64 arguments -> their sum (int64). Returns 1 on bad arguments. */
ESC_TASK(add)
{
    (void)arg;
    (void)len;
    int64_t a, b;
    size_t la, lb;
    const void *pa = esc_task_arg_at(ctx, 0, &la), *pb = esc_task_arg_at(ctx, 1, &lb);
    if (esc_task_num_args(ctx) != 2 || la != sizeof a || lb != sizeof b)
        return 1;
    memcpy(&a, pa, sizeof a);
    memcpy(&b, pb, sizeof b);
    int64_t sum = a + b;
    return esc_buf_set(ret, &sum, sizeof sum);
}

/* Return i is "out-<i>", for every return asked for. */
ESC_TASK(multi)
{
    (void)arg;
    (void)len;
    (void)ret;
    for (size_t i = 0; i < esc_task_num_returns(ctx); i++)
        if (esc_buf_printf(esc_task_return(ctx, i), "out-%zu", i) < 0)
            return 1;
    return 0;
}

/* Dies by SIGSEGV. The default action is restored first, so that a sanitizer's handler
 * (which would turn the signal into exit code 1) does not hide the signal, and no core
 * file is written. */
ESC_TASK(crash)
{
    (void)ctx;
    (void)arg;
    (void)len;
    (void)ret;
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    return 0;
}

ESC_TASK(fail)
{
    (void)ctx;
    (void)arg;
    (void)len;
    (void)ret;
    return 3;
}

/* Sleeps for the number of milliseconds in its argument (decimal text). */
ESC_TASK(sleep_ms)
{
    (void)ctx;
    (void)ret;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    long ms = atol(buf);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
    return 0;
}

/* Writes its argument to stdout (through stdio) and "err:" + argument to stderr. */
ESC_TASK(print)
{
    (void)ctx;
    (void)ret;
    printf("out:%.*s\n", (int)len, (const char *)arg);
    fprintf(stderr, "err:%.*s\n", (int)len, (const char *)arg);
    return 0;
}

/* Returns the worker's pid as decimal text. */
ESC_TASK(pid)
{
    (void)ctx;
    (void)arg;
    (void)len;
    return esc_buf_printf(ret, "%d", (int)getpid());
}

/* Returns the value of the environment variable named by the argument ("" if unset). */
ESC_TASK(getenv_task)
{
    (void)ctx;
    char name[256] = {0};
    memcpy(name, arg, len < sizeof name - 1 ? len : sizeof name - 1);
    const char *v = getenv(name);
    return esc_buf_set(ret, v ? v : "", v ? strlen(v) : 0);
}

/* Returns "<task id> <job id> <num args>". */
ESC_TASK(whoami)
{
    (void)arg;
    (void)len;
    return esc_buf_printf(ret, "%s %s %zu", esc_task_id(ctx), esc_task_job_id(ctx),
                          esc_task_num_args(ctx));
}

/* Crashes the first time it runs for a marker path (its argument), succeeds afterwards:
 * a worker crash that a retry survives. */
ESC_TASK(crash_once)
{
    (void)ctx;
    char path[512] = {0};
    memcpy(path, arg, len < sizeof path - 1 ? len : sizeof path - 1);
    if (access(path, F_OK) != 0) {
        FILE *f = fopen(path, "w");
        if (f)
            fclose(f);
        raise(SIGSEGV);
    }
    return esc_buf_set(ret, "survived", 8);
}

/* Sleeps ms and returns "<start_us> <end_us> <node>": wall-clock microseconds around the
 * sleep and the node it ran on (ESCHER_NODE_ID). */
static int stamp_sleep(long ms, esc_buf *ret)
{
    struct timespec t0, t1, ts = {ms / 1000, (ms % 1000) * 1000000L};
    clock_gettime(CLOCK_REALTIME, &t0);
    while (nanosleep(&ts, &ts) < 0)
        ;
    clock_gettime(CLOCK_REALTIME, &t1);
    const char *node = getenv("ESCHER_NODE_ID");
    return esc_buf_printf(ret, "%lld %lld %s", (long long)t0.tv_sec * 1000000 + t0.tv_nsec / 1000,
                          (long long)t1.tv_sec * 1000000 + t1.tv_nsec / 1000, node ? node : "");
}

/* Sleeps the milliseconds in its argument (decimal text); returns as stamp_sleep. */
ESC_TASK(stamp)
{
    (void)ctx;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    return stamp_sleep(atol(buf), ret);
}

/* Arguments MS and PATH: creates the file PATH, so that a test knows the task runs (and
 * holds what it asked for) without guessing a delay, then does what stamp does. */
ESC_TASK(marked_stamp)
{
    (void)arg;
    (void)len;
    char ms[32], path[512];
    size_t n = 0;
    const void *p = esc_task_num_args(ctx) > 1 ? esc_task_arg_at(ctx, 1, &n) : NULL;
    if (!p || n == 0 || n >= sizeof path)
        return 2;
    memcpy(path, p, n);
    path[n] = 0;
    p = esc_task_arg_at(ctx, 0, &n);
    n = n < sizeof ms - 1 ? n : sizeof ms - 1;
    memcpy(ms, p, n);
    ms[n] = 0;
    FILE *f = fopen(path, "w");
    if (!f || fclose(f) != 0)
        return 1;
    return stamp_sleep(atol(ms), ret);
}

/* Sleeps the milliseconds in its argument, then returns CUDA_VISIBLE_DEVICES. */
ESC_TASK(gpu_probe)
{
    (void)ctx;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    long ms = atol(buf);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    return esc_buf_printf(ret, "%s", v ? v : "(unset)");
}

/* An actor's state: a counter in the worker process. */
static long long counter;

ESC_TASK(counter_init)
{
    (void)ctx;
    (void)arg;
    (void)len;
    (void)ret;
    counter = 0;
    return 0;
}

/* Adds its argument (decimal) to the counter; returns the new value. */
ESC_TASK(counter_add)
{
    (void)ctx;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    counter += atoll(buf);
    return esc_buf_printf(ret, "%lld", counter);
}

/* Appends "<node>\n" to the file named by its argument (one line per run), returns the
 * node: how often and where a task ran. */
ESC_TASK(append_node)
{
    (void)ctx;
    char path[512] = {0};
    memcpy(path, arg, len < sizeof path - 1 ? len : sizeof path - 1);
    const char *node = getenv("ESCHER_NODE_ID");
    FILE *f = fopen(path, "a");
    if (!f)
        return 1;
    fprintf(f, "%s\n", node ? node : "");
    fclose(f);
    return esc_buf_printf(ret, "%s", node ? node : "");
}

/* The "probe" actor (tests/integration/test_actor_faults.c): its init sets the state to
 * INIT_STATE and counts its own runs in the file named by its argument (one line per
 * run), which outlives the worker, so a restart that skipped the init shows. */
#define PROBE_INIT_STATE 1000
static long long probe_state;  /* 0 in a fresh worker whose init did not run */
static long long probe_inits;  /* runs of the init so far, read back from the file */

static long long count_lines(FILE *f)
{
    long long n = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    return n;
}

ESC_TASK(probe_init)
{
    (void)ctx;
    (void)ret;
    char path[512] = {0};
    memcpy(path, arg, len < sizeof path - 1 ? len : sizeof path - 1);
    FILE *f = fopen(path, "a+");
    if (!f)
        return 1;
    fprintf(f, "%d\n", (int)getpid());
    fflush(f);
    rewind(f);
    probe_inits = count_lines(f);
    fclose(f);
    probe_state = PROBE_INIT_STATE;
    return 0;
}

/* "<pid> <init runs> <state>". */
ESC_TASK(probe_get)
{
    (void)ctx;
    (void)arg;
    (void)len;
    return esc_buf_printf(ret, "%d %lld %lld", (int)getpid(), probe_inits, probe_state);
}

/* Adds its argument (decimal) to the state; returns the state. */
ESC_TASK(probe_add)
{
    (void)ctx;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    probe_state += atoll(buf);
    return esc_buf_printf(ret, "%lld", probe_state);
}

/* Writes its pid to the file named by its argument (so a test knows the call runs),
 * then sleeps a minute: a call to kill the actor under. */
ESC_TASK(probe_block)
{
    (void)ctx;
    (void)ret;
    char path[512] = {0};
    memcpy(path, arg, len < sizeof path - 1 ? len : sizeof path - 1);
    char tmp[530];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return 1;
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    if (rename(tmp, path) != 0) /* whole or absent: the test never reads half a pid */
        return 1;
    struct timespec ts = {60, 0};
    while (nanosleep(&ts, &ts) < 0)
        ;
    return 0;
}

/* Argument i as a NUL-terminated string in buf ("" when absent). */
static const char *chaos_arg(esc_task_ctx *ctx, size_t i, char *buf, size_t size)
{
    size_t len = 0;
    const void *p = i < esc_task_num_args(ctx) ? esc_task_arg_at(ctx, i, &len) : NULL;
    len = p ? (len < size - 1 ? len : size - 1) : 0;
    if (len)
        memcpy(buf, p, len);
    buf[len] = 0;
    return buf;
}

/* The chaos test's task (tests/integration/test_chaos.c): arguments PATH, TAG and
 * optionally SLEEP_MS. Appends "<tag> <wall-clock us> <node> <pid>\n" to PATH when it
 * starts, in one write, so runs of many tasks share a file and each run of each task
 * shows with its start time; then sleeps, so that faults find it running. Returns
 * "<node> <pid>". */
ESC_TASK(chaos_mark)
{
    (void)arg;
    (void)len;
    char path[512], tag[128], ms_text[32], line[768];
    chaos_arg(ctx, 0, path, sizeof path);
    chaos_arg(ctx, 1, tag, sizeof tag);
    long ms = atol(chaos_arg(ctx, 2, ms_text, sizeof ms_text));
    const char *node = getenv("ESCHER_NODE_ID");
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int n = snprintf(line, sizeof line, "%s %lld %s %d\n", tag,
                     (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000, node ? node : "-",
                     (int)getpid());
    FILE *f = fopen(path, "a");
    if (!f)
        return 1;
    /* One fwrite of the whole line through an O_APPEND stream: lines of concurrent
     * tasks never interleave. */
    size_t put = fwrite(line, 1, (size_t)n, f);
    if (fclose(f) != 0 || put != (size_t)n)
        return 1;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) < 0)
        ;
    return esc_buf_printf(ret, "%s %d", node ? node : "-", (int)getpid());
}

/* The chaos test's actor method: counts its calls in the worker; returns
 * "<pid> <count>". A worker that replaced the actor's worker starts again from 1. */
static long long chaos_steps;

ESC_TASK(chaos_step)
{
    (void)ctx;
    (void)arg;
    (void)len;
    return esc_buf_printf(ret, "%d %lld", (int)getpid(), ++chaos_steps);
}

/* CPU seconds this process used so far (user + system), from /proc/self/stat. */
static double proc_cpu_s(void)
{
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f)
        return -1;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                     &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Spins for the milliseconds of wall-clock time in its argument; returns the CPU it got,
 * in cores, and its node: "<cpu seconds / wall seconds> <node>", the CPU measured from
 * /proc (a task under a CPU quota of 0.25 gets about 0.25). */
ESC_TASK(spin)
{
    (void)ctx;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    double ms = atof(buf);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double cpu0 = proc_cpu_s(), wall = 0;
    volatile unsigned long long x = 0;
    while (wall * 1000 < ms) {
        for (int i = 0; i < 100000; i++)
            x += (unsigned long long)i;
        clock_gettime(CLOCK_MONOTONIC, &t);
        wall = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
    }
    double cpu = proc_cpu_s() - cpu0;
    const char *node = getenv("ESCHER_NODE_ID");
    return esc_buf_printf(ret, "%.3f %s", cpu / wall, node ? node : "-");
}

/* Uses the SDK from inside the task (esc_task_client): arguments LIBRARY and WORD. Submits
 * echo(WORD) from LIBRARY as a child task of the job and waits for it, then stores the
 * child's value under the job's KV key "from_task" and reads it back. Returns
 * "<child's value> <value read back>"; on an error, fails with its message on stderr. */
ESC_TASK(steer)
{
    (void)arg;
    (void)len;
    char lib[512], word[64];
    esc_client *c = NULL;
    esc_status st = {0};
    if (esc_task_num_args(ctx) < 2 || !chaos_arg(ctx, 0, lib, sizeof lib)[0] ||
        esc_task_client(ctx, &c, &st) != ESC_OK) {
        fprintf(stderr, "steer: no client: %s\n", st.message);
        return 1;
    }
    chaos_arg(ctx, 1, word, sizeof word);
    esc_task_arg a = {.data = word, .len = strlen(word)};
    esc_task_spec spec = {.library = lib, .symbol = "echo", .args = &a, .nargs = 1};
    esc_ref *ref = NULL;
    void *v = NULL, *back = NULL;
    size_t n = 0, nback = 0;
    int rc = esc_task_submit(c, &spec, &ref, NULL, &st);
    if (rc == ESC_OK)
        rc = esc_get(c, ref, 30000, &v, &n, &st);
    if (rc == ESC_OK)
        rc = esc_kv_put(c, NULL, "from_task", v, n, true, NULL, &st);
    if (rc == ESC_OK)
        rc = esc_kv_get(c, NULL, "from_task", &back, &nback, &st);
    if (rc == ESC_OK)
        rc = esc_buf_printf(ret, "%.*s %.*s", (int)n, (char *)v, (int)nback, (char *)back);
    else
        fprintf(stderr, "steer: %s %s\n", esc_status_name(rc), st.message);
    free(v);
    free(back);
    esc_ref_free(ref);
    return rc;
}

/* Calls esc_task_client twice and returns "same" when both give the one client of the
 * worker process. */
ESC_TASK(client_twice)
{
    (void)arg;
    (void)len;
    esc_client *a = NULL, *b = NULL;
    if (esc_task_client(ctx, &a, NULL) != ESC_OK || esc_task_client(ctx, &b, NULL) != ESC_OK)
        return 1;
    return esc_buf_printf(ret, "%s %s", a == b ? "same" : "different", esc_client_job_id(a));
}

/* An actor method: what the actor holds of the resource named by the argument, as this
 * call starts (esc_actor_held), printed "%g". */
ESC_TASK(held)
{
    char name[128];
    chaos_arg(ctx, 0, name, sizeof name);
    (void)arg;
    (void)len;
    return esc_buf_printf(ret, "%g", esc_actor_held(ctx, name));
}

/* An actor method for tests/integration/test_actor_concurrency.c: arguments STARTED and
 * RELEASE (paths). Writes its pid to STARTED (whole or absent: written aside, then
 * renamed), then waits until the file RELEASE exists, up to 60 s (then it fails: 3), and
 * returns "<pid>". Thread-safe: it keeps no state. */
ESC_TASK(gate)
{
    (void)arg;
    (void)len;
    char started[512], release[512], tmp[530];
    chaos_arg(ctx, 0, started, sizeof started);
    chaos_arg(ctx, 1, release, sizeof release);
    snprintf(tmp, sizeof tmp, "%s.tmp", started);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return 1;
    fprintf(f, "%d\n", (int)getpid());
    if (fclose(f) != 0 || rename(tmp, started) != 0)
        return 1;
    for (int i = 0; i < 30000 && access(release, F_OK) != 0; i++) {
        struct timespec ts = {0, 2000000}; /* 2 ms */
        nanosleep(&ts, NULL);
    }
    if (access(release, F_OK) != 0)
        return 3;
    return esc_buf_printf(ret, "%d", (int)getpid());
}
