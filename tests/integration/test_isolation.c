/* test_isolation.c: one job cannot touch another's things through the GCS (docs/
 * security.md). Each attack test has a victim job (namespace "victim") and an attacker
 * job; it asserts that the attack is PERMISSION_DENIED with a one-line reason and that
 * the victim's state is unchanged. The last tests check the legitimate flows: the
 * shared "default" namespace, a grant, its revocation, a grant limited to a prefix. */
#include <pthread.h>
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

/* The refusal every attack gets: PERMISSION_DENIED and one line that says why. */
static void assert_denied(int rc, const esc_status *st)
{
    assert_int_equal(rc, ESC_PERMISSION_DENIED);
    assert_int_equal(st->code, ESC_PERMISSION_DENIED);
    assert_true(st->message[0] != 0);
    assert_null(strchr(st->message, '\n'));
}

/* The total of full name `name` on the node (-1: absent). */
static int64_t total_of(esc_client *cl, const char *name)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    const esc_resource_info *r = NULL;
    for (size_t i = 0; i < s->nnodes; i++)
        if (!strcmp(s->nodes[i].id, C.raylets[0].node_id))
            r = esc_node_resource(&s->nodes[i], name);
    int64_t t = r ? r->total : -1;
    esc_cluster_status_free(s);
    return t;
}

/* The victim: a job in namespace "victim" holding resource "gang" = 2 and key "k". */
static esc_client *victim(void)
{
    esc_client *v = h_connect(&C, "victim", 0, false);
    uint64_t seq;
    esc_status st;
    assert_int_equal(esc_resource_set(v, "gang", ESC_QTY(2), NULL, &seq, &st), ESC_OK);
    assert_int_equal(esc_wait_applied(v, seq, NULL, 0, 10000, &st), ESC_OK);
    assert_int_equal(esc_kv_put(v, NULL, "k", "mine", 4, true, NULL, &st), ESC_OK);
    return v;
}

/* The victim's state is what victim() made. */
static void assert_victim_intact(esc_client *v)
{
    assert_int_equal(total_of(v, "victim/gang"), ESC_QTY(2));
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(esc_kv_get(v, NULL, "k", &val, &len, NULL), ESC_OK);
    assert_int_equal(len, 4);
    assert_memory_equal(val, "mine", 4);
    free(val);
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

/* Connecting with the victim's namespace (to set its gang resource to 0) is refused. */
static void test_claim_namespace_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_connect_opts o = {.address = C.gcs_addr, .token = C.token, .namespace_ = "victim",
                          .node_id = C.raylets[0].node_id, .session_dir = C.dir};
    esc_client *a = NULL;
    esc_status st;
    assert_denied(esc_connect(&o, &a, &st), &st);
    assert_null(a);
    assert_non_null(strstr(st.message, "belongs to running job"));
    /* A detached CLI-like client too. */
    o.detached = o.short_lived = true;
    assert_denied(esc_connect(&o, &a, &st), &st);
    assert_victim_intact(v);
    esc_disconnect(v);
}

/* Writing the victim's namespace by name, or as the victim's job id, is refused. */
static void test_resources_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 0, false);
    esc_status st;
    uint64_t seq;
    assert_denied(esc_resource_set_ns(a, "victim", "gang", 0, NULL, &seq, &st), &st);

    /* The victim's job id (ListJobs shows it) without its credential. */
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_rpc_channel_set_job(ch, esc_client_job_id(a), esc_client_job_credential(a));
    Escher__ResourceOp op = ESCHER__RESOURCE_OP__INIT;
    op.kind = ESCHER__OP_KIND__OP_SET;
    op.name = "gang";
    op.value = 0;
    Escher__Target t = ESCHER__TARGET__INIT;
    t.kind = ESCHER__TARGET_KIND__TARGET_ALL;
    op.target = &t;
    Escher__ResourceOp *ops[] = {&op};
    Escher__UpdateResourcesRequest req = ESCHER__UPDATE_RESOURCES_REQUEST__INIT;
    req.job_id = (char *)esc_client_job_id(v);
    req.ops = ops;
    req.n_ops = 1;
    ProtobufCMessage *rep = NULL;
    assert_denied(esc_rpc_call(ch, &ESC_M_GCS_UPDATE_RESOURCES, &req.base, &rep, 5000, 0, &st),
                  &st);
    /* A guessed credential in the request body does no better. */
    req.job_credential = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    assert_denied(esc_rpc_call(ch, &ESC_M_GCS_UPDATE_RESOURCES, &req.base, &rep, 5000, 0, &st),
                  &st);
    esc_rpc_channel_free(ch);
    assert_victim_intact(v);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* The victim's KV: read, overwrite, delete and list are refused. */
static void test_kv_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 0, false);
    esc_status st;
    void *val = NULL;
    size_t len = 0;
    assert_denied(esc_kv_get(a, "victim", "k", &val, &len, &st), &st);
    assert_null(val);
    assert_denied(esc_kv_put(a, "victim", "k", "evil", 4, true, NULL, &st), &st);
    assert_denied(esc_kv_del(a, "victim", "k", NULL, &st), &st);
    char **keys = NULL;
    size_t n = 0;
    assert_denied(esc_kv_keys(a, "victim", "", &keys, &n, &st), &st);
    assert_int_equal(n, 0);
    /* Nor with no job at all (a reader). */
    esc_connect_opts o = {.address = C.gcs_addr, .token = C.token, .session_dir = C.dir,
                          .no_job = true, .short_lived = true};
    esc_client *r = NULL;
    assert_int_equal(esc_connect(&o, &r, &st), ESC_OK);
    assert_denied(esc_kv_get(r, "victim", "k", &val, &len, &st), &st);
    esc_disconnect(r);
    /* Nor naming the victim's job id with a wrong credential. */
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_rpc_channel_set_job(ch, esc_client_job_id(v), "wrong");
    Escher__KvGetRequest req = ESCHER__KV_GET_REQUEST__INIT;
    req.ns = "victim";
    req.key = "k";
    ProtobufCMessage *rep = NULL;
    assert_denied(esc_rpc_call(ch, &ESC_M_GCS_KV_GET, &req.base, &rep, 5000, 0, &st), &st);
    esc_rpc_channel_free(ch);
    assert_victim_intact(v);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* Joining the victim's job by its id (as its tasks do) needs its credential. */
