/* test_objects.c: objects across real processes. A put on one node is read by a client
 * on another (pulled between raylets); a 100 MB object makes the round trip intact; a
 * full store refuses a put with RESOURCE_EXHAUSTED and stays up; reading a missing
 * object times out; a job's objects are freed when it ends; a raylet killed with -9
 * takes its locations with it; the directory and the store validate what they get;
 * an error object reads as its error; esc_wait on refs the client does not own waits in
 * the directory (WaitObjects) and is woken when they appear, or at its timeout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "object.pb-c.h"

enum { NODE_A = 0, NODE_B = 1, NODE_SMALL = 2, NODE_VICTIM = 3 };

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 1000);
    const char *extras[4] = {NULL};
    extras[NODE_SMALL] = "--object-store-memory 10000000";
    return h_start_cluster(&C, 4, extras);
}

/* ---------------------------------------------------------------- helpers */

static size_t locations(esc_client *cl, const char *id, char *first_node, size_t len)
{
    esc_ref *ref = esc_ref_from_id(id);
    assert_non_null(ref);
    esc_object_locations *l = NULL;
    assert_int_equal(esc_ref_locations(cl, ref, &l, NULL), ESC_OK);
    size_t n = l->n;
    if (first_node && n)
        snprintf(first_node, len, "%s", l->node_ids[0]);
    esc_object_locations_free(l);
    esc_ref_free(ref);
    return n;
}

typedef struct {
    esc_client *cl;
    char id[80];
} loc_probe;

static bool no_locations(void *p)
{
    loc_probe *lp = p;
    return locations(lp->cl, lp->id, NULL, 0) == 0;
}

static uint64_t store_used(esc_client *cl, const char *node_id)
{
    esc_object_store_stats s;
    esc_status st;
    assert_int_equal(esc_object_store_stats_get(cl, node_id, &s, &st), ESC_OK);
    return s.used;
}

typedef struct {
    esc_client *cl;
    const char *node_id;
    uint64_t want;
} used_probe;

static bool used_is(void *p)
{
    used_probe *u = p;
    return store_used(u->cl, u->node_id) == u->want;
}

/* A raw call of a raylet's or the GCS's object service. */
/* One call as a daemon would make it (the daemon key: directory writes need it). */
static int raw_call(const char *addr, const esc_rpc_method *method, const ProtobufCMessage *req,
                    esc_status *st)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    esc_rpc_channel_set_secret(ch, ESC_RPC_DAEMON_KEY, C.daemon_key);
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(ch, method, req, &rep, 5000, 0, st);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    esc_rpc_channel_free(ch);
    return rc;
}

static void raylet_addr(int i, char *out, size_t len)
{
    snprintf(out, len, "127.0.0.1:%d", C.raylets[i].port);
}

/* ---------------------------------------------------------------- tests */

static void test_pull_across_raylets(void **state)
{
    (void)state;
    esc_client *ca = h_connect(&C, NULL, NODE_A, false);
    esc_client *cb = h_join(&C, ca, NODE_B); /* objects are their job's: one job, two nodes */
    esc_ref *ref = NULL;
    esc_status st;
    const char msg[] = "hello from node A";
    assert_int_equal(esc_put(ca, msg, sizeof msg, &ref, &st), ESC_OK);
    /* Registered by the time put returns: the directory says node A. */
    char node[80] = "";
    assert_int_equal(locations(cb, esc_ref_id(ref), node, sizeof node), 1);
    assert_string_equal(node, C.raylets[NODE_A].node_id);

    /* Read on node B through a reference rebuilt from the id, as another process would. */
    esc_ref *copy = esc_ref_from_id(esc_ref_id(ref));
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(esc_get(cb, copy, 5000, &data, &len, &st), ESC_OK);
    assert_int_equal(len, sizeof msg);
    assert_memory_equal(data, msg, sizeof msg);
    free(data);
    /* An empty object is an object too. */
    esc_ref *empty = NULL;
    assert_int_equal(esc_put(ca, NULL, 0, &empty, &st), ESC_OK);
    assert_int_equal(esc_get(cb, empty, 5000, &data, &len, &st), ESC_OK);
    assert_int_equal(len, 0);
    free(data);

    /* Released: gone from the store and the directory; a read then times out. */
    assert_int_equal(esc_ref_release(cb, copy, &st), ESC_OK);
    loc_probe p = {cb, ""};
    snprintf(p.id, sizeof p.id, "%s", esc_ref_id(ref));
    assert_true(h_wait_until(no_locations, &p, 3000));
    assert_int_equal(esc_get(cb, ref, 200, &data, &len, &st), ESC_DEADLINE_EXCEEDED);
    assert_null(data);
    assert_int_equal(esc_ref_release(cb, ref, &st), ESC_OK); /* twice is fine */
    esc_ref_free(copy);
    esc_ref_free(ref);
    esc_ref_free(empty);
    assert_null(esc_ref_from_id(""));
    assert_null(esc_ref_from_id("bad/id"));
    esc_disconnect(cb); /* the joined client first */
    esc_disconnect(ca);
}

