/* test_task_client.c: a function task and an actor method use the SDK as their job
 * (esc_task_client, task.h): they submit a child task and wait for it, write and read the
 * job's KV, and the driver sees what they wrote in its own namespace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escher/task.h"
#include "harness.h"

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    return h_start_cluster(&C, 2, NULL);
}

static int teardown(void **state)
{
    (void)state;
    h_stop(&C);
    return 0;
}

static char *get_text(esc_client *cl, esc_ref *ref)
{
    void *v = NULL;
    size_t len;
    esc_status st;
    int rc = esc_get(cl, ref, 60000, &v, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "get: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    esc_ref_free(ref);
    return v;
}

/* The driver reads what a task wrote under "from_task" in the job's namespace. */
static void assert_kv(esc_client *cl, const char *want)
{
    void *v = NULL;
    size_t len;
    assert_int_equal(esc_kv_get(cl, NULL, "from_task", &v, &len, NULL), ESC_OK);
    assert_string_equal(v, want);
    free(v);
}

static void test_task_submits_and_writes(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "steer_task", 0, false);
    const char *lib = h_tasks_lib();
    esc_task_arg a[2] = {{.data = lib, .len = strlen(lib)}, {.data = "hello", .len = 5}};
    esc_task_spec spec = {.library = lib, .symbol = "steer", .args = a, .nargs = 2};
    esc_ref *ref = NULL;
    assert_int_equal(esc_task_submit(cl, &spec, &ref, NULL, NULL), ESC_OK);
    char *v = get_text(cl, ref);
    assert_string_equal(v, "hello hello"); /* the child's value, and the KV read back */
    free(v);
    assert_kv(cl, "hello");

    /* One client per worker process, acting as the driver's job. */
    esc_task_spec twice = {.library = lib, .symbol = "client_twice"};
    assert_int_equal(esc_task_submit(cl, &twice, &ref, NULL, NULL), ESC_OK);
    v = get_text(cl, ref);
    char want[128];
    snprintf(want, sizeof want, "same %s", esc_client_job_id(cl));
    assert_string_equal(v, want);
    free(v);
    esc_disconnect(cl);
}

static void test_actor_method_steers(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "steer_actor", 0, false);
    const char *lib = h_tasks_lib();
    esc_actor_spec spec = {.name = "steerer", .library = lib, .init_symbol = "counter_init"};
    esc_actor *actor = NULL;
    esc_status st;
    assert_int_equal(esc_actor_create(cl, &spec, &actor, &st), ESC_OK);
    esc_task_arg a[2] = {{.data = lib, .len = strlen(lib)}, {.data = "actor", .len = 5}};
    esc_ref *ref = NULL;
    assert_int_equal(esc_actor_call(cl, actor, "steer", a, 2, 1, &ref, &st), ESC_OK);
    char *v = get_text(cl, ref);
    assert_string_equal(v, "actor actor");
    free(v);
    assert_kv(cl, "actor");
    assert_int_equal(esc_actor_kill(cl, actor, &st), ESC_OK);
    esc_actor_free(actor);
    esc_disconnect(cl);
}

/* Outside a worker escher started (a unit test calling a task function directly). */
static void test_outside_a_worker(void **state)
{
    (void)state;
    unsetenv("ESCHER_JOB_ID");
    esc_task_ctx *ctx = esc_task_ctx_new("t", "j", 0, NULL, NULL, 1);
    esc_client *c = (esc_client *)1;
    esc_status st;
    assert_int_equal(esc_task_client(ctx, &c, &st), ESC_FAILED_PRECONDITION);
    assert_null(c);
    assert_non_null(strstr(st.message, "ESCHER_JOB_ID"));
    assert_int_equal(esc_task_client(NULL, &c, &st), ESC_INVALID_ARGUMENT);
    esc_task_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_submits_and_writes),
        cmocka_unit_test(test_actor_method_steers),
        cmocka_unit_test(test_outside_a_worker),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