static void test_join_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    setenv("ESCHER_JOB_ID", esc_client_job_id(v), 1);
    esc_connect_opts o = {.address = C.gcs_addr, .token = C.token, .session_dir = C.dir,
                          .node_id = C.raylets[0].node_id};
    esc_client *a = NULL;
    esc_status st;
    unsetenv("ESCHER_JOB_CREDENTIAL");
    assert_denied(esc_connect(&o, &a, &st), &st);
    setenv("ESCHER_JOB_CREDENTIAL", "0123456789abcdef", 1);
    assert_denied(esc_connect(&o, &a, &st), &st);
    assert_null(a);
    /* With the credential it works (what the raylet gives the job's processes). */
    setenv("ESCHER_JOB_CREDENTIAL", esc_client_job_credential(v), 1);
    assert_int_equal(esc_connect(&o, &a, &st), ESC_OK);
    assert_string_equal(esc_client_job_id(a), esc_client_job_id(v));
    esc_disconnect(a);
    unsetenv("ESCHER_JOB_ID");
    unsetenv("ESCHER_JOB_CREDENTIAL");
    assert_victim_intact(v);
    esc_disconnect(v);
}

/* Ending the victim's job, holding its stream, naming its package or granting its
 * namespace away: all refused. */
static void test_job_calls_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 0, false);
    const char *vid = esc_client_job_id(v);
    esc_status st;
    assert_denied(esc_job_finish(a, vid, true, &st), &st);
    assert_true(job_running(a, vid));

    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_rpc_channel_set_job(ch, esc_client_job_id(a), esc_client_job_credential(a));
    Escher__SubscribeRequest sub = ESCHER__SUBSCRIBE_REQUEST__INIT;
    sub.job_id = (char *)vid;
    esc_rpc_stream *s = esc_rpc_stream_open(ch, &ESC_M_GCS_SUBSCRIBE, &sub.base, &st);
    assert_non_null(s);
    ProtobufCMessage *m = NULL;
    assert_int_equal(esc_rpc_stream_next(s, &m, &st), 0);
    assert_denied(st.code, &st);
    esc_rpc_stream_free(s);

    Escher__SetJobPackageRequest pkg = ESCHER__SET_JOB_PACKAGE_REQUEST__INIT;
    pkg.job_id = (char *)vid;
    pkg.hash = "0000000000000000000000000000000000000000000000000000000000000000";
    ProtobufCMessage *rep = NULL;
    assert_denied(esc_rpc_call(ch, &ESC_M_GCS_SET_JOB_PACKAGE, &pkg.base, &rep, 5000, 0, &st),
                  &st);

    Escher__GrantNamespaceRequest g = ESCHER__GRANT_NAMESPACE_REQUEST__INIT;
    g.job_id = (char *)vid;
    g.grantee = (char *)esc_client_job_id(a);
    assert_denied(esc_rpc_call(ch, &ESC_M_GCS_GRANT_NAMESPACE, &g.base, &rep, 5000, 0, &st),
                  &st);
    esc_rpc_channel_free(ch);
    assert_denied(esc_resource_set_ns(a, "victim", "gang", 0, NULL, NULL, &st), &st);
    assert_true(job_running(a, vid));
    assert_victim_intact(v);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* Cancelling or withdrawing the victim's running task by its id is refused at the
 * raylet; the task runs to its end and the victim reads its result. */
static void test_cancel_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 0, false);
    esc_status st;
    esc_task_arg arg = {.data = "2000", .len = 4};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "sleep_ms", .args = &arg,
                          .nargs = 1};
    esc_ref *r = NULL;
    assert_int_equal(esc_task_submit(v, &spec, &r, NULL, &st), ESC_OK);
    esc_ref *fake = esc_ref_from_id(esc_ref_id(r));
    /* Until the raylet holds it, a withdraw finds nothing (NOT_FOUND). */
    int rc;
    double end = h_now_ms() + 10000;
    while ((rc = esc_task_withdraw(a, fake, &st)) == ESC_NOT_FOUND && h_now_ms() < end)
        ;
    assert_denied(rc, &st);
    assert_denied(esc_cancel(a, fake, &st), &st);
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(esc_get(v, r, 30000, &val, &len, &st), ESC_OK);
    free(val);
    esc_ref_free(fake);
    esc_ref_free(r);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* Killing the victim's actor (its id is public: esc_actor_list) straight at its host
 * raylet is refused; the actor keeps its state. */
static void test_kill_actor_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 0, false);
    esc_actor_spec spec = {.name = "counter", .library = h_tasks_lib(),
                           .init_symbol = "counter_init"};
    esc_actor *act = NULL;
    esc_status st;
    assert_int_equal(esc_actor_create(v, &spec, &act, &st), ESC_OK);
    esc_task_arg one = {.data = "1", .len = 1};
    esc_ref *r = NULL;
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(esc_actor_call(v, act, "counter_add", &one, 1, 1, &r, &st), ESC_OK);
    assert_int_equal(esc_get(v, r, 30000, &val, &len, &st), ESC_OK);
    free(val);
    esc_ref_free(r);

    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    esc_rpc_channel_set_job(ch, esc_client_job_id(a), esc_client_job_credential(a));
    Escher__KillActorRequest kill = ESCHER__KILL_ACTOR_REQUEST__INIT;
    kill.actor_id = (char *)esc_actor_id(act);
    ProtobufCMessage *rep = NULL;
    assert_denied(
        esc_rpc_call(ch, &ESC_M_TASK_SERVICE_KILL_ACTOR, &kill.base, &rep, 5000, 0, &st), &st);
    esc_rpc_channel_free(ch);

    /* Alive, state kept: the next add gives 2. */
    assert_int_equal(esc_actor_call(v, act, "counter_add", &one, 1, 1, &r, &st), ESC_OK);
    assert_int_equal(esc_get(v, r, 30000, &val, &len, &st), ESC_OK);
    assert_int_equal(len, 1);
    assert_memory_equal(val, "2", 1);
    free(val);
    esc_ref_free(r);
    assert_int_equal(esc_actor_kill(v, act, &st), ESC_OK); /* the owner may */
    esc_actor_free(act);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* A TasksDone naming the victim's forwarded task, sent to the raylet that forwarded it,
 * is refused: the victim reads the real (empty) result, not the forged bytes. */