static void test_100mb_from_another_node(void **state)
{
    (void)state;
    esc_client *ca = h_connect(&C, NULL, NODE_A, false);
    esc_client *cb = h_join(&C, ca, NODE_B); /* objects are their job's: one job, two nodes */
    const size_t size = 100u << 20;
    uint8_t *buf = malloc(size);
    assert_non_null(buf);
    for (size_t i = 0; i < size; i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    esc_ref *ref = NULL;
    esc_status st;
    double t0 = h_now_ms();
    assert_int_equal(esc_put(ca, buf, size, &ref, &st), ESC_OK);
    double t1 = h_now_ms();
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(esc_get(cb, ref, 30000, &data, &len, &st), ESC_OK);
    double t2 = h_now_ms();
    assert_int_equal(len, size);
    assert_true(memcmp(data, buf, size) == 0);
    printf("100 MB object: put on node A %.0f ms, get on node B (pull across raylets) %.0f ms "
           "(%.0f MB/s)\n",
           t1 - t0, t2 - t1, 100.0 / ((t2 - t1) / 1000.0));
    free(data);
    free(buf);
    assert_int_equal(esc_ref_release(ca, ref, &st), ESC_OK);
    esc_ref_free(ref);
    esc_disconnect(cb); /* the joined client first */
    esc_disconnect(ca);
}

static void test_full_store(void **state)
{
    (void)state;
    esc_client *cs = h_connect(&C, NULL, NODE_SMALL, false);
    const size_t six = 6000000;
    uint8_t *buf = calloc(1, six);
    esc_ref *a = NULL, *b = NULL, *c = NULL;
    esc_status st;
    assert_int_equal(esc_put(cs, buf, six, &a, &st), ESC_OK);
    assert_int_equal(esc_put(cs, buf, six, &b, &st), ESC_RESOURCE_EXHAUSTED);
    assert_null(b);
    assert_non_null(strstr(st.message, "object store full (used 6000000 of 10000000 bytes"));
    assert_true(h_alive(C.raylets[NODE_SMALL].pid));
    /* Nothing of the refused put stays behind, and what fits still goes in. */
    assert_int_equal(store_used(cs, NULL), six);
    assert_int_equal(esc_put(cs, buf, 3000000, &c, &st), ESC_OK);
    assert_int_equal(store_used(cs, NULL), six + 3000000);
    assert_int_equal(esc_ref_release(cs, a, &st), ESC_OK);
    assert_int_equal(esc_ref_release(cs, c, &st), ESC_OK);
    assert_int_equal(store_used(cs, NULL), 0);
    esc_ref_free(a);
    esc_ref_free(c);
    free(buf);
    esc_disconnect(cs);
}

static void test_missing_times_out(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, NULL, NODE_B, false);
    esc_ref *ref = esc_ref_from_id("0123456789abcdef0123456789abcdef");
    void *data = NULL;
    size_t len = 0;
    esc_status st;
    double t0 = h_now_ms();
    assert_int_equal(esc_get(cl, ref, 300, &data, &len, &st), ESC_DEADLINE_EXCEEDED);
    double took = h_now_ms() - t0;
    assert_true(took >= 280 && took < 3000);
    assert_null(data);
    t0 = h_now_ms();
    assert_int_equal(esc_get(cl, ref, 0, &data, &len, &st), ESC_DEADLINE_EXCEEDED);
    assert_true(h_now_ms() - t0 < 1000); /* 0: no waiting */
    esc_ref_free(ref);
    esc_disconnect(cl);
}

