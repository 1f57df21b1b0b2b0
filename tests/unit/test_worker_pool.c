/* test_worker_pool.c: the raylet's worker pool (raylet/worker_pool.c) with real
 * escher-worker processes and the task library tests/tasks (libescher_test_tasks.so).
 *
 * Needs ESCHER_BIN_DIR (set by ctest) to find $ESCHER_BIN_DIR/raylet/escher-worker and
 * $ESCHER_BIN_DIR/tests/tasks/libescher_test_tasks.so. Each test gets a fresh pool on
 * its own libev loop (not the default one, like the raylet), a temporary directory for
 * the socket and the logs, and checks at the end that no worker wrote a sanitizer
 * report. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ids.h"
#include "pbutil.h"
#include "worker_pool.h"

#define WAIT_MS 20000 /* upper bound for anything a test waits for */

typedef struct {
    struct ev_loop *loop;
    worker_pool *pool;
    ev_timer tick; /* wakes EVRUN_ONCE regularly so waits can check their condition */
    char dir[64], logs[128], sock[128];
    char exe[4096], lib[4096];
    int next_id;
} fixture;

/* What a done callback received. */
typedef struct {
    int calls;
    Escher__TaskResult *res;
    worker_pool *pool;
    size_t busy_seen, size_seen; /* pool counters at the call */
} outcome;

static void on_done(void *ud, const Escher__TaskResult *r)
{
    outcome *o = ud;
    o->calls++;
    if (o->pool) {
        o->busy_seen = worker_pool_busy(o->pool);
        o->size_seen = worker_pool_size(o->pool);
    }
    if (!o->res)
        o->res = (Escher__TaskResult *)esc_pb_dup(&r->base);
}

static void outcome_clear(outcome *o)
{
    if (o->res)
        protobuf_c_message_free_unpacked(&o->res->base, NULL);
    memset(o, 0, sizeof *o);
}

/* ---- fixture ---- */

static void on_tick(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)t;
    (void)revents;
}

static void bin_path(char *out, size_t len, const char *rel)
{
    const char *bin = getenv("ESCHER_BIN_DIR");
    assert_non_null(bin);
    snprintf(out, len, "%s/%s", bin, rel);
}

static worker_pool *make_pool(fixture *f, int max_workers, double idle_s)
{
    worker_pool_config cfg = {
        .worker_exe = f->exe,
        .socket_path = f->sock,
        .log_dir = f->logs,
        .max_workers = max_workers,
        .idle_timeout_s = idle_s,
    };
    char err[256] = "";
    worker_pool *p = worker_pool_new(f->loop, &cfg, err, sizeof err);
    if (!p)
        fail_msg("worker_pool_new: %s", err);
    return p;
}

static void fixture_init(fixture *f, struct ev_loop *loop)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/escher-wp-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->logs, sizeof f->logs, "%s/logs", f->dir);
    snprintf(f->sock, sizeof f->sock, "%s/workers.sock", f->dir);
    bin_path(f->exe, sizeof f->exe, "raylet/escher-worker");
    bin_path(f->lib, sizeof f->lib, "tests/tasks/libescher_test_tasks.so");
    f->loop = loop;
    ev_timer_init(&f->tick, on_tick, 0.01, 0.01);
    ev_timer_start(loop, &f->tick);
}

static int setup(void **state)
{
    fixture *f = malloc(sizeof *f);
    fixture_init(f, ev_loop_new(EVFLAG_AUTO));
    f->pool = make_pool(f, 8, 30);
    *state = f;
    return 0;
}

/* Fails when any worker log holds a sanitizer report (workers that exited normally run
 * the leak checker at exit). */
static void check_worker_logs(const fixture *f)
{
    DIR *d = opendir(f->logs);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "worker-", 7))
            continue;
        char path[512], text[8192] = "";
        snprintf(path, sizeof path, "%s/%s", f->logs, e->d_name);
        FILE *fp = fopen(path, "r");
        size_t n = fp ? fread(text, 1, sizeof text - 1, fp) : 0;
        text[n] = 0;
        if (fp)
            fclose(fp);
        if (strstr(text, "Sanitizer"))
            fail_msg("%s:\n%s", path, text);
    }
    closedir(d);
}

