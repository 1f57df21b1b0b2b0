/* test_security.c: the token is required, malformed and oversized messages get errors,
 * and no daemon dies from any of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcs.pb-c.h"
#include "harness.h"
#include "object.pb-c.h"
#include "raylet.pb-c.h"
#include "task.pb-c.h"

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    /* A token file with a trailing space and CRLF: the GCS, the raylet and the client all
     * read it as the token (runtime/token_file.h), so the cluster starts and serves. */
    FILE *f = fopen(C.token_file, "w");
    if (!f)
        return -1;
    fprintf(f, "%s \r\n", C.token);
    fclose(f);
    return h_start_cluster(&C, 1, NULL);
}

static void daemons_alive(void)
{
    assert_true(h_alive(C.gcs_pid));
    assert_true(h_alive(C.raylets[0].pid));
    /* And still serving. */
    esc_client *cl = h_connect(&C, NULL, 0, false);
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    assert_int_equal(s->nnodes, 1);
    esc_cluster_status_free(s);
    esc_disconnect(cl);
}

static void test_token_required(void **state)
{
    (void)state;
    esc_status st;
    esc_client *cl = NULL;
    esc_connect_opts o = {.address = C.gcs_addr, .token = "wrong", .session_dir = C.dir};
    assert_int_equal(esc_connect(&o, &cl, &st), ESC_UNAUTHENTICATED);
    assert_null(cl);

    /* No token at all, straight over the binding. */
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, NULL);
    Escher__GetClusterStatusRequest req = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    ProtobufCMessage *rep = NULL;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_GCS_GET_CLUSTER_STATUS, &req.base, &rep, 5000, 0, &st),
        ESC_UNAUTHENTICATED);
    esc_rpc_channel_free(ch);

    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    ch = esc_rpc_channel_new(addr, "wrong");
    Escher__GetNodeStateRequest nreq = ESCHER__GET_NODE_STATE_REQUEST__INIT;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_RAYLET_GET_NODE_STATE, &nreq.base, &rep, 5000, 0, &st),
        ESC_UNAUTHENTICATED);
    esc_rpc_channel_free(ch);
    daemons_alive();
}

static void send_garbage(const char *addr, const ProtobufCServiceDescriptor *svc)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    static const unsigned char junk[][8] = {
        {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, /* endless varint */
        {0x0a, 0x7f, 'a', 'b'},                           /* string longer than the data */
        {0x0b, 0x00, 0x00},                               /* start group */
        {0x12, 0x05, 0x01},                               /* truncated submessage */
    };
    for (size_t m = 0; m < ESC_RPC_METHOD_COUNT; m++) {
        const esc_rpc_method *method = esc_rpc_methods[m];
        if (method->svc != svc)
            continue;
        if (method == &ESC_M_GCS_SUBSCRIBE)
            continue; /* a stream; covered by the unary methods' shared path */
        for (size_t j = 0; j < sizeof junk / sizeof junk[0]; j++) {
            esc_status st;
            int rc = esc_rpc_call_bytes(ch, method, junk[j], sizeof junk[j], 5000, &st);
            assert_int_equal(rc, ESC_INVALID_ARGUMENT);
            assert_non_null(strstr(st.message, "malformed"));
        }
    }
    esc_rpc_channel_free(ch);
}

static void test_malformed_messages(void **state)
{
    (void)state;
    send_garbage(C.gcs_addr, &escher__gcs__descriptor);
    send_garbage(C.gcs_addr, &escher__object_directory__descriptor);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    send_garbage(addr, &escher__raylet__descriptor);
    send_garbage(addr, &escher__task_service__descriptor);
    daemons_alive();
}

static void test_oversized_message(void **state)
{
    (void)state;
    size_t big = 70u << 20;
    unsigned char *buf = calloc(1, big);
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_status st;
    assert_int_equal(esc_rpc_call_bytes(ch, &ESC_M_GCS_KV_PUT, buf, big, 20000, &st),
                     ESC_RESOURCE_EXHAUSTED);
    esc_rpc_channel_free(ch);
    free(buf);
    daemons_alive();
}

static void test_unknown_job_and_bad_namespace(void **state)
{
    (void)state;
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    Escher__UpdateResourcesRequest req = ESCHER__UPDATE_RESOURCES_REQUEST__INIT;
    req.job_id = "0000000000000000";
    Escher__ResourceOp op = ESCHER__RESOURCE_OP__INIT;
    op.name = "x";
    op.value = 1;
    Escher__ResourceOp *ops[] = {&op};
    req.ops = ops;
    req.n_ops = 1;
    ProtobufCMessage *rep = NULL;
    esc_status st;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_GCS_UPDATE_RESOURCES, &req.base, &rep, 5000, 0, &st),
        ESC_FAILED_PRECONDITION);
    esc_rpc_channel_free(ch);

    esc_client *cl = NULL;
    esc_connect_opts o = {.address = C.gcs_addr, .token = C.token, .namespace_ = "no/slashes",
                          .session_dir = C.dir};
    assert_int_equal(esc_connect(&o, &cl, &st), ESC_INVALID_ARGUMENT);
    daemons_alive();
}

/* The token file ends in a space (setup): the raylet registered with the GCS (one node),
 * the GCS accepts the trimmed token, and a client reading the session's token file too. */
static void test_token_file_trailing_space(void **state)
{
    (void)state;
    daemons_alive();
    esc_client *cl = NULL;
    esc_status st = {0};
    esc_connect_opts o = {.address = C.gcs_addr, .session_dir = C.dir};
    assert_int_equal(esc_connect(&o, &cl, &st), ESC_OK);
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    assert_int_equal(s->nnodes, 1);
    esc_cluster_status_free(s);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_file_trailing_space),
        cmocka_unit_test(test_token_required),
        cmocka_unit_test(test_malformed_messages),
        cmocka_unit_test(test_oversized_message),
        cmocka_unit_test(test_unknown_job_and_bad_namespace),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