static void test_job_end_frees_objects(void **state)
{
    (void)state;
    esc_client *watcher = h_connect(&C, NULL, NODE_A, false);
    const char *node = C.raylets[NODE_A].node_id;
    uint64_t before = store_used(watcher, node);
    esc_client *job = h_connect(&C, NULL, NODE_A, false);
    char ids[3][80];
    static uint8_t mb[1 << 20];
    for (int i = 0; i < 3; i++) {
        esc_ref *r = NULL;
        assert_int_equal(esc_put(job, mb, sizeof mb, &r, NULL), ESC_OK);
        snprintf(ids[i], sizeof ids[i], "%s", esc_ref_id(r));
        esc_ref_free(r);
    }
    assert_int_equal(store_used(watcher, node), before + 3 * sizeof mb);
    esc_disconnect(job); /* the job ends */
    used_probe u = {watcher, node, before};
    assert_true(h_wait_until(used_is, &u, 5000));
    for (int i = 0; i < 3; i++)
        assert_int_equal(locations(watcher, ids[i], NULL, 0), 0);
    esc_disconnect(watcher);
}

static void test_killed_raylet_drops_locations(void **state)
{
    (void)state;
    esc_client *cv = h_connect(&C, NULL, NODE_VICTIM, false);
    esc_client *cb = h_join(&C, cv, NODE_B); /* objects are their job's */
    esc_ref *ref = NULL;
    assert_int_equal(esc_put(cv, "doomed", 6, &ref, NULL), ESC_OK);
    assert_int_equal(locations(cb, esc_ref_id(ref), NULL, 0), 1);
    h_kill(&C.raylets[NODE_VICTIM].pid, SIGKILL);
    loc_probe p = {cb, ""};
    snprintf(p.id, sizeof p.id, "%s", esc_ref_id(ref));
    assert_true(h_wait_until(no_locations, &p, 8000));
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(esc_get(cb, ref, 200, &data, &len, NULL), ESC_DEADLINE_EXCEEDED);
    esc_ref_free(ref);
    esc_disconnect(cb);
    esc_disconnect(cv);
}

