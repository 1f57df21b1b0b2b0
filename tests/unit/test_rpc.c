/* test_rpc.c: the generic protobuf-c/gRPC binding: unary calls, server streams, the
 * token, daemon-only calls and the daemon key, deadlines, cancellation reaching the handler, retry until a server comes up,
 * malformed requests, and clean shutdown with calls still held. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_calls.h"
#include "gcs.pb-c.h"
#include "loop.h"
#include "object.pb-c.h"
#include "raylet.pb-c.h"
#include "rpc.h"
#include "task.pb-c.h"

typedef struct {
    esc_loop *loop;
    esc_rpc_server *srv;
    pthread_t thread;
    char addr[64];
    esc_rpc_ctx *held;       /* a WaitApplied call the server never answers */
    int cancelled;           /* set on the loop when the held call's peer went away */
    int flaked;              /* KvGet "flaky" has answered UNAVAILABLE once */
} fixture;

static void *run_loop(void *p)
{
    esc_loop_run(p);
    return NULL;
}

/* KvGet echoes the key back as the value ("flaky": after one UNAVAILABLE). */
static void on_kv_get(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    const Escher__KvGetRequest *req = (const Escher__KvGetRequest *)msg;
    fixture *f = ud;
    /* Atomic: the test reads it on its own thread once the reply came (through gRPC,
     * whose synchronisation ThreadSanitizer cannot see). */
    if (!strcmp(req->key, "flaky") && !__atomic_fetch_add(&f->flaked, 1, __ATOMIC_SEQ_CST)) {
        esc_rpc_finish(call, ESC_UNAVAILABLE, "not yet");
        return;
    }
    if (!strcmp(req->key, "fail")) {
        esc_rpc_finish(call, ESC_NOT_FOUND, "no such key");
        return;
    }
    /* "who": whether the call came with the daemon key. */
    const char *value = strcmp(req->key, "who") ? req->key
                        : esc_rpc_ctx_from_daemon(call) ? "daemon" : "client";
    Escher__KvGetReply rep = ESCHER__KV_GET_REPLY__INIT;
    rep.found = true;
    rep.value.data = (uint8_t *)value;
    rep.value.len = strlen(value);
    esc_rpc_reply(call, &rep.base);
}

/* Subscribe streams from_seq events numbered 1..from_seq, then ends OK. Every other
 * event goes packed beforehand (esc_rpc_packed), freed as soon as it is queued. */
static void on_subscribe(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    (void)ud;
    const Escher__SubscribeRequest *req = (const Escher__SubscribeRequest *)msg;
    for (uint64_t i = 1; i <= req->from_seq; i++) {
        Escher__Event ev = ESCHER__EVENT__INIT;
        ev.seq = i;
        if (i % 2) {
            assert_int_equal(esc_rpc_send(call, &ev.base), 0);
        } else {
            esc_rpc_packed *p = esc_rpc_packed_new(&ev.base);
            assert_int_equal(esc_rpc_send_packed(call, p), 0);
            esc_rpc_packed_free(p);
        }
    }
    esc_rpc_finish(call, ESC_OK, NULL);
}

static void on_held_cancel(esc_rpc_ctx *call, void *ud)
{
    fixture *f = ud;
    __atomic_store_n(&f->cancelled, 1, __ATOMIC_SEQ_CST);
    f->held = NULL;
    esc_rpc_finish(call, ESC_CANCELLED, NULL);
}

static void on_wait(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    (void)msg;
    fixture *f = ud;
    f->held = call;
    esc_rpc_ctx_on_cancel(call, on_held_cancel, f);
}

/* KvGet of a key starting "d:" is daemon-only here. */
static bool daemon_key_get(const ProtobufCMessage *req)
{
    return !strncmp(((const Escher__KvGetRequest *)req)->key, "d:", 2);
}

/* A handle put together by hand past its service's methods: what a generated handle can
 * never be, so the runtime's checks of handles are tested with it. */