static void remove_tree(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void fixture_done(fixture *f)
{
    worker_pool_free(f->pool);
    f->pool = NULL;
    check_worker_logs(f);
    ev_timer_stop(f->loop, &f->tick);
    remove_tree(f->dir);
}

static int teardown(void **state)
{
    fixture *f = *state;
    struct ev_loop *loop = f->loop;
    fixture_done(f);
    ev_loop_destroy(loop);
    free(f);
    return 0;
}

/* Runs the loop until *flag is non-zero (or pred says so); fails after WAIT_MS. */
static void wait_until(fixture *f, bool (*pred)(void *), void *arg)
{
    uint64_t deadline = esc_now_ms() + WAIT_MS;
    while (!pred(arg)) {
        if (esc_now_ms() > deadline)
            fail_msg("timed out waiting");
        ev_run(f->loop, EVRUN_ONCE);
    }
}

static bool called(void *o)
{
    return ((outcome *)o)->calls > 0;
}

static void wait_done(fixture *f, outcome *o)
{
    wait_until(f, called, o);
}

/* ---- building specs ---- */

typedef struct {
    Escher__TaskSpec spec;
    Escher__FunctionRef fn;
    Escher__CommandRef cmd;
    Escher__TaskArg args[4], *argp[4];
    char id[32];
} spec_buf;

static Escher__TaskSpec *fn_spec(fixture *f, spec_buf *b, const char *job, const char *symbol,
                                 size_t nargs, const void *const *args, const size_t *lens,
                                 uint32_t num_returns)
{
    memset(b, 0, sizeof *b);
    escher__task_spec__init(&b->spec);
    escher__function_ref__init(&b->fn);
    snprintf(b->id, sizeof b->id, "task-%d", ++f->next_id);
    b->spec.task_id = b->id;
    b->spec.job_id = (char *)job;
    b->spec.name = (char *)symbol;
    b->fn.library = f->lib;
    b->fn.symbol = (char *)symbol;
    b->spec.function = &b->fn;
    for (size_t i = 0; i < nargs; i++) {
        escher__task_arg__init(&b->args[i]);
        b->args[i].data.data = (uint8_t *)args[i];
        b->args[i].data.len = lens[i];
        b->argp[i] = &b->args[i];
    }
    b->spec.n_args = nargs;
    b->spec.args = b->argp;
    b->spec.num_returns = num_returns;
    return &b->spec;
}

/* A function task with one text argument (or none when text is NULL), one return. */
static Escher__TaskSpec *fn1(fixture *f, spec_buf *b, const char *job, const char *symbol,
                             const char *text)
{
    const void *args[1] = {text};
    size_t lens[1] = {text ? strlen(text) : 0};
    return fn_spec(f, b, job, symbol, text ? 1 : 0, args, lens, 1);
}

static Escher__TaskSpec *cmd_spec(fixture *f, spec_buf *b, const char *job, char **argv,
                                  size_t argc, char **env, size_t nenv, const char *cwd)
{
    memset(b, 0, sizeof *b);
    escher__task_spec__init(&b->spec);
    escher__command_ref__init(&b->cmd);
    snprintf(b->id, sizeof b->id, "task-%d", ++f->next_id);
    b->spec.task_id = b->id;
    b->spec.job_id = (char *)job;
    b->cmd.argv = argv;
    b->cmd.n_argv = argc;
    b->cmd.env = env;
    b->cmd.n_env = nenv;
    b->cmd.cwd = (char *)cwd;
    b->spec.command = &b->cmd;
    return &b->spec;
}

/* Runs spec to its end and returns the result in o (caller clears o). */
static void run_sync(fixture *f, const Escher__TaskSpec *spec, const char *const *env,
                     size_t nenv, outcome *o)
{
    memset(o, 0, sizeof *o);
    assert_int_equal(worker_pool_run(f->pool, spec, env, nenv, 0, on_done, o), 0);
    wait_done(f, o);
    assert_int_equal(o->calls, 1);
}

static void assert_ret(const outcome *o, size_t i, const char *text)
{
    assert_true(o->res->n_returns > i);
    assert_int_equal(o->res->returns[i].len, strlen(text));
    assert_memory_equal(o->res->returns[i].data, text, strlen(text));
}

static void assert_ok(const outcome *o)
{
    if (!o->res->ok)
        fail_msg("task failed: %s", o->res->error);
}

static void assert_error_has(const outcome *o, const char *part)
{
    assert_false(o->res->ok);
    if (!strstr(o->res->error, part))
        fail_msg("error \"%s\" lacks \"%s\"", o->res->error, part);
}

/* The pid a "pid" task of job (with env) ran in. */
static pid_t task_pid(fixture *f, const char *job, const char *const *env, size_t nenv)
{
    spec_buf b;
    outcome o;
    run_sync(f, fn1(f, &b, job, "pid", NULL), env, nenv, &o);
    assert_ok(&o);
    char text[32] = {0};
    memcpy(text, o.res->returns[0].data, o.res->returns[0].len < 31 ? o.res->returns[0].len : 31);
    outcome_clear(&o);
    return (pid_t)atoi(text);
}

/* True when pid is gone and reaped (a zombie would still answer kill(pid, 0)). */
static bool gone(pid_t pid)
{
    return kill(pid, 0) < 0 && errno == ESRCH;
}

static char *read_file(const char *dir, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "r");
    if (!fp)
        fail_msg("cannot open %s", path);
    char *text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, fp);
    text[n] = 0;
    fclose(fp);
    return text;
}