static void test_validation(void **state)
{
    (void)state;
    esc_status st;
    Escher__ObjectLocation loc = ESCHER__OBJECT_LOCATION__INIT;
    loc.object_id = "";
    loc.node_id = C.raylets[NODE_A].node_id;
    assert_int_equal(raw_call(C.gcs_addr, &ESC_M_OBJECT_DIRECTORY_ADD_LOCATION, &loc.base, &st),
                     ESC_INVALID_ARGUMENT);
    loc.object_id = "someobject";
    loc.node_id = "";
    assert_int_equal(raw_call(C.gcs_addr, &ESC_M_OBJECT_DIRECTORY_ADD_LOCATION, &loc.base, &st),
                     ESC_INVALID_ARGUMENT);
    loc.node_id = "no-such-node";
    assert_int_equal(raw_call(C.gcs_addr, &ESC_M_OBJECT_DIRECTORY_ADD_LOCATION, &loc.base, &st),
                     ESC_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "unknown node"));
    assert_int_equal(
        raw_call(C.gcs_addr, &ESC_M_OBJECT_DIRECTORY_REMOVE_LOCATION, &loc.base, &st),
        ESC_INVALID_ARGUMENT);
    Escher__GetLocationsRequest gl = ESCHER__GET_LOCATIONS_REQUEST__INIT;
    gl.object_id = "bad/id";
    assert_int_equal(raw_call(C.gcs_addr, &ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS, &gl.base, &st),
                     ESC_INVALID_ARGUMENT);

    char addr[64];
    raylet_addr(NODE_A, addr, sizeof addr);
    Escher__ObjectChunk ch = ESCHER__OBJECT_CHUNK__INIT;
    ch.object_id = "chunky";
    ch.total_size = 4;
    ch.data.data = (uint8_t *)"12345";
    ch.data.len = 5; /* past the end */
    assert_int_equal(raw_call(addr, &ESC_M_OBJECT_STORE_PUT_CHUNK, &ch.base, &st),
                     ESC_INVALID_ARGUMENT);
    ch.offset = 2;
    ch.data.len = 2; /* no first chunk */
    assert_int_equal(raw_call(addr, &ESC_M_OBJECT_STORE_PUT_CHUNK, &ch.base, &st),
                     ESC_FAILED_PRECONDITION);
    Escher__PullRequest pr = ESCHER__PULL_REQUEST__INIT;
    pr.object_id = "never-stored";
    esc_rpc_channel *c = esc_rpc_channel_new(addr, C.token);
    esc_rpc_stream *s = esc_rpc_stream_open(c, &ESC_M_OBJECT_STORE_PULL, &pr.base, &st);
    assert_non_null(s);
    ProtobufCMessage *m = NULL;
    assert_int_equal(esc_rpc_stream_next(s, &m, &st), 0);
    assert_int_equal(st.code, ESC_NOT_FOUND);
    esc_rpc_stream_free(s);
    /* A reader that expects another node at this address (one that died, its address
     * reused) is told the node is not there, not that the object was freed. */
    pr.node_id = C.raylets[NODE_B].node_id;
    s = esc_rpc_stream_open(c, &ESC_M_OBJECT_STORE_PULL, &pr.base, &st);
    assert_non_null(s);
    assert_int_equal(esc_rpc_stream_next(s, &m, &st), 0);
    assert_int_equal(st.code, ESC_UNAVAILABLE);
    esc_rpc_stream_free(s);
    esc_rpc_channel_free(c);
}

/* AddLocations answers each entry on its own: a valid one is added, one of an ended job
 * is refused, a malformed one is invalid, and none stops the others. */
static void test_location_batches(void **state)
{
    (void)state;
    esc_client *ended = h_connect(&C, "ended", NODE_A, false);
    char ended_job[80];
    snprintf(ended_job, sizeof ended_job, "%s", esc_client_job_id(ended));
    esc_disconnect(ended); /* its job is over */
    esc_client *cl = h_connect(&C, "batch", NODE_A, false);
    Escher__ObjectLocation loc[3];
    const char *ids[3] = {"batch-ok", "batch-ended", "../bad"};
    const char *jobs[3] = {esc_client_job_id(cl), ended_job, esc_client_job_id(cl)};
    Escher__ObjectLocation *locs[3];
    for (int i = 0; i < 3; i++) {
        escher__object_location__init(&loc[i]);
        loc[i].object_id = (char *)ids[i];
        loc[i].node_id = C.raylets[NODE_A].node_id;
        loc[i].job_id = (char *)jobs[i];
        loc[i].size = 1;
        locs[i] = &loc[i];
    }
    Escher__ObjectLocations req = ESCHER__OBJECT_LOCATIONS__INIT;
    req.locations = locs;
    req.n_locations = 3;
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_rpc_channel_set_secret(ch, ESC_RPC_DAEMON_KEY, C.daemon_key); /* as a raylet */
    ProtobufCMessage *m = NULL;
    esc_status st;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_OBJECT_DIRECTORY_ADD_LOCATIONS, &req.base, &m, 5000, 0, &st),
        ESC_OK);
    Escher__ObjectLocationsReply *rep = (Escher__ObjectLocationsReply *)m;
    assert_int_equal(rep->n_codes, 3);
    assert_int_equal(rep->codes[0], ESC_OK);
    assert_int_equal(rep->codes[1], ESC_FAILED_PRECONDITION);
    assert_non_null(strstr(rep->errors[1], "has ended"));
    assert_int_equal(rep->codes[2], ESC_INVALID_ARGUMENT);
    protobuf_c_message_free_unpacked(m, NULL);
    assert_int_equal(locations(cl, "batch-ok", NULL, 0), 1);
    assert_int_equal(locations(cl, "batch-ended", NULL, 0), 0);
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_OBJECT_DIRECTORY_REMOVE_LOCATIONS, &req.base, &m, 5000, 0, &st),
        ESC_OK);
    rep = (Escher__ObjectLocationsReply *)m;
    assert_int_equal(rep->codes[0], ESC_OK);
    assert_int_equal(rep->codes[2], ESC_INVALID_ARGUMENT);
    protobuf_c_message_free_unpacked(m, NULL);
    assert_int_equal(locations(cl, "batch-ok", NULL, 0), 0);
    esc_rpc_channel_free(ch);
    esc_disconnect(cl);
}