static void test_forged_result_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_amount far[] = {{.name = "far", .value = ESC_QTY(1)}};
    esc_task_arg arg = {.data = "2000", .len = 4};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "sleep_ms", .args = &arg,
                          .nargs = 1, .resources = far, .nresources = 1};
    esc_ref *r = NULL;
    esc_status st;
    assert_int_equal(esc_task_submit(v, &spec, &r, NULL, &st), ESC_OK);
    char task_id[ESC_ID_MAX];
    snprintf(task_id, sizeof task_id, "%s", esc_ref_id(r));
    task_id[strlen(task_id) - 4] = 0; /* a return id is the task id and 4 hex digits */

    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    Escher__ReadyObject obj = ESCHER__READY_OBJECT__INIT;
    obj.object_id = (char *)esc_ref_id(r);
    obj.data.data = (uint8_t *)"evil";
    obj.data.len = 4;
    obj.inlined = true;
    obj.size = 4;
    obj.address = addr;
    Escher__ReadyObject *objs[] = {&obj};
    Escher__TaskDone done = ESCHER__TASK_DONE__INIT;
    done.task_id = task_id;
    done.returns = objs;
    done.n_returns = 1;
    Escher__TaskDone *dones[] = {&done};
    Escher__TasksDoneRequest req = ESCHER__TASKS_DONE_REQUEST__INIT;
    req.done = dones;
    req.n_done = 1;
    /* Before raylet 0 has forwarded the task the notice names nothing it knows (and goes
     * nowhere); once it has, the notice is refused. */
    int rc;
    double end = h_now_ms() + 10000;
    do {
        ProtobufCMessage *rep = NULL;
        rc = esc_rpc_call(ch, &ESC_M_TASK_SERVICE_TASKS_DONE, &req.base, &rep, 5000, 0, &st);
        if (rep)
            protobuf_c_message_free_unpacked(rep, NULL);
    } while (rc == ESC_OK && h_now_ms() < end);
    assert_denied(rc, &st);
    esc_rpc_channel_free(ch);

    void *val = NULL;
    size_t len = 99;
    assert_int_equal(esc_get(v, r, 30000, &val, &len, &st), ESC_OK);
    assert_int_equal(len, 0);
    free(val);
    esc_ref_free(r);
    esc_disconnect(v);
}

/* A raw Reconstruct of object_id at raylet 0 from a channel acting as job (NULL: none). */
static int raw_reconstruct(esc_client *as, const char *object_id, esc_status *st)
{
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    if (as)
        esc_rpc_channel_set_job(ch, esc_client_job_id(as), esc_client_job_credential(as));
    Escher__ReconstructRequest req = ESCHER__RECONSTRUCT_REQUEST__INIT;
    req.object_id = (char *)object_id;
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_TASK_SERVICE_RECONSTRUCT, &req.base, &rep, 5000, 0, st);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    esc_rpc_channel_free(ch);
    return rc;
}

/* Another job, or a caller with no job, cannot have the victim's task run again from its
 * lineage (raylet 0 forwarded it to node 1, so it keeps the lineage); the victim can. */
static void test_reconstruct_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 0, false);
    esc_amount far[] = {{.name = "far", .value = ESC_QTY(1)}};
    esc_task_arg arg = {.data = "x", .len = 1};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "echo", .args = &arg, .nargs = 1,
                          .resources = far, .nresources = 1};
    esc_ref *r = NULL;
    esc_status st;
    assert_int_equal(esc_task_submit(v, &spec, &r, NULL, &st), ESC_OK);
    void *val = NULL;
    size_t len;
    assert_int_equal(esc_get(v, r, 30000, &val, &len, &st), ESC_OK);
    free(val);
    assert_denied(raw_reconstruct(a, esc_ref_id(r), &st), &st);
    assert_non_null(strstr(st.message, "job"));
    assert_denied(raw_reconstruct(NULL, esc_ref_id(r), &st), &st);
    assert_int_equal(raw_reconstruct(v, esc_ref_id(r), &st), ESC_OK);
    esc_ref_free(r);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* ---- through the raylets (docs/security.md, "Raylet checks") */

/* The held amount of full name `name` on node 0 (-1: absent). */
static int64_t held_of(esc_client *cl, const char *name)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    const esc_resource_info *r = NULL;
    for (size_t i = 0; i < s->nnodes; i++)
        if (!strcmp(s->nodes[i].id, C.raylets[0].node_id))
            r = esc_node_resource(&s->nodes[i], name);
    int64_t h = r ? r->held : -1;
    esc_cluster_status_free(s);
    return h;
}

static bool gang_free(void *v)
{
    return held_of(v, "victim/gang") == 0;
}

/* Submits `echo` requesting one unit of each of names[0..n) as cl; returns esc_get's
 * code, with st. */
static int run_echo_n(esc_client *cl, const char *const *names, size_t n, esc_status *st)
{
    esc_amount amt[2];
    for (size_t i = 0; i < n && i < 2; i++)
        amt[i] = (esc_amount){.name = names[i], .value = ESC_QTY(1)};
    esc_task_arg arg = {.data = "hi", .len = 2};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "echo", .args = &arg,
                          .nargs = 1, .resources = n ? amt : NULL, .nresources = n < 2 ? n : 2};
    esc_ref *r = NULL;
    int rc = esc_task_submit(cl, &spec, &r, NULL, st);
    if (rc != ESC_OK)
        return rc;
    void *val = NULL;
    size_t len = 0;
    rc = esc_get(cl, r, 30000, &val, &len, st);
    free(val);
    esc_ref_free(r);
    return rc;
}

/* echo requesting one unit of res (NULL: nothing). */
static int run_echo(esc_client *cl, const char *res, esc_status *st)
{
    return run_echo_n(cl, &res, res ? 1 : 0, st);
}

/* A task of the attacker that requests the victim's gang resource is refused, and
 * takes none of it; a task next to it (same submission burst) runs. */
static void test_task_resources_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 0, false);
    esc_status st;
    esc_amount gang[] = {{.name = "victim/gang", .value = ESC_QTY(1)}};
    esc_task_arg arg = {.data = "hi", .len = 2};
    esc_task_spec bad = {.library = h_tasks_lib(), .symbol = "echo", .args = &arg, .nargs = 1,
                         .resources = gang, .nresources = 1};
    esc_task_spec good = {.library = h_tasks_lib(), .symbol = "echo", .args = &arg, .nargs = 1};
    esc_ref *rb = NULL, *rg = NULL;
    assert_int_equal(esc_task_submit(a, &bad, &rb, NULL, &st), ESC_OK);
    assert_int_equal(esc_task_submit(a, &good, &rg, NULL, &st), ESC_OK);
    void *val = NULL;
    size_t len = 0;
    assert_denied(esc_get(a, rb, 30000, &val, &len, &st), &st);
    assert_non_null(strstr(st.message, "namespace victim"));
    assert_int_equal(esc_get(a, rg, 30000, &val, &len, &st), ESC_OK);
    free(val);
    esc_ref_free(rb);
    esc_ref_free(rg);
    assert_int_equal(held_of(v, "victim/gang"), 0);
    /* The victim itself uses its resource. */
    assert_int_equal(run_echo(v, "victim/gang", &st), ESC_OK);
    assert_victim_intact(v);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* A raw spec for the raylet: `echo` of job job_id with credential cred. */