/* The task's output as its worker recorded it: the part of worker-<id>.<ext> from the
 * task's record in worker-<id>.idx to the next record's (or the end). The format is the
 * one the raylet serves to `escher logs` (raylet/log_index.c); this reads it
 * independently. */
static char *task_output(const fixture *f, const char *task_id, const char *ext)
{
    char pattern[512];
    snprintf(pattern, sizeof pattern, "%s/worker-*.idx", f->logs);
    glob_t gl;
    char *found = NULL;
    int which = !strcmp(ext, "err");
    if (glob(pattern, 0, NULL, &gl) != 0)
        fail_msg("no index files in %s", f->logs);
    for (size_t i = 0; i < gl.gl_pathc && !found; i++) {
        FILE *idx = fopen(gl.gl_pathv[i], "r");
        char line[512], id[256];
        long long off[2], ms, start = -1, end = -1;
        while (idx && fgets(line, sizeof line, idx)) {
            assert_int_equal(sscanf(line, "%255s %lld %lld %lld", id, &off[0], &off[1], &ms), 4);
            if (start >= 0 && end < 0)
                end = off[which];
            if (!strcmp(id, task_id))
                start = off[which];
        }
        if (idx)
            fclose(idx);
        if (start < 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%s", strrchr(gl.gl_pathv[i], '/') + 1);
        snprintf(strrchr(name, '.'), 5, ".%s", ext);
        char *text = read_file(f->logs, name);
        size_t len = strlen(text);
        size_t to = end >= 0 && (size_t)end < len ? (size_t)end : len;
        found = strndup(text + (size_t)start, to - (size_t)start);
        free(text);
    }
    globfree(&gl);
    if (!found)
        fail_msg("no index record of task %s in %s", task_id, f->logs);
    return found;
}

static void assert_file_has(const fixture *f, const char *task_id, const char *ext,
                            const char *part)
{
    char *text = task_output(f, task_id, ext);
    if (!strstr(text, part))
        fail_msg("task %s's %s holds \"%s\", not \"%s\"", task_id, ext, text, part);
    free(text);
}

/* ---- function tasks ---- */

static void test_echo(void **state)
{
    fixture *f = *state;
    spec_buf b;
    outcome o;
    run_sync(f, fn1(f, &b, "job-a", "echo", "hello, worker"), NULL, 0, &o);
    assert_ok(&o);
    assert_string_equal(o.res->task_id, b.id);
    assert_int_equal(o.res->n_returns, 1);
    assert_ret(&o, 0, "hello, worker");
    outcome_clear(&o);
    assert_int_equal(worker_pool_size(f->pool), 1);
    assert_int_equal(worker_pool_busy(f->pool), 0);
}

static void test_echo_large(void **state)
{
    fixture *f = *state;
    size_t big = 8u << 20; /* far over a socket buffer both ways */
    char *data = malloc(big + 1);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    data[big] = 0;
    spec_buf b;
    outcome o;
    run_sync(f, fn1(f, &b, "job-a", "echo", data), NULL, 0, &o);
    assert_ok(&o);
    assert_int_equal(o.res->returns[0].len, big);
    assert_memory_equal(o.res->returns[0].data, data, big);
    outcome_clear(&o);
    free(data);
}

static void test_add_two_args(void **state)
{
    fixture *f = *state;
    int64_t a = 40, c = -2000000000002;
    const void *args[2] = {&a, &c};
    size_t lens[2] = {sizeof a, sizeof c};
    spec_buf b;
    outcome o;
    run_sync(f, fn_spec(f, &b, "job-a", "add", 2, args, lens, 1), NULL, 0, &o);
    assert_ok(&o);
    int64_t sum;
    assert_int_equal(o.res->returns[0].len, sizeof sum);
    memcpy(&sum, o.res->returns[0].data, sizeof sum);
    assert_true(sum == a + c);
    outcome_clear(&o);
}

static void test_context(void **state)
{
    fixture *f = *state;
    const void *args[3] = {"x", "", "zz"};
    size_t lens[3] = {1, 0, 2};
    spec_buf b;
    outcome o;
    run_sync(f, fn_spec(f, &b, "job-ctx", "whoami", 3, args, lens, 1), NULL, 0, &o);
    assert_ok(&o);
    char want[64];
    snprintf(want, sizeof want, "%s job-ctx 3", b.id);
    assert_ret(&o, 0, want);
    outcome_clear(&o);
}

static void test_multi_returns(void **state)
{
    fixture *f = *state;
    spec_buf b;
    outcome o;
    run_sync(f, fn_spec(f, &b, "job-a", "multi", 0, NULL, NULL, 4), NULL, 0, &o);
    assert_ok(&o);
    assert_int_equal(o.res->n_returns, 4);
    assert_ret(&o, 0, "out-0");
    assert_ret(&o, 3, "out-3");
    outcome_clear(&o);
}

static void test_reuse_per_job(void **state)
{
    fixture *f = *state;
    pid_t a1 = task_pid(f, "job-a", NULL, 0);
    pid_t a2 = task_pid(f, "job-a", NULL, 0);
    pid_t b1 = task_pid(f, "job-b", NULL, 0);
    assert_true(a1 > 0);
    assert_int_equal(a1, a2);
    assert_true(b1 != a1);
    assert_int_equal(worker_pool_size(f->pool), 2);
}

static void test_env_per_worker(void **state)
{
    fixture *f = *state;
    const char *gpu0[] = {"CUDA_VISIBLE_DEVICES=0", "OMP_NUM_THREADS=2"};
    const char *gpu0_reordered[] = {"OMP_NUM_THREADS=2", "CUDA_VISIBLE_DEVICES=0"};
    const char *gpu1[] = {"CUDA_VISIBLE_DEVICES=1", "OMP_NUM_THREADS=2"};
    spec_buf b;
    outcome o;
    run_sync(f, fn1(f, &b, "job-a", "getenv_task", "CUDA_VISIBLE_DEVICES"), gpu1, 2, &o);
    assert_ok(&o);
    assert_ret(&o, 0, "1");
    outcome_clear(&o);
    pid_t p0 = task_pid(f, "job-a", gpu0, 2);
    assert_int_equal(task_pid(f, "job-a", gpu0_reordered, 2), p0); /* same set: reused */
    assert_true(task_pid(f, "job-a", gpu1, 2) != p0);
    assert_true(task_pid(f, "job-a", NULL, 0) != p0);
    /* The worker's own variables do not leak into tasks. */
    run_sync(f, fn1(f, &b, "job-a", "getenv_task", "ESCHER_WORKER_ID"), NULL, 0, &o);
    assert_ret(&o, 0, "");
    outcome_clear(&o);
    run_sync(f, fn1(f, &b, "job-a", "getenv_task", "ESCHER_JOB_ID"), NULL, 0, &o);
    assert_ret(&o, 0, "job-a");
    outcome_clear(&o);
}

static void test_crash_names_signal(void **state)
{
    fixture *f = *state;
    pid_t before = task_pid(f, "job-a", NULL, 0);
    spec_buf b;
    outcome o;
    run_sync(f, fn1(f, &b, "job-a", "crash", NULL), NULL, 0, &o);
    assert_error_has(&o, "worker died: signal 11 (SIGSEGV)");
    assert_int_equal(o.res->term_signal, SIGSEGV);
    outcome_clear(&o);
    assert_true(gone(before));
    pid_t after = task_pid(f, "job-a", NULL, 0); /* a fresh worker takes over */
    assert_true(after != before);
}

static void test_fail_returns_code(void **state)
{
    fixture *f = *state;
    spec_buf b;
    outcome o;
    run_sync(f, fn1(f, &b, "job-a", "fail", NULL), NULL, 0, &o);
    assert_error_has(&o, "task returned 3");
    assert_int_equal(o.res->n_returns, 0);
    outcome_clear(&o);
}

static void test_missing_symbol_and_library(void **state)
{
    fixture *f = *state;
    spec_buf b;
    outcome o;
    run_sync(f, fn1(f, &b, "job-a", "no_such_task", NULL), NULL, 0, &o);
    assert_error_has(&o, "dlsym");
    assert_error_has(&o, "no_such_task");
    assert_null(strchr(o.res->error, '\n'));
    outcome_clear(&o);

    fn1(f, &b, "job-a", "echo", NULL);
    b.fn.library = "/nonexistent/libnope.so";
    run_sync(f, &b.spec, NULL, 0, &o);
    assert_error_has(&o, "dlopen");
    assert_error_has(&o, "/nonexistent/libnope.so");
    outcome_clear(&o);

    fn1(f, &b, "job-a", "echo", NULL);
    b.fn.library = "relative/libnope.so"; /* resolved against the worker's cwd */
    run_sync(f, &b.spec, NULL, 0, &o);
    assert_error_has(&o, "/relative/libnope.so");
    outcome_clear(&o);
}

static void test_invalid_task_id(void **state)
{
    fixture *f = *state;
    spec_buf b;
    outcome o;
    fn1(f, &b, "job-a", "echo", "x");
    b.spec.task_id = "../escape";
    run_sync(f, &b.spec, NULL, 0, &o);
    assert_error_has(&o, "invalid task id");
    outcome_clear(&o);
}

static void test_function_output_captured(void **state)
{
    fixture *f = *state;
    spec_buf b;
    outcome o;
    run_sync(f, fn1(f, &b, "job-a", "print", "first"), NULL, 0, &o);
    assert_ok(&o);
    outcome_clear(&o);
    assert_file_has(f, b.id, "out", "out:first\n");
    assert_file_has(f, b.id, "err", "err:first\n");
    char first[32];
    snprintf(first, sizeof first, "%s", b.id);
    /* The next task on the same worker has its own part; a task that prints nothing
     * has an empty one. */
    run_sync(f, fn1(f, &b, "job-a", "print", "second"), NULL, 0, &o);
    outcome_clear(&o);
    char second[32];
    snprintf(second, sizeof second, "%s", b.id);
    run_sync(f, fn1(f, &b, "job-a", "echo", "quiet"), NULL, 0, &o);
    outcome_clear(&o);
    char *text = task_output(f, first, "out");
    assert_string_equal(text, "out:first\n");
    free(text);
    text = task_output(f, second, "out");
    assert_string_equal(text, "out:second\n");
    free(text);
    text = task_output(f, second, "err");
    assert_string_equal(text, "err:second\n");
    free(text);
    text = task_output(f, b.id, "out");
    assert_string_equal(text, "");
    free(text);
}

/* ---- command tasks ---- */

static void test_command_ok_and_exit_code(void **state)
{
    fixture *f = *state;
    spec_buf b;
    outcome o;
    char *ok[] = {"/bin/sh", "-c", "exit 0"};
    run_sync(f, cmd_spec(f, &b, "job-a", ok, 3, NULL, 0, NULL), NULL, 0, &o);
    assert_ok(&o);
    assert_int_equal(o.res->n_returns, 0);
    outcome_clear(&o);

    char *two[] = {"/bin/sh", "-c", "exit 2"};
    run_sync(f, cmd_spec(f, &b, "job-a", two, 3, NULL, 0, NULL), NULL, 0, &o);
    assert_error_has(&o, "exited with code 2");
    assert_int_equal(o.res->exit_code, 2);
    outcome_clear(&o);

    char *killed[] = {"/bin/sh", "-c", "kill -TERM $$"};
    run_sync(f, cmd_spec(f, &b, "job-a", killed, 3, NULL, 0, NULL), NULL, 0, &o);
    assert_error_has(&o, "killed by signal 15 (SIGTERM)");
    outcome_clear(&o);

    char *missing[] = {"/no/such/program"};
    run_sync(f, cmd_spec(f, &b, "job-a", missing, 1, NULL, 0, NULL), NULL, 0, &o);
    assert_error_has(&o, "exited with code 127");
    outcome_clear(&o);
    assert_file_has(f, b.id, "err", "exec /no/such/program");
}

static void test_command_output_env_cwd(void **state)
{
    fixture *f = *state;
    spec_buf b;
    outcome o;
    char *argv[] = {"/bin/sh", "-c", "echo \"$FOO $GPU $(pwd)\"; echo oops >&2"};
    char *env[] = {"FOO=bar"};
    const char *task_env[] = {"GPU=7"};
    run_sync(f, cmd_spec(f, &b, "job-a", argv, 3, env, 1, f->logs), task_env, 1, &o);
    assert_ok(&o);
    outcome_clear(&o);
    char want[256];
    snprintf(want, sizeof want, "bar 7 %s\n", f->logs);
    assert_file_has(f, b.id, "out", want);
    assert_file_has(f, b.id, "err", "oops\n");
}

/* ---- scheduling, cancel, lifetimes ---- */

static bool pool_empty(void *p)
{
    return worker_pool_size(p) == 0;
}

static void test_cancel_running(void **state)
{
    fixture *f = *state;
    pid_t pid = task_pid(f, "job-a", NULL, 0);
    spec_buf b;
    outcome o = {0};
    assert_int_equal(
        worker_pool_run(f->pool, fn1(f, &b, "job-a", "sleep_ms", "30000"), NULL, 0, 0, on_done, &o),
        0);
    /* Let the worker receive the task. */
    for (int i = 0; i < 20; i++)
        ev_run(f->loop, EVRUN_ONCE);
    assert_int_equal(worker_pool_busy(f->pool), 1);
    uint64_t t0 = esc_now_ms();
    assert_true(worker_pool_cancel(f->pool, b.id));
    assert_int_equal(o.calls, 1); /* at once, not when the sleep ends */
    assert_error_has(&o, "cancelled");
    outcome_clear(&o);
    assert_false(worker_pool_cancel(f->pool, b.id)); /* no longer runs */
    assert_false(worker_pool_cancel(f->pool, "no-such-task"));
    wait_until(f, pool_empty, f->pool);
    assert_true(gone(pid));
    assert_true(esc_now_ms() - t0 < 5000);
}

static void test_cancel_queued(void **state)
{
    fixture *f = *state;
    worker_pool_free(f->pool);
    f->pool = make_pool(f, 1, 30);
    spec_buf b1, b2;
    outcome o1 = {0}, o2 = {0};
    worker_pool_run(f->pool, fn1(f, &b1, "job-a", "sleep_ms", "30000"), NULL, 0, 0, on_done, &o1);
    worker_pool_run(f->pool, fn1(f, &b2, "job-a", "echo", "later"), NULL, 0, 0, on_done, &o2);
    assert_true(worker_pool_cancel(f->pool, b2.id));
    assert_int_equal(o2.calls, 1);
    assert_error_has(&o2, "cancelled");
    assert_int_equal(o1.calls, 0);
    assert_true(worker_pool_cancel(f->pool, b1.id)); /* cancel while still starting */
    assert_error_has(&o1, "cancelled");
    outcome_clear(&o1);
    outcome_clear(&o2);
    wait_until(f, pool_empty, f->pool);
}

static void test_queue_beyond_max_workers(void **state)
{
    fixture *f = *state;
    worker_pool_free(f->pool);
    f->pool = make_pool(f, 2, 30);
    enum { N = 7 };
    spec_buf b[N];
    outcome o[N];
    memset(o, 0, sizeof o);
    for (int i = 0; i < N; i++) {
        o[i].pool = f->pool;
        assert_int_equal(worker_pool_run(f->pool, fn1(f, &b[i], "job-a", "sleep_ms", "50"),
                                         NULL, 0, 0, on_done, &o[i]),
                         0);
    }
    uint64_t deadline = esc_now_ms() + WAIT_MS;
    size_t max_busy = 0, max_size = 0;
    for (int i = 0; i < N; i++) {
        while (!o[i].calls) {
            assert_true(esc_now_ms() < deadline);
            ev_run(f->loop, EVRUN_ONCE);
            size_t busy = worker_pool_busy(f->pool), size = worker_pool_size(f->pool);
            max_busy = busy > max_busy ? busy : max_busy;
            max_size = size > max_size ? size : max_size;
        }
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(o[i].calls, 1);
        assert_ok(&o[i]);
        outcome_clear(&o[i]);
    }
    assert_int_equal(max_busy, 2);
    assert_true(max_size <= 2);
}

static bool a_gone(void *pid);

/* With every slot taken by an idle worker of another job, that worker makes room. */
static void test_full_pool_evicts_idle_other_job(void **state)
{
    fixture *f = *state;
    worker_pool_free(f->pool);
    f->pool = make_pool(f, 1, 30);
    pid_t a = task_pid(f, "job-a", NULL, 0);
    pid_t b = task_pid(f, "job-b", NULL, 0);
    assert_true(a != b);
    wait_until(f, a_gone, &a);
    assert_int_equal(worker_pool_size(f->pool), 1);
}

static bool a_gone(void *pid)
{
    return gone(*(pid_t *)pid);
}

static void test_idle_timeout(void **state)
{
    fixture *f = *state;
    worker_pool_free(f->pool);
    f->pool = make_pool(f, 4, 0.3);
    pid_t pid = task_pid(f, "job-a", NULL, 0);
    assert_int_equal(worker_pool_size(f->pool), 1);
    uint64_t t0 = esc_now_ms();
    wait_until(f, pool_empty, f->pool);
    assert_true(esc_now_ms() - t0 >= 250);
    wait_until(f, a_gone, &pid);
}

static void test_job_ended(void **state)
{
    fixture *f = *state;
    pid_t other = task_pid(f, "job-b", NULL, 0);
    spec_buf b;
    outcome o = {0};
    /* One job-a worker runs a long task, a second one sits idle. */
    worker_pool_run(f->pool, fn1(f, &b, "job-a", "sleep_ms", "30000"), NULL, 0, 0, on_done, &o);
    for (int i = 0; i < 20; i++)
        ev_run(f->loop, EVRUN_ONCE);
    pid_t idle = task_pid(f, "job-a", NULL, 0);
    assert_int_equal(worker_pool_size(f->pool), 3);
    worker_pool_job_ended(f->pool, "job-a");
    assert_int_equal(o.calls, 1);
    assert_error_has(&o, "job ended");
    outcome_clear(&o);
    wait_until(f, a_gone, &idle);
    while (worker_pool_size(f->pool) > 1)
        ev_run(f->loop, EVRUN_ONCE);
    assert_int_equal(task_pid(f, "job-b", NULL, 0), other); /* untouched */
}

/* What the actor-loss callback heard. */
typedef struct {
    int losses;
    char actor[64], why[128];
    int done_calls_then; /* the running task's done calls when the loss was reported */
    const outcome *running;
} loss_log;

static void on_lost(void *ud, const char *actor_id, const char *why)
{
    loss_log *l = ud;
    l->losses++;
    snprintf(l->actor, sizeof l->actor, "%s", actor_id);
    snprintf(l->why, sizeof l->why, "%s", why);
    l->done_calls_then = l->running ? l->running->calls : -1;
}

static bool pool_busy(void *p)
{
    return worker_pool_busy(p) > 0;
}

static bool lost_once_more(void *ud)
{
    loss_log *l = ud;
    return l->losses > 0;
}

/* The pid an actor task ran in. */
static pid_t actor_pid(fixture *f, const char *actor)
{
    spec_buf b;
    outcome o;
    Escher__TaskSpec *spec = fn1(f, &b, "job-a", "pid", NULL);
    spec->actor_id = (char *)actor;
    run_sync(f, spec, NULL, 0, &o);
    assert_ok(&o);
    char text[32] = {0};
    memcpy(text, o.res->returns[0].data, o.res->returns[0].len < 31 ? o.res->returns[0].len : 31);
    outcome_clear(&o);
    return (pid_t)atoi(text);
}

/* An actor's worker killed while idle, or while its task runs, is reported once (before
 * that task ends); one ended through worker_pool_actor_ended is not. */
static void test_actor_worker_loss_reported(void **state)
{
    fixture *f = *state;
    loss_log l = {0};
    worker_pool_on_actor_lost(f->pool, on_lost, &l);

    pid_t idle = actor_pid(f, "act-1");
    assert_int_equal(kill(idle, SIGKILL), 0);
    wait_until(f, lost_once_more, &l);
    assert_int_equal(l.losses, 1);
    assert_string_equal(l.actor, "act-1");
    assert_non_null(strstr(l.why, "worker died: signal 9 (SIGKILL)"));

    pid_t busy = actor_pid(f, "act-1");
    assert_int_not_equal(busy, idle);
    spec_buf b;
    outcome o = {0};
    Escher__TaskSpec *spec = fn1(f, &b, "job-a", "sleep_ms", "30000");
    spec->actor_id = "act-1";
    assert_int_equal(worker_pool_run(f->pool, spec, NULL, 0, 0, on_done, &o), 0);
    wait_until(f, pool_busy, f->pool); /* the sleep runs */
    l.losses = 0;
    l.running = &o;
    assert_int_equal(kill(busy, SIGKILL), 0);
    wait_done(f, &o);
    assert_int_equal(l.losses, 1);
    assert_int_equal(l.done_calls_then, 0); /* reported before the task ended */
    assert_error_has(&o, "SIGKILL");
    outcome_clear(&o);

    l.losses = 0;
    l.running = NULL;
    pid_t ended = actor_pid(f, "act-1");
    worker_pool_actor_ended(f->pool, "act-1");
    wait_until(f, a_gone, &ended);
    wait_until(f, pool_empty, f->pool);
    assert_int_equal(l.losses, 0);
}

/* An actor created with max_concurrency 3: its tasks share one worker and run at once
 * (a short one ends while two long ones run, each Done matched by its tag); ending the
 * actor fails every running one with "actor killed". */
static void test_actor_concurrent_worker(void **state)
{
    fixture *f = *state;
    spec_buf b[3];
    outcome o[3];
    memset(o, 0, sizeof o);
    const char *symbols[3] = {"sleep_ms", "sleep_ms", "pid"};
    const char *args[3] = {"30000", "30000", NULL};
    for (int i = 0; i < 3; i++) {
        Escher__TaskSpec *spec = fn1(f, &b[i], "job-a", symbols[i], args[i]);
        spec->actor_id = "act-c";
        spec->max_concurrency = 3;
        assert_int_equal(worker_pool_run(f->pool, spec, NULL, 0, 0, on_done, &o[i]), 0);
    }
    wait_done(f, &o[2]);
    assert_ok(&o[2]);
    assert_int_equal(o[0].calls + o[1].calls, 0); /* the sleeps still run beside it */
    assert_int_equal(worker_pool_size(f->pool), 1);
    assert_int_equal(worker_pool_busy(f->pool), 1);
    worker_pool_actor_ended(f->pool, "act-c");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(o[i].calls, 1); /* before actor_ended returned */
        assert_error_has(&o[i], "actor killed");
    }
    for (int i = 0; i < 3; i++)
        outcome_clear(&o[i]);
    wait_until(f, pool_empty, f->pool);
    /* Idle, a concurrent actor's worker is asked to exit, and does (its threads end). */
    Escher__TaskSpec *spec = fn1(f, &b[0], "job-a", "pid", NULL);
    spec->actor_id = "act-d";
    spec->max_concurrency = 2;
    run_sync(f, spec, NULL, 0, &o[0]);
    assert_ok(&o[0]);
    char text[32] = {0};
    size_t n = o[0].res->returns[0].len;
    memcpy(text, o[0].res->returns[0].data, n < sizeof text - 1 ? n : sizeof text - 1);
    pid_t pid = (pid_t)atoi(text);
    outcome_clear(&o[0]);
    worker_pool_actor_ended(f->pool, "act-d");
    wait_until(f, a_gone, &pid);
    wait_until(f, pool_empty, f->pool);
}