static void test_error_object(void **state)
{
    (void)state;
    esc_client *ca = h_connect(&C, NULL, NODE_A, false);
    esc_client *cb = h_join(&C, ca, NODE_B); /* objects are their job's: one job, two nodes */
    char addr[64];
    raylet_addr(NODE_A, addr, sizeof addr);
    /* What a failed task leaves behind: an empty object that carries its error. */
    Escher__ObjectChunk ch = ESCHER__OBJECT_CHUNK__INIT;
    ch.object_id = "failedtask0000";
    ch.job_id = (char *)esc_client_job_id(ca);
    ch.is_error = true;
    ch.error = "worker died: signal 11 (SIGSEGV)";
    esc_status st;
    assert_int_equal(raw_call(addr, &ESC_M_OBJECT_STORE_PUT_CHUNK, &ch.base, &st), ESC_OK);
    esc_ref *ref = esc_ref_from_id("failedtask0000");
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(esc_get(cb, ref, 5000, &data, &len, &st), ESC_ABORTED);
    assert_string_equal(st.message, "worker died: signal 11 (SIGSEGV)");
    assert_null(data);
    esc_ref_free(ref);
    esc_disconnect(cb);
    esc_disconnect(ca); /* the job's end frees it */
}

typedef struct {
    esc_client *cl;
    esc_ref *ref;
    int timeout_ms;
    int rc;
} get_job;

static void *run_get(void *p)
{
    get_job *g = p;
    void *data = NULL;
    size_t len = 0;
    g->rc = esc_get(g->cl, g->ref, g->timeout_ms, &data, &len, NULL);
    free(data);
    return NULL;
}

typedef struct {
    int gcs_port, raylet_port;
    const char *node_id; /* raylet 0's */
} busy_probe;

/* Both getters' calls reached the daemons: a GetLocations at the GCS (the object that
 * does not exist; held until the getter's timeout) and a Pull at raylet 0. */
static bool calls_held(void *p)
{
    const busy_probe *b = p;
    char pull[160];
    snprintf(pull, sizeof pull, "escher_raylet_rpc_calls_total{node=\"%s\",method=\"Pull\"}",
             b->node_id);
    double locs = 0, pulls = 0;
    return h_metric(b->gcs_port, "escher_gcs_rpc_calls_total{method=\"GetLocations\"}", &locs) &&
           h_metric(b->raylet_port, pull, &pulls) && locs >= 2 && pulls >= 1;
}

/* Daemons stopped while calls are held (a GetLocations waiting at the GCS, a Pull
 * streaming out of a raylet) still exit 0 with nothing leaked (h_stop checks). */
