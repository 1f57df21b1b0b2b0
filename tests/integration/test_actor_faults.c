/* test_actor_faults.c: an actor's worker killed with -9, while idle or while a call runs,
 * is handled the same way: while max_restarts allows, the restart is counted (in the
 * actor's published state and the raylet's log) and a new worker runs the init again
 * before any further call; with no restart left the actor is dead, its later and waiting
 * calls fail saying so, and no worker replaces it.
 *
 * The "probe" actor of the test task library counts its init runs in a file (which
 * outlives its workers) and returns "<pid> <init runs> <state>", the state being what its
 * init set (1000) plus what calls added. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define INIT_STATE 1000
#define WAIT_MS 20000

static h_cluster C;
static const char *LIB;

static int setup(void **state)
{
    *state = &C;
    LIB = h_tasks_lib();
    h_init(&C, 3000);
    return h_start_cluster(&C, 1, NULL);
}

/* ------------------------------------------------------------ helpers */

/* Creates a probe actor whose init counts its runs in DIR/<name>.inits. */
static esc_actor *probe_create(esc_client *cl, const char *name, unsigned max_restarts,
                               char *inits_path, size_t pathlen)
{
    snprintf(inits_path, pathlen, "%s/%s.inits", C.dir, name);
    esc_task_arg arg = {.data = inits_path, .len = strlen(inits_path)};
    esc_actor_spec spec = {.name = name, .library = LIB, .init_symbol = "probe_init",
                           .max_restarts = max_restarts, .init_args = &arg,
                           .ninit_args = 1};
    esc_actor *a = NULL;
    esc_status st;
    int rc = esc_actor_create(cl, &spec, &a, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor create: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return a;
}

/* Submits a call with one string argument; returns its reference. */
static esc_ref *call(esc_client *cl, esc_actor *a, const char *method, const char *arg)
{
    esc_task_arg ta = {.data = arg, .len = strlen(arg)};
    esc_ref *r = NULL;
    esc_status st;
    int rc = esc_actor_call(cl, a, method, &ta, 1, 1, &r, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor call %s: %s %s\n", method, esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return r;
}

/* The call's value as a string, or NULL with *code and st set; frees the reference. */
static char *result(esc_client *cl, esc_ref *r, int *code, esc_status *st)
{
    void *v = NULL;
    size_t len;
    *code = esc_get(cl, r, 30000, &v, &len, st);
    esc_ref_free(r);
    return *code == ESC_OK ? v : NULL;
}

typedef struct {
    int pid;
    long long inits, state;
} probe_view;

static probe_view probe_get(esc_client *cl, esc_actor *a)
{
    int code;
    esc_status st;
    char *v = result(cl, call(cl, a, "probe_get", ""), &code, &st);
    if (!v)
        fprintf(stderr, "probe_get: %s %s\n", esc_status_name(code), st.message);
    assert_non_null(v);
    probe_view p = {0};
    assert_int_equal(sscanf(v, "%d %lld %lld", &p.pid, &p.inits, &p.state), 3);
    free(v);
    return p;
}

/* A call of a dead actor fails, saying the actor died. */
static void assert_call_fails_dead(esc_client *cl, esc_actor *a)
{
    int code;
    esc_status st;
    char *v = result(cl, call(cl, a, "probe_get", ""), &code, &st);
    assert_null(v);
    assert_int_equal(code, ESC_ABORTED);
    assert_non_null(strstr(st.message, "died"));
    assert_non_null(strstr(st.message, esc_actor_id(a)));
}

typedef struct {
    esc_client *cl;
    esc_actor *a;
    esc_actor_state state;
    unsigned restarts;
    esc_actor_info last;
} info_probe;

static bool info_is(void *arg)
{
    info_probe *p = arg;
    if (esc_actor_get_info(p->cl, p->a, &p->last, NULL) != ESC_OK)
        return false;
    return p->last.state == p->state && p->last.restarts == p->restarts;
}

/* Waits until the actor's published state is `state` after `restarts` restarts. */
static esc_actor_info wait_info(esc_client *cl, esc_actor *a, esc_actor_state state,
                                unsigned restarts)
{
    info_probe p = {.cl = cl, .a = a, .state = state, .restarts = restarts};
    bool ok = h_wait_until(info_is, &p, WAIT_MS);
    if (!ok)
        fprintf(stderr, "actor state: wanted %s after %u restarts, is %s after %u (%s)\n",
                esc_actor_state_name(state), restarts, esc_actor_state_name(p.last.state),
                p.last.restarts, p.last.why);
    assert_true(ok);
    return p.last;
}

/* Live (not zombie) escher-worker processes of the raylet. */
static int count_workers(void)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], comm[64], st;
        int pid, ppid;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fscanf(f, "%d (%63[^)]) %c %d", &pid, comm, &st, &ppid) == 4 &&
            ppid == C.raylets[0].pid && st != 'Z' && !strcmp(comm, "escher-worker"))
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

