/* test_actor_resize.c: an actor changes what it holds while it lives (esc_actor_resize):
 * growth admitted at once when it fits, queued behind what holds the node until it does,
 * refused at a timeout; shrinks freed at once; the actor's calls and its CPU quota follow;
 * what cannot change (GPUs), another job, and a dead actor are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "task.pb-c.h"

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    const char *extras[] = {"--num-cpus 2 --num-gpus 1"};
    return h_start_cluster(&C, 1, extras);
}

static int teardown(void **state)
{
    (void)state;
    h_stop(&C);
    return 0;
}

static esc_actor *make_actor(esc_client *cl, const esc_amount *res, size_t n)
{
    esc_actor_spec spec = {.name = "sizer", .library = h_tasks_lib(),
                           .init_symbol = "counter_init", .resources = res, .nresources = n};
    esc_actor *a = NULL;
    esc_status st;
    int rc = esc_actor_create(cl, &spec, &a, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return a;
}

/* Calls method(arg) on the actor and returns its value (caller frees). */
static char *call(esc_client *cl, esc_actor *a, const char *method, const char *arg)
{
    esc_task_arg ta = {.data = arg, .len = strlen(arg)};
    esc_ref *r = NULL;
    esc_status st;
    assert_int_equal(esc_actor_call(cl, a, method, &ta, 1, 1, &r, &st), ESC_OK);
    void *v = NULL;
    size_t len;
    int rc = esc_get(cl, r, 60000, &v, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "%s: %s %s\n", method, esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    esc_ref_free(r);
    return v;
}

/* The node's CPU held, in fixed point. */
static int64_t cpu_held(esc_client *cl)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    const esc_resource_info *r = esc_node_resource(&s->nodes[0], "CPU");
    int64_t h = r ? r->held : -1;
    esc_cluster_status_free(s);
    return h;
}

typedef struct {
    esc_client *cl;
    int64_t want;
} held_probe;

/* The held CPU reaches the GCS with the raylet's next report. */
static bool cpu_reaches(void *p)
{
    held_probe *h = p;
    return cpu_held(h->cl) == h->want;
}

static void assert_cpu_held(esc_client *cl, double cpu)
{
    held_probe p = {cl, ESC_QTY(cpu)};
    assert_true(h_wait_until(cpu_reaches, &p, 5000));
}

static int resize_cpu(esc_client *cl, esc_actor *a, double cpu, int timeout_ms,
                      esc_status *st)
{
    esc_amount res[] = {{.name = "CPU", .value = ESC_QTY(cpu)}};
    esc_amount *held = NULL;
    size_t nheld = 0;
    int rc = esc_actor_resize(cl, a, res, 1, timeout_ms, &held, &nheld, st);
    if (rc == ESC_OK) {
        assert_int_equal(nheld, 1);
        assert_string_equal(held[0].name, "CPU");
        assert_int_equal(held[0].value, ESC_QTY(cpu));
    }
    esc_amounts_free(held, nheld);
    return rc;
}

static void test_grow_and_shrink(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "rs_grow", 0, false);
    esc_amount half[] = {{.name = "CPU", .value = ESC_QTY(0.5)}};
    esc_actor *a = make_actor(cl, half, 1);
    char *v = call(cl, a, "held", "CPU");
    assert_string_equal(v, "0.5");
    free(v);
    assert_cpu_held(cl, 0.5);
    esc_status st;
    assert_int_equal(resize_cpu(cl, a, 1, 0, &st), ESC_OK); /* fits: at once */
    assert_cpu_held(cl, 1);
    v = call(cl, a, "held", "CPU");
    assert_string_equal(v, "1");
    free(v);
    assert_int_equal(resize_cpu(cl, a, 0.25, 0, &st), ESC_OK);
    assert_cpu_held(cl, 0.25);
    /* The quota followed: a spin in the actor gets about a quarter of a core. */
    v = call(cl, a, "spin", "2000");
    double share = atof(v);
    print_message("actor resized to 0.25 CPU: %.3f of a core\n", share);
    assert_true(share >= 0.18 && share <= 0.32);
    free(v);
    assert_int_equal(esc_actor_kill(cl, a, &st), ESC_OK);
    esc_actor_free(a);
    assert_cpu_held(cl, 0);
    esc_disconnect(cl);
}

typedef struct {
    esc_client *cl;
    esc_actor *a;
    int rc;
    long long done_us; /* wall clock, as the blocker's stamp */
} waiting_resize;

