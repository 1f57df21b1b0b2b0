/* test_dead_nodes.c: what is left of a raylet killed with -9. The GCS declares it dead,
 * keeps it as DEAD for --dead-node-retention-ms, then removes it from the node table
 * (the log line of its death stays) and still refuses its id; the worker socket it
 * could not remove is removed by the next raylet that starts on the machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gcs.pb-c.h"
#include "harness.h"
#include "stale_sockets.h"

#define RETENTION_MS 1500

static h_cluster C;
static esc_client *CL;
static pid_t killed_pid;       /* raylet 1, killed by the first test */
static char killed_id[80];

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 1000);
    snprintf(C.gcs_extra, sizeof C.gcs_extra, "--dead-node-retention-ms %d", RETENTION_MS);
    if (h_start_cluster(&C, 2, NULL) != 0)
        return -1;
    CL = h_connect(&C, "dn", 0, false);
    return 0;
}

static int teardown(void **state)
{
    esc_disconnect(CL);
    return h_teardown(state);
}

/* The state of node `id` in the cluster status ("ALIVE", "DEAD", ...), "" when the
 * table does not list it. */
static void node_state(const char *id, char *out, size_t len)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(CL, &s, NULL), ESC_OK);
    out[0] = '\0';
    for (size_t i = 0; i < s->nnodes; i++)
        if (!strcmp(s->nodes[i].id, id))
            snprintf(out, len, "%s", s->nodes[i].state);
    esc_cluster_status_free(s);
}

static bool killed_is_dead(void *arg)
{
    (void)arg;
    char st[16];
    node_state(killed_id, st, sizeof st);
    return !strcmp(st, "DEAD");
}

static bool killed_is_gone(void *arg)
{
    (void)arg;
    char st[16];
    node_state(killed_id, st, sizeof st);
    return st[0] == '\0';
}

static void socket_path(pid_t pid, char *out, size_t len)
{
    snprintf(out, len, "%s/raylet-%d.sock", ESC_SOCKET_DIR, (int)pid);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static bool log_mentions(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, text) != NULL;
    fclose(f);
    return found;
}

/* RegisterNode naming the dead node's id, as its raylet would on coming back. */
static int register_again(esc_status *st)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_rpc_channel_set_secret(ch, ESC_RPC_DAEMON_KEY, C.daemon_key);
    Escher__NodeInfo info = ESCHER__NODE_INFO__INIT;
    info.node_id = killed_id;
    info.address = "127.0.0.1:1";
    Escher__RegisterNodeRequest req = ESCHER__REGISTER_NODE_REQUEST__INIT;
    req.node = &info;
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_GCS_REGISTER_NODE, &req.base, &rep, 5000, 0, st);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    esc_rpc_channel_free(ch);
    return rc;
}

static void test_dead_node_leaves_table(void **state)
{
    (void)state;
    killed_pid = C.raylets[1].pid;
    snprintf(killed_id, sizeof killed_id, "%s", C.raylets[1].node_id);
    h_kill(&C.raylets[1].pid, SIGKILL);

    assert_true(h_wait_until(killed_is_dead, NULL, 10000));
    double seen_dead = h_now_ms();
    esc_status st;
    esc_target t = ESC_NODE(killed_id);
    assert_int_equal(esc_resource_set(CL, "x", ESC_QTY(1), &t, NULL, &st), ESC_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "is dead"));

    /* Listed as DEAD for the retention (less the moments it took us to see it). */
    assert_true(h_wait_until(killed_is_gone, NULL, 10000));
    assert_true(h_now_ms() - seen_dead >= RETENTION_MS - 500);
    char log[300];
    snprintf(log, sizeof log, "%s/gcs.log", C.dir);
    assert_true(log_mentions(log, "declared dead"));
    assert_true(log_mentions(log, "removed from the node table"));

    /* Gone from the table, still dead: writes say so, waits do not wait for it, and its
     * raylet coming back is refused. */
    assert_int_equal(esc_resource_set(CL, "x", ESC_QTY(1), &t, NULL, &st), ESC_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "is dead"));
    const char *ids[] = {killed_id};
    assert_int_equal(esc_wait_applied(CL, 1, ids, 1, 2000, &st), ESC_OK);
    assert_int_equal(register_again(&st), ESC_FAILED_PRECONDITION);
    char now[16];
    node_state(C.raylets[0].node_id, now, sizeof now);
    assert_string_equal(now, "ALIVE");
}

/* A pid that no process has: a child of ours, reaped. */
static pid_t gone_pid(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return pid;
}

/* Leaves a socket file at path, as a raylet killed while listening does. */
static void leave_socket(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof a.sun_path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    close(fd);
}

/* Sockets of raylets that are gone (the one killed above, and one left here) do not
 * stay once a raylet started after them; the socket of a live raylet stays. (Another
 * raylet starting on this machine meanwhile may remove them first: the directory is
 * shared, so only what is left after the start is checked.) */
static void test_next_raylet_removes_stale_socket(void **state)
{
    (void)state;
    char dead_sock[160], left_sock[160], live_sock[160], new_sock[160];
    socket_path(killed_pid, dead_sock, sizeof dead_sock);
    socket_path(gone_pid(), left_sock, sizeof left_sock);
    socket_path(C.raylets[0].pid, live_sock, sizeof live_sock);
    leave_socket(left_sock);
    assert_true(exists(live_sock));

    assert_int_equal(h_raylet_start(&C, 2, NULL), 0);
    assert_false(exists(dead_sock));
    assert_false(exists(left_sock));
    assert_true(exists(live_sock));
    socket_path(C.raylets[2].pid, new_sock, sizeof new_sock);
    assert_true(exists(new_sock));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_node_leaves_table),
        cmocka_unit_test(test_next_raylet_removes_stale_socket),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
