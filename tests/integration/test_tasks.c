/* test_tasks.c: tasks on a GCS and two raylets: local and remote execution, a task
 * waiting for an ephemeral resource that appears later on another node, a capacity of 3
 * never exceeded by 1000 competing tasks, failures, crashes retried, and cancel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <signal.h>

#include "harness.h"
#include "task.pb-c.h"

static h_cluster C;
static const char *LIB; /* the test task library */

static int setup(void **state)
{
    *state = &C;
    LIB = h_tasks_lib();
    h_init(&C, 3000);
    return h_start_cluster(&C, 2, (const char *const[]){"--num-gpus 2", "--resources only_b=1"});
}

/* Submits fn(arg) with the given resources; returns its one reference. */
static esc_ref *submit(esc_client *cl, const char *fn, const char *arg, const esc_amount *res,
                       size_t nres, unsigned retries)
{
    esc_task_arg a = {.data = arg, .len = arg ? strlen(arg) : 0};
    esc_task_spec spec = {.library = LIB, .symbol = fn, .resources = res, .nresources = nres,
                          .args = arg ? &a : NULL, .nargs = arg ? 1 : 0, .max_retries = retries};
    esc_ref *ref = NULL;
    esc_status st;
    int rc = esc_task_submit(cl, &spec, &ref, NULL, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "submit %s: %s %s\n", fn, esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return ref;
}

/* Submits marked_stamp: it creates the file `marker` when it starts, then sleeps ms. */
static esc_ref *submit_marked(esc_client *cl, const char *ms, const char *marker,
                              const esc_amount *res, size_t nres)
{
    esc_task_arg a[2] = {{.data = ms, .len = strlen(ms)}, {.data = marker, .len = strlen(marker)}};
    esc_task_spec spec = {.library = LIB, .symbol = "marked_stamp", .resources = res,
                          .nresources = nres, .args = a, .nargs = 2};
    esc_ref *ref = NULL;
    esc_status st;
    int rc = esc_task_submit(cl, &spec, &ref, NULL, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "submit marked_stamp: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return ref;
}

/* esc_get as a string (caller frees); NULL with *code on failure. */
static char *get_str(esc_client *cl, esc_ref *ref, int timeout_ms, int *code, esc_status *st)
{
    void *data = NULL;
    size_t len = 0;
    *code = esc_get(cl, ref, timeout_ms, &data, &len, st);
    return *code == ESC_OK ? data : NULL;
}

static void test_local_task(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t1", 0, false);
    esc_ref *r = submit(cl, "echo", "hello", NULL, 0, 0);
    int code;
    esc_status st;
    char *v = get_str(cl, r, 30000, &code, &st);
    assert_non_null(v);
    assert_string_equal(v, "hello");
    free(v);
    esc_ref_free(r);
    /* Where did it run: ESCHER_NODE_ID of the worker. */
    r = submit(cl, "getenv_task", "ESCHER_NODE_ID", NULL, 0, 0);
    v = get_str(cl, r, 30000, &code, &st);
    assert_non_null(v);
    assert_string_equal(v, C.raylets[0].node_id);
    free(v);
    esc_ref_free(r);
    esc_disconnect(cl);
}

/* A task's stdout and stderr are captured, and `escher logs` shows them. */
static void test_task_logs(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t10", 0, false);
    esc_task_arg a = {.data = "hello-logs", .len = 10};
    esc_task_spec spec = {.library = LIB, .symbol = "print", .args = &a, .nargs = 1};
    esc_ref *r = NULL;
    char task_id[ESC_ID_MAX];
    assert_int_equal(esc_task_submit(cl, &spec, &r, task_id, NULL), ESC_OK);
    int code;
    esc_status st;
    char *v = get_str(cl, r, 30000, &code, &st);
    assert_non_null(v);
    free(v);
    char cmd[1024], out[256] = {0};
    /* Read through the raylet that ran it: the CLI needs the cluster's address. */
    snprintf(cmd, sizeof cmd, "%s/client/escher --address %s --token %s logs %s && "
             "%s/client/escher --address %s --token %s logs %s --err",
             getenv("ESCHER_BIN_DIR"), C.gcs_addr, C.token, task_id,
             getenv("ESCHER_BIN_DIR"), C.gcs_addr, C.token, task_id);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    assert_int_equal(pclose(p), 0);
    assert_string_equal(out, "out:hello-logs\nerr:hello-logs\n");
    snprintf(cmd, sizeof cmd, "%s/client/escher --address %s --token %s logs nosuchtask "
             "2>/dev/null", getenv("ESCHER_BIN_DIR"), C.gcs_addr, C.token);
    assert_int_not_equal(system(cmd), 0);
    esc_ref_free(r);
    esc_disconnect(cl);
}

static void test_remote_by_static_resource(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t2", 0, false);
    esc_amount b[] = {{.name = "only_b", .value = ESC_QTY(1)}};
    esc_ref *r = submit(cl, "getenv_task", "ESCHER_NODE_ID", b, 1, 0);
    int code;
    esc_status st;
    char *v = get_str(cl, r, 30000, &code, &st);
    assert_non_null(v);
    assert_string_equal(v, C.raylets[1].node_id); /* spilled from raylet 0 to raylet 1 */
    free(v);
    esc_ref_free(r);
    esc_disconnect(cl);
}

/* Arguments that live on another node are fetched before the task runs: an object put
 * on node 1, and the return of a task still running on node 1. */
static void test_arguments_from_another_node(void **state)
{
    (void)state;
    esc_client *on_b = h_connect(&C, "t7", 1, false);
    esc_client *on_a = h_join(&C, on_b, 0); /* the same job, on node 0 */
    esc_ref *put = NULL;
    assert_int_equal(esc_put(on_b, "from-b", 6, &put, NULL), ESC_OK);
    esc_task_arg a1 = {.ref = put};
    esc_task_spec echo = {.library = LIB, .symbol = "echo", .args = &a1, .nargs = 1};
    esc_ref *r1 = NULL;
    assert_int_equal(esc_task_submit(on_a, &echo, &r1, NULL, NULL), ESC_OK);
    int code;
    esc_status st;
    char *v = get_str(on_a, r1, 30000, &code, &st);
    assert_non_null(v);
    assert_string_equal(v, "from-b");
    free(v);

    /* A producer still running on this node: the consumer starts when its value is stored
     * here (no fetch from anywhere). */
    esc_ref *local_slow = submit(on_a, "stamp", "300", NULL, 0, 0);
    esc_task_arg a0 = {.ref = local_slow};
    esc_task_spec local_consume = {.library = LIB, .symbol = "echo", .args = &a0, .nargs = 1};
    esc_ref *r0 = NULL;
    assert_int_equal(esc_task_submit(on_a, &local_consume, &r0, NULL, NULL), ESC_OK);
    double t0 = h_now_ms();
    v = get_str(on_a, r0, 30000, &code, &st);
    assert_non_null(v);
    assert_non_null(strstr(v, C.raylets[0].node_id));
    assert_true(h_now_ms() - t0 < 3000);
    free(v);
    esc_ref_free(local_slow);
    esc_ref_free(r0);

    /* A producer on node 1 that takes 300 ms, a consumer on node 0 that needs its value. */
    esc_amount b[] = {{.name = "only_b", .value = ESC_QTY(1)}};
    esc_ref *slow = submit(on_a, "stamp", "300", b, 1, 0);
    esc_task_arg a2 = {.ref = slow};
    esc_task_spec consume = {.library = LIB, .symbol = "echo", .args = &a2, .nargs = 1};
    esc_ref *r2 = NULL;
    assert_int_equal(esc_task_submit(on_a, &consume, &r2, NULL, NULL), ESC_OK);
    v = get_str(on_a, r2, 30000, &code, &st);
    assert_non_null(v);
    assert_non_null(strstr(v, C.raylets[1].node_id)); /* stamp's text, made on node 1 */
    free(v);
    esc_ref_free(put);
    esc_ref_free(r1);
    esc_ref_free(slow);
    esc_ref_free(r2);
    esc_disconnect(on_a);
    esc_disconnect(on_b);
}

static void test_waits_for_ephemeral_resource_on_remote_node(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t3", 0, false);
    esc_amount need[] = {{.name = "t3/later", .value = ESC_QTY(1)}};
    esc_ref *r = submit(cl, "getenv_task", "ESCHER_NODE_ID", need, 1, 0);
    int code;
    esc_status st;
    char *v = get_str(cl, r, 300, &code, &st);
    assert_null(v);
    assert_int_equal(code, ESC_DEADLINE_EXCEEDED); /* infeasible: nobody has it yet */
    esc_target b = ESC_NODE(C.raylets[1].node_id);
    uint64_t seq;
    double t0 = h_now_ms();
    assert_int_equal(esc_resource_set(cl, "later", ESC_QTY(1), &b, &seq, NULL), ESC_OK);
    v = get_str(cl, r, 30000, &code, &st);
    assert_non_null(v);
    assert_string_equal(v, C.raylets[1].node_id);
    assert_true(h_now_ms() - t0 < 5000);
    free(v);
    esc_ref_free(r);
    esc_disconnect(cl);
}

static void test_capacity_three_never_exceeded(void **state)
{
    (void)state;
    enum { N = 1000 };
    esc_client *cl = h_connect(&C, "t4", 0, false);
    uint64_t seq;
    assert_int_equal(esc_resource_set(cl, "slot", ESC_QTY(3), NULL, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    esc_amount need[] = {{.name = "t4/slot", .value = ESC_QTY(1)}};
    esc_ref *refs[N];
    for (int i = 0; i < N; i++)
        refs[i] = submit(cl, "stamp", "2", need, 1, 0);
    long long start[N], end[N];
    for (int i = 0; i < N; i++) {
        int code;
        esc_status st;
        char *v = get_str(cl, refs[i], 60000, &code, &st);
        if (!v)
            fprintf(stderr, "task %d: %s %s\n", i, esc_status_name(code), st.message);
        assert_non_null(v);
        assert_int_equal(sscanf(v, "%lld %lld", &start[i], &end[i]), 2);
        free(v);
        esc_ref_free(refs[i]);
    }
    /* At every task start, count the tasks running then. */
    int most = 0;
    for (int i = 0; i < N; i++) {
        int running = 0;
        for (int j = 0; j < N; j++)
            running += start[j] <= start[i] && end[j] > start[i];
        if (running > most)
            most = running;
    }
    assert_true(most >= 1);
    assert_true(most <= 3);
    esc_disconnect(cl);
}

static void test_failures(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t5", 0, false);
    int code;
    esc_status st;
    esc_ref *r = submit(cl, "fail", NULL, NULL, 0, 3);
    assert_null(get_str(cl, r, 30000, &code, &st));
    assert_int_equal(code, ESC_ABORTED);
    assert_non_null(strstr(st.message, "task returned 3")); /* not retried: an app error */
    esc_ref_free(r);

    r = submit(cl, "crash", NULL, NULL, 0, 0);
    assert_null(get_str(cl, r, 30000, &code, &st));
    assert_int_equal(code, ESC_ABORTED);
    assert_non_null(strstr(st.message, "SIGSEGV"));
    esc_ref_free(r);

    char marker[300];
    snprintf(marker, sizeof marker, "%s/crash_once", C.dir);
    r = submit(cl, "crash_once", marker, NULL, 0, 1);
    char *v = get_str(cl, r, 30000, &code, &st);
    assert_non_null(v);
    assert_string_equal(v, "survived"); /* the worker crashed, the retry ran */
    free(v);
    esc_ref_free(r);
    esc_disconnect(cl);
}

/* Two tasks of one GPU each run at once on different instances; a task without GPUs
 * sees none; two halves share one instance; 1.5 GPUs are two instances. (The raylet is
 * told it has 2 GPUs.) */
static void test_gpu_instances(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t8", 0, false);
    esc_amount one[] = {{.name = "GPU", .value = ESC_QTY(1)}};
    esc_amount half[] = {{.name = "GPU", .value = ESC_QTY(0.5)}};
    esc_ref *a = submit(cl, "gpu_probe", "400", one, 1, 0);
    esc_ref *b = submit(cl, "gpu_probe", "400", one, 1, 0);
    esc_ref *none = submit(cl, "gpu_probe", "0", NULL, 0, 0);
    int code;
    esc_status st;
    char *va = get_str(cl, a, 30000, &code, &st), *vb = get_str(cl, b, 30000, &code, &st);
    char *vn = get_str(cl, none, 30000, &code, &st);
    assert_non_null(va);
    assert_non_null(vb);
    assert_non_null(vn);
    assert_true((!strcmp(va, "0") && !strcmp(vb, "1")) || (!strcmp(va, "1") && !strcmp(vb, "0")));
    assert_string_equal(vn, "");
    free(va);
    free(vb);
    free(vn);
    esc_ref *h1 = submit(cl, "gpu_probe", "200", half, 1, 0);
    esc_ref *h2 = submit(cl, "gpu_probe", "200", half, 1, 0);
    va = get_str(cl, h1, 30000, &code, &st);
    vb = get_str(cl, h2, 30000, &code, &st);
    assert_non_null(va);
    assert_non_null(vb);
    assert_string_equal(va, vb); /* packed on one instance */
    free(va);
    free(vb);
    /* 1.5 GPUs: one whole instance and half of the other. */
    esc_amount one_half[] = {{.name = "GPU", .value = ESC_QTY(1.5)}};
    esc_ref *oh = submit(cl, "gpu_probe", "0", one_half, 1, 0);
    va = get_str(cl, oh, 30000, &code, &st);
    assert_non_null(va);
    assert_true(!strcmp(va, "0,1") || !strcmp(va, "1,0"));
    free(va);
    esc_ref_free(oh);
    esc_ref_free(a);
    esc_ref_free(b);
    esc_ref_free(none);
    esc_ref_free(h1);
    esc_ref_free(h2);
    esc_disconnect(cl);
}

/* A GPU-backed ephemeral resource carries its GPUs: a task holding a unit backed by one
 * GPU sees one instance, and a plain GPU=1 task running beside it gets the other (the
 * carve holds one of the two GPUs in the accounts, the tasks hold the instances); a unit
 * backed by half a GPU is a share of one. */
static void test_gpu_backed_resource(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "tgpu", 0, false);
    esc_amount one_gpu[] = {{.name = "GPU", .value = ESC_QTY(1)}};
    esc_amount half_gpu[] = {{.name = "GPU", .value = ESC_QTY(0.5)}};
    esc_target local = ESC_NODE(C.raylets[0].node_id);
    uint64_t seq;
    assert_int_equal(esc_resource_set_backed(cl, "card", ESC_QTY(1), one_gpu, 1, &local, &seq,
                                             NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    esc_amount card[] = {{.name = "tgpu/card", .value = ESC_QTY(1)}};
    esc_ref *c = submit(cl, "gpu_probe", "600", card, 1, 0);
    esc_ref *g = submit(cl, "gpu_probe", "600", one_gpu, 1, 0);
    int code;
    esc_status st;
    char *vc = get_str(cl, c, 30000, &code, &st), *vg = get_str(cl, g, 30000, &code, &st);
    assert_non_null(vc);
    assert_non_null(vg);
    assert_true(!strcmp(vc, "0") || !strcmp(vc, "1"));
    assert_true(!strcmp(vg, "0") || !strcmp(vg, "1"));
    assert_string_not_equal(vc, vg);
    free(vc);
    free(vg);
    esc_ref_free(c);
    esc_ref_free(g);

    assert_int_equal(esc_resource_delete(cl, "card", &local, NULL, NULL), ESC_OK);
    assert_int_equal(esc_resource_set_backed(cl, "half", ESC_QTY(1), half_gpu, 1, &local, &seq,
                                             NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    esc_amount half[] = {{.name = "tgpu/half", .value = ESC_QTY(1)}};
    esc_ref *h = submit(cl, "gpu_probe", "0", half, 1, 0);
    char *vh = get_str(cl, h, 30000, &code, &st);
    assert_non_null(vh);
    assert_true(!strcmp(vh, "0") || !strcmp(vh, "1"));
    free(vh);
    esc_ref_free(h);
    esc_disconnect(cl);
}

/* A resource present with capacity 0 is a queue: a task that needs it waits, and runs
 * once capacity is set (docs/resources.md). */
static void test_zero_capacity_then_set_runs(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "tgate", 0, false);
    uint64_t seq;
    assert_int_equal(esc_resource_set(cl, "gate", 0, NULL, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    esc_amount gate[] = {{.name = "tgate/gate", .value = ESC_QTY(1)}};
    esc_ref *r = submit(cl, "echo", "through", gate, 1, 0);
    int code;
    esc_status st;
    char *v = get_str(cl, r, 0, &code, &st);
    assert_null(v); /* waits: capacity 0 */
    assert_int_equal(esc_resource_set(cl, "gate", ESC_QTY(1), NULL, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    v = get_str(cl, r, 30000, &code, &st);
    if (!v)
        fprintf(stderr, "gated task: %s %s\n", esc_status_name(code), st.message);
    assert_non_null(v);
    assert_string_equal(v, "through");
    free(v);
    esc_ref_free(r);
    esc_disconnect(cl);
}

static const esc_node_status *node0_of(const esc_cluster_status *s)
{
    for (size_t i = 0; s && i < s->nnodes; i++)
        if (!strcmp(s->nodes[i].id, C.raylets[0].node_id))
            return &s->nodes[i];
    return NULL;
}

typedef struct {
    esc_client *cl;
    esc_cluster_status *status; /* the status that showed all three tasks queued */
} demand_probe;

/* Node 0 reports three queued tasks (the raylet reports demand with its load, so the
 * status shows it a report period after the tasks were queued). */
static bool demand_reported(void *arg)
{
    demand_probe *p = arg;
    esc_cluster_status *s = NULL;
    if (esc_get_cluster_status(p->cl, &s, NULL) != ESC_OK)
        return false;
    const esc_node_status *n0 = node0_of(s);
    unsigned queued = 0;
    for (size_t i = 0; n0 && i < n0->ndemand; i++)
        queued += n0->demand[i].count;
    if (queued == 3) {
        p->status = s;
        return true;
    }
    esc_cluster_status_free(s);
    return false;
}

/* Queued tasks show up in the cluster status, by shape, with what is missing. */
static void test_status_shows_demand(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t9", 0, false);
    uint64_t seq;
    assert_int_equal(esc_resource_set(cl, "zero", 0, NULL, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    esc_amount nowhere[] = {{.name = "t9/nowhere", .value = ESC_QTY(1)}};
    esc_amount zero[] = {{.name = "t9/zero", .value = ESC_QTY(1)}};
    esc_ref *r[3] = {submit(cl, "echo", "x", nowhere, 1, 0), submit(cl, "echo", "x", nowhere, 1, 0),
                     submit(cl, "echo", "x", zero, 1, 0)};
    demand_probe p = {cl, NULL};
    assert_true(h_wait_until(demand_reported, &p, 5000));
    esc_cluster_status *s = p.status;
    const esc_node_status *n0 = node0_of(s);
    assert_int_equal(n0->ndemand, 2);
    bool saw_missing = false, saw_zero = false;
    for (size_t i = 0; i < n0->ndemand; i++) {
        const esc_demand *d = &n0->demand[i];
        assert_int_equal(d->nshape, 1);
        if (!strcmp(d->shape[0].name, "t9/nowhere")) {
            saw_missing = true;
            assert_int_equal(d->count, 2);
            assert_true(d->infeasible);
            assert_int_equal(d->nmissing, 1);
            assert_string_equal(d->missing[0], "t9/nowhere");
        } else {
            saw_zero = true;
            assert_string_equal(d->shape[0].name, "t9/zero");
            assert_int_equal(d->count, 1);
            assert_true(d->infeasible);        /* capacity 0 everywhere */
            assert_int_equal(d->nmissing, 0);  /* but the name exists */
        }
    }
    assert_true(saw_missing && saw_zero);
    esc_cluster_status_free(s);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(esc_cancel(cl, r[i], NULL), ESC_OK);
        esc_ref_free(r[i]);
    }
    esc_disconnect(cl);
}

static esc_ref *actor_add(esc_client *cl, esc_actor *a, long long x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", x);
    esc_task_arg arg = {.data = buf, .len = strlen(buf)};
    esc_ref *r = NULL;
    esc_status st;
    int rc = esc_actor_call(cl, a, "counter_add", &arg, 1, 1, &r, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor call: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return r;
}

static int64_t held_cpu(esc_client *cl)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    int64_t held = -1;
    for (size_t i = 0; i < s->nnodes; i++)
        if (!strcmp(s->nodes[i].id, C.raylets[0].node_id))
            held = esc_node_resource(&s->nodes[i], "CPU")->held;
    esc_cluster_status_free(s);
    return held;
}

/* An actor keeps state between calls, runs one caller's calls in order, holds its
 * resources while alive, and after a kill its calls fail instead of hanging. */
static void test_actor_order_state_kill(void **state)
{
    (void)state;
    enum { N = 100 };
    esc_client *cl = h_connect(&C, "t11", 0, false);
    esc_amount cpu[] = {{.name = "CPU", .value = ESC_QTY(1)}};
    esc_actor_spec spec = {.name = "counter", .library = LIB, .init_symbol = "counter_init",
                           .resources = cpu, .nresources = 1};
    esc_actor *a = NULL;
    assert_int_equal(esc_actor_create(cl, &spec, &a, NULL), ESC_OK);
    esc_ref *refs[N];
    for (int i = 0; i < N; i++)
        refs[i] = actor_add(cl, a, i + 1);
    for (int i = 0; i < N; i++) {
        int code;
        esc_status st;
        char *v = get_str(cl, refs[i], 30000, &code, &st);
        assert_non_null(v);
        assert_int_equal(atoll(v), (long long)(i + 1) * (i + 2) / 2); /* in order, one state */
        free(v);
        esc_ref_free(refs[i]);
    }
    assert_int_equal(held_cpu(cl), ESC_QTY(1)); /* held for its life */
    assert_int_equal(esc_actor_kill(cl, a, NULL), ESC_OK);
    esc_ref *late = actor_add(cl, a, 1);
    int code;
    esc_status st;
    assert_null(get_str(cl, late, 5000, &code, &st));
    assert_int_equal(code, ESC_ABORTED);
    assert_non_null(strstr(st.message, "died"));
    esc_ref_free(late);
    for (int i = 0; i < 100 && held_cpu(cl) != 0; i++)
        usleep(20000);
    assert_int_equal(held_cpu(cl), 0);
    assert_int_equal(esc_actor_kill(cl, a, NULL), ESC_NOT_FOUND);
    esc_actor_free(a);
    esc_disconnect(cl);
}

/* A crashed actor restarts (state lost, init again) while max_restarts allows, then dies. */
static void test_actor_restart(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t12", 0, false);
    esc_actor_spec spec = {.name = "fragile", .library = LIB, .init_symbol = "counter_init",
                           .max_restarts = 1};
    esc_actor *a = NULL;
    assert_int_equal(esc_actor_create(cl, &spec, &a, NULL), ESC_OK);
    int code;
    esc_status st;
    esc_ref *r = actor_add(cl, a, 5);
    char *v = get_str(cl, r, 30000, &code, &st);
    assert_non_null(v);
    assert_string_equal(v, "5");
    free(v);
    esc_ref_free(r);
    for (int round = 0; round < 2; round++) {
        esc_ref *boom = NULL;
        assert_int_equal(esc_actor_call(cl, a, "crash", NULL, 0, 1, &boom, &st), ESC_OK);
        assert_null(get_str(cl, boom, 30000, &code, &st));
        assert_int_equal(code, ESC_ABORTED);
        assert_non_null(strstr(st.message, "SIGSEGV"));
        esc_ref_free(boom);
        r = actor_add(cl, a, 1);
        v = get_str(cl, r, 30000, &code, &st);
        if (round == 0) {
            assert_non_null(v);
            assert_string_equal(v, "1"); /* restarted: the counter began again */
        } else {
            assert_null(v);               /* no restarts left: dead */
            assert_int_equal(code, ESC_ABORTED);
            assert_non_null(strstr(st.message, "died"));
        }
        free(v);
        esc_ref_free(r);
    }
    esc_actor_free(a);
    esc_disconnect(cl);
}

static void test_cancel(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t6", 0, false);
    uint64_t seq;
    assert_int_equal(esc_resource_set(cl, "gate", 0, NULL, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    esc_amount gate[] = {{.name = "t6/gate", .value = ESC_QTY(1)}};
    esc_ref *queued = submit(cl, "echo", "never", gate, 1, 0);
    char marker[64];
    h_marker_path(marker, sizeof marker);
    esc_ref *running = submit_marked(cl, "20000", marker, NULL, 0);
    assert_true(h_wait_marker(marker, 10000));
    esc_status st;
    assert_int_equal(esc_cancel(cl, queued, &st), ESC_OK);
    double t0 = h_now_ms();
    assert_int_equal(esc_cancel(cl, running, &st), ESC_OK);
    int code;
    assert_null(get_str(cl, queued, 5000, &code, &st));
    assert_int_equal(code, ESC_ABORTED);
    assert_non_null(strstr(st.message, "cancelled"));
    assert_null(get_str(cl, running, 5000, &code, &st));
    assert_int_equal(code, ESC_ABORTED);
    assert_non_null(strstr(st.message, "cancelled"));
    assert_true(h_now_ms() - t0 < 5000);
    esc_ref_free(queued);
    esc_ref_free(running);
    esc_disconnect(cl);
}

/* The owner learns of its tasks' ends from its raylet's stream, not from the GCS: with
 * the GCS stopped, a local task's and a spilled task's values still arrive (the spilled
 * one's notice travels back through the raylet that forwarded it). */
static void test_results_without_gcs(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t_res", 0, false);
    esc_ref *warm = submit(cl, "echo", "warm", NULL, 0, 0);
    int code;
    esc_status st;
    char *v = get_str(cl, warm, 30000, &code, &st);
    assert_non_null(v); /* the stream is up, and both nodes have run tasks of this job */
    free(v);
    esc_ref_free(warm);
    esc_amount b[] = {{.name = "only_b", .value = ESC_QTY(1)}};
    esc_ref *warm_b = submit(cl, "echo", "warm b", b, 1, 0);
    v = get_str(cl, warm_b, 30000, &code, &st);
    assert_non_null(v);
    free(v);
    esc_ref_free(warm_b);

    kill(C.gcs_pid, SIGSTOP);
    esc_ref *here = submit(cl, "echo", "local value", NULL, 0, 0);
    esc_ref *there = submit(cl, "getenv_task", "ESCHER_NODE_ID", b, 1, 0);
    char *hv = get_str(cl, here, 20000, &code, &st);
    char *tv = get_str(cl, there, 20000, &code, &st);
    kill(C.gcs_pid, SIGCONT);
    assert_non_null(hv);
    assert_string_equal(hv, "local value");
    assert_non_null(tv);
    assert_string_equal(tv, C.raylets[1].node_id);
    free(hv);
    free(tv);
    esc_ref_free(here);
    esc_ref_free(there);
    esc_disconnect(cl);
}

/* SubmitTasks checks each spec on its own: undecodable and invalid ones are named in
 * the reply, the valid one runs. */
static void test_batch_rejects_per_spec(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "t_batch", 0, false);
    Escher__FunctionRef fn = ESCHER__FUNCTION_REF__INIT;
    fn.library = (char *)LIB; /* protobuf-c fields are not const */
    fn.symbol = "echo";
    Escher__TaskArg arg = ESCHER__TASK_ARG__INIT;
    arg.data = (ProtobufCBinaryData){2, (uint8_t *)"ok"};
    Escher__TaskArg *args[] = {&arg};
    Escher__TaskSpec good = ESCHER__TASK_SPEC__INIT;
    char task_id[33];
    snprintf(task_id, sizeof task_id, "%s", "0123456789abcdef0123456789abcdef");
    good.task_id = task_id;
    good.job_id = (char *)esc_client_job_id(cl);
    good.job_credential = (char *)esc_client_job_credential(cl); /* the raylet checks it */
    good.function = &fn;
    good.args = args;
    good.n_args = 1;
    good.num_returns = 1;
    Escher__TaskSpec bad = good;
    bad.function = NULL; /* neither function nor command */
    uint8_t gbuf[512], bbuf[512];
    size_t glen = protobuf_c_message_pack(&good.base, gbuf);
    size_t blen = protobuf_c_message_pack(&bad.base, bbuf);
    static uint8_t junk[] = {0xff, 0xff, 0xff};
    ProtobufCBinaryData specs[] = {{sizeof junk, junk}, {blen, bbuf}, {glen, gbuf}};
    Escher__TaskBatch batch = ESCHER__TASK_BATCH__INIT;
    batch.specs = specs;
    batch.n_specs = 3;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    ProtobufCMessage *m = NULL;
    esc_status st;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_TASK_SERVICE_SUBMIT_TASKS, &batch.base, &m, 10000, 0, &st),
        ESC_OK);
    Escher__SubmitTasksReply *rep = (Escher__SubmitTasksReply *)m;
    assert_int_equal(rep->n_rejected, 2);
    assert_int_equal(rep->rejected[0], 0);
    assert_int_equal(rep->rejected[1], 1);
    assert_non_null(strstr(rep->errors[1], "exactly one of a function or a command"));
    protobuf_c_message_free_unpacked(m, NULL);
    esc_rpc_channel_free(ch);
    char ret_id[64];
    snprintf(ret_id, sizeof ret_id, "%s0000", task_id);
    esc_ref *r = esc_ref_from_id(ret_id);
    int code;
    char *v = get_str(cl, r, 30000, &code, &st);
    assert_non_null(v);
    assert_string_equal(v, "ok");
    free(v);
    esc_ref_free(r);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_task),
        cmocka_unit_test(test_task_logs),
        cmocka_unit_test(test_remote_by_static_resource),
        cmocka_unit_test(test_arguments_from_another_node),
        cmocka_unit_test(test_waits_for_ephemeral_resource_on_remote_node),
        cmocka_unit_test(test_capacity_three_never_exceeded),
        cmocka_unit_test(test_failures),
        cmocka_unit_test(test_gpu_instances),
        cmocka_unit_test(test_gpu_backed_resource),
        cmocka_unit_test(test_zero_capacity_then_set_runs),
        cmocka_unit_test(test_status_shows_demand),
        cmocka_unit_test(test_actor_order_state_kill),
        cmocka_unit_test(test_actor_restart),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_results_without_gcs),
        cmocka_unit_test(test_batch_rejects_per_spec),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