static const esc_rpc_method past_end = {&escher__gcs__descriptor, 1000};

static const esc_rpc_daemon_call daemon_calls[] = {
    {&ESC_M_GCS_KV_GET, daemon_key_get, "a daemon KvGet"},
    {&ESC_M_GCS_KV_DEL, NULL, NULL}, /* not served here: skipped */
};

static esc_rpc_server *start_server(fixture *f, const char *addr)
{
    char err[256];
    esc_rpc_server *s = esc_rpc_server_new(addr, "sekrit", esc_loop_post, f->loop, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(esc_rpc_server_handle(s, &ESC_M_GCS_KV_GET, on_kv_get, f), 0);
    assert_int_equal(esc_rpc_server_handle(s, &ESC_M_GCS_SUBSCRIBE, on_subscribe, f), 0);
    assert_int_equal(esc_rpc_server_handle(s, &ESC_M_GCS_WAIT_APPLIED, on_wait, f), 0);
    static const esc_rpc_daemon_call bad[] = {{&past_end, NULL, NULL}, {NULL, NULL, NULL}};
    assert_int_equal(esc_rpc_server_daemon_calls(s, "dkey", bad, 1), -1);
    assert_int_equal(esc_rpc_server_daemon_calls(s, "dkey", bad + 1, 1), -1);
    assert_int_equal(esc_rpc_server_daemon_calls(s, "", daemon_calls, 2), -1);
    assert_int_equal(esc_rpc_server_daemon_calls(s, "dkey", daemon_calls, 2), 0);
    assert_int_equal(esc_rpc_server_start(s), 0);
    return s;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->loop = esc_loop_new();
    f->srv = start_server(f, "127.0.0.1:0");
    snprintf(f->addr, sizeof f->addr, "127.0.0.1:%d", esc_rpc_server_port(f->srv));
    pthread_create(&f->thread, NULL, run_loop, f->loop);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    esc_loop_stop(f->loop);
    pthread_join(f->thread, NULL);
    if (f->held)
        esc_rpc_finish(f->held, ESC_UNAVAILABLE, "bye");
    esc_rpc_server_free(f->srv);
    esc_loop_drain(f->loop);
    esc_loop_free(f->loop);
    free(f);
    return 0;
}

static int kv_get(esc_rpc_channel *ch, const char *key, char *out, size_t outlen, esc_status *st)
{
    Escher__KvGetRequest req = ESCHER__KV_GET_REQUEST__INIT;
    req.key = (char *)key;
    Escher__KvGetReply *rep = NULL;
    int rc =
        esc_rpc_call(ch, &ESC_M_GCS_KV_GET, &req.base, (ProtobufCMessage **)&rep, 2000, 0, st);
    if (rc == ESC_OK) {
        snprintf(out, outlen, "%.*s", (int)rep->value.len, rep->value.data);
        protobuf_c_message_free_unpacked(&rep->base, NULL);
    }
    return rc;
}

static void test_unary(void **state)
{
    fixture *f = *state;
    esc_rpc_channel *ch = esc_rpc_channel_new(f->addr, "sekrit");
    char out[64];
    esc_status st;
    for (int i = 0; i < 100; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(kv_get(ch, key, out, sizeof out, &st), ESC_OK);
        assert_string_equal(out, key);
    }
    assert_int_equal(kv_get(ch, "fail", out, sizeof out, &st), ESC_NOT_FOUND);
    assert_string_equal(st.message, "no such key");
    /* A method the server did not register. */
    Escher__KvDelRequest del = ESCHER__KV_DEL_REQUEST__INIT;
    ProtobufCMessage *rep = NULL;
    assert_int_equal(esc_rpc_call(ch, &ESC_M_GCS_KV_DEL, &del.base, &rep, 2000, 0, &st),
                     ESC_UNIMPLEMENTED);
    /* Invalid handles: refused before any call is made. */
    assert_int_equal(esc_rpc_call(ch, &past_end, &del.base, &rep, 2000, 0, &st),
                     ESC_UNIMPLEMENTED);
    assert_int_equal(esc_rpc_call(ch, NULL, &del.base, &rep, 2000, 0, &st), ESC_UNIMPLEMENTED);
    assert_null(esc_rpc_stream_open(ch, &past_end, &del.base, &st));
    assert_int_equal(st.code, ESC_UNIMPLEMENTED);
    esc_rpc_channel_free(ch);
}

static void test_token(void **state)
{
    fixture *f = *state;
    char out[64];
    esc_status st;
    esc_rpc_channel *none = esc_rpc_channel_new(f->addr, NULL);
    assert_int_equal(kv_get(none, "x", out, sizeof out, &st), ESC_UNAUTHENTICATED);
    esc_rpc_channel_free(none);
    esc_rpc_channel *wrong = esc_rpc_channel_new(f->addr, "sekriT");
    assert_int_equal(kv_get(wrong, "x", out, sizeof out, &st), ESC_UNAUTHENTICATED);
    esc_rpc_channel_free(wrong);
}

/* A daemon-only call needs the daemon key: PERMISSION_DENIED without it, or with a
 * wrong one, naming the call; other calls go through and learn who called. */
static void test_daemon_calls(void **state)
{
    fixture *f = *state;
    char out[64];
    esc_status st;
    esc_rpc_channel *ch = esc_rpc_channel_new(f->addr, "sekrit");
    assert_int_equal(kv_get(ch, "plain", out, sizeof out, &st), ESC_OK);
    assert_int_equal(kv_get(ch, "who", out, sizeof out, &st), ESC_OK);
    assert_string_equal(out, "client");
    assert_int_equal(kv_get(ch, "d:x", out, sizeof out, &st), ESC_PERMISSION_DENIED);
    assert_string_equal(st.message, "a daemon KvGet is for escher daemons only: it needs the "
                                    "daemon key (x-escher-daemon)");
    esc_rpc_channel_set_secret(ch, ESC_RPC_DAEMON_KEY, "dkeY");
    assert_int_equal(kv_get(ch, "d:x", out, sizeof out, &st), ESC_PERMISSION_DENIED);
    esc_rpc_channel_set_secret(ch, ESC_RPC_DAEMON_KEY, "dkey");
    esc_rpc_channel_set_secret(ch, ESC_RPC_OPERATOR_KEY, "op"); /* a second secret slot */
    assert_int_equal(kv_get(ch, "d:x", out, sizeof out, &st), ESC_OK);
    assert_string_equal(out, "d:x");
    assert_int_equal(kv_get(ch, "who", out, sizeof out, &st), ESC_OK);
    assert_string_equal(out, "daemon");
    esc_rpc_channel_set_secret(ch, ESC_RPC_DAEMON_KEY, NULL);
    assert_int_equal(kv_get(ch, "d:x", out, sizeof out, &st), ESC_PERMISSION_DENIED);
    esc_rpc_channel_free(ch);
}

static bool packed_is_forward(const Escher__TaskSpec *spec)
{
    uint8_t buf[512];
    size_t len = protobuf_c_message_pack(&spec->base, buf);
    return esc_daemon_spec_is_forward(buf, len);
}

/* The batch check reads the packed specs: each forward marker alone counts, what a
 * client sets (reply_to for an actor call) does not, nor do bytes that protobuf-c
 * refuses to unpack as well (the handler rejects that spec). */
static void test_spec_is_forward(void **state)
{
    (void)state;
    Escher__TaskSpec spec = ESCHER__TASK_SPEC__INIT;
    spec.task_id = "t1";
    spec.job_id = "j1";
    spec.reply_to = "127.0.0.1:5";
    spec.num_returns = 3;
    assert_false(packed_is_forward(&spec));
    spec.spill_hops = 2;
    assert_true(packed_is_forward(&spec));
    spec.spill_hops = 0;
    spec.origin = "node-a";
    assert_true(packed_is_forward(&spec));
    spec.origin = "";
    spec.forwarded_to = "node-b";
    assert_true(packed_is_forward(&spec));
    static const uint8_t junk[] = {0xff, 0xff, 0xff};
    assert_false(esc_daemon_spec_is_forward(junk, sizeof junk));
    /* A group (wire type 3) before forwarded_to (field 20): protobuf-c refuses the whole
     * spec, so what follows is never read. */
    static const uint8_t group[] = {0xfb, 0x01, 0xfc, 0x01, 0xa2, 0x01, 0x01, 'x'};
    assert_false(esc_daemon_spec_is_forward(group, sizeof group));
    assert_null(escher__task_spec__unpack(NULL, sizeof group, group));
    static const uint8_t whole[] = {0x0a, 0x01, 'a', 0xa2, 0x01, 0x01, 'x'};
    assert_true(esc_daemon_spec_is_forward(whole, sizeof whole));
}

static void test_stream(void **state)
{
    fixture *f = *state;
    esc_rpc_channel *ch = esc_rpc_channel_new(f->addr, "sekrit");
    Escher__SubscribeRequest req = ESCHER__SUBSCRIBE_REQUEST__INIT;
    req.from_seq = 500;
    esc_status st;
    esc_rpc_stream *s = esc_rpc_stream_open(ch, &ESC_M_GCS_SUBSCRIBE, &req.base, &st);
    assert_non_null(s);
    ProtobufCMessage *m;
    uint64_t want = 1;
    while (esc_rpc_stream_next(s, &m, &st) == 1) {
        assert_int_equal(((Escher__Event *)m)->seq, want++); /* in order, none lost */
        protobuf_c_message_free_unpacked(m, NULL);
    }
    assert_int_equal(want, 501);
    assert_int_equal(st.code, ESC_OK);
    esc_rpc_stream_free(s);
    esc_rpc_channel_free(ch);
}

static void test_deadline_and_cancel_reach_handler(void **state)
{
    fixture *f = *state;
    esc_rpc_channel *ch = esc_rpc_channel_new(f->addr, "sekrit");
    Escher__WaitAppliedRequest req = ESCHER__WAIT_APPLIED_REQUEST__INIT;
    ProtobufCMessage *rep = NULL;
    esc_status st;
    __atomic_store_n(&f->cancelled, 0, __ATOMIC_SEQ_CST);
    assert_int_equal(esc_rpc_call(ch, &ESC_M_GCS_WAIT_APPLIED, &req.base, &rep, 200, 0, &st),
                     ESC_DEADLINE_EXCEEDED);
    for (int i = 0; i < 200 && !__atomic_load_n(&f->cancelled, __ATOMIC_SEQ_CST); i++)
        usleep(10000);
    assert_int_equal(__atomic_load_n(&f->cancelled, __ATOMIC_SEQ_CST), 1);
    esc_rpc_channel_free(ch);
}

/* The generated method handles (proto/gen_methods.c): each names, by service and index,
 * the method whose proto name it carries, and together they are every method of every
 * service, once. The services are listed here by hand, apart from the generator's list,
 * so that a service the generator leaves out shows as a count short. */
static void test_method_handles(void **state)
{
    (void)state;
    static const ProtobufCServiceDescriptor *const services[] = {
        &escher__gcs__descriptor,          &escher__raylet__descriptor,
        &escher__object_store__descriptor, &escher__object_directory__descriptor,
        &escher__task_service__descriptor,
    };
    const size_t nservices = sizeof services / sizeof services[0];
    size_t total = 0;
    for (size_t i = 0; i < nservices; i++)
        total += services[i]->n_methods;
    assert_int_equal(ESC_RPC_METHOD_COUNT, total);
    for (size_t i = 0; i < ESC_RPC_METHOD_COUNT; i++) {
        const esc_rpc_method *m = esc_rpc_methods[i];
        assert_true(esc_rpc_method_valid(m));
        size_t k = 0;
        while (k < nservices && services[k] != m->svc)
            k++;
        assert_true(k < nservices);
        const ProtobufCMethodDescriptor *md = esc_rpc_method_desc(m);
        assert_ptr_equal(protobuf_c_service_descriptor_get_method_by_name(m->svc, md->name),
                         md);
        assert_string_equal(esc_rpc_method_name(m), md->name);
        for (size_t j = 0; j < i; j++)
            assert_false(esc_rpc_methods[j]->svc == m->svc &&
                         esc_rpc_methods[j]->index == m->index);
    }
    /* The names: ESC_M_<service>_<method>, in upper snake case. */
    assert_ptr_equal(ESC_M_GCS_SUBSCRIBE.svc, &escher__gcs__descriptor);
    assert_string_equal(esc_rpc_method_name(&ESC_M_GCS_SUBSCRIBE), "Subscribe");
    assert_string_equal(esc_rpc_method_name(&ESC_M_GCS_GET_CLUSTER_STATUS), "GetClusterStatus");
    assert_string_equal(esc_rpc_method_name(&ESC_M_GCS_KV_PUT), "KvPut");
    assert_ptr_equal(ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS.svc,
                     &escher__object_directory__descriptor);
    assert_string_equal(esc_rpc_method_name(&ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS),
                        "GetLocations");
    assert_string_equal(esc_rpc_method_name(&ESC_M_RAYLET_STREAM_LOGS), "StreamLogs");
    assert_string_equal(esc_rpc_method_name(&ESC_M_OBJECT_STORE_PULL), "Pull");
    assert_string_equal(esc_rpc_method_name(&ESC_M_TASK_SERVICE_SUBMIT_TASKS), "SubmitTasks");
    /* What the runtime prints for a handle that is not one. */
    assert_false(esc_rpc_method_valid(&past_end));
    assert_false(esc_rpc_method_valid(NULL));
    assert_string_equal(esc_rpc_method_name(&past_end), "(invalid method)");
}

static void test_malformed_request(void **state)
{
    fixture *f = *state;
    esc_rpc_channel *ch = esc_rpc_channel_new(f->addr, "sekrit");
    const unsigned char junk[] = {0x0a, 0x7f, 'a'};
    esc_status st;
    assert_int_equal(esc_rpc_call_bytes(ch, &ESC_M_GCS_KV_GET, junk, sizeof junk, 2000, &st),
                     ESC_INVALID_ARGUMENT);
    char out[16];
    assert_int_equal(kv_get(ch, "still-up", out, sizeof out, &st), ESC_OK);
    esc_rpc_channel_free(ch);
}

static void test_unavailable_and_retry(void **state)
{
    (void)state;
    int port;
    {
        /* Find a free port by binding a server and freeing it. */
        esc_loop *l = esc_loop_new();
        char err[128];
        esc_rpc_server *s = esc_rpc_server_new("127.0.0.1:0", NULL, esc_loop_post, l, err, sizeof err);
        port = esc_rpc_server_port(s);
        esc_rpc_server_free(s);
        esc_loop_free(l);
    }
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, "sekrit");
    char out[16];
    esc_status st;
    /* Not idempotent: fails fast. */
    assert_int_equal(kv_get(ch, "x", out, sizeof out, &st), ESC_UNAVAILABLE);

    /* Idempotent: waits for the server that comes up 300 ms later. */
    fixture g = {0};
    g.loop = esc_loop_new();
    pthread_create(&g.thread, NULL, run_loop, g.loop);
    Escher__KvGetRequest req = ESCHER__KV_GET_REQUEST__INIT;
    req.key = "late";
    Escher__KvGetReply *rep = NULL;
    pid_t starter = 0;
    (void)starter;
    usleep(300000);
    g.srv = start_server(&g, addr);
    int rc = esc_rpc_call(ch, &ESC_M_GCS_KV_GET, &req.base, (ProtobufCMessage **)&rep, 5000,
                          ESC_RPC_IDEMPOTENT, &st);
    assert_int_equal(rc, ESC_OK);
    protobuf_c_message_free_unpacked(&rep->base, NULL);
    esc_rpc_channel_free(ch);
    esc_loop_stop(g.loop);
    pthread_join(g.thread, NULL);
    esc_rpc_server_free(g.srv);
    esc_loop_drain(g.loop);
    esc_loop_free(g.loop);
}

