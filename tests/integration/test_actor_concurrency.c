/* test_actor_concurrency.c: actors created with max_concurrency N > 1 run up to N calls at
 * once on threads of their one worker process: a call returns while another one blocks,
 * a resize is answered and seen by a new call while a long one runs, the cap holds,
 * serial actors keep strict order, a kill or a worker death ends every running call
 * (the waiting ones go to the restarted worker), and N over the cap is refused.
 *
 * The blocking method is the test library's "gate": it writes its pid to a STARTED file,
 * then waits until a RELEASE file exists, which the test creates only once it has seen
 * what it must see while the gate still runs. No fixed sleeps: every wait is on a
 * condition with a deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "task.pb-c.h"

#define WAIT_MS 30000

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    const char *extras[] = {"--num-cpus 4"};
    return h_start_cluster(&C, 1, extras);
}

static int teardown(void **state)
{
    (void)state;
    h_stop(&C);
    return 0;
}

static esc_actor *make_actor(esc_client *cl, unsigned concurrency, unsigned max_restarts)
{
    esc_amount half[] = {{.name = "CPU", .value = ESC_QTY(0.5)}};
    esc_actor_spec spec = {.name = "conc", .library = h_tasks_lib(),
                           .init_symbol = "counter_init", .resources = half, .nresources = 1,
                           .max_restarts = max_restarts, .max_concurrency = concurrency};
    esc_actor *a = NULL;
    esc_status st;
    int rc = esc_actor_create(cl, &spec, &a, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return a;
}

/* Calls method with up to two string arguments; returns the reference. */
static esc_ref *start_call(esc_client *cl, esc_actor *a, const char *method, const char *arg0,
                           const char *arg1)
{
    esc_task_arg args[2] = {{.data = arg0, .len = arg0 ? strlen(arg0) : 0},
                            {.data = arg1, .len = arg1 ? strlen(arg1) : 0}};
    esc_ref *r = NULL;
    esc_status st;
    int rc = esc_actor_call(cl, a, method, args, arg1 ? 2 : (arg0 ? 1 : 0), 1, &r, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "%s: %s %s\n", method, esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return r;
}

/* The call's value (caller frees); fails the test unless it succeeds in WAIT_MS. */
static char *value_of(esc_client *cl, esc_ref *r)
{
    void *v = NULL;
    size_t len;
    esc_status st;
    int rc = esc_get(cl, r, WAIT_MS, &v, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "get: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    esc_ref_free(r);
    return v;
}

/* The call ends as an error object (in WAIT_MS: no hang) whose text has `want`. */
static void assert_fails_with(esc_client *cl, esc_ref *r, const char *want)
{
    void *v = NULL;
    size_t len;
    esc_status st;
    assert_int_equal(esc_get(cl, r, WAIT_MS, &v, &len, &st), ESC_ABORTED);
    if (!strstr(st.message, want))
        fprintf(stderr, "error \"%s\" does not say \"%s\"\n", st.message, want);
    assert_non_null(strstr(st.message, want));
    esc_ref_free(r);
}

/* The call has not ended (its value is not there). */
static void assert_running(esc_client *cl, const esc_ref *r)
{
    void *v = NULL;
    size_t len;
    assert_int_equal(esc_get(cl, r, 0, &v, &len, NULL), ESC_DEADLINE_EXCEEDED);
}

/* One gate call: its two files and its reference. */
typedef struct {
    char started[64], release[64];
    esc_ref *ref;
} gate;

static void gate_start(esc_client *cl, esc_actor *a, gate *g)
{
    h_marker_path(g->started, sizeof g->started);
    h_marker_path(g->release, sizeof g->release);
    g->ref = start_call(cl, a, "gate", g->started, g->release);
}

static bool pid_written(void *path)
{
    FILE *f = fopen(path, "r");
    int pid = 0;
    bool ok = f && fscanf(f, "%d", &pid) == 1 && pid > 0;
    if (f)
        fclose(f);
    return ok;
}

/* Waits until the gate runs; returns the pid of the worker that runs it. */
static int gate_wait_started(const gate *g)
{
    assert_true(h_wait_until(pid_written, (void *)g->started, WAIT_MS));
    FILE *f = fopen(g->started, "r");
    int pid = 0;
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    unlink(g->started);
    return pid;
}

static void gate_release(const gate *g)
{
    FILE *f = fopen(g->release, "w");
    assert_non_null(f);
    fclose(f);
}

/* Releases the gate and checks it ended well on worker pid. */
static void gate_finish(esc_client *cl, gate *g, int pid)
{
    gate_release(g);
    char *v = value_of(cl, g->ref);
    assert_int_equal(atoi(v), pid);
    free(v);
    unlink(g->release);
}

static long long wall_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void kill_actor(esc_client *cl, esc_actor *a)
{
    esc_status st;
    assert_int_equal(esc_actor_kill(cl, a, &st), ESC_OK);
    esc_actor_free(a);
}

/* Four calls block at once in one process; a fifth waits for a free thread; a call
 * returns while three of them still block. */
static void test_calls_overlap(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "cc_overlap", 0, false);
    esc_actor *a = make_actor(cl, 4, 0);
    gate g[4];
    int pid[4];
    for (int i = 0; i < 4; i++)
        gate_start(cl, a, &g[i]);
    for (int i = 0; i < 4; i++) {
        pid[i] = gate_wait_started(&g[i]);
        assert_int_equal(pid[i], pid[0]); /* one process: the state is shared */
    }
    /* All four threads are taken: the next call waits (a bounded look, not a sleep: it
     * must not end while no thread is free). */
    esc_ref *fifth = start_call(cl, a, "pid", NULL, NULL);
    void *v = NULL;
    size_t len;
    assert_int_equal(esc_get(cl, fifth, 300, &v, &len, NULL), ESC_DEADLINE_EXCEEDED);
    gate_finish(cl, &g[0], pid[0]);
    char *p = value_of(cl, fifth);
    assert_int_equal(atoi(p), pid[0]);
    free(p);
    /* A call returns while the other three provably still block on their files. */
    char *held = value_of(cl, start_call(cl, a, "held", "CPU", NULL));
    assert_string_equal(held, "0.5"); /* held once, not per call */
    free(held);
    for (int i = 1; i < 4; i++)
        assert_running(cl, g[i].ref);
    for (int i = 1; i < 4; i++)
        gate_finish(cl, &g[i], pid[i]);
    kill_actor(cl, a);
    esc_disconnect(cl);
}

/* The point of the feature: while a long method runs, a resize is answered and a new
 * call sees the new holding. */
static void test_resize_while_running(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "cc_resize", 0, false);
    esc_actor *a = make_actor(cl, 2, 0);
    gate g;
    gate_start(cl, a, &g);
    int pid = gate_wait_started(&g);
    esc_amount one[] = {{.name = "CPU", .value = ESC_QTY(1)}};
    esc_status st;
    assert_int_equal(esc_actor_resize(cl, a, one, 1, 5000, NULL, NULL, &st), ESC_OK);
    char *held = value_of(cl, start_call(cl, a, "held", "CPU", NULL));
    assert_string_equal(held, "1");
    free(held);
    assert_running(cl, g.ref);
    gate_finish(cl, &g, pid);
    kill_actor(cl, a);
    esc_disconnect(cl);
}