static void test_shutdown_while_busy(void **state)
{
    (void)state;
    h_cluster d;
    h_init(&d, 1000);
    /* The metrics endpoints say when the calls are held: the GCS has both getters'
     * GetLocations and raylet 0 a Pull (calls count on arrival). */
    busy_probe busy = {h_free_port(), h_free_port(), d.raylets[0].node_id};
    char extra[64];
    snprintf(d.gcs_extra, sizeof d.gcs_extra, "--metrics-port %d", busy.gcs_port);
    snprintf(extra, sizeof extra, "--metrics-port %d", busy.raylet_port);
    assert_int_equal(h_gcs_start(&d), 0);
    assert_int_equal(h_raylet_start(&d, 0, extra), 0);
    assert_int_equal(h_raylet_start(&d, 1, NULL), 0);
    esc_client *ca = h_connect(&d, NULL, 0, false);
    esc_client *cb = h_join(&d, ca, 1); /* objects are their job's */
    const size_t size = 64u << 20;
    uint8_t *buf = calloc(1, size);
    esc_ref *big = NULL;
    assert_int_equal(esc_put(ca, buf, size, &big, NULL), ESC_OK);
    free(buf);
    /* Readers keep trying while the GCS is away (it may come back), up to their
     * timeout: short ones here. */
    get_job waiting = {cb, esc_ref_from_id("nothing-here-yet"), 1000, -1};
    get_job pulling = {cb, big, 1000, -1};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, run_get, &waiting), 0);
    assert_int_equal(pthread_create(&t2, NULL, run_get, &pulling), 0);
    assert_true(h_wait_until(calls_held, &busy, 5000));
    double t0 = h_now_ms();
    h_stop(&d); /* raylets first, then the GCS */
    assert_true(h_now_ms() - t0 < 5000);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_int_not_equal(waiting.rc, ESC_OK);
    esc_ref_free(waiting.ref);
    esc_ref_free(big);
    esc_disconnect(cb);
    esc_disconnect(ca); /* waits FinishJob's 3 s for the GCS, which is gone */
}

typedef struct {
    esc_client *cl;
    const esc_ref *ref;
    int timeout_ms;
    bool ready;
    size_t nready;
    double done_ms;
} wait_job;

static void *run_wait(void *p)
{
    wait_job *w = p;
    const esc_ref *refs[1] = {w->ref};
    assert_int_equal(esc_wait(w->cl, refs, 1, 1, w->timeout_ms, &w->ready, &w->nready, NULL),
                     ESC_OK);
    w->done_ms = h_now_ms();
    return NULL;
}

/* A command task of cb that ends when the test writes a line into fifo. */
static esc_ref *submit_blocked(esc_client *cb, const char *fifo)
{
    char script[300];
    snprintf(script, sizeof script, "read x < %s", fifo);
    const char *argv[] = {"sh", "-c", script, NULL};
    esc_task_spec spec = {.argv = argv};
    esc_ref *ref = NULL;
    assert_int_equal(esc_task_submit(cb, &spec, &ref, NULL, NULL), ESC_OK);
    return ref;
}

/* Refs the waiting client does not own (another client's task) are waited for in the
 * directory: with its own pending task, the owner's notice wakes it; the other's object
 * wakes it as soon as it appears, well before the timeout; a missing one times out;
 * another job's object never counts; 0 is one look. */