static void *resize_thread(void *p)
{
    waiting_resize *w = p;
    esc_status st;
    w->rc = resize_cpu(w->cl, w->a, 1.5, 20000, &st);
    if (w->rc != ESC_OK)
        fprintf(stderr, "waiting resize: %s %s\n", esc_status_name(w->rc), st.message);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    w->done_us = (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
    return NULL;
}

/* Growth that does not fit waits for what holds the node, then gets it; past the node's
 * size it fails at its timeout, keeping what the actor held. */
static void test_grow_waits(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "rs_wait", 0, false);
    esc_amount half[] = {{.name = "CPU", .value = ESC_QTY(0.5)}};
    esc_actor *a = make_actor(cl, half, 1);
    free(call(cl, a, "held", "CPU"));
    /* A task holds 1 CPU for 1.5 s: 0.5 left, the growth by 1 must wait for it. */
    char marker[64];
    h_marker_path(marker, sizeof marker);
    esc_amount one[] = {{.name = "CPU", .value = ESC_QTY(1)}};
    esc_task_arg args[2] = {{.data = "1500", .len = 4}, {.data = marker, .len = strlen(marker)}};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "marked_stamp", .args = args,
                          .nargs = 2, .resources = one, .nresources = 1};
    esc_ref *blocker = NULL;
    assert_int_equal(esc_task_submit(cl, &spec, &blocker, NULL, NULL), ESC_OK);
    assert_true(h_wait_marker(marker, 10000));
    waiting_resize w = {cl, a, -1, 0};
    /* (The resize may reach the raylet after the blocker ended on a slow machine: then it
     * is admitted at once, still after the blocker's end.) */
    pthread_t th;
    pthread_create(&th, NULL, resize_thread, &w);
    void *out = NULL;
    size_t len;
    assert_int_equal(esc_get(cl, blocker, 30000, &out, &len, NULL), ESC_OK);
    long long start_us, end_us;
    assert_int_equal(sscanf(out, "%lld %lld", &start_us, &end_us), 2);
    free(out);
    esc_ref_free(blocker);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, ESC_OK);
    assert_true(w.done_us >= end_us); /* admitted once the blocker let go */
    assert_cpu_held(cl, 1.5);

    esc_status st;
    assert_int_equal(resize_cpu(cl, a, 3, 300, &st), ESC_DEADLINE_EXCEEDED);
    assert_null(strchr(st.message, '\n'));
    assert_cpu_held(cl, 1.5);
    free(call(cl, a, "held", "CPU")); /* still alive and callable */
    assert_int_equal(esc_actor_kill(cl, a, &st), ESC_OK);
    esc_actor_free(a);
    esc_disconnect(cl);
}

static void test_refusals(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "rs_refuse", 0, false);
    esc_amount res[] = {{.name = "CPU", .value = ESC_QTY(0.5)}};
    esc_actor *a = make_actor(cl, res, 1);
    free(call(cl, a, "held", "CPU"));
    esc_status st;
    esc_amount gpu[] = {{.name = "CPU", .value = ESC_QTY(0.5)},
                        {.name = "GPU", .value = ESC_QTY(1)}};
    assert_int_equal(esc_actor_resize(cl, a, gpu, 2, 0, NULL, NULL, &st), ESC_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "GPU"));
    esc_amount neg[] = {{.name = "CPU", .value = -1}};
    assert_int_equal(esc_actor_resize(cl, a, neg, 1, 0, NULL, NULL, &st), ESC_INVALID_ARGUMENT);

    /* A caller without the actor's job credential (raw, to its raylet). */
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    Escher__Amount amt = ESCHER__AMOUNT__INIT, *amts[] = {&amt};
    amt.name = "CPU";
    amt.value = ESC_QTY(1);
    Escher__ResizeActorRequest req = ESCHER__RESIZE_ACTOR_REQUEST__INIT;
    req.actor_id = (char *)esc_actor_id(a);
    req.resources = amts;
    req.n_resources = 1;
    Escher__ResizeActorReply *rep = NULL;
    assert_int_equal(esc_rpc_call(ch, &ESC_M_TASK_SERVICE_RESIZE_ACTOR, &req.base,
                                  (ProtobufCMessage **)&rep, 5000, 0, &st),
                     ESC_PERMISSION_DENIED);
    assert_non_null(strstr(st.message, "another job"));
    esc_rpc_channel_free(ch);
    assert_cpu_held(cl, 0.5); /* unchanged */

    assert_int_equal(esc_actor_kill(cl, a, &st), ESC_OK);
    assert_int_equal(esc_actor_resize(cl, a, res, 1, 0, NULL, NULL, &st), ESC_NOT_FOUND);
    esc_actor_free(a);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_and_shrink),
        cmocka_unit_test(test_grow_waits),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