/* max_concurrency 0 and 1 are today's actor: one call at a time, in the order made. */
static void test_serial_order(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "cc_serial", 0, false);
    for (unsigned conc = 0; conc <= 1; conc++) {
        esc_actor *a = make_actor(cl, conc, 0);
        gate g;
        gate_start(cl, a, &g);
        esc_ref *next = start_call(cl, a, "stamp", "0", NULL);
        int pid = gate_wait_started(&g);
        long long released_us = wall_us();
        gate_finish(cl, &g, pid);
        char *v = value_of(cl, next);
        long long start_us = atoll(v);
        free(v);
        assert_true(start_us >= released_us); /* it began only after the gate ended */
        esc_ref *adds[10];
        for (int i = 0; i < 10; i++)
            adds[i] = start_call(cl, a, "counter_add", "1", NULL);
        for (int i = 0; i < 10; i++) {
            v = value_of(cl, adds[i]);
            assert_int_equal(atoi(v), i + 1);
            free(v);
        }
        kill_actor(cl, a);
    }
    esc_disconnect(cl);
}

/* A kill under three running calls and one waiting: all end as errors, none hangs. */
static void test_kill_running(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "cc_kill", 0, false);
    esc_actor *a = make_actor(cl, 3, 0);
    gate g[3];
    for (int i = 0; i < 3; i++)
        gate_start(cl, a, &g[i]);
    for (int i = 0; i < 3; i++)
        gate_wait_started(&g[i]);
    esc_ref *waiting = start_call(cl, a, "pid", NULL, NULL);
    kill_actor(cl, a);
    for (int i = 0; i < 3; i++)
        assert_fails_with(cl, g[i].ref, "actor killed");
    assert_fails_with(cl, waiting, "died: killed");
    esc_disconnect(cl);
}

/* A worker death under two running calls: both get the death's error; the call waiting
 * behind them runs on the restarted worker, after its init. */