static void test_wait_for_others(void **state)
{
    (void)state;
    esc_client *ca = h_connect(&C, NULL, NODE_A, false);
    esc_client *cb = h_join(&C, ca, NODE_B);
    char fifo[128];
    h_marker_path(fifo, sizeof fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    esc_ref *theirs = submit_blocked(cb, fifo);
    esc_ref *seen = esc_ref_from_id(esc_ref_id(theirs)); /* ca knows only the id */

    /* Mixed: ca's own task ends first and wakes the wait held in the directory. */
    esc_task_arg arg = {.data = "mine", .len = 4};
    esc_task_spec echo = {.library = h_tasks_lib(), .symbol = "echo", .args = &arg, .nargs = 1};
    esc_ref *mine = NULL;
    assert_int_equal(esc_task_submit(ca, &echo, &mine, NULL, NULL), ESC_OK);
    const esc_ref *both[2] = {seen, mine};
    bool ready2[2] = {false, false};
    size_t n = 0;
    double t0 = h_now_ms();
    assert_int_equal(esc_wait(ca, both, 2, 1, 30000, ready2, &n, NULL), ESC_OK);
    assert_true(h_now_ms() - t0 < 10000);
    assert_int_equal(n, 1);
    assert_false(ready2[0]);
    assert_true(ready2[1]);

    /* The other's object appears: the waiter is woken at once. */
    wait_job w = {.cl = ca, .ref = seen, .timeout_ms = 30000};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_wait, &w), 0);
    int fd = open(fifo, O_WRONLY); /* returns once the task reads */
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x\n", 2), 2);
    close(fd);
    double sent = h_now_ms();
    pthread_join(t, NULL);
    assert_true(w.ready);
    assert_int_equal(w.nready, 1);
    assert_true(w.done_ms - sent < 5000);

    /* Timeout 0: one look, and it is there now. */
    bool r = false;
    assert_int_equal(esc_wait(ca, (const esc_ref *const *)&seen, 1, 1, 0, &r, &n, NULL), ESC_OK);
    assert_true(r);

    /* A missing object: the timeout. */
    esc_ref *missing = esc_ref_from_id("0123456789abcdef0123456789abcdef.nothing");
    r = false;
    t0 = h_now_ms();
    assert_int_equal(esc_wait(ca, (const esc_ref *const *)&missing, 1, 1, 300, &r, &n, NULL),
                     ESC_OK);
    double took = h_now_ms() - t0;
    assert_false(r);
    assert_int_equal(n, 0);
    assert_true(took >= 280 && took < 3000);

    /* Many at once, a ref repeated: num_ready of them, or what is there at the timeout. */
    esc_ref *p1 = NULL, *p2 = NULL;
    assert_int_equal(esc_put(cb, "one", 3, &p1, NULL), ESC_OK);
    assert_int_equal(esc_put(cb, "two", 3, &p2, NULL), ESC_OK);
    const esc_ref *many[4] = {missing, p1, p2, p1};
    bool r4[4] = {false};
    t0 = h_now_ms();
    assert_int_equal(esc_wait(ca, many, 4, 3, 20000, r4, &n, NULL), ESC_OK);
    assert_true(h_now_ms() - t0 < 5000);
    assert_int_equal(n, 3);
    assert_false(r4[0]);
    assert_true(r4[1] && r4[2] && r4[3]);
    memset(r4, 0, sizeof r4);
    t0 = h_now_ms();
    assert_int_equal(esc_wait(ca, many, 4, 4, 300, r4, &n, NULL), ESC_OK);
    took = h_now_ms() - t0;
    assert_int_equal(n, 3);
    assert_true(took >= 280 && took < 3000);
    esc_ref_free(p1);
    esc_ref_free(p2);

    /* Another job that was not granted cb's namespace: cb's object never counts. */
    esc_client *other = h_connect(&C, NULL, NODE_A, false);
    r = false;
    assert_int_equal(esc_wait(other, (const esc_ref *const *)&seen, 1, 1, 300, &r, &n, NULL),
                     ESC_OK);
    assert_false(r);

    unlink(fifo);
    esc_ref_free(missing);
    esc_ref_free(mine);
    esc_ref_free(seen);
    esc_ref_free(theirs);
    esc_disconnect(other);
    esc_disconnect(cb);
    esc_disconnect(ca);
}

/* WaitObjects checks its ids: repeated or invalid ones are refused. */
static void test_wait_objects_validation(void **state)
{
    (void)state;
    esc_status st;
    char *ids[2] = {"same-id", "same-id"};
    Escher__WaitObjectsRequest wo = ESCHER__WAIT_OBJECTS_REQUEST__INIT;
    wo.object_ids = ids;
    wo.n_object_ids = 2;
    assert_int_equal(raw_call(C.gcs_addr, &ESC_M_OBJECT_DIRECTORY_WAIT_OBJECTS, &wo.base, &st),
                     ESC_INVALID_ARGUMENT);
    ids[1] = "bad/id";
    assert_int_equal(raw_call(C.gcs_addr, &ESC_M_OBJECT_DIRECTORY_WAIT_OBJECTS, &wo.base, &st),
                     ESC_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pull_across_raylets),
        cmocka_unit_test(test_100mb_from_another_node),
        cmocka_unit_test(test_full_store),
        cmocka_unit_test(test_missing_times_out),
        cmocka_unit_test(test_job_end_frees_objects),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_location_batches),
        cmocka_unit_test(test_error_object),
        cmocka_unit_test(test_wait_for_others),
        cmocka_unit_test(test_wait_objects_validation),
        cmocka_unit_test(test_killed_raylet_drops_locations),
        cmocka_unit_test(test_shutdown_while_busy),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
