/* test_redis_faults.c: a GCS on a Redis that hangs (SIGSTOP) or dies (SIGKILL).
 *
 * While Redis is paused, reads (status, KV gets, `escher status`) answer at once,
 * heartbeats go on (no node is declared dead although the pause outlasts the node
 * timeout), and a write fails UNAVAILABLE after the GCS's --storage-timeout-ms. Once
 * Redis resumes, writes succeed again, and a restarted GCS finds every acknowledged
 * one but not the failed one (Redis applied it late; the GCS undid it). With Redis dead, a silent raylet is still declared dead about one node timeout
 * after it stopped, and status keeps answering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define NODE_TIMEOUT_MS 1500
#define STORAGE_TIMEOUT_MS 1000
#define READ_LIMIT_MS 1000.0

static h_cluster C;

/* Status, timed; fails the test when it does not answer within READ_LIMIT_MS. The
 * state of raylet i goes into state (16 bytes) when it is not NULL. */
static double timed_status(esc_client *cl, int i, char *state)
{
    esc_cluster_status *s = NULL;
    double t0 = h_now_ms();
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    double took = h_now_ms() - t0;
    assert_true(took < READ_LIMIT_MS);
    for (size_t n = 0; state && n < s->nnodes; n++) {
        if (strcmp(s->nodes[n].id, C.raylets[i].node_id) == 0)
            snprintf(state, 16, "%s", s->nodes[n].state);
    }
    esc_cluster_status_free(s);
    return took;
}

/* `escher status` as a user runs it, timed. Returns its exit status. */
static int cli_status(double *took)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "ESCHER_ADDRESS=%s ESCHER_TOKEN=%s %s/client/escher status >/dev/null 2>&1",
             C.gcs_addr, C.token, getenv("ESCHER_BIN_DIR") ? getenv("ESCHER_BIN_DIR") : "build");
    double t0 = h_now_ms();
    int rc = system(cmd);
    *took = h_now_ms() - t0;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

typedef struct {
    esc_client *cl;
    int raylet;
    const char *name;
    int64_t total;
} probe;

static bool node_dead(void *p)
{
    const probe *pr = p;
    char state[16] = "";
    timed_status(pr->cl, pr->raylet, state);
    return strcmp(state, "DEAD") == 0;
}

static bool total_is(void *p)
{
    const probe *pr = p;
    esc_cluster_status *s = NULL;
    if (esc_get_cluster_status(pr->cl, &s, NULL) != ESC_OK)
        return false;
    bool ok = false;
    for (size_t n = 0; n < s->nnodes; n++) {
        const esc_resource_info *r = esc_node_resource(&s->nodes[n], pr->name);
        if (strcmp(s->nodes[n].id, C.raylets[pr->raylet].node_id) == 0 && r)
            ok = r->total == pr->total;
    }
    esc_cluster_status_free(s);
    return ok;
}

static void assert_kv(esc_client *cl, const char *want)
{
    void *v = NULL;
    size_t len = 0;
    double t0 = h_now_ms();
    assert_int_equal(esc_kv_get(cl, "rf", "key", &v, &len, NULL), ESC_OK);
    assert_true(h_now_ms() - t0 < READ_LIMIT_MS);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(v, want, len);
    free(v);
}

/* Redis paused for longer than the node timeout: reads and heartbeats go on; the
 * write fails on its deadline and is not acknowledged. */
