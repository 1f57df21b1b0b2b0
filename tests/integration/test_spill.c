/* test_spill.c: spillback on advertised availability. Two raylets with one CPU each;
 * node 0 also has `only_a`. A task that is busy on its node goes to the idle one and
 * runs at the same time; a task feasible only on its node waits there; with both nodes
 * busy tasks queue and still complete, and no task is ever sent back to the raylet it
 * came from (the raylets run at debug level, and their logs count the forwards). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define GET_MS 60000

static h_cluster C;
static const char *LIB; /* the test task library */

static int setup(void **state)
{
    *state = &C;
    LIB = h_tasks_lib();
    h_init(&C, 5000);
    if (h_gcs_start(&C) != 0)
        return -1;
    /* Debug level for the raylets only: their forwards are logged. */
    setenv("ESCHER_LOG_LEVEL", "debug", 1);
    int rc = h_raylet_start(&C, 0, "--num-cpus 1 --resources only_a=1") != 0 ||
             h_raylet_start(&C, 1, "--num-cpus 1") != 0;
    unsetenv("ESCHER_LOG_LEVEL");
    return rc ? -1 : 0;
}

static esc_ref *submit(esc_client *cl, const char *fn, const char *arg, const esc_amount *res,
                       size_t nres)
{
    esc_task_arg a = {.data = arg, .len = strlen(arg)};
    esc_task_spec spec = {.library = LIB, .symbol = fn, .resources = res, .nresources = nres,
                          .args = &a, .nargs = 1};
    esc_ref *ref = NULL;
    esc_status st;
    int rc = esc_task_submit(cl, &spec, &ref, NULL, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "submit %s: %s %s\n", fn, esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return ref;
}

typedef struct {
    long long start, end; /* wall-clock microseconds */
    char node[128];
} stamp_t;

/* Waits for a `stamp` task and parses "<start_us> <end_us> <node>"; frees the ref. */
static stamp_t get_stamp(esc_client *cl, esc_ref *ref)
{
    stamp_t s = {0};
    void *data = NULL;
    size_t len = 0;
    esc_status st;
    int rc = esc_get(cl, ref, GET_MS, &data, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "get: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    assert_int_equal(sscanf(data, "%lld %lld %127s", &s.start, &s.end, s.node), 3);
    free(data);
    esc_ref_free(ref);
    return s;
}

/* Lines of raylet i's log that record a forward. */
static int forwards_logged(int i)
{
    char path[400], line[2048];
    snprintf(path, sizeof path, "%s/raylet.%d.log", C.dir, i);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, " forwarded to node ") != NULL;
    fclose(f);
    return n;
}

static const esc_amount CPU1[] = {{.name = "CPU", .value = ESC_QTY(1)}};

/* Node 0's CPU is taken by the first task: the second goes to idle node 1 and both
 * run at once (each sleeps 2 s, so they overlap unless the second waited). */
static void test_busy_spills_to_idle_node(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "s1", 0, false);
    esc_ref *a = submit(cl, "stamp", "2000", CPU1, 1);
    esc_ref *b = submit(cl, "stamp", "2000", CPU1, 1);
    stamp_t sa = get_stamp(cl, a), sb = get_stamp(cl, b);
    assert_string_not_equal(sa.node, sb.node);
    assert_true(!strcmp(sa.node, C.raylets[0].node_id) || !strcmp(sb.node, C.raylets[0].node_id));
    assert_true(sa.start < sb.end && sb.start < sa.end);
    esc_disconnect(cl);
}

/* only_a exists on node 0 alone: busy there, the second task waits there (it is
 * feasible here, and no other node could take it), then runs after the first. */
static void test_feasible_only_here_waits(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "s2", 0, false);
    esc_amount only_a[] = {{.name = "only_a", .value = ESC_QTY(1)}};
    esc_ref *a = submit(cl, "stamp", "500", only_a, 1);
    esc_ref *b = submit(cl, "stamp", "500", only_a, 1);
    stamp_t sa = get_stamp(cl, a), sb = get_stamp(cl, b);
    assert_string_equal(sa.node, C.raylets[0].node_id);
    assert_string_equal(sb.node, C.raylets[0].node_id);
    assert_true(sb.start >= sa.end || sa.start >= sb.end);
    esc_disconnect(cl);
}

/* Both nodes busy: the other tasks queue (here, or on node 1 when its advertisement was
 * stale) and all complete. No task is bounced back: node 1 never forwards anything
 * (every task it got came from node 0, the only other node), and node 0 forwards each
 * task at most once. */
static void test_no_ping_pong(void **state)
{
    (void)state;
    enum { N = 6 };
    int before = forwards_logged(0);
    esc_client *cl = h_connect(&C, "s3", 0, false);
    esc_ref *blockers[2] = {submit(cl, "stamp", "2000", CPU1, 1),
                            submit(cl, "stamp", "2000", CPU1, 1)};
    esc_ref *refs[N];
    for (int i = 0; i < N; i++)
        refs[i] = submit(cl, "stamp", "100", CPU1, 1);
    stamp_t b0 = get_stamp(cl, blockers[0]), b1 = get_stamp(cl, blockers[1]);
    assert_string_not_equal(b0.node, b1.node); /* both nodes were busy */
    for (int i = 0; i < N; i++) {
        stamp_t s = get_stamp(cl, refs[i]);
        assert_true(s.node[0] != 0);
    }
    esc_disconnect(cl);
    int sent = forwards_logged(0) - before;
    assert_true(sent >= 1);         /* a blocker at least */
    assert_true(sent <= N + 2);     /* never the same task twice */
    assert_int_equal(forwards_logged(1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_busy_spills_to_idle_node),
        cmocka_unit_test(test_feasible_only_here_waits),
        cmocka_unit_test(test_no_ping_pong),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