/* max_workers bounds plain tasks' workers only: with one slot, three actors each get a
 * worker of their own (an actor keeps its worker while it lives, so counting them would
 * leave the next actor waiting forever), and a plain task still runs beside them. */
static void test_actors_outside_max_workers(void **state)
{
    fixture *f = *state;
    worker_pool_free(f->pool);
    f->pool = make_pool(f, 1, 30);
    const char *actors[3] = {"act-x", "act-y", "act-z"};
    pid_t pids[3];
    for (int i = 0; i < 3; i++)
        pids[i] = actor_pid(f, actors[i]);
    assert_int_not_equal(pids[0], pids[1]);
    assert_int_not_equal(pids[1], pids[2]);
    assert_int_equal(worker_pool_size(f->pool), 3);
    spec_buf b;
    outcome o = {0};
    run_sync(f, fn1(f, &b, "job-a", "pid", NULL), NULL, 0, &o);
    assert_ok(&o);
    outcome_clear(&o);
    assert_int_equal(worker_pool_size(f->pool), 4);
    for (int i = 0; i < 3; i++)
        worker_pool_actor_ended(f->pool, actors[i]);
}

static void test_free_leaves_no_child(void **state)
{
    fixture *f = *state;
    pid_t pids[3] = {task_pid(f, "job-a", NULL, 0), task_pid(f, "job-b", NULL, 0),
                     task_pid(f, "job-c", NULL, 0)};
    spec_buf b1, b2;
    outcome running = {0}, starting = {0};
    char *argv[] = {"/bin/sh", "-c", "sleep 30"};
    worker_pool_run(f->pool, cmd_spec(f, &b1, "job-d", argv, 3, NULL, 0, NULL), NULL, 0, 0,
                    on_done, &running);
    for (int i = 0; i < 30; i++)
        ev_run(f->loop, EVRUN_ONCE);
    worker_pool_run(f->pool, fn1(f, &b2, "job-e", "echo", "x"), NULL, 0, 0, on_done, &starting);
    worker_pool_free(f->pool);
    f->pool = NULL;
    assert_int_equal(running.calls, 1);
    assert_error_has(&running, "raylet shutting down");
    assert_int_equal(starting.calls, 1);
    outcome_clear(&running);
    outcome_clear(&starting);
    for (int i = 0; i < 3; i++)
        assert_true(gone(pids[i]));
    int status;
    assert_int_equal(waitpid(-1, &status, WNOHANG), -1); /* no child left at all */
    assert_int_equal(errno, ECHILD);
    struct stat st;
    assert_int_equal(stat(f->sock, &st), -1); /* socket file removed */
    f->pool = make_pool(f, 8, 30);            /* for teardown */
}