static size_t pack_echo(const char *job_id, const char *cred, const char *task_id,
                        uint8_t *buf)
{
    Escher__FunctionRef fn = ESCHER__FUNCTION_REF__INIT;
    fn.library = (char *)h_tasks_lib();
    fn.symbol = "echo";
    Escher__TaskSpec spec = ESCHER__TASK_SPEC__INIT;
    spec.task_id = (char *)task_id;
    spec.job_id = (char *)job_id;
    spec.job_credential = (char *)cred;
    spec.function = &fn;
    spec.num_returns = 1;
    return protobuf_c_message_pack(&spec.base, buf);
}

/* Specs that name the victim's job (with the attacker's or a made-up credential) or a
 * job that does not exist are refused, one by one; the attacker's own spec in the same
 * batch is taken. A single SubmitTask of such a spec is refused too. */
static void test_forged_spec_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 0, false);
    const char *made_up = "0000000000000000000000000000000000000000000000000000000000000000";
    uint8_t b0[1024], b1[1024], b2[1024], b3[1024];
    ProtobufCBinaryData specs[] = {
        {pack_echo(esc_client_job_id(v), esc_client_job_credential(a),
                   "f0000000000000000000000000000000", b0), b0},
        {pack_echo(esc_client_job_id(v), made_up, "f1000000000000000000000000000000", b1), b1},
        {pack_echo("nosuchjob", made_up, "f2000000000000000000000000000000", b2), b2},
        {pack_echo(esc_client_job_id(a), esc_client_job_credential(a),
                   "f3000000000000000000000000000000", b3), b3},
    };
    Escher__TaskBatch batch = ESCHER__TASK_BATCH__INIT;
    batch.specs = specs;
    batch.n_specs = 4;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    ProtobufCMessage *m = NULL;
    esc_status st;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_TASK_SERVICE_SUBMIT_TASKS, &batch.base, &m, 10000, 0, &st),
        ESC_OK);
    Escher__SubmitTasksReply *rep = (Escher__SubmitTasksReply *)m;
    assert_int_equal(rep->n_rejected, 3);
    assert_int_equal(rep->n_codes, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rep->rejected[i], i);
        assert_int_equal(rep->codes[i], ESC_PERMISSION_DENIED);
        assert_null(strchr(rep->errors[i], '\n'));
    }
    assert_non_null(strstr(rep->errors[2], "not running"));
    protobuf_c_message_free_unpacked(m, NULL);

    Escher__TaskSpec *one = escher__task_spec__unpack(NULL, specs[0].len, specs[0].data);
    m = NULL;
    assert_denied(
        esc_rpc_call(ch, &ESC_M_TASK_SERVICE_SUBMIT_TASK, &one->base, &m, 10000, 0, &st), &st);
    protobuf_c_message_free_unpacked(&one->base, NULL);
    esc_rpc_channel_free(ch);
    assert_victim_intact(v);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* The victim's actor: created, and its counter at 1. */
static esc_actor *victim_counter(esc_client *v)
{
    esc_actor_spec spec = {.name = "counter", .library = h_tasks_lib(),
                           .init_symbol = "counter_init"};
    esc_actor *act = NULL;
    esc_status st;
    assert_int_equal(esc_actor_create(v, &spec, &act, &st), ESC_OK);
    esc_task_arg one = {.data = "1", .len = 1};
    esc_ref *r = NULL;
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(esc_actor_call(v, act, "counter_add", &one, 1, 1, &r, &st), ESC_OK);
    assert_int_equal(esc_get(v, r, 30000, &val, &len, &st), ESC_OK);
    free(val);
    esc_ref_free(r);
    return act;
}

/* counter_add(1) on act as cl: the counter's new value (a digit), or -code. */
static int add_one(esc_client *cl, esc_actor *act)
{
    esc_task_arg one = {.data = "1", .len = 1};
    esc_ref *r = NULL;
    esc_status st;
    int rc = esc_actor_call(cl, act, "counter_add", &one, 1, 1, &r, &st);
    if (rc != ESC_OK)
        return -rc;
    void *val = NULL;
    size_t len = 0;
    rc = esc_get(cl, r, 30000, &val, &len, &st);
    int out = rc == ESC_OK && len == 1 ? ((char *)val)[0] - '0' : -rc;
    free(val);
    esc_ref_free(r);
    return out;
}

/* A method call of the victim's actor by the attacker (its id is public) is refused at
 * the host raylet; the actor's state is unchanged. Granted the namespace, it may. */
static void test_actor_call_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 0, false);
    esc_actor *act = victim_counter(v);
    assert_int_equal(add_one(a, act), -ESC_PERMISSION_DENIED);
    assert_int_equal(add_one(v, act), 2);
    esc_status st;
    assert_int_equal(esc_namespace_grant(v, esc_client_job_id(a), &st), ESC_OK);
    /* The grant reaches the raylet through the log: the next calls see it. */
    int got;
    double end = h_now_ms() + 10000;
    while ((got = add_one(a, act)) == -ESC_PERMISSION_DENIED && h_now_ms() < end)
        ;
    assert_int_equal(got, 3);
    assert_int_equal(esc_actor_kill(v, act, &st), ESC_OK);
    esc_actor_free(act);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* Pull of object id from raylet 0 on ch, with body job and credential (NULL: none): the
 * stream's final code (OK when chunks came). */
static int raw_pull(esc_rpc_channel *ch, const char *id, const char *job, const char *cred,
                    esc_status *st)
{
    Escher__PullRequest req = ESCHER__PULL_REQUEST__INIT;
    req.object_id = (char *)id;
    req.job_id = (char *)(job ? job : "");
    req.job_credential = (char *)(cred ? cred : "");
    esc_rpc_stream *s =
        esc_rpc_stream_open_timeout(ch, &ESC_M_OBJECT_STORE_PULL, &req.base, 10000, st);
    if (!s)
        return st->code;
    ProtobufCMessage *m;
    while (esc_rpc_stream_next(s, &m, st) == 1)
        protobuf_c_message_free_unpacked(m, NULL);
    esc_rpc_stream_free(s);
    return st->code;
}