static void test_worker_death(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "cc_death", 0, false);
    esc_actor *a = make_actor(cl, 2, 1);
    gate g[2];
    for (int i = 0; i < 2; i++)
        gate_start(cl, a, &g[i]);
    int pid = gate_wait_started(&g[0]);
    assert_int_equal(gate_wait_started(&g[1]), pid);
    esc_ref *waiting = start_call(cl, a, "counter_add", "5", NULL);
    assert_int_equal(kill(pid, SIGKILL), 0);
    for (int i = 0; i < 2; i++) {
        assert_fails_with(cl, g[i].ref, "worker died: signal 9");
        unlink(g[i].release);
    }
    char *v = value_of(cl, waiting);
    assert_string_equal(v, "5"); /* the init reset the counter first */
    free(v);
    v = value_of(cl, start_call(cl, a, "pid", NULL, NULL));
    assert_int_not_equal(atoi(v), pid);
    free(v);
    esc_actor_info info;
    assert_int_equal(esc_actor_get_info(cl, a, &info, NULL), ESC_OK);
    assert_int_equal(info.restarts, 1);
    kill_actor(cl, a);
    esc_disconnect(cl);
}

/* A raylet refuses a creation spec over the cap too (a client other than libescher). */
static void assert_raylet_refuses_over_cap(void)
{
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    Escher__FunctionRef fn = ESCHER__FUNCTION_REF__INIT;
    fn.library = (char *)h_tasks_lib();
    fn.symbol = "counter_init";
    Escher__TaskSpec spec = ESCHER__TASK_SPEC__INIT;
    spec.task_id = "cc-cap-task";
    spec.job_id = "cc-cap-job";
    spec.function = &fn;
    spec.actor_id = "cc-cap-actor";
    spec.actor_creation = true;
    spec.max_concurrency = ESC_ACTOR_MAX_CONCURRENCY + 1;
    Escher__SubmitTaskReply *rep = NULL;
    esc_status st;
    assert_int_equal(esc_rpc_call(ch, &ESC_M_TASK_SERVICE_SUBMIT_TASK, &spec.base,
                                  (ProtobufCMessage **)&rep, 5000, 0, &st),
                     ESC_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "max_concurrency"));
    esc_rpc_channel_free(ch);
}

/* A second creation of an actor id the raylet hosts is refused: it would replace the
 * first in the raylet's actor table and orphan it (a client other than libescher, which
 * makes a new id for every actor). */
static void assert_raylet_refuses_second_creation(esc_client *cl, const esc_actor *a)
{
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    Escher__FunctionRef fn = ESCHER__FUNCTION_REF__INIT;
    fn.library = (char *)h_tasks_lib();
    fn.symbol = "counter_init";
    Escher__TaskSpec spec = ESCHER__TASK_SPEC__INIT;
    spec.task_id = "cc-again-task";
    spec.job_id = (char *)esc_client_job_id(cl);
    spec.job_credential = (char *)esc_client_job_credential(cl);
    spec.function = &fn;
    spec.actor_id = (char *)esc_actor_id(a);
    spec.actor_creation = true;
    spec.max_concurrency = 1;
    Escher__SubmitTaskReply *rep = NULL;
    esc_status st;
    int rc = esc_rpc_call(ch, &ESC_M_TASK_SERVICE_SUBMIT_TASK, &spec.base,
                          (ProtobufCMessage **)&rep, 5000, 0, &st);
    if (rc != ESC_ALREADY_EXISTS)
        fprintf(stderr, "second creation: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_ALREADY_EXISTS);
    assert_non_null(strstr(st.message, "already exists"));
    esc_rpc_channel_free(ch);
}

/* Over the cap is refused before anything is created; the cap itself is fine. */
static void test_cap(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "cc_cap", 0, false);
    esc_actor_spec spec = {.name = "big", .library = h_tasks_lib(),
                           .max_concurrency = ESC_ACTOR_MAX_CONCURRENCY + 1};
    esc_actor *a = NULL;
    esc_status st;
    assert_int_equal(esc_actor_create(cl, &spec, &a, &st), ESC_INVALID_ARGUMENT);
    assert_null(a);
    assert_non_null(strstr(st.message, "max_concurrency"));
    assert_null(strchr(st.message, '\n'));
    assert_raylet_refuses_over_cap();
    a = make_actor(cl, ESC_ACTOR_MAX_CONCURRENCY, 0);
    char *v = value_of(cl, start_call(cl, a, "counter_add", "2", NULL));
    assert_string_equal(v, "2");
    free(v);
    assert_raylet_refuses_second_creation(cl, a);
    v = value_of(cl, start_call(cl, a, "counter_add", "3", NULL)); /* the first still serves */
    assert_string_equal(v, "5");
    free(v);
    kill_actor(cl, a);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_overlap),   cmocka_unit_test(test_resize_while_running),
        cmocka_unit_test(test_serial_order),    cmocka_unit_test(test_kill_running),
        cmocka_unit_test(test_worker_death),    cmocka_unit_test(test_cap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