static void test_bad_config(void **state)
{
    fixture *f = *state;
    worker_pool_config cfg = {.worker_exe = "/nonexistent/escher-worker",
                              .socket_path = "/tmp/escher-unused.sock",
                              .log_dir = f->logs};
    char err[256] = "";
    assert_null(worker_pool_new(f->loop, &cfg, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/escher-worker"));
    cfg.worker_exe = f->exe;
    cfg.socket_path = f->logs; /* a directory, not a socket */
    assert_null(worker_pool_new(f->loop, &cfg, err, sizeof err));
    assert_non_null(strstr(err, "not a socket"));
}

/* libev's default loop reaps children itself: the pool uses ev_child there. */
static void test_default_loop(void **state)
{
    (void)state;
    fixture f;
    struct ev_loop *loop = ev_default_loop(0);
    fixture_init(&f, loop);
    f.pool = make_pool(&f, 2, 30);
    spec_buf b;
    outcome o;
    run_sync(&f, fn1(&f, &b, "job-a", "echo", "default"), NULL, 0, &o);
    assert_ok(&o);
    assert_ret(&o, 0, "default");
    outcome_clear(&o);
    run_sync(&f, fn1(&f, &b, "job-a", "crash", NULL), NULL, 0, &o);
    assert_error_has(&o, "SIGSEGV");
    outcome_clear(&o);
    fixture_done(&f);
    ev_loop_destroy(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_echo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_echo_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_two_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_returns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reuse_per_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_per_worker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_names_signal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_returns_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_symbol_and_library, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_task_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_function_output_captured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_ok_and_exit_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_output_env_cwd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_actor_worker_loss_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_actor_concurrent_worker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_beyond_max_workers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_actors_outside_max_workers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_pool_evicts_idle_other_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_ended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_leaves_no_child, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_config, setup, teardown),
        cmocka_unit_test(test_default_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