static long long lines_in(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long long n = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

/* Whether the raylet's log has a line holding both needles. */
static bool log_has(const char *a, const char *b)
{
    char path[400], line[2048];
    snprintf(path, sizeof path, "%s/raylet.0.log", C.dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, a) && strstr(line, b);
    fclose(f);
    return found;
}

typedef struct {
    const char *path;
    int pid;
} pid_file;

static bool pid_file_written(void *arg)
{
    pid_file *p = arg;
    FILE *f = fopen(p->path, "r");
    if (!f)
        return false;
    bool ok = fscanf(f, "%d", &p->pid) == 1;
    fclose(f);
    return ok;
}

/* Starts probe_block on the actor, waits until it runs, and returns its reference; the
 * call runs in the worker of pid `expect`. */
static esc_ref *block(esc_client *cl, esc_actor *a, const char *name, int expect)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s.block.%d", C.dir, name, expect);
    esc_ref *r = call(cl, a, "probe_block", path);
    pid_file p = {.path = path};
    assert_true(h_wait_until(pid_file_written, &p, WAIT_MS));
    assert_int_equal(p.pid, expect);
    return r;
}

/* ------------------------------------------------------------ tests */

/* max_restarts 0, worker killed while idle: the actor is dead at once (published,
 * logged), the next call fails saying it died, and no worker replaces it. */
static void test_idle_death_without_restarts(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "af0", 0, false);
    char inits[400];
    esc_actor *a = probe_create(cl, "zero", 0, inits, sizeof inits);
    probe_view v = probe_get(cl, a);
    assert_int_equal(v.inits, 1);
    assert_int_equal(v.state, INIT_STATE);
    wait_info(cl, a, ESC_ACTOR_ALIVE, 0);
    assert_int_equal(count_workers(), 1);

    assert_int_equal(kill(v.pid, SIGKILL), 0);
    esc_actor_info info = wait_info(cl, a, ESC_ACTOR_DEAD, 0);
    assert_int_equal(info.max_restarts, 0);
    assert_non_null(strstr(info.why, "SIGKILL"));
    assert_non_null(strstr(info.why, "no restart left"));
    assert_true(log_has(esc_actor_id(a), "no restart left (0 of max_restarts 0 used)"));

    assert_call_fails_dead(cl, a);
    /* A replacement would have been forked while the call was handled: none is. */
    assert_int_equal(count_workers(), 0);
    assert_int_equal(lines_in(inits), 1);
    assert_int_equal(esc_actor_kill(cl, a, NULL), ESC_NOT_FOUND);
    esc_actor_free(a);
    esc_disconnect(cl);
}

/* The actor's line in `escher status` (the CLI the operator reads): "" when absent. */
static void status_line(const char *actor_id, char *out, size_t len)
{
    char cmd[1024];
    const char *bin = getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build";
    snprintf(cmd, sizeof cmd, "%s/client/escher --address %s --token %s status", bin,
             C.gcs_addr, C.token);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    out[0] = 0;
    char line[1024];
    while (fgets(line, sizeof line, p))
        if (strstr(line, actor_id))
            snprintf(out, len, "%s", line);
    assert_int_equal(pclose(p), 0);
}

/* max_restarts 1, worker killed while idle: the restart is counted and logged, and the
 * new worker ran the init (the state is the init's, not the old one nor a blank); killed
 * again, the actor is dead. */
