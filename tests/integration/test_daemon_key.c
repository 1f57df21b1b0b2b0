/* test_daemon_key.c: the daemon key and the operator key (docs/security.md). A client
 * holding only the cluster token (and a job's own credential) is refused, with
 * PERMISSION_DENIED and a one-line reason, every call that only daemons make: it cannot
 * register or report a node, take a node's resource log, forge a task forward or a
 * task's end, announce object locations, or present a task's job credential in a body;
 * and it cannot stop another job without the operator key. The daemons, which hold the
 * key, still work: tasks forwarded between two nodes, an object pulled from another
 * node, a node that joins later. A raylet with a wrong key cannot join. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcs.pb-c.h"
#include "escher/jobs.h"
#include "harness.h"
#include "object.pb-c.h"
#include "task.pb-c.h"

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    /* Node 1 alone has "far": a task that asks for it is forwarded there. */
    const char *extras[] = {NULL, "--resources far=1"};
    return h_start_cluster(&C, 2, extras);
}

static int teardown(void **state)
{
    (void)state;
    h_stop(&C);
    return 0;
}

/* A daemon-only call without the key: PERMISSION_DENIED, one line naming the key. */
static void assert_daemon_only(int rc, const esc_status *st)
{
    assert_int_equal(rc, ESC_PERMISSION_DENIED);
    assert_int_equal(st->code, ESC_PERMISSION_DENIED);
    assert_null(strchr(st->message, '\n'));
    assert_non_null(strstr(st->message, "daemons only"));
    assert_non_null(strstr(st->message, "x-escher-daemon"));
}

static void raylet_addr(int i, char *out, size_t len)
{
    snprintf(out, len, "127.0.0.1:%d", C.raylets[i].port);
}

/* A channel as a job's client has it: the token and the job's own credential. */
static esc_rpc_channel *client_channel(const char *addr, esc_client *as)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    esc_rpc_channel_set_job(ch, esc_client_job_id(as), esc_client_job_credential(as));
    return ch;
}

static int call(esc_rpc_channel *ch, const esc_rpc_method *method, const ProtobufCMessage *req,
                esc_status *st)
{
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(ch, method, req, &rep, 5000, 0, st);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    return rc;
}

static size_t node_count(esc_client *cl)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    size_t n = s->nnodes;
    esc_cluster_status_free(s);
    return n;
}

/* RegisterNode, ReportNode and DrainNode from a client are refused; the node table is
 * unchanged. */
static void test_node_calls_denied(void **state)
{
    (void)state;
    esc_client *a = h_connect(&C, "attacker", 0, false);
    size_t nodes = node_count(a);
    esc_rpc_channel *ch = client_channel(C.gcs_addr, a);
    esc_status st;

    Escher__NodeInfo info = ESCHER__NODE_INFO__INIT;
    info.address = "127.0.0.1:1";
    Escher__RegisterNodeRequest reg = ESCHER__REGISTER_NODE_REQUEST__INIT;
    reg.node = &info;
    assert_daemon_only(call(ch, &ESC_M_GCS_REGISTER_NODE, &reg.base, &st), &st);
    assert_non_null(strstr(st.message, "RegisterNode"));

    Escher__ReportNodeRequest rep = ESCHER__REPORT_NODE_REQUEST__INIT;
    rep.node_id = C.raylets[0].node_id;
    assert_daemon_only(call(ch, &ESC_M_GCS_REPORT_NODE, &rep.base, &st), &st);

    Escher__DrainNodeRequest drain = ESCHER__DRAIN_NODE_REQUEST__INIT;
    drain.node_id = C.raylets[1].node_id;
    assert_daemon_only(call(ch, &ESC_M_GCS_DRAIN_NODE, &drain.base, &st), &st);
    esc_rpc_channel_free(ch);
    assert_int_equal(node_count(a), nodes);
    esc_disconnect(a);
}