/* An idempotent call retried after UNAVAILABLE sends its whole request again (gRPC
 * takes the bytes of a sent message, so each attempt needs its own copy). */
static void test_retry_sends_the_request_again(void **state)
{
    fixture *f = *state;
    esc_rpc_channel *ch = esc_rpc_channel_new(f->addr, "sekrit");
    Escher__KvGetRequest req = ESCHER__KV_GET_REQUEST__INIT;
    req.key = "flaky";
    Escher__KvGetReply *rep = NULL;
    esc_status st;
    int rc = esc_rpc_call(ch, &ESC_M_GCS_KV_GET, &req.base, (ProtobufCMessage **)&rep, 5000,
                          ESC_RPC_IDEMPOTENT, &st);
    assert_int_equal(rc, ESC_OK);
    assert_int_equal(__atomic_load_n(&f->flaked, __ATOMIC_SEQ_CST), 2);
    assert_int_equal(rep->value.len, strlen("flaky"));
    assert_memory_equal(rep->value.data, "flaky", strlen("flaky"));
    protobuf_c_message_free_unpacked(&rep->base, NULL);
    esc_rpc_channel_free(ch);
}

static void test_bind_conflict(void **state)
{
    fixture *f = *state;
    char err[256] = "";
    esc_rpc_server *s = esc_rpc_server_new(f->addr, NULL, esc_loop_post, f->loop, err, sizeof err);
    assert_null(s);
    assert_non_null(strstr(err, "cannot listen"));
}