static void test_idle_death_restarts_with_init(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "af1", 0, false);
    char inits[400];
    esc_actor *a = probe_create(cl, "one", 1, inits, sizeof inits);
    int code;
    esc_status st;
    char *s = result(cl, call(cl, a, "probe_add", "5"), &code, &st);
    assert_non_null(s);
    assert_int_equal(atoll(s), INIT_STATE + 5);
    free(s);
    probe_view before = probe_get(cl, a);
    assert_int_equal(before.inits, 1);
    wait_info(cl, a, ESC_ACTOR_ALIVE, 0);

    assert_int_equal(kill(before.pid, SIGKILL), 0);
    esc_actor_info info = wait_info(cl, a, ESC_ACTOR_ALIVE, 1);
    assert_int_equal(info.max_restarts, 1);
    assert_non_null(strstr(info.why, "SIGKILL"));
    assert_true(log_has(esc_actor_id(a), "restart 1 of max_restarts 1"));
    probe_view after = probe_get(cl, a);
    assert_int_not_equal(after.pid, before.pid);
    assert_int_equal(after.inits, 2);
    assert_int_equal(after.state, INIT_STATE);
    assert_int_equal(count_workers(), 1);
    char line[1024];
    status_line(esc_actor_id(a), line, sizeof line);
    assert_non_null(strstr(line, "ALIVE"));
    assert_non_null(strstr(line, "1/1"));     /* restarts / max_restarts */

    assert_int_equal(kill(after.pid, SIGKILL), 0);
    info = wait_info(cl, a, ESC_ACTOR_DEAD, 1);
    assert_non_null(strstr(info.why, "no restart left (1 of max_restarts 1 used)"));
    assert_call_fails_dead(cl, a);
    assert_int_equal(count_workers(), 0);
    assert_int_equal(lines_in(inits), 2);
    esc_actor_free(a);
    esc_disconnect(cl);
}

/* max_restarts 2: a death under a running call and a death while idle each use one
 * restart and each run the init before the next call (also a call that waited behind
 * the one that was running); the third death (busy) is final, and fails the running
 * call and the one waiting behind it. */
static void test_busy_and_idle_deaths_count_the_same(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "af2", 0, false);
    char inits[400];
    esc_actor *a = probe_create(cl, "two", 2, inits, sizeof inits);
    probe_view v1 = probe_get(cl, a);

    /* Busy death: the running call fails with the signal; the waiting one runs after
     * the init, on the new worker. */
    esc_ref *running = block(cl, a, "two", v1.pid);
    esc_ref *waiting = call(cl, a, "probe_get", "");
    assert_int_equal(kill(v1.pid, SIGKILL), 0);
    int code;
    esc_status st;
    assert_null(result(cl, running, &code, &st));
    assert_int_equal(code, ESC_ABORTED);
    assert_non_null(strstr(st.message, "worker died"));
    assert_non_null(strstr(st.message, "SIGKILL"));
    char *s = result(cl, waiting, &code, &st);
    assert_non_null(s);
    probe_view v2 = {0};
    assert_int_equal(sscanf(s, "%d %lld %lld", &v2.pid, &v2.inits, &v2.state), 3);
    free(s);
    assert_int_not_equal(v2.pid, v1.pid);
    assert_int_equal(v2.inits, 2);
    assert_int_equal(v2.state, INIT_STATE);
    wait_info(cl, a, ESC_ACTOR_ALIVE, 1);

    /* Idle death: the same count, the same init. */
    assert_int_equal(kill(v2.pid, SIGKILL), 0);
    wait_info(cl, a, ESC_ACTOR_ALIVE, 2);
    probe_view v3 = probe_get(cl, a);
    assert_int_not_equal(v3.pid, v2.pid);
    assert_int_equal(v3.inits, 3);
    assert_int_equal(v3.state, INIT_STATE);
    assert_true(log_has(esc_actor_id(a), "restart 2 of max_restarts 2"));

    /* Third death, busy: dead; the running call and the waiting one both fail. */
    running = block(cl, a, "two", v3.pid);
    waiting = call(cl, a, "probe_get", "");
    assert_int_equal(kill(v3.pid, SIGKILL), 0);
    assert_null(result(cl, running, &code, &st));
    assert_int_equal(code, ESC_ABORTED);
    assert_non_null(strstr(st.message, "SIGKILL"));
    assert_null(result(cl, waiting, &code, &st));
    assert_int_equal(code, ESC_ABORTED);
    assert_non_null(strstr(st.message, "died"));
    esc_actor_info info = wait_info(cl, a, ESC_ACTOR_DEAD, 2);
    assert_non_null(strstr(info.why, "no restart left (2 of max_restarts 2 used)"));
    assert_call_fails_dead(cl, a);
    assert_int_equal(count_workers(), 0);
    assert_int_equal(lines_in(inits), 3);
    esc_actor_free(a);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_death_without_restarts),
        cmocka_unit_test(test_idle_death_restarts_with_init),
        cmocka_unit_test(test_busy_and_idle_deaths_count_the_same),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