/* Subscribe naming a node (the resource log and the forwarded specs' events a raylet
 * gets) is refused; a job's own Subscribe is not (h_connect holds one). */
static void test_node_subscribe_denied(void **state)
{
    (void)state;
    esc_client *a = h_connect(&C, "attacker", 0, false);
    esc_rpc_channel *ch = client_channel(C.gcs_addr, a);
    Escher__SubscribeRequest req = ESCHER__SUBSCRIBE_REQUEST__INIT;
    req.node_id = C.raylets[0].node_id;
    esc_status st = {0};
    esc_rpc_stream *s = esc_rpc_stream_open(ch, &ESC_M_GCS_SUBSCRIBE, &req.base, &st);
    assert_non_null(s);
    ProtobufCMessage *ev = NULL;
    assert_int_equal(esc_rpc_stream_next(s, &ev, &st), 0);
    assert_daemon_only(st.code, &st);
    assert_non_null(strstr(st.message, "node's Subscribe"));
    esc_rpc_stream_free(s);
    esc_rpc_channel_free(ch);
    esc_disconnect(a);
}

/* A spec that claims a forward (forwarded_to, origin, spill_hops), sent straight to the
 * raylet it names, is refused in a batch and alone. */
static void test_forged_forward_denied(void **state)
{
    (void)state;
    esc_client *a = h_connect(&C, "attacker", 0, false);
    char addr[64];
    raylet_addr(1, addr, sizeof addr);
    esc_rpc_channel *ch = client_channel(addr, a);
    Escher__FunctionRef fn = ESCHER__FUNCTION_REF__INIT;
    fn.library = (char *)h_tasks_lib();
    fn.symbol = "sleep_ms";
    Escher__TaskSpec spec = ESCHER__TASK_SPEC__INIT;
    spec.task_id = "forgedforward0001";
    spec.job_id = (char *)esc_client_job_id(a);
    spec.function = &fn;
    spec.num_returns = 1;
    spec.job_credential = (char *)esc_client_job_credential(a);
    spec.forwarded_to = C.raylets[1].node_id;
    spec.origin = C.raylets[0].node_id;
    spec.spill_hops = 1;
    esc_status st;
    assert_daemon_only(call(ch, &ESC_M_TASK_SERVICE_SUBMIT_TASK, &spec.base, &st), &st);
    assert_non_null(strstr(st.message, "forwarded task"));

    /* In a batch, one forward among plain specs is enough; and each marker alone. */
    for (int marker = 0; marker < 3; marker++) {
        Escher__TaskSpec one = spec;
        one.forwarded_to = marker == 0 ? C.raylets[1].node_id : "";
        one.origin = marker == 1 ? C.raylets[0].node_id : "";
        one.spill_hops = marker == 2 ? 1 : 0;
        ProtobufCBinaryData specs[1];
        specs[0].len = protobuf_c_message_get_packed_size(&one.base);
        specs[0].data = malloc(specs[0].len);
        protobuf_c_message_pack(&one.base, specs[0].data);
        Escher__TaskBatch b = ESCHER__TASK_BATCH__INIT;
        b.specs = specs;
        b.n_specs = 1;
        assert_daemon_only(call(ch, &ESC_M_TASK_SERVICE_SUBMIT_TASKS, &b.base, &st), &st);
        free(specs[0].data);
    }
    esc_rpc_channel_free(ch);
    esc_disconnect(a);
}