static void paused_redis(esc_client *cl)
{
    esc_target all = ESC_ALL_NODES;
    uint64_t seq;
    assert_int_equal(kill(C.redis_pid, SIGSTOP), 0);
    double paused_at = h_now_ms();

    double took = timed_status(cl, 0, NULL);
    print_message("status with Redis paused: %.1f ms\n", took);
    assert_kv(cl, "v1");
    assert_int_equal(cli_status(&took), 0);
    print_message("`escher status` with Redis paused: %.1f ms\n", took);
    assert_true(took < READ_LIMIT_MS);

    esc_status st;
    double t0 = h_now_ms();
    assert_int_equal(esc_resource_set(cl, "a", ESC_QTY(2), &all, &seq, &st), ESC_UNAVAILABLE);
    took = h_now_ms() - t0;
    print_message("write with Redis paused: %s after %.1f ms (%s)\n",
                  esc_status_name(st.code), took, st.message);
    assert_true(took >= STORAGE_TIMEOUT_MS - 100 && took < 3 * STORAGE_TIMEOUT_MS);

    /* Heartbeats reach the GCS all along: observed over a window well past the node
     * timeout, both raylets stay alive and every status answers at once. */
    double worst = 0;
    while (h_now_ms() - paused_at < NODE_TIMEOUT_MS * 2) {
        for (int i = 0; i < 2; i++) {
            char state[16] = "";
            double t = timed_status(cl, i, state);
            worst = t > worst ? t : worst;
            assert_string_equal(state, "ALIVE");
        }
        usleep(50 * 1000);
    }
    print_message("worst status over %d ms of pause: %.1f ms\n", NODE_TIMEOUT_MS * 2, worst);
    assert_int_equal(kill(C.redis_pid, SIGCONT), 0);
}

static void test_redis_paused_then_dead(void **state)
{
    (void)state;
    h_init(&C, NODE_TIMEOUT_MS);
    snprintf(C.gcs_extra, sizeof C.gcs_extra, "--storage-timeout-ms %d", STORAGE_TIMEOUT_MS);
    assert_int_equal(h_redis_start(&C), 0);
    assert_int_equal(h_start_cluster(&C, 2, NULL), 0);
    esc_client *cl = h_connect(&C, "rf", 0, false);
    esc_target all = ESC_ALL_NODES;
    uint64_t seq;
    assert_int_equal(esc_resource_set(cl, "a", ESC_QTY(1), &all, &seq, NULL), ESC_OK);
    assert_int_equal(esc_kv_put(cl, "rf", "key", "v1", 2, true, NULL, NULL), ESC_OK);

    paused_redis(cl);

    /* Resumed: writes succeed again. This one is acknowledged after the failed one's
     * late reply was read (commits go in order), so by now Redis has applied that one
     * and the GCS has undone it. */
    assert_int_equal(esc_kv_put(cl, "rf", "key", "v2", 2, true, NULL, NULL), ESC_OK);

    /* A GCS restarted on the same Redis has everything acknowledged, and not the
     * write that failed. */
    h_kill(&C.gcs_pid, SIGKILL);
    assert_int_equal(h_gcs_start(&C), 0);
    assert_kv(cl, "v2");
    probe p1 = {cl, 0, "rf/a", ESC_QTY(1)};
    assert_true(h_wait_until(total_is, &p1, 5000));
    assert_int_equal(esc_resource_set(cl, "a", ESC_QTY(3), &all, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    probe p3 = {cl, 0, "rf/a", ESC_QTY(3)};
    assert_true(h_wait_until(total_is, &p3, 5000));

    /* Redis dies, then a raylet: it is declared dead about one node timeout after
     * its last heartbeat, the other stays alive, and status answers throughout. */
    h_kill(&C.redis_pid, SIGKILL);
    double t0 = h_now_ms();
    assert_int_equal(esc_resource_set(cl, "a", ESC_QTY(4), &all, &seq, NULL), ESC_UNAVAILABLE);
    print_message("write with Redis dead: failed after %.1f ms\n", h_now_ms() - t0);
    h_kill(&C.raylets[1].pid, SIGKILL);
    double killed_at = h_now_ms();
    probe dead = {cl, 1, NULL, 0};
    assert_true(h_wait_until(node_dead, &dead, NODE_TIMEOUT_MS + 2000));
    double after = h_now_ms() - killed_at;
    print_message("node declared dead %.0f ms after its raylet was killed (timeout %d ms)\n",
                  after, NODE_TIMEOUT_MS);
    assert_true(after < NODE_TIMEOUT_MS + 1000);
    char alive[16] = "";
    timed_status(cl, 0, alive);
    assert_string_equal(alive, "ALIVE");
    double took;
    assert_int_equal(cli_status(&took), 0);
    print_message("`escher status` with Redis dead: %.1f ms\n", took);
    assert_true(took < READ_LIMIT_MS);

    esc_disconnect(cl);
    h_stop(&C);
    assert_int_equal(h_unclean_exits(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redis_paused_then_dead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