/* GetLocations of id at the GCS on ch, with body job and credential (NULL: none). */
static int raw_locations(esc_rpc_channel *ch, const char *id, const char *job, const char *cred,
                         esc_status *st)
{
    Escher__GetLocationsRequest req = ESCHER__GET_LOCATIONS_REQUEST__INIT;
    req.object_id = (char *)id;
    req.job_id = (char *)(job ? job : "");
    req.job_credential = (char *)(cred ? cred : "");
    ProtobufCMessage *rep = NULL;
    int rc =
        esc_rpc_call(ch, &ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS, &req.base, &rep, 10000, 0, st);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    return rc;
}

/* The victim's object (put on node 0) cannot be read, located or freed by the attacker
 * (on node 1): not through the SDK, not with raw calls as itself, as no job, or naming
 * the victim's job with a made-up credential; a task of the attacker that names it as
 * its argument fails. The victim still reads it; a grant opens it. */
static void test_objects_denied(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "attacker", 1, false);
    const char *made_up = "0000000000000000000000000000000000000000000000000000000000000000";
    esc_status st;
    esc_ref *ref = NULL;
    assert_int_equal(esc_put(v, "secret", 6, &ref, &st), ESC_OK);
    const char *id = esc_ref_id(ref);
    esc_ref *stolen = esc_ref_from_id(id);
    void *val = NULL;
    size_t len = 0;
    assert_denied(esc_get(a, stolen, 5000, &val, &len, &st), &st);
    assert_non_null(strstr(st.message, "belongs to job"));

    esc_rpc_channel *gcs = esc_rpc_channel_new(C.gcs_addr, C.token);
    assert_denied(raw_locations(gcs, id, NULL, NULL, &st), &st);          /* no job */
    assert_denied(raw_locations(gcs, id, esc_client_job_id(v), made_up, &st), &st);
    esc_rpc_channel_set_job(gcs, esc_client_job_id(a), esc_client_job_credential(a));
    assert_denied(raw_locations(gcs, id, NULL, NULL, &st), &st);          /* as itself */
    esc_rpc_channel_free(gcs);

    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    assert_denied(raw_pull(ch, id, NULL, NULL, &st), &st);
    assert_denied(raw_pull(ch, id, esc_client_job_id(v), made_up, &st), &st);
    assert_denied(raw_pull(ch, id, esc_client_job_id(v), esc_client_job_credential(a), &st), &st);
    esc_rpc_channel_set_job(ch, esc_client_job_id(a), esc_client_job_credential(a));
    assert_denied(raw_pull(ch, id, NULL, NULL, &st), &st);
    Escher__FreeObjectsRequest fr = ESCHER__FREE_OBJECTS_REQUEST__INIT;
    char *ids[] = {(char *)id};
    fr.object_ids = ids;
    fr.n_object_ids = 1;
    ProtobufCMessage *rep = NULL;
    assert_denied(
        esc_rpc_call(ch, &ESC_M_OBJECT_STORE_FREE_OBJECTS, &fr.base, &rep, 10000, 0, &st), &st);
    esc_rpc_channel_free(ch);

    /* As a task's argument, on the node that holds it (no pull needed) or not. */
    esc_task_arg arg = {.ref = stolen};
    for (int node = 0; node < 2; node++) {
        esc_client *an = node ? a : h_join(&C, a, 0);
        esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "echo", .args = &arg,
                              .nargs = 1};
        esc_ref *r = NULL;
        assert_int_equal(esc_task_submit(an, &spec, &r, NULL, &st), ESC_OK);
        assert_int_not_equal(esc_get(an, r, 30000, &val, &len, &st), ESC_OK);
        assert_non_null(strstr(st.message, "PERMISSION_DENIED"));
        esc_ref_free(r);
        if (!node)
            esc_disconnect(an);
    }

    assert_int_equal(esc_get(v, ref, 5000, &val, &len, &st), ESC_OK);
    assert_int_equal(len, 6);
    assert_memory_equal(val, "secret", 6);
    free(val);
    /* Granted, the attacker reads it (from the other node: a pull). */
    assert_int_equal(esc_namespace_grant(v, esc_client_job_id(a), &st), ESC_OK);
    int rc;
    double end = h_now_ms() + 10000;
    while ((rc = esc_get(a, stolen, 5000, &val, &len, &st)) == ESC_PERMISSION_DENIED &&
           h_now_ms() < end)
        ;
    assert_int_equal(rc, ESC_OK);
    assert_memory_equal(val, "secret", 6);
    free(val);
    esc_ref_free(stolen);
    esc_ref_free(ref);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* A grant lets tasks of the grantee consume the namespace's resources (through the
 * raylet, which learns grants from the log); a revoke stops it again. */
static void test_task_resources_granted(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "friend", 0, false);
    esc_status st;
    assert_int_equal(esc_namespace_grant(v, esc_client_job_id(a), &st), ESC_OK);
    int rc;
    double end = h_now_ms() + 10000;
    while ((rc = run_echo(a, "victim/gang", &st)) == ESC_PERMISSION_DENIED && h_now_ms() < end)
        ;
    assert_int_equal(rc, ESC_OK);
    assert_int_equal(esc_namespace_revoke(v, esc_client_job_id(a), &st), ESC_OK);
    end = h_now_ms() + 10000;
    while ((rc = run_echo(a, "victim/gang", &st)) == ESC_OK && h_now_ms() < end)
        ;
    assert_denied(rc, &st);
    /* The granted runs released what they held (the status follows the raylet's report). */
    assert_true(h_wait_until(gang_free, v, 10000));
    assert_victim_intact(v);
    esc_disconnect(a);
    esc_disconnect(v);
}

/* New jobs that submit at once, on either node, are never refused: their raylet waits
 * for the job's event when it has not applied it yet (RegisterJobReply.job_seq). */
static void test_submit_right_after_connect(void **state)
{
    (void)state;
    for (int i = 0; i < 6; i++) {
        esc_client *cl = h_connect(&C, NULL, i % 2, false);
        esc_status st;
        assert_int_equal(run_echo(cl, NULL, &st), ESC_OK);
        esc_disconnect(cl);
    }
}