/* TasksDone, whatever it names, is a raylet's notice: refused from a client. */
static void test_tasks_done_denied(void **state)
{
    (void)state;
    esc_client *a = h_connect(&C, "attacker", 0, false);
    char addr[64];
    raylet_addr(0, addr, sizeof addr);
    esc_rpc_channel *ch = client_channel(addr, a);
    Escher__TaskDone done = ESCHER__TASK_DONE__INIT;
    done.task_id = "sometask";
    done.job_credential = (char *)esc_client_job_credential(a);
    Escher__TaskDone *dones[] = {&done};
    Escher__TasksDoneRequest req = ESCHER__TASKS_DONE_REQUEST__INIT;
    req.done = dones;
    req.n_done = 1;
    esc_status st;
    assert_daemon_only(call(ch, &ESC_M_TASK_SERVICE_TASKS_DONE, &req.base, &st), &st);
    assert_non_null(strstr(st.message, "TasksDone"));

    /* A withdraw carrying a task's credential in its body is a raylet's too. */
    Escher__CancelTaskRequest cancel = ESCHER__CANCEL_TASK_REQUEST__INIT;
    cancel.task_id = "sometask";
    cancel.if_queued = true;
    cancel.job_credential = (char *)esc_client_job_credential(a);
    assert_daemon_only(call(ch, &ESC_M_TASK_SERVICE_CANCEL_TASK, &cancel.base, &st), &st);
    esc_rpc_channel_free(ch);
    esc_disconnect(a);
}

/* Object locations, actors' placement and a task's on_success commit (credential in the
 * body) are the raylets' writes: refused from a client; the directory does not list the
 * object. */
static void test_gcs_writes_denied(void **state)
{
    (void)state;
    esc_client *a = h_connect(&C, "attacker", 0, false);
    esc_rpc_channel *ch = client_channel(C.gcs_addr, a);
    Escher__ObjectLocation loc = ESCHER__OBJECT_LOCATION__INIT;
    loc.object_id = "forgedlocation";
    loc.node_id = C.raylets[0].node_id;
    loc.job_id = (char *)esc_client_job_id(a);
    loc.size = 4;
    esc_status st;
    assert_daemon_only(call(ch, &ESC_M_OBJECT_DIRECTORY_ADD_LOCATION, &loc.base, &st), &st);
    Escher__ObjectLocation *locs[] = {&loc};
    Escher__ObjectLocations many = ESCHER__OBJECT_LOCATIONS__INIT;
    many.locations = locs;
    many.n_locations = 1;
    assert_daemon_only(call(ch, &ESC_M_OBJECT_DIRECTORY_ADD_LOCATIONS, &many.base, &st), &st);
    assert_daemon_only(call(ch, &ESC_M_OBJECT_DIRECTORY_REMOVE_LOCATIONS, &many.base, &st),
                       &st);
    Escher__GetLocationsRequest get = ESCHER__GET_LOCATIONS_REQUEST__INIT;
    get.object_id = "forgedlocation";
    ProtobufCMessage *m = NULL;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS, &get.base, &m, 5000, 0, &st),
        ESC_OK);
    assert_false(((Escher__GetLocationsReply *)m)->found);
    protobuf_c_message_free_unpacked(m, NULL);

    /* Actors' placement: raylets write it, everyone reads it. */
    Escher__KvPutRequest put = ESCHER__KV_PUT_REQUEST__INIT;
    put.ns = "_actors";
    put.key = "someactor";
    put.value.data = (uint8_t *)"127.0.0.1:1";
    put.value.len = 11;
    put.overwrite = true;
    assert_daemon_only(call(ch, &ESC_M_GCS_KV_PUT, &put.base, &st), &st);
    Escher__KvDelRequest del = ESCHER__KV_DEL_REQUEST__INIT;
    del.ns = "_actor_state";
    del.key = "someactor";
    assert_daemon_only(call(ch, &ESC_M_GCS_KV_DEL, &del.base, &st), &st);
    Escher__KvGetRequest kget = ESCHER__KV_GET_REQUEST__INIT;
    kget.ns = "_actors";
    kget.key = "someactor";
    assert_int_equal(call(ch, &ESC_M_GCS_KV_GET, &kget.base, &st), ESC_OK);

    Escher__UpdateResourcesRequest up = ESCHER__UPDATE_RESOURCES_REQUEST__INIT;
    up.job_id = (char *)esc_client_job_id(a);
    up.job_credential = (char *)esc_client_job_credential(a);
    assert_daemon_only(call(ch, &ESC_M_GCS_UPDATE_RESOURCES, &up.base, &st), &st);
    esc_rpc_channel_free(ch);
    esc_disconnect(a);
}

