/* test_actor_args.c: an actor's method calls take object references as arguments, as
 * tasks do: an object put on one node reaches an actor on another (fetched by the
 * actor's raylet before the call starts) and an inline call behind it still runs, a
 * failed task's object fails the call that takes it, and an actor created without an
 * init symbol (esc_actor_spec.init_symbol NULL) runs its calls.
 *
 * Two raylets: the client's (0) and one with the custom resource "far" (1) where the
 * actor lives, so every object argument travels between nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define WAIT_MS 30000

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    const char *extras[] = {NULL, "--resources far=1"};
    return h_start_cluster(&C, 2, extras);
}

/* An actor on raylet 1 with no init. */
static esc_actor *far_actor(esc_client *cl)
{
    esc_amount far = {"far", ESC_QTY(1), false};
    esc_actor_spec spec = {.name = "far", .library = h_tasks_lib(), .resources = &far,
                           .nresources = 1};
    esc_actor *a = NULL;
    esc_status st;
    int rc = esc_actor_create(cl, &spec, &a, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor create: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return a;
}

/* Calls `echo` with one argument; returns the call's reference. */
static esc_ref *echo_call(esc_client *cl, esc_actor *a, const esc_task_arg *arg)
{
    esc_ref *r = NULL;
    esc_status st;
    int rc = esc_actor_call(cl, a, "echo", arg, 1, 1, &r, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor call: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return r;
}

static void expect_result(esc_client *cl, esc_ref *r, const void *want, size_t wantlen)
{
    void *v = NULL;
    size_t len = 0;
    esc_status st;
    int rc = esc_get(cl, r, WAIT_MS, &v, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "get: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    assert_int_equal(len, wantlen);
    assert_memory_equal(v, want, wantlen);
    free(v);
    esc_ref_free(r);
}

static void test_object_argument_crosses_nodes(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "args1", 0, false);
    esc_actor *a = far_actor(cl);
    /* 1 MiB of a pattern, so the argument is not a trivially small inline value */
    size_t n = 1 << 20;
    unsigned char *data = malloc(n);
    for (size_t i = 0; i < n; i++)
        data[i] = (unsigned char)(i * 131 + 7);
    esc_ref *obj = NULL;
    esc_status st;
    assert_int_equal(esc_put(cl, data, n, &obj, &st), ESC_OK);
    esc_task_arg by_ref = {.ref = obj}, inline_arg = {.data = "after", .len = 5};
    esc_ref *r1 = echo_call(cl, a, &by_ref), *r2 = echo_call(cl, a, &inline_arg);
    expect_result(cl, r1, data, n);
    expect_result(cl, r2, "after", 5);
    /* the object now has a copy on the actor's node too; a second call reads it there */
    expect_result(cl, echo_call(cl, a, &by_ref), data, n);
    esc_ref_free(obj);
    free(data);
    esc_actor_free(a);
    esc_disconnect(cl);
}

static void test_failed_task_argument_fails_call(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "args2", 0, false);
    esc_actor *a = far_actor(cl);
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "fail"};
    esc_ref *failed = NULL;
    esc_status st;
    assert_int_equal(esc_task_submit(cl, &spec, &failed, NULL, &st), ESC_OK);
    esc_task_arg by_ref = {.ref = failed};
    esc_ref *r = echo_call(cl, a, &by_ref);
    void *v = NULL;
    size_t len;
    assert_int_equal(esc_get(cl, r, WAIT_MS, &v, &len, &st), ESC_ABORTED);
    if (!strstr(st.message, "failed task"))
        fprintf(stderr, "call error: %s\n", st.message);
    assert_non_null(strstr(st.message, "failed task"));
    esc_ref_free(r);
    /* the actor is fine: a plain call still runs */
    esc_task_arg inline_arg = {.data = "ok", .len = 2};
    expect_result(cl, echo_call(cl, a, &inline_arg), "ok", 2);
    esc_ref_free(failed);
    esc_actor_free(a);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_object_argument_crosses_nodes),
        cmocka_unit_test(test_failed_task_argument_fails_call),
    };
    return cmocka_run_group_tests(tests, setup, h_teardown);
}
