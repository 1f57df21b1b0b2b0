/* test_cpu_quota.c: CPU shares are enforced (docs/workers.md, "CPU shares"). A task that
 * holds 0.25 CPU and spins for 3 s gets 0.2-0.3 of a core, measured from /proc by the
 * task itself; the same worker, reused for a task that holds 1 CPU, gets its quota raised;
 * an actor's calls run under what its creation holds. Units of a CPU-backed ephemeral
 * resource count as the CPU behind them: a task holding 0.5 units backed by CPU=0.5 per
 * unit gets a quarter of a core, and an actor holding such units runs under their CPU,
 * then under the new amount's once esc_actor_resize changed them. `escher status` says
 * per node whether shares are enforced, and a raylet's cgroups go when it stops.
 *
 * These machines mount the cgroup v1 cpu controller writable; a node where no controller
 * is writable reports "not enforced" and this test fails there on purpose. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define SPIN_MS "3000"

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    /* Node 1 enforces nothing: the status must say so. */
    const char *extras[] = {"--num-cpus 2", "--num-cpus 2 --no-cpu-quota"};
    return h_start_cluster(&C, 2, extras);
}

static int teardown(void **state)
{
    (void)state;
    h_stop(&C);
    return 0;
}

/* The share a spin task got, in cores, run holding `qty` of resource `name` on node 0 (by
 * its label). */
static double spin_share_of(esc_client *cl, const char *name, double qty)
{
    esc_amount res[] = {{.name = name, .value = ESC_QTY(qty)}};
    esc_task_arg a = {.data = SPIN_MS, .len = strlen(SPIN_MS)};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "spin", .args = &a, .nargs = 1,
                          .resources = res, .nresources = 1};
    esc_ref *ref = NULL;
    esc_status st;
    assert_int_equal(esc_task_submit(cl, &spec, &ref, NULL, &st), ESC_OK);
    void *v = NULL;
    size_t len;
    int rc = esc_get(cl, ref, 60000, &v, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "spin: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    double share = atof(v);
    print_message("holding %.2f %s: %s (of a core, node)\n", qty, name, (char *)v);
    assert_non_null(strstr(v, C.raylets[0].node_id));
    free(v);
    esc_ref_free(ref);
    return share;
}

static double spin_share(esc_client *cl, double cpu)
{
    return spin_share_of(cl, "CPU", cpu);
}

/* Makes resource `name` of the client's job on node 0, 2 units backed by CPU=0.5 per
 * unit (1 of node 0's 2 CPUs carved), and waits until node 0 admits with it. */
static void set_half_cpu_units(esc_client *cl, const char *name)
{
    esc_amount half_cpu[] = {{.name = "CPU", .value = ESC_QTY(0.5)}};
    esc_target node0 = ESC_NODE(C.raylets[0].node_id);
    uint64_t seq;
    esc_status st;
    int rc = esc_resource_set_backed(cl, name, ESC_QTY(2), half_cpu, 1, &node0, &seq, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "set %s: %s %s\n", name, esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
}

static void delete_on_node0(esc_client *cl, const char *name)
{
    esc_target node0 = ESC_NODE(C.raylets[0].node_id);
    assert_int_equal(esc_resource_delete(cl, name, &node0, NULL, NULL), ESC_OK);
}

static const esc_node_status *node_of(const esc_cluster_status *s, int i)
{
    for (size_t k = 0; k < s->nnodes; k++)
        if (!strcmp(s->nodes[k].id, C.raylets[i].node_id))
            return &s->nodes[k];
    fail_msg("node %d missing from the status", i);
    return NULL;
}

static void test_status_says_whether_enforced(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "quota_status", 0, false);
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    const esc_node_status *n0 = node_of(s, 0), *n1 = node_of(s, 1);
    if (!n0->cpu_shares_enforced)
        fail_msg("node 0 does not enforce CPU shares: %s", n0->cpu_shares);
    assert_non_null(strstr(n0->cpu_shares, "cgroup v"));
    assert_false(n1->cpu_shares_enforced);
    assert_non_null(strstr(n1->cpu_shares, "--no-cpu-quota"));
    esc_cluster_status_free(s);
    esc_disconnect(cl);
}

/* Node 0 only: node 1 does not enforce. Both tasks run there because the driver's raylet
 * is node 0 and it fits them (a task runs where it is submitted when it fits). */
static void test_task_quota(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "quota_task", 0, false);
    double quarter = spin_share(cl, 0.25);
    assert_true(quarter >= 0.2 && quarter <= 0.3);
    /* The worker is reused for the next task of the job: its quota follows the task. */
    double whole = spin_share(cl, 1);
    assert_true(whole > 0.5);
    esc_disconnect(cl);
}