static bool job_running(esc_client *cl, const char *id)
{
    esc_job_info *jobs;
    size_t n;
    assert_int_equal(esc_list_jobs(cl, &jobs, &n, NULL), ESC_OK);
    bool running = false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(jobs[i].id, id))
            running = !strcmp(jobs[i].state, "RUNNING");
    esc_jobs_free(jobs, n);
    return running;
}

/* FinishJob with operator_stop: refused without the operator key, with a wrong one, and
 * with the daemon key in its place; accepted with the key. */
static void test_operator_stop(void **state)
{
    (void)state;
    esc_client *v = h_connect(&C, "victim", 0, false);
    esc_client *a = h_connect(&C, "attacker", 0, false);
    const char *victim_id = esc_client_job_id(v);
    Escher__FinishJobRequest req = ESCHER__FINISH_JOB_REQUEST__INIT;
    req.job_id = (char *)victim_id;
    req.failed = true;
    req.operator_stop = true;
    const char *keys[] = {NULL, "0123456789abcdef", C.daemon_key};
    for (size_t i = 0; i < 3; i++) {
        esc_rpc_channel *ch = client_channel(C.gcs_addr, a);
        esc_rpc_channel_set_secret(ch, ESC_RPC_OPERATOR_KEY, keys[i]);
        esc_status st;
        assert_int_equal(call(ch, &ESC_M_GCS_FINISH_JOB, &req.base, &st),
                         ESC_PERMISSION_DENIED);
        assert_null(strchr(st.message, '\n'));
        assert_non_null(strstr(st.message, "operator key"));
        esc_rpc_channel_free(ch);
        assert_true(job_running(a, victim_id));
    }
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_rpc_channel_set_secret(ch, ESC_RPC_OPERATOR_KEY, C.operator_key);
    esc_status st;
    assert_int_equal(call(ch, &ESC_M_GCS_FINISH_JOB, &req.base, &st), ESC_OK);
    esc_rpc_channel_free(ch);
    assert_false(job_running(a, victim_id));
    esc_disconnect(a);
    esc_disconnect(v);
}

/* esc_job_stop where no operator key is found (no $ESCHER_OPERATOR_KEY, a session
 * directory without `operator`) is refused before it touches the job, unless the job
 * is the caller's own. */
static void test_job_stop_without_key(void **state)
{
    (void)state;
    esc_client *v = h_connect(&C, "victim", 0, false);
    unsetenv("ESCHER_OPERATOR_KEY");
    esc_connect_opts o = {.address = C.gcs_addr, .token = C.token, .namespace_ = "attacker",
                          .session_dir = "/nonexistent-escher-session"};
    esc_client *a = NULL;
    esc_status st;
    assert_int_equal(esc_connect(&o, &a, &st), ESC_OK);
    assert_int_equal(esc_job_stop(a, esc_client_job_id(v), NULL, &st), ESC_PERMISSION_DENIED);
    assert_non_null(strstr(st.message, "operator key"));
    assert_true(job_running(a, esc_client_job_id(v)));
    /* Its own job (a driver stopping what it submitted) needs no operator key. */
    assert_int_equal(esc_job_stop(a, esc_client_job_id(a), NULL, &st), ESC_OK);
    assert_false(job_running(v, esc_client_job_id(a)));
    esc_disconnect(a);
    esc_disconnect(v);
}

/* The daemons still do their work: a task forwarded to the node that has "far", its
 * result read back, and an object put on node 0 read by a client on node 1 (a pull). */