/* A registration that fails (a handle past its service's methods, the same method twice)
 * returns -1, and the server then refuses to start: no method silently UNIMPLEMENTED. */
static void test_failed_registration_refuses_start(void **state)
{
    fixture *f = *state;
    char err[256] = "";
    esc_rpc_server *s = esc_rpc_server_new("127.0.0.1:0", NULL, esc_loop_post, f->loop, err,
                                           sizeof err);
    assert_non_null(s);
    assert_int_equal(esc_rpc_server_handle(s, &ESC_M_GCS_KV_GET, on_kv_get, f), 0);
    assert_int_equal(esc_rpc_server_handle(s, &past_end, on_wait, f), -1);
    assert_int_equal(esc_rpc_server_handle(s, NULL, on_wait, f), -1);
    assert_int_equal(esc_rpc_server_handle(s, &ESC_M_GCS_KV_GET, on_kv_get, f), -1);
    assert_int_equal(esc_rpc_server_start(s), -1);
    esc_rpc_server_free(s);

    /* Only the duplicate: refused too. */
    s = esc_rpc_server_new("127.0.0.1:0", NULL, esc_loop_post, f->loop, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(esc_rpc_server_handle(s, &ESC_M_GCS_KV_GET, on_kv_get, f), 0);
    assert_int_equal(esc_rpc_server_handle(s, &ESC_M_GCS_KV_GET, on_kv_get, f), -1);
    assert_int_equal(esc_rpc_server_start(s), -1);
    esc_rpc_server_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_token),
        cmocka_unit_test(test_daemon_calls),
        cmocka_unit_test(test_spec_is_forward),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_deadline_and_cancel_reach_handler),
        cmocka_unit_test(test_method_handles),
        cmocka_unit_test(test_malformed_request),
        cmocka_unit_test(test_bind_conflict),
        cmocka_unit_test(test_failed_registration_refuses_start),
        cmocka_unit_test(test_retry_sends_the_request_again),
        cmocka_unit_test(test_unavailable_and_retry),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