/* A raw SubmitTask in a thread: the spec, and what came back when. */
typedef struct {
    uint8_t buf[1024];
    size_t len;
    int rc;
    esc_status st;
    double done_ms;
} held_call;

static void *submit_held(void *p)
{
    held_call *h = p;
    Escher__TaskSpec *spec = escher__task_spec__unpack(NULL, h->len, h->buf);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    ProtobufCMessage *rep = NULL;
    h->rc =
        esc_rpc_call(ch, &ESC_M_TASK_SERVICE_SUBMIT_TASK, &spec->base, &rep, 20000, 0, &h->st);
    h->done_ms = h_now_ms();
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    esc_rpc_channel_free(ch);
    protobuf_c_message_free_unpacked(&spec->base, NULL);
    return NULL;
}

/* A spec of a job the raylet does not know, whose job_seq is ahead of the log, is held
 * until the raylet applied that seq, then judged: refused (a forged job is never parked
 * for long), and not before the entry it waited for was committed. */
static void test_unknown_job_held_until_seq(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_status st;
    uint64_t seq = 0;
    assert_int_equal(esc_resource_set(v, "tick", ESC_QTY(1), NULL, &seq, &st), ESC_OK);
    assert_int_equal(esc_wait_applied(v, seq, NULL, 0, 10000, &st), ESC_OK);
    held_call h = {.rc = -1};
    const char *made_up = "0000000000000000000000000000000000000000000000000000000000000000";
    Escher__FunctionRef fn = ESCHER__FUNCTION_REF__INIT;
    fn.library = (char *)h_tasks_lib();
    fn.symbol = "echo";
    Escher__TaskSpec spec = ESCHER__TASK_SPEC__INIT;
    spec.task_id = "e0000000000000000000000000000000";
    spec.job_id = "notyetajob";
    spec.job_credential = (char *)made_up;
    spec.function = &fn;
    spec.num_returns = 1;
    spec.job_seq = seq + 1;
    h.len = protobuf_c_message_pack(&spec.base, h.buf);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, submit_held, &h), 0);
    /* The raylet answers once it applied seq + 1: the next entry of the log. Give the
     * call a moment to arrive first, by a round trip to the same raylet's node state. */
    esc_cluster_status *cs = NULL;
    assert_int_equal(esc_get_cluster_status(v, &cs, NULL), ESC_OK);
    esc_cluster_status_free(cs);
    double wrote = h_now_ms();
    assert_int_equal(esc_resource_set(v, "tick", ESC_QTY(2), NULL, &seq, &st), ESC_OK);
    pthread_join(t, NULL);
    assert_denied(h.rc, &h.st);
    assert_non_null(strstr(h.st.message, "not running"));
    assert_true(h.done_ms >= wrote);
    assert_true(h.done_ms - wrote < 5000); /* well before the hold's deadline */
    assert_int_equal(esc_resource_delete(v, "tick", NULL, &seq, &st), ESC_OK);
    esc_disconnect(v);
}

/* A spec of a job that does not exist, claiming a seq far ahead of the log, is held only
 * until the raylet's deadline (10 s), then refused. */
static void test_forged_seq_not_held_forever(void **state)
{
    (void)state;
    held_call h = {.rc = -1};
    const char *made_up = "0000000000000000000000000000000000000000000000000000000000000000";
    Escher__FunctionRef fn = ESCHER__FUNCTION_REF__INIT;
    fn.library = (char *)h_tasks_lib();
    fn.symbol = "echo";
    Escher__TaskSpec spec = ESCHER__TASK_SPEC__INIT;
    spec.task_id = "e1000000000000000000000000000000";
    spec.job_id = "ghostjob";
    spec.job_credential = (char *)made_up;
    spec.function = &fn;
    spec.num_returns = 1;
    spec.job_seq = UINT64_C(1) << 60;
    h.len = protobuf_c_message_pack(&spec.base, h.buf);
    double start = h_now_ms();
    submit_held(&h);
    assert_denied(h.rc, &h.st);
    assert_true(h.done_ms - start < 15000);
}

/* "default" is shared: two jobs register in it and both write its resources and KV. */
static void test_default_shared(void **state)
{
    (void)state;
    esc_client *one = h_connect(&C, "default", 0, true);
    esc_client *two = h_connect(&C, "default", 0, true);
    esc_status st;
    uint64_t seq;
    assert_int_equal(esc_resource_set(one, "lane", ESC_QTY(1), NULL, &seq, &st), ESC_OK);
    assert_int_equal(esc_resource_add(two, "lane", ESC_QTY(2), NULL, &seq, &st), ESC_OK);
    assert_int_equal(esc_wait_applied(two, seq, NULL, 0, 10000, &st), ESC_OK);
    assert_int_equal(total_of(one, "default/lane"), ESC_QTY(3));
    assert_int_equal(esc_kv_put(one, NULL, "shared", "1", 1, true, NULL, &st), ESC_OK);
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(esc_kv_get(two, NULL, "shared", &val, &len, &st), ESC_OK);
    assert_int_equal(len, 1);
    free(val);
    assert_int_equal(esc_resource_delete(two, "lane", NULL, &seq, &st), ESC_OK);
    esc_disconnect(two);
    esc_disconnect(one);
}

/* True when `escher status --json` lists job `to` in the grants of namespace ns (and,
 * with prefix, an entry of that prefix). */