/* The share an actor's spin call got, in cores. */
static double actor_spin_share(esc_client *cl, esc_actor *a)
{
    esc_task_arg arg = {.data = SPIN_MS, .len = strlen(SPIN_MS)};
    esc_ref *r = NULL;
    esc_status st;
    assert_int_equal(esc_actor_call(cl, a, "spin", &arg, 1, 1, &r, &st), ESC_OK);
    void *v = NULL;
    size_t len;
    int rc = esc_get(cl, r, 60000, &v, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor spin: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    double share = atof(v);
    free(v);
    esc_ref_free(r);
    return share;
}

static void test_actor_quota(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "quota_actor", 0, false);
    esc_amount half[] = {{.name = "CPU", .value = ESC_QTY(0.5)}};
    esc_actor_spec spec = {.name = "spinner", .library = h_tasks_lib(),
                           .init_symbol = "counter_init", .resources = half,
                           .nresources = 1};
    esc_actor *a = NULL;
    esc_status st;
    int rc = esc_actor_create(cl, &spec, &a, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    double share = actor_spin_share(cl, a);
    print_message("actor holding 0.50 CPU: %.3f of a core\n", share);
    assert_true(share >= 0.4 && share <= 0.6); /* the creation's 0.5, not unlimited */
    assert_int_equal(esc_actor_kill(cl, a, &st), ESC_OK);
    esc_actor_free(a);
    esc_disconnect(cl);
}

/* A task that holds no plain CPU but 0.5 units backed by CPU=0.5 per unit holds 0.25 of
 * the node's CPU, and runs under that quota (without it, it would spin a whole core). */
static void test_backed_task_quota(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "quota_btask", 0, false);
    set_half_cpu_units(cl, "slice");
    double quarter = spin_share_of(cl, "quota_btask/slice", 0.5);
    assert_true(quarter >= 0.2 && quarter <= 0.3);
    delete_on_node0(cl, "slice");
    esc_disconnect(cl);
}

/* An actor holding 1 unit backed by CPU=0.5 runs under half a core; resized to 0.5 units,
 * its worker's quota follows at once: a quarter of a core. */
static void test_backed_actor_resize_quota(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "quota_bactor", 0, false);
    set_half_cpu_units(cl, "slice");
    esc_amount one[] = {{.name = "quota_bactor/slice", .value = ESC_QTY(1)}};
    esc_actor_spec spec = {.name = "bspinner", .library = h_tasks_lib(),
                           .init_symbol = "counter_init", .resources = one, .nresources = 1};
    esc_actor *a = NULL;
    esc_status st;
    int rc = esc_actor_create(cl, &spec, &a, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "actor: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    double share = actor_spin_share(cl, a);
    print_message("actor holding 1 unit of CPU=0.5: %.3f of a core\n", share);
    assert_true(share >= 0.4 && share <= 0.6);

    esc_amount half[] = {{.name = "quota_bactor/slice", .value = ESC_QTY(0.5)}};
    esc_amount *held = NULL;
    size_t nheld = 0;
    rc = esc_actor_resize(cl, a, half, 1, 0, &held, &nheld, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "resize: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    assert_int_equal(nheld, 1);
    assert_int_equal(held[0].value, ESC_QTY(0.5));
    esc_amounts_free(held, nheld);
    share = actor_spin_share(cl, a);
    print_message("actor resized to 0.5 units of CPU=0.5: %.3f of a core\n", share);
    assert_true(share >= 0.2 && share <= 0.3);

    assert_int_equal(esc_actor_kill(cl, a, &st), ESC_OK);
    esc_actor_free(a);
    delete_on_node0(cl, "slice");
    esc_disconnect(cl);
}

/* The raylet's directory under the cpu controller: "escher-raylet-<pid>". */
static bool raylet_dir_exists(pid_t pid)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/fs/cgroup/cpu/escher-raylet-%d", (int)pid);
    DIR *d = opendir(path);
    if (d)
        closedir(d);
    return d != NULL;
}

static void test_cgroups_removed_at_stop(void **state)
{
    (void)state;
    pid_t pid = C.raylets[0].pid;
    assert_true(raylet_dir_exists(pid));
    h_stop(&C);
    assert_false(raylet_dir_exists(pid));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_says_whether_enforced),
        cmocka_unit_test(test_task_quota),
        cmocka_unit_test(test_actor_quota),
        cmocka_unit_test(test_backed_task_quota),
        cmocka_unit_test(test_backed_actor_resize_quota),
        cmocka_unit_test(test_cgroups_removed_at_stop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