static void test_daemons_work(void **state)
{
    (void)state;
    esc_client *c0 = h_connect(&C, "work", 0, false);
    esc_amount far[] = {{.name = "far", .value = ESC_QTY(1)}};
    esc_task_arg arg = {.data = "10", .len = 2};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "sleep_ms", .args = &arg,
                          .nargs = 1, .resources = far, .nresources = 1};
    esc_ref *r = NULL;
    esc_status st;
    assert_int_equal(esc_task_submit(c0, &spec, &r, NULL, &st), ESC_OK);
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(esc_get(c0, r, 30000, &val, &len, &st), ESC_OK);
    free(val);
    esc_ref_free(r);

    esc_ref *put = NULL;
    assert_int_equal(esc_put(c0, "on node 0", 9, &put, &st), ESC_OK);
    /* A task on node 1 whose argument is on node 0: raylet 1 pulls it from raylet 0. */
    esc_task_arg by_ref = {.ref = put};
    esc_task_spec echo = {.library = h_tasks_lib(), .symbol = "echo", .args = &by_ref,
                          .nargs = 1, .resources = far, .nresources = 1};
    assert_int_equal(esc_task_submit(c0, &echo, &r, NULL, &st), ESC_OK);
    assert_int_equal(esc_get(c0, r, 30000, &val, &len, &st), ESC_OK);
    assert_int_equal(len, 9);
    assert_memory_equal(val, "on node 0", 9);
    free(val);
    esc_ref_free(r);
    /* A client on node 1 reads the object from node 0 itself (a client's Pull). */
    esc_client *c1 = h_join(&C, c0, 1);
    assert_int_equal(esc_get(c1, put, 30000, &val, &len, &st), ESC_OK);
    assert_int_equal(len, 9);
    assert_memory_equal(val, "on node 0", 9);
    free(val);
    esc_ref_free(put);
    esc_disconnect(c1);
    esc_disconnect(c0);
}

/* A node joining later with the key registers and runs work; one with a wrong key is
 * refused and exits. */
static void test_join(void **state)
{
    (void)state;
    assert_int_equal(h_raylet_start(&C, 2, "--resources joined=1"), 0);
    esc_client *c = h_connect(&C, "joiner", 0, false);
    esc_amount joined[] = {{.name = "joined", .value = ESC_QTY(1)}};
    esc_task_arg arg = {.data = "10", .len = 2};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "sleep_ms", .args = &arg,
                          .nargs = 1, .resources = joined, .nresources = 1};
    esc_ref *r = NULL;
    esc_status st;
    assert_int_equal(esc_task_submit(c, &spec, &r, NULL, &st), ESC_OK);
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(esc_get(c, r, 30000, &val, &len, &st), ESC_OK);
    free(val);
    esc_ref_free(r);

    char wrong[320], extra[400];
    snprintf(wrong, sizeof wrong, "%s/wrong_key", C.dir);
    FILE *f = fopen(wrong, "w");
    assert_non_null(f);
    fputs("not-the-daemon-key", f);
    fclose(f);
    size_t nodes = node_count(c);
    snprintf(extra, sizeof extra, "--daemon-key-file %s", wrong);
    assert_int_not_equal(h_raylet_start(&C, 3, extra), 0);
    C.raylets[3].pid = 0; /* it exited (and was reaped) by itself */
    char log[320], line[600];
    snprintf(log, sizeof log, "%s/raylet.3.log", C.dir);
    f = fopen(log, "r");
    assert_non_null(f);
    bool refused = false;
    while (!refused && fgets(line, sizeof line, f))
        refused = strstr(line, "refused to register") && strstr(line, "PERMISSION_DENIED");
    fclose(f);
    assert_true(refused);
    assert_int_equal(node_count(c), nodes);
    esc_disconnect(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_calls_denied),
        cmocka_unit_test(test_node_subscribe_denied),
        cmocka_unit_test(test_forged_forward_denied),
        cmocka_unit_test(test_tasks_done_denied),
        cmocka_unit_test(test_gcs_writes_denied),
        cmocka_unit_test(test_operator_stop),
        cmocka_unit_test(test_job_stop_without_key),
        cmocka_unit_test(test_daemons_work),
        cmocka_unit_test(test_join),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