static bool status_shows_grant(const char *ns, const char *to, const char *prefix)
{
    char cmd[1200], out[1 << 16];
    snprintf(cmd, sizeof cmd,
             "%s/client/escher status --json --address %s --token %s --session-dir %s",
             getenv("ESCHER_BIN_DIR"), C.gcs_addr, C.token, C.dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    assert_int_equal(pclose(p), 0);
    char want[400], want_prefix[400];
    snprintf(want, sizeof want, "\"namespace\": \"%s\"", ns);
    snprintf(want_prefix, sizeof want_prefix, "\"prefix\": \"%s\"", prefix ? prefix : "");
    const char *g = strstr(out, "\"grants\"");
    return g && strstr(g, want) && strstr(g, to) && (!prefix || strstr(g, want_prefix));
}

/* A grant lets the grantee use the namespace, shows in the job table, and a revoke
 * takes it back. A namespace of an ended job can be claimed again. */
static void test_grant_and_revoke(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "friend", 0, false);
    const char *aid = esc_client_job_id(a);
    esc_status st;
    uint64_t seq;
    assert_int_equal(esc_namespace_grant(v, aid, &st), ESC_OK);
    assert_int_equal(esc_namespace_grant(v, aid, &st), ESC_OK); /* again: a no-op */
    assert_int_equal(esc_resource_set_ns(a, "victim", "extra", ESC_QTY(1), NULL, &seq, &st),
                     ESC_OK);
    assert_int_equal(esc_wait_applied(a, seq, NULL, 0, 10000, &st), ESC_OK);
    assert_int_equal(total_of(v, "victim/extra"), ESC_QTY(1));
    assert_int_equal(esc_kv_put(a, "victim", "from-friend", "x", 1, true, NULL, &st), ESC_OK);

    esc_job_info *jobs;
    size_t n;
    assert_int_equal(esc_list_jobs(a, &jobs, &n, &st), ESC_OK);
    bool shown = false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(jobs[i].id, esc_client_job_id(v)))
            shown = jobs[i].ngrants == 1 && !strcmp(jobs[i].grants[0], aid);
    esc_jobs_free(jobs, n);
    assert_true(shown);
    assert_true(status_shows_grant("victim", aid, ""));

    /* Only the owner grants: the grantee cannot pass it on or grant itself more. */
    esc_client *third = h_connect(&C, "third", 0, false);
    assert_int_equal(esc_namespace_grant(a, esc_client_job_id(third), &st), ESC_OK);
    assert_denied(esc_resource_set_ns(third, "victim", "gang", 0, NULL, NULL, &st), &st);
    esc_disconnect(third);

    assert_int_equal(esc_namespace_revoke(v, aid, &st), ESC_OK);
    assert_denied(esc_resource_set_ns(a, "victim", "extra", 0, NULL, NULL, &st), &st);
    assert_denied(esc_kv_put(a, "victim", "from-friend", "y", 1, true, NULL, &st), &st);
    assert_int_equal(total_of(v, "victim/extra"), ESC_QTY(1));
    assert_false(status_shows_grant("victim", aid, NULL));
    assert_int_equal(esc_namespace_grant(v, "nosuchjob", &st), ESC_NOT_FOUND);
    assert_victim_intact(v);
    esc_disconnect(a);
    esc_disconnect(v);

    /* The owner ended: its namespace is free to claim. */
    esc_client *next = h_connect(&C, "victim", 0, false);
    esc_disconnect(next);
}

/* A watch (raw Subscribe with watch set) as job cl on one resource prefix or one KV
 * (ns, prefix): ESC_OK when its first message came, else the stream's code. */
static int raw_watch(esc_client *cl, const char *res, const char *kv_ns, const char *kv_prefix,
                     esc_status *st)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_rpc_channel_set_job(ch, esc_client_job_id(cl), esc_client_job_credential(cl));
    Escher__SubscribeRequest sub = ESCHER__SUBSCRIBE_REQUEST__INIT;
    sub.watch = true;
    char *prefixes[] = {(char *)res};
    Escher__KvPrefix kp = ESCHER__KV_PREFIX__INIT;
    kp.ns = (char *)kv_ns;
    kp.prefix = (char *)kv_prefix;
    Escher__KvPrefix *kps[] = {&kp};
    sub.prefixes = res ? prefixes : NULL;
    sub.n_prefixes = res ? 1 : 0;
    sub.kv = kv_ns ? kps : NULL;
    sub.n_kv = kv_ns ? 1 : 0;
    esc_rpc_stream *s =
        esc_rpc_stream_open_timeout(ch, &ESC_M_GCS_SUBSCRIBE, &sub.base, 10000, st);
    int rc = st->code;
    if (s) {
        ProtobufCMessage *m = NULL;
        rc = esc_rpc_stream_next(s, &m, st) == 1 ? ESC_OK : st->code;
        if (m)
            protobuf_c_message_free_unpacked(m, NULL);
        esc_rpc_stream_free(s);
    }
    esc_rpc_channel_free(ch);
    return rc;
}

/* The prefix grants job `to` holds from job `owner` as esc_list_jobs shows them: the
 * count, and whether `prefix` is one. */
static size_t listed_prefixes(esc_client *cl, const char *owner, const char *to,
                              const char *prefix, bool *has)
{
    esc_job_info *jobs;
    size_t n, count = 0;
    *has = false;
    assert_int_equal(esc_list_jobs(cl, &jobs, &n, NULL), ESC_OK);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; !strcmp(jobs[i].id, owner) && k < jobs[i].nprefix_grants; k++) {
            if (strcmp(jobs[i].prefix_grants[k].job_id, to))
                continue;
            count++;
            *has = *has || !strcmp(jobs[i].prefix_grants[k].prefix, prefix);
        }
    esc_jobs_free(jobs, n);
    return count;
}

/* A task of cl asking for 1 of each of two resources: the submit-and-get code. */
static int run_echo2(esc_client *cl, const char *r1, const char *r2, esc_status *st)
{
    const char *names[] = {r1, r2};
    return run_echo_n(cl, names, 2, st);
}

/* The tenant's KV under a prefix grant "t1.": its own keys, nothing else of the
 * victim's, and lists and watches only under its prefix. */
static void check_prefix_kv(esc_client *a)
{
    esc_status st;
    void *val = NULL;
    size_t len = 0;
    assert_int_equal(esc_kv_put(a, "victim", "t1.feedback/00000001", "r", 1, true, NULL, &st),
                     ESC_OK);
    assert_int_equal(esc_kv_get(a, "victim", "t1.feedback/00000001", &val, &len, &st), ESC_OK);
    free(val);
    assert_denied(esc_kv_put(a, "victim", "other", "x", 1, true, NULL, &st), &st);
    assert_non_null(strstr(st.message, "\"t1.\""));
    assert_denied(esc_kv_get(a, "victim", "k", &val, &len, &st), &st);
    assert_denied(esc_kv_del(a, "victim", "k", NULL, &st), &st);
    char **keys = NULL;
    size_t n = 0;
    assert_denied(esc_kv_keys(a, "victim", "", &keys, &n, &st), &st);
    assert_non_null(strstr(st.message, "\"t1.\""));
    assert_denied(esc_kv_keys(a, "victim", "t", &keys, &n, &st), &st);
    assert_int_equal(esc_kv_keys(a, "victim", "t1.feedback/", &keys, &n, &st), ESC_OK);
    assert_int_equal(n, 1);
    esc_kv_keys_free(keys, n);
    assert_denied(raw_watch(a, NULL, "victim", "", &st), &st);
    assert_non_null(strstr(st.message, "\"t1.\""));
    assert_denied(raw_watch(a, "victim/", NULL, NULL, &st), &st);
    assert_int_equal(raw_watch(a, NULL, "victim", "t1.feedback/", &st), ESC_OK);
    assert_int_equal(raw_watch(a, "victim/t1.", NULL, NULL, &st), ESC_OK);
}

