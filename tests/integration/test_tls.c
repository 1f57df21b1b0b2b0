/* test_tls.c: a cluster whose processes share ESCHER_TLS_* talks TLS end to end (GCS,
 * raylet, SDK), and a plaintext client cannot talk to it. */
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

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=escher-test "
             "-addext subjectAltName=IP:127.0.0.1,DNS:localhost "
             "-keyout %s/key.pem -out %s/cert.pem >/dev/null 2>&1",
             C.dir, C.dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_tls: openssl could not make a certificate\n");
        return -1;
    }
    char path[320];
    snprintf(path, sizeof path, "%s/cert.pem", C.dir);
    setenv("ESCHER_TLS_CERT", path, 1);
    setenv("ESCHER_TLS_CA", path, 1); /* self-signed: the certificate is its own root */
    snprintf(path, sizeof path, "%s/key.pem", C.dir);
    setenv("ESCHER_TLS_KEY", path, 1);
    return h_start_cluster(&C, 1, NULL);
}

static void test_tls_cluster_works(void **state)
{
    (void)state;
    /* The raylet registered over TLS (setup), and the SDK writes and waits over TLS. */
    esc_client *cl = h_connect(&C, "tls", 0, false);
    uint64_t seq;
    assert_int_equal(esc_resource_set(cl, "secure", ESC_QTY(1), NULL, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    esc_disconnect(cl);
}

static void test_plaintext_client_refused(void **state)
{
    (void)state;
    char *ca = strdup(getenv("ESCHER_TLS_CA"));
    unsetenv("ESCHER_TLS_CA");
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    Escher__GetClusterStatusRequest req = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    ProtobufCMessage *rep = NULL;
    esc_status st;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_GCS_GET_CLUSTER_STATUS, &req.base, &rep, 2000, 0, &st),
        ESC_UNAVAILABLE);
    esc_rpc_channel_free(ch);
    setenv("ESCHER_TLS_CA", ca, 1);
    free(ca);
}

static void test_wrong_root_refused(void **state)
{
    (void)state;
    char cmd[1024], other[320];
    snprintf(other, sizeof other, "%s/other.pem", C.dir);
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=impostor "
             "-addext subjectAltName=IP:127.0.0.1 -keyout %s/other.key -out %s >/dev/null 2>&1",
             C.dir, other);
    assert_int_equal(system(cmd), 0);
    char *ca = strdup(getenv("ESCHER_TLS_CA"));
    setenv("ESCHER_TLS_CA", other, 1);
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    Escher__GetClusterStatusRequest req = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    ProtobufCMessage *rep = NULL;
    esc_status st;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_GCS_GET_CLUSTER_STATUS, &req.base, &rep, 2000, 0, &st),
        ESC_UNAVAILABLE);
    esc_rpc_channel_free(ch);
    setenv("ESCHER_TLS_CA", ca, 1);
    free(ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_cluster_works),
        cmocka_unit_test(test_plaintext_client_refused),
        cmocka_unit_test(test_wrong_root_refused),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
