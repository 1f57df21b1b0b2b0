/* test_faults.c: a raylet killed with -9 becomes dead and its resources disappear; a
 * driver that dies takes its job's resources with it (detached ones stay); a GCS killed
 * with -9 and restarted on Redis loses nothing (a prefix grant included), and raylets
 * resume without restarting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static h_cluster C;

static bool has_row(esc_client *cl, const char *node_id, const char *name, const char **state)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    bool found = false;
    static char st[16];
    for (size_t n = 0; n < s->nnodes; n++) {
        if (strcmp(s->nodes[n].id, node_id) != 0)
            continue;
        snprintf(st, sizeof st, "%s", s->nodes[n].state);
        found = esc_node_resource(&s->nodes[n], name) != NULL;
    }
    esc_cluster_status_free(s);
    if (state)
        *state = st;
    return found;
}

typedef struct {
    esc_client *cl;
    const char *node_id;
    const char *name;
} row_probe;

static bool row_gone(void *p)
{
    row_probe *r = p;
    return !has_row(r->cl, r->node_id, r->name, NULL);
}

static bool row_present(void *p)
{
    return !row_gone(p);
}

static void test_raylet_killed(void **state)
{
    (void)state;
    h_init(&C, 1000);
    assert_int_equal(h_gcs_start(&C), 0);
    assert_int_equal(h_raylet_start(&C, 0, NULL), 0);
    assert_int_equal(h_raylet_start(&C, 1, NULL), 0);
    esc_client *cl = h_connect(&C, "fault", 0, false);
    uint64_t seq;
    esc_target all = ESC_ALL_NODES;
    assert_int_equal(esc_resource_set(cl, "r", ESC_QTY(4), &all, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    char dead_id[80];
    snprintf(dead_id, sizeof dead_id, "%s", C.raylets[1].node_id);
    assert_true(has_row(cl, dead_id, "fault/r", NULL));

    double t0 = h_now_ms();
    h_kill(&C.raylets[1].pid, SIGKILL);
    row_probe p = {cl, dead_id, "fault/r"};
    assert_true(h_wait_until(row_gone, &p, 8000));
    double took = h_now_ms() - t0;
    assert_true(took >= 900); /* not before the configured silence */
    const char *st = NULL;
    has_row(cl, dead_id, "fault/r", &st);
    assert_string_equal(st, "DEAD");
    /* The survivor keeps its resource; writes to the dead node are refused. */
    assert_true(has_row(cl, C.raylets[0].node_id, "fault/r", NULL));
    esc_target dead = ESC_NODE(dead_id);
    esc_status es;
    assert_int_equal(esc_resource_set(cl, "again", 1, &dead, NULL, &es), ESC_INVALID_ARGUMENT);
    /* wait_applied over all nodes no longer waits for the dead one. */
    assert_int_equal(esc_resource_add(cl, "r", ESC_QTY(1), &all, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    esc_disconnect(cl);
    h_stop(&C);
}

/* A task spilled to a node that is killed mid-task runs again on another node. */
static void test_task_reruns_after_raylet_kill(void **state)
{
    (void)state;
    char lib[512];
    snprintf(lib, sizeof lib, "%s/tests/tasks/libescher_test_tasks.so",
             getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build");
    h_init(&C, 1000);
    assert_int_equal(h_gcs_start(&C), 0);
    assert_int_equal(h_raylet_start(&C, 0, NULL), 0);
    assert_int_equal(h_raylet_start(&C, 1, "--resources work=1"), 0);
    assert_int_equal(h_raylet_start(&C, 2, "--resources work=1"), 0);
    /* Spillback picks the first feasible node in node-id order. */
    int first = strcmp(C.raylets[1].node_id, C.raylets[2].node_id) < 0 ? 1 : 2;
    int other = 3 - first;
    esc_client *cl = h_connect(&C, "mid", 0, false);
    esc_amount work[] = {{.name = "work", .value = ESC_QTY(1)}};
    char marker[64];
    h_marker_path(marker, sizeof marker);
    esc_task_arg arg[2] = {{.data = "1500", .len = 4}, {.data = marker, .len = strlen(marker)}};
    esc_task_spec spec = {.library = lib, .symbol = "marked_stamp", .resources = work,
                          .nresources = 1, .args = arg, .nargs = 2, .max_retries = 1};
    esc_ref *ref = NULL;
    assert_int_equal(esc_task_submit(cl, &spec, &ref, NULL, NULL), ESC_OK);
    assert_true(h_wait_marker(marker, 10000)); /* it runs on the first node */
    h_kill(&C.raylets[first].pid, SIGKILL);
    void *v = NULL;
    size_t len;
    esc_status st;
    int rc = esc_get(cl, ref, 20000, &v, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "get: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    assert_non_null(strstr(v, C.raylets[other].node_id));
    free(v);
    unlink(marker); /* made again by the retried run */
    esc_ref_free(ref);
    esc_disconnect(cl);
    h_stop(&C);
}

/* One actor method call of the test library, returning the value as a string (NULL and
 * *code on failure). */
static char *actor_do(esc_client *cl, esc_actor *a, const char *method, const char *arg,
                      esc_ref **pending, int *code, esc_status *st)
{
    esc_task_arg ta = {.data = arg, .len = strlen(arg)};
    esc_ref *r = NULL;
    *code = esc_actor_call(cl, a, method, &ta, 1, 1, &r, st);
    if (*code != ESC_OK)
        return NULL;
    if (pending) {
        *pending = r;
        return NULL;
    }
    void *v = NULL;
    size_t len;
    *code = esc_get(cl, r, 30000, &v, &len, st);
    esc_ref_free(r);
    return v;
}

/* An actor whose node is killed: the call it was running fails at once (no hang), and
 * the actor starts again on another node that has its resources, with fresh state. */
static void test_actor_restarts_after_node_death(void **state)
{
    (void)state;
    char lib[512];
    snprintf(lib, sizeof lib, "%s/tests/tasks/libescher_test_tasks.so",
             getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build");
    h_init(&C, 1000);
    assert_int_equal(h_gcs_start(&C), 0);
    assert_int_equal(h_raylet_start(&C, 0, NULL), 0);
    assert_int_equal(h_raylet_start(&C, 1, "--resources act=1"), 0);
    assert_int_equal(h_raylet_start(&C, 2, "--resources act=1"), 0);
    esc_client *cl = h_connect(&C, "actfault", 0, false);
    esc_amount act[] = {{.name = "act", .value = ESC_QTY(1)}};
    esc_actor_spec spec = {.name = "counter", .library = lib, .init_symbol = "counter_init",
                           .resources = act, .nresources = 1, .max_restarts = 1};
    esc_actor *a = NULL;
    assert_int_equal(esc_actor_create(cl, &spec, &a, NULL), ESC_OK);
    int code;
    esc_status st;
    char *v = actor_do(cl, a, "counter_add", "5", NULL, &code, &st);
    assert_non_null(v);
    assert_string_equal(v, "5");
    free(v);
    char *home = actor_do(cl, a, "getenv_task", "ESCHER_NODE_ID", NULL, &code, &st);
    assert_non_null(home);
    int hosting = !strcmp(home, C.raylets[1].node_id) ? 1 : 2;
    assert_string_equal(home, C.raylets[hosting].node_id);
    free(home);

    esc_ref *slow = NULL;
    char marker[64];
    h_marker_path(marker, sizeof marker);
    esc_task_arg slow_args[2] = {{.data = "60000", .len = 5},
                                 {.data = marker, .len = strlen(marker)}};
    code = esc_actor_call(cl, a, "marked_stamp", slow_args, 2, 1, &slow, &st);
    assert_int_equal(code, ESC_OK);
    assert_true(h_wait_marker(marker, 10000)); /* the call runs */
    h_kill(&C.raylets[hosting].pid, SIGKILL);
    void *out = NULL;
    size_t len;
    code = esc_get(cl, slow, 30000, &out, &len, &st);
    assert_int_equal(code, ESC_ABORTED); /* told when the node was declared dead */
    assert_non_null(strstr(st.message, "died"));
    esc_ref_free(slow);

    v = actor_do(cl, a, "counter_add", "1", NULL, &code, &st);
    if (!v)
        fprintf(stderr, "call after restart: %s %s\n", esc_status_name(code), st.message);
    assert_non_null(v);
    assert_string_equal(v, "1"); /* restarted: its state began again */
    free(v);
    char *now = actor_do(cl, a, "getenv_task", "ESCHER_NODE_ID", NULL, &code, &st);
    assert_non_null(now);
    assert_string_equal(now, C.raylets[3 - hosting].node_id);
    free(now);
    esc_actor_free(a);
    esc_disconnect(cl);
    h_stop(&C);
}

static void test_driver_death_cleans_job(void **state)
{
    (void)state;
    h_init(&C, 2000);
    assert_int_equal(h_gcs_start(&C), 0);
    assert_int_equal(h_raylet_start(&C, 0, NULL), 0);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    /* The driver is a fresh process (this program re-executed): gRPC does not survive a
     * plain fork of a process that already used it. */
    pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char fd[16];
        snprintf(fd, sizeof fd, "%d", ready[1]);
        execl("/proc/self/exe", "test_faults", "--driver", C.gcs_addr, C.token,
              C.raylets[0].node_id, fd, (char *)NULL);
        _exit(127);
    }
    char x;
    assert_int_equal(read(ready[0], &x, 1), 1);
    esc_client *cl = h_connect(&C, "observer", 0, false);
    assert_true(has_row(cl, C.raylets[0].node_id, "drv/owned", NULL));
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    row_probe p = {cl, C.raylets[0].node_id, "drv/owned"};
    assert_true(h_wait_until(row_gone, &p, 10000));
    assert_true(has_row(cl, C.raylets[0].node_id, "drv/kept", NULL));

    /* A clean disconnect removes the job's resources at once. */
    esc_client *j = h_connect(&C, "clean", 0, false);
    uint64_t seq;
    assert_int_equal(esc_resource_set(j, "tmp", ESC_QTY(1), NULL, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(j, seq, NULL, 0, 5000, NULL), ESC_OK);
    assert_true(has_row(cl, C.raylets[0].node_id, "clean/tmp", NULL));
    esc_disconnect(j);
    row_probe q = {cl, C.raylets[0].node_id, "clean/tmp"};
    assert_true(h_wait_until(row_gone, &q, 3000));
    esc_disconnect(cl);
    close(ready[0]);
    close(ready[1]);
    h_stop(&C);
}

/* After a GCS restart on Redis, owner's prefix grant "t." to tenant is back: listed,
 * and the tenant writes keys under it and no others in owner's namespace. */
static void check_prefix_grant_back(esc_client *owner, esc_client *tenant)
{
    esc_job_info *jobs;
    size_t n;
    bool listed = false;
    assert_int_equal(esc_list_jobs(owner, &jobs, &n, NULL), ESC_OK);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(jobs[i].id, esc_client_job_id(owner)))
            listed = jobs[i].nprefix_grants == 1 &&
                     !strcmp(jobs[i].prefix_grants[0].job_id, esc_client_job_id(tenant)) &&
                     !strcmp(jobs[i].prefix_grants[0].prefix, "t.");
    esc_jobs_free(jobs, n);
    assert_true(listed);
    const char *ns = esc_client_namespace(owner);
    assert_int_equal(esc_kv_put(tenant, ns, "t.report", "1", 1, true, NULL, NULL), ESC_OK);
    assert_int_equal(esc_kv_put(tenant, ns, "other", "1", 1, true, NULL, NULL),
                     ESC_PERMISSION_DENIED);
}

static void test_gcs_restart_with_redis(void **state)
{
    (void)state;
    h_init(&C, 5000);
    assert_int_equal(h_redis_start(&C), 0);
    assert_int_equal(h_gcs_start(&C), 0);
    assert_int_equal(h_raylet_start(&C, 0, NULL), 0);
    assert_int_equal(h_raylet_start(&C, 1, NULL), 0);
    pid_t r0 = C.raylets[0].pid, r1 = C.raylets[1].pid;

    /* A job's own (not detached) resources must survive too: the job is still running. */
    esc_client *cl = h_connect(&C, "durable", 0, false);
    uint64_t seq;
    esc_target all = ESC_ALL_NODES;
    assert_int_equal(esc_resource_set(cl, "a", ESC_QTY(2), &all, &seq, NULL), ESC_OK);
    assert_int_equal(esc_resource_add(cl, "a", ESC_QTY(0.5), &all, &seq, NULL), ESC_OK);
    assert_int_equal(esc_kv_put(cl, "ns", "key", "value", 5, true, NULL, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    /* A grant limited to a prefix is part of the job's row: stored with it. */
    esc_client *tenant = h_connect(&C, "tenant", 0, false);
    assert_int_equal(esc_namespace_grant_prefix(cl, esc_client_job_id(tenant), "t.", NULL),
                     ESC_OK);

    h_kill(&C.gcs_pid, SIGKILL);
    assert_int_equal(h_gcs_start(&C), 0);

    /* Everything acknowledged before the crash is back. */
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    assert_int_equal(s->nnodes, 2);
    assert_true(s->committed_seq >= seq);
    esc_cluster_status_free(s);
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(esc_kv_get(cl, "ns", "key", &v, &len, NULL), ESC_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(v, "value", 5);
    free(v);
    check_prefix_grant_back(cl, tenant);

    /* Before any new write, each raylet's accounting reaches the restarted GCS again
     * (its rows were not in storage): status and selectors see the resources. */
    for (int i = 0; i < 2; i++) {
        row_probe p = {cl, C.raylets[i].node_id, "durable/a"};
        assert_true(h_wait_until(row_present, &p, 3000));
    }

    /* The same client keeps working (its job survived, its driver stream reconnected
     * before the job timeout), raylets resume their streams and apply new entries
     * without having restarted. Twice the job timeout must pass first (a length of
     * time under test, not a condition to poll): a job whose driver stream had not
     * reconnected would be ended by then, and the write below refused ("job has
     * ended"). */
    usleep((useconds_t)C.job_timeout_ms * 2000);
    assert_int_equal(esc_resource_add(cl, "a", ESC_QTY(1), &all, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 10000, NULL), ESC_OK);
    assert_int_equal(C.raylets[0].pid, r0);
    assert_int_equal(C.raylets[1].pid, r1);
    assert_true(h_alive(r0) && h_alive(r1));
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    for (size_t n = 0; n < s->nnodes; n++) {
        const esc_resource_info *r = esc_node_resource(&s->nodes[n], "durable/a");
        assert_non_null(r);
        assert_int_equal(r->total, 35000);
        assert_string_equal(s->nodes[n].state, "ALIVE");
    }
    esc_cluster_status_free(s);
    esc_disconnect(tenant);
    esc_disconnect(cl);
    h_stop(&C);
}

/* Driver mode: creates one owned and one detached resource, signals, then hangs. */
static int driver_main(char **argv)
{
    esc_connect_opts o = {.address = argv[2], .token = argv[3], .node_id = argv[4],
                          .namespace_ = "drv"};
    esc_client *owned = NULL, *det = NULL;
    if (esc_connect(&o, &owned, NULL) != ESC_OK)
        return 1;
    o.detached = true;
    o.join = owned; /* "drv" is the owned client's job's: the second client joins it */
    if (esc_connect(&o, &det, NULL) != ESC_OK)
        return 1;
    uint64_t s1, s2;
    if (esc_resource_set(owned, "owned", ESC_QTY(1), NULL, &s1, NULL) != ESC_OK ||
        esc_resource_set(det, "kept", ESC_QTY(1), NULL, &s2, NULL) != ESC_OK ||
        esc_wait_applied(owned, s2, NULL, 0, 5000, NULL) != ESC_OK)
        return 1;
    if (write(atoi(argv[5]), "x", 1) != 1)
        return 1;
    pause();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "--driver"))
        return driver_main(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raylet_killed),
        cmocka_unit_test(test_task_reruns_after_raylet_kill),
        cmocka_unit_test(test_actor_restarts_after_node_death),
        cmocka_unit_test(test_driver_death_cleans_job),
        cmocka_unit_test(test_gcs_restart_with_redis),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return failed || h_unclean_exits() ? 1 : 0;
}