/* The tenant's resources under a prefix grant "t1.": it sets and requests victim/t1.*,
 * never another name of the namespace, alone or next to a granted one in one task. */
static void check_prefix_resources(esc_client *v, esc_client *a)
{
    esc_status st;
    uint64_t seq;
    assert_int_equal(esc_resource_set_ns(a, "victim", "t1.cpu", ESC_QTY(1), NULL, &seq, &st),
                     ESC_OK);
    assert_int_equal(esc_wait_applied(a, seq, NULL, 0, 10000, &st), ESC_OK);
    assert_int_equal(total_of(v, "victim/t1.cpu"), ESC_QTY(1));
    assert_denied(esc_resource_set_ns(a, "victim", "gang", 0, NULL, NULL, &st), &st);
    assert_non_null(strstr(st.message, "\"t1.\""));
    int rc;
    double end = h_now_ms() + 10000; /* the grant reaches the raylet through the log */
    while ((rc = run_echo(a, "victim/t1.cpu", &st)) == ESC_PERMISSION_DENIED && h_now_ms() < end)
        ;
    assert_int_equal(rc, ESC_OK);
    assert_denied(run_echo(a, "victim/gang", &st), &st);
    assert_denied(run_echo2(a, "victim/t1.cpu", "victim/gang", &st), &st);
}

/* A grant limited to a prefix (a controller's tenant: its own capacity and reports):
 * resources and KV under the prefix only, not the owner's actors or objects; listed by
 * esc_list_jobs and `escher status`; a revoke removes it. */
static void test_prefix_grant(void **state)
{
    (void)state;
    esc_client *v = victim();
    esc_client *a = h_connect(&C, "tenant", 0, false);
    const char *vid = esc_client_job_id(v), *aid = esc_client_job_id(a);
    esc_status st;
    assert_int_equal(esc_namespace_grant_prefix(v, aid, "", &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esc_namespace_grant_prefix(v, aid, NULL, &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esc_namespace_grant_prefix(v, aid, "t\n", &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esc_namespace_grant_prefix(v, aid, "t1.", &st), ESC_OK);
    assert_int_equal(esc_namespace_grant_prefix(v, aid, "t1.", &st), ESC_OK); /* a no-op */
    assert_int_equal(esc_namespace_grant_prefix(v, aid, "t2.", &st), ESC_OK);
    bool has;
    assert_int_equal(listed_prefixes(a, vid, aid, "t2.", &has), 2);
    assert_true(has);
    assert_true(status_shows_grant("victim", aid, "t1."));
    check_prefix_kv(a);
    check_prefix_resources(v, a);

    /* Not the victim's actors or objects: those need the whole namespace. */
    esc_actor *act = victim_counter(v);
    assert_int_equal(add_one(a, act), -ESC_PERMISSION_DENIED);
    assert_int_equal(esc_actor_kill(v, act, &st), ESC_OK);
    esc_actor_free(act);
    esc_ref *ref = NULL;
    assert_int_equal(esc_put(v, "secret", 6, &ref, &st), ESC_OK);
    void *val = NULL;
    size_t len = 0;
    assert_denied(esc_get(a, ref, 5000, &val, &len, &st), &st);
    esc_ref_free(ref);

    /* A whole grant covers the prefixes: it replaces them, and a new one is a no-op. */
    assert_int_equal(esc_namespace_grant(v, aid, &st), ESC_OK);
    assert_int_equal(esc_namespace_grant_prefix(v, aid, "t3.", &st), ESC_OK);
    assert_int_equal(listed_prefixes(a, vid, aid, "t1.", &has), 0);
    assert_true(status_shows_grant("victim", aid, ""));
    assert_int_equal(esc_namespace_revoke(v, aid, &st), ESC_OK);
    assert_false(status_shows_grant("victim", aid, NULL));

    /* A revoke removes every prefix grant to the job. */
    assert_int_equal(esc_namespace_grant_prefix(v, aid, "t1.", &st), ESC_OK);
    assert_int_equal(esc_namespace_grant_prefix(v, aid, "t2.", &st), ESC_OK);
    assert_int_equal(esc_namespace_revoke(v, aid, &st), ESC_OK);
    assert_int_equal(listed_prefixes(a, vid, aid, "t1.", &has), 0);
    assert_false(status_shows_grant("victim", aid, NULL));
    assert_denied(esc_kv_put(a, "victim", "t1.feedback/00000002", "r", 1, true, NULL, &st), &st);
    assert_denied(esc_resource_set_ns(a, "victim", "t1.cpu", 0, NULL, NULL, &st), &st);
    int rc;
    double end = h_now_ms() + 10000;
    while ((rc = run_echo(a, "victim/t1.cpu", &st)) == ESC_OK && h_now_ms() < end)
        ;
    assert_denied(rc, &st);
    assert_victim_intact(v);
    esc_disconnect(a);
    esc_disconnect(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_namespace_denied),
        cmocka_unit_test(test_resources_denied),
        cmocka_unit_test(test_kv_denied),
        cmocka_unit_test(test_join_denied),
        cmocka_unit_test(test_job_calls_denied),
        cmocka_unit_test(test_cancel_denied),
        cmocka_unit_test(test_kill_actor_denied),
        cmocka_unit_test(test_forged_result_denied),
        cmocka_unit_test(test_reconstruct_denied),
        cmocka_unit_test(test_task_resources_denied),
        cmocka_unit_test(test_forged_spec_denied),
        cmocka_unit_test(test_actor_call_denied),
        cmocka_unit_test(test_objects_denied),
        cmocka_unit_test(test_task_resources_granted),
        cmocka_unit_test(test_submit_right_after_connect),
        cmocka_unit_test(test_unknown_job_held_until_seq),
        cmocka_unit_test(test_forged_seq_not_held_forever),
        cmocka_unit_test(test_default_shared),
        cmocka_unit_test(test_grant_and_revoke),
        cmocka_unit_test(test_prefix_grant),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
