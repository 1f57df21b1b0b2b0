/* test_gcs.c: the GCS's own modules, in process (gcs_fixture.h): the event log's replay
 * ring, the registry's planning of UpdateResources (atomic batches, quota, targets,
 * credentials), the node table's death and forgetting, the job sweep, and the status
 * the GCS answers from the nodes' reports. Calls go through the real gRPC server; the
 * tables are read on the loop thread, where they live. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcs_fixture.h"
#include "ids.h"
#include "names.h"
#include "qty.h"

/* ------------------------------------------------------------------ helpers */

static int kv_put(esc_rpc_channel *ch, const char *key)
{
    Escher__KvPutRequest req = ESCHER__KV_PUT_REQUEST__INIT;
    req.ns = (char *)"default";
    req.key = (char *)key;
    req.value.data = (uint8_t *)"v";
    req.value.len = 1;
    req.overwrite = true;
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_GCS_KV_PUT, &req.base, &rep, 5000, 0, NULL);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    return rc;
}

/* One op of an UpdateResources batch. */
static Escher__ResourceOp op_make(Escher__OpKind kind, const char *name, long units,
                                  Escher__TargetKind target, const char *node_id,
                                  Escher__Target *t)
{
    escher__target__init(t);
    t->kind = target;
    t->node_id = (char *)(node_id ? node_id : "");
    Escher__ResourceOp op = ESCHER__RESOURCE_OP__INIT;
    op.kind = kind;
    op.name = (char *)name;
    op.value = units * ESC_QTY_SCALE;
    op.target = t;
    return op;
}

/* Sends the batch ops[0..n) for job_id over ch; the status code, its message in st. */
static int update(esc_rpc_channel *ch, const char *job_id, bool detached,
                  Escher__ResourceOp *ops, size_t n, esc_status *st)
{
    Escher__ResourceOp *ptrs[8];
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++)
        ptrs[i] = &ops[i];
    Escher__UpdateResourcesRequest req = ESCHER__UPDATE_RESOURCES_REQUEST__INIT;
    req.job_id = (char *)job_id;
    req.detached = detached;
    req.ops = ptrs;
    req.n_ops = n;
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_GCS_UPDATE_RESOURCES, &req.base, &rep, 5000, 0, st);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    return rc;
}

/* A registry row's total in whole units, or -1 when the row is absent: read on the loop. */
typedef struct {
    const char *node_id, *name; /* full name */
    long total;
    char owner[64];
} row_query;

static void row_read(gcs *g, void *ud)
{
    row_query *q = ud;
    char key[ESC_FULLNAME_MAX + 40];
    gcs_registry_key(q->node_id, q->name, key, sizeof key);
    const Escher__RegistryEntry *e = esc_strmap_get(g->registry, key);
    q->total = e ? (long)(e->total / ESC_QTY_SCALE) : -1;
    snprintf(q->owner, sizeof q->owner, "%s", e ? e->owner_job : "");
}

static long row_total(gcs_fixture *f, const char *node_id, const char *name)
{
    row_query q = {node_id, name, 0, ""};
    gcsf_on_loop(f, row_read, &q);
    return q.total;
}

static void count_rows(gcs *g, void *ud)
{
    *(size_t *)ud = esc_strmap_count(g->registry);
}

static size_t registry_rows(gcs_fixture *f)
{
    size_t n = 0;
    gcsf_on_loop(f, count_rows, &n);
    return n;
}

typedef struct {
    bool (*pred)(gcs *g, void *ud);
    void *ud;
    bool ok;
} probe_call;

static void probe_run(gcs *g, void *ud)
{
    probe_call *p = ud;
    p->ok = p->pred(g, p->ud);
}

/* Polls on the loop thread until pred(g, ud) holds or timeout_ms passed. */
static bool wait_on_loop(gcs_fixture *f, bool (*pred)(gcs *g, void *ud), void *ud,
                         int timeout_ms)
{
    uint64_t end = esc_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        probe_call p = {pred, ud, false};
        gcsf_on_loop(f, probe_run, &p);
        if (p.ok)
            return true;
        if (esc_now_ms() >= end)
            return false;
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* ------------------------------------------------------------------ the replay ring */

typedef struct {
    uint64_t seq;      /* g->seq when read */
    size_t len;        /* events in the ring */
    long since[5];     /* gcs_ring_since from seq-5, seq-4, seq-2, seq, seq+1 */
    size_t first[5];
    uint64_t seqs[4];  /* the ring's events' seqs, oldest first */
    char keys[4][16];  /* their KV keys */
} ring_view;

static void ring_shrink(gcs *g, void *ud)
{
    (void)ud;
    gcs_ring_free(&g->ring);
    gcs_ring_init(&g->ring, 4);
}

static void ring_read(gcs *g, void *ud)
{
    ring_view *v = ud;
    v->seq = g->seq;
    v->len = g->ring.len;
    const uint64_t from[5] = {g->seq - 5, g->seq - 4, g->seq - 2, g->seq, g->seq + 1};
    for (int i = 0; i < 5; i++)
        v->since[i] = gcs_ring_since(g, from[i], &v->first[i]);
    for (size_t i = 0; i < g->ring.len && i < 4; i++) {
        const Escher__Event *ev = gcs_ring_at(g, i);
        v->seqs[i] = ev->seq;
        snprintf(v->keys[i], sizeof v->keys[i], "%s",
                 ev->kind == ESCHER__EVENT_KIND__EV_KV && ev->n_kvs ? ev->kvs[0]->key : "?");
    }
}

/* A ring of 4 keeps the last 4 events in order; a subscriber that applied seq s gets
 * (s, seq] from it when all are still there, -1 (a snapshot instead) when some were
 * evicted or s is from the future. */
static void test_ring_replay(void **state)
{
    (void)state;
    gcs_fixture f;
    assert_int_equal(gcsf_start(&f, 0), 0);
    gcsf_on_loop(&f, ring_shrink, NULL);
    esc_rpc_channel *ch = gcsf_channel(&f);
    char key[16];
    for (int i = 0; i < 6; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(kv_put(ch, key), ESC_OK);
    }
    ring_view v;
    memset(&v, 0, sizeof v);
    gcsf_on_loop(&f, ring_read, &v);
    assert_true(v.seq >= 6);
    assert_int_equal(v.len, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(v.seqs[i], v.seq - 3 + (uint64_t)i);
        snprintf(key, sizeof key, "k%d", i + 2);
        assert_string_equal(v.keys[i], key);
    }
    assert_int_equal(v.since[0], -1); /* seq-4 was evicted */
    assert_int_equal(v.since[1], 4);
    assert_int_equal(v.first[1], 0);
    assert_int_equal(v.since[2], 2);
    assert_int_equal(v.first[2], 2);
    assert_int_equal(v.since[3], 0);  /* up to date: nothing to replay */
    assert_int_equal(v.first[3], 4);
    assert_int_equal(v.since[4], -1); /* a seq this GCS never had */
    esc_rpc_channel_free(ch);
    gcsf_stop(&f);
}

/* ------------------------------------------------------------------ registry planning */

/* An UpdateResources batch is planned whole: a target names nodes, the quota counts
 * rows, and a batch with one bad op or over the quota changes nothing. */
static void test_registry_planning(void **state)
{
    (void)state;
    gcs_fixture f;
    assert_int_equal(gcsf_start(&f, 3), 0); /* a quota of 3 rows per namespace */
    char n0[64], n1[64], job[64];
    assert_int_equal(gcsf_register_node(&f, 40001, 4, n0), ESC_OK);
    assert_int_equal(gcsf_register_node(&f, 40002, 4, n1), ESC_OK);
    esc_rpc_channel *drv = gcsf_channel(&f);
    assert_int_equal(gcsf_register_job(&f, drv, "plan", job, NULL), ESC_OK);
    esc_status st;
    Escher__Target t[3];

    /* ADD on every alive node: one row per node, owned by the job. */
    Escher__ResourceOp add = op_make(ESCHER__OP_KIND__OP_ADD, "a", 2, ESCHER__TARGET_KIND__TARGET_ALL,
                                     NULL, &t[0]);
    assert_int_equal(update(drv, job, false, &add, 1, &st), ESC_OK);
    assert_int_equal(row_total(&f, n0, "plan/a"), 2);
    assert_int_equal(row_total(&f, n1, "plan/a"), 2);
    row_query q = {n0, "plan/a", 0, ""};
    gcsf_on_loop(&f, row_read, &q);
    assert_string_equal(q.owner, job);

    /* A second op with an invalid name: the first is not applied either. */
    Escher__ResourceOp bad[2] = {
        op_make(ESCHER__OP_KIND__OP_ADD, "a", 5, ESCHER__TARGET_KIND__TARGET_NODE, n0, &t[0]),
        op_make(ESCHER__OP_KIND__OP_SET, "not a name!", 1, ESCHER__TARGET_KIND__TARGET_NODE, n0,
                &t[1]),
    };
    assert_int_equal(update(drv, job, false, bad, 2, &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(row_total(&f, n0, "plan/a"), 2);

    /* Over the quota: 2 rows of a + 1 of c + 2 of d = 5 > 3; nothing is applied. */
    Escher__ResourceOp over[2] = {
        op_make(ESCHER__OP_KIND__OP_ADD, "c", 1, ESCHER__TARGET_KIND__TARGET_NODE, n0, &t[0]),
        op_make(ESCHER__OP_KIND__OP_SET, "d", 1, ESCHER__TARGET_KIND__TARGET_ALL, NULL, &t[1]),
    };
    assert_int_equal(update(drv, job, false, over, 2, &st), ESC_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(st.message, "quota"));
    assert_int_equal(row_total(&f, n0, "plan/c"), -1);
    assert_int_equal(registry_rows(&f), 2);

    /* Within the quota, a batch applies every op: SET, then ADD on the same row. */
    Escher__ResourceOp ok[2] = {
        op_make(ESCHER__OP_KIND__OP_SET, "c", 7, ESCHER__TARGET_KIND__TARGET_NODE, n1, &t[0]),
        op_make(ESCHER__OP_KIND__OP_ADD, "c", -3, ESCHER__TARGET_KIND__TARGET_NODE, n1, &t[1]),
    };
    assert_int_equal(update(drv, job, false, ok, 2, &st), ESC_OK);
    assert_int_equal(row_total(&f, n1, "plan/c"), 4);
    assert_int_equal(row_total(&f, n0, "plan/c"), -1);

    /* DELETE on one node leaves the other's row. */
    Escher__ResourceOp del = op_make(ESCHER__OP_KIND__OP_DELETE, "a", 0,
                                     ESCHER__TARGET_KIND__TARGET_NODE, n0, &t[0]);
    assert_int_equal(update(drv, job, false, &del, 1, &st), ESC_OK);
    assert_int_equal(row_total(&f, n0, "plan/a"), -1);
    assert_int_equal(row_total(&f, n1, "plan/a"), 2);

    /* A node that does not exist, an unknown job, a call without the job's credential. */
    Escher__ResourceOp ghost = op_make(ESCHER__OP_KIND__OP_ADD, "g", 1,
                                       ESCHER__TARGET_KIND__TARGET_NODE, "0123456789abcdef", &t[0]);
    assert_int_not_equal(update(drv, job, false, &ghost, 1, &st), ESC_OK);
    assert_int_equal(update(drv, "0123456789abcdef", false, &add, 1, &st),
                     ESC_FAILED_PRECONDITION);
    esc_rpc_channel *stranger = gcsf_channel(&f);
    assert_int_equal(update(stranger, job, false, &add, 1, &st), ESC_PERMISSION_DENIED);
    assert_int_equal(registry_rows(&f), 2);
    esc_rpc_channel_free(stranger);
    esc_rpc_channel_free(drv);
    gcsf_stop(&f);
}

/* ------------------------------------------------------------------ nodes */

typedef struct {
    const char *id;
    int state;      /* -1: not in the table */
    bool forgotten;
} node_view;

static void node_read(gcs *g, void *ud)
{
    node_view *v = ud;
    gcs_node *n = gcs_node_find(g, v->id);
    v->state = n ? (int)n->info->state : -1;
    v->forgotten = gcs_node_forgotten(g, v->id);
}

static void node_silence(gcs *g, void *ud)
{
    /* As if its last report came longer than the node timeout ago. */
    gcs_node_find(g, ud)->last_seen_ms -= GCSF_NODE_TIMEOUT_MS + 1000;
}

static void sweep_nodes_now(gcs *g, void *ud)
{
    gcs_nodes_sweep(g, esc_now_ms() + (uint64_t)(uintptr_t)ud);
}

static bool node_dead_and_clean(gcs *g, void *ud)
{
    const char *id = ud;
    gcs_node *n = gcs_node_find(g, id);
    if (!n || n->info->state != ESCHER__NODE_STATE__NODE_DEAD || n->death_unstored)
        return false;
    /* Its rows left with the stored death. */
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->registry, &pos, &k, &v))
        if (!strcmp(((Escher__RegistryEntry *)v)->node_id, id))
            return false;
    return true;
}

static bool last_event_is_death_of(gcs *g, void *ud)
{
    if (!g->ring.len)
        return false;
    const Escher__Event *ev = gcs_ring_at(g, g->ring.len - 1);
    return ev->kind == ESCHER__EVENT_KIND__EV_NODE_DEAD && ev->node &&
           !strcmp(ev->node->node_id, ud);
}

static bool node_forgotten(gcs *g, void *ud)
{
    return !gcs_node_find(g, ud) && gcs_node_forgotten(g, ud);
}

static int report(gcs_fixture *f, const char *id, bool *unknown)
{
    Escher__ReportNodeRequest req = ESCHER__REPORT_NODE_REQUEST__INIT;
    req.node_id = (char *)id;
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(f->daemon, &ESC_M_GCS_REPORT_NODE, &req.base, &rep, 5000, 0, NULL);
    if (rep) {
        *unknown = ((Escher__ReportNodeReply *)rep)->unknown_node;
        protobuf_c_message_free_unpacked(rep, NULL);
    }
    return rc;
}

/* A node silent past the timeout is declared dead by the sweep, its rows leave with
 * the stored EV_NODE_DEAD, its reports are refused; a node that reported stays; after
 * the retention the dead one leaves the table but stays known as dead. */
static void test_node_death_and_forgetting(void **state)
{
    (void)state;
    gcs_fixture f;
    assert_int_equal(gcsf_start(&f, 0), 0);
    char n0[64], n1[64], job[64];
    assert_int_equal(gcsf_register_node(&f, 40011, 2, n0), ESC_OK);
    assert_int_equal(gcsf_register_node(&f, 40012, 2, n1), ESC_OK);
    esc_rpc_channel *drv = gcsf_channel(&f);
    assert_int_equal(gcsf_register_job(&f, drv, "nodes", job, NULL), ESC_OK);
    esc_status st;
    Escher__Target t;
    Escher__ResourceOp add = op_make(ESCHER__OP_KIND__OP_ADD, "r", 1,
                                     ESCHER__TARGET_KIND__TARGET_ALL, NULL, &t);
    assert_int_equal(update(drv, job, false, &add, 1, &st), ESC_OK);

    gcsf_on_loop(&f, node_silence, n0);
    gcsf_on_loop(&f, sweep_nodes_now, (void *)(uintptr_t)0);
    assert_true(wait_on_loop(&f, node_dead_and_clean, n0, 5000));
    assert_true(wait_on_loop(&f, last_event_is_death_of, n0, 5000));
    node_view v1 = {n1, 0, false};
    gcsf_on_loop(&f, node_read, &v1);
    assert_int_equal(v1.state, ESCHER__NODE_STATE__NODE_ALIVE);
    assert_int_equal(row_total(&f, n1, "nodes/r"), 1);
    bool unknown = false;
    assert_int_equal(report(&f, n0, &unknown), ESC_OK);
    assert_true(unknown);
    assert_int_equal(report(&f, n1, &unknown), ESC_OK);
    assert_false(unknown);

    /* Past the retention: n0 leaves the table, still known as dead. */
    gcsf_on_loop(&f, sweep_nodes_now, (void *)(uintptr_t)(GCSF_RETENTION_MS + 1000));
    assert_true(wait_on_loop(&f, node_forgotten, n0, 5000));
    esc_rpc_channel_free(drv);
    gcsf_stop(&f);
}

/* ------------------------------------------------------------------ jobs */

typedef struct {
    const char *id;
    int state; /* -1: unknown */
} job_view;

static void job_read(gcs *g, void *ud)
{
    job_view *v = ud;
    gcs_job *j = gcs_job_find(g, v->id);
    v->state = j ? (int)j->info->state : -1;
}

static void sweep_jobs_in(gcs *g, void *ud)
{
    gcs_jobs_sweep(g, esc_now_ms() + (uint64_t)(uintptr_t)ud);
}

static bool job_over(gcs *g, void *ud)
{
    gcs_job *j = gcs_job_find(g, ud);
    return j && j->info->state != ESCHER__JOB_STATE__JOB_RUNNING;
}

/* A job with no driver stream is ended by the sweep once the job timeout passed (not
 * before); its resources go with it, detached ones stay. */
static void test_job_sweep(void **state)
{
    (void)state;
    gcs_fixture f;
    assert_int_equal(gcsf_start(&f, 0), 0);
    char n0[64], job[64];
    assert_int_equal(gcsf_register_node(&f, 40021, 2, n0), ESC_OK);
    esc_rpc_channel *drv = gcsf_channel(&f);
    assert_int_equal(gcsf_register_job(&f, drv, "sweep", job, NULL), ESC_OK);
    esc_status st;
    Escher__Target t;
    Escher__ResourceOp own = op_make(ESCHER__OP_KIND__OP_ADD, "mine", 1,
                                     ESCHER__TARGET_KIND__TARGET_ALL, NULL, &t);
    assert_int_equal(update(drv, job, false, &own, 1, &st), ESC_OK);
    Escher__ResourceOp keep = op_make(ESCHER__OP_KIND__OP_ADD, "kept", 1,
                                      ESCHER__TARGET_KIND__TARGET_ALL, NULL, &t);
    assert_int_equal(update(drv, job, true, &keep, 1, &st), ESC_OK);

    gcsf_on_loop(&f, sweep_jobs_in, (void *)(uintptr_t)(GCSF_JOB_TIMEOUT_MS / 2));
    job_view v = {job, 0};
    gcsf_on_loop(&f, job_read, &v);
    assert_int_equal(v.state, ESCHER__JOB_STATE__JOB_RUNNING);

    gcsf_on_loop(&f, sweep_jobs_in, (void *)(uintptr_t)(GCSF_JOB_TIMEOUT_MS + 1000));
    assert_true(wait_on_loop(&f, job_over, job, 5000));
    gcsf_on_loop(&f, job_read, &v);
    assert_int_equal(v.state, ESCHER__JOB_STATE__JOB_FAILED);
    assert_int_equal(row_total(&f, n0, "sweep/mine"), -1);
    assert_int_equal(row_total(&f, n0, "sweep/kept"), 1);
    /* The ended job's writes are refused. */
    assert_int_equal(update(drv, job, false, &own, 1, &st), ESC_FAILED_PRECONDITION);
    esc_rpc_channel_free(drv);
    gcsf_stop(&f);
}

/* ------------------------------------------------------------------ status */

/* GetClusterStatus answers each alive node's queued demand from the node's own last
 * report, so a status is one call. */
static void test_status_demand(void **state)
{
    (void)state;
    gcs_fixture f;
    assert_int_equal(gcsf_start(&f, 0), 0);
    char n0[64];
    assert_int_equal(gcsf_register_node(&f, 40031, 2, n0), ESC_OK);
    Escher__Amount cpu = ESCHER__AMOUNT__INIT;
    cpu.name = (char *)"CPU";
    cpu.value = ESC_QTY_SCALE;
    Escher__Amount *shape[] = {&cpu};
    Escher__Demand d = ESCHER__DEMAND__INIT;
    d.shape = shape;
    d.n_shape = 1;
    d.count = 3;
    Escher__Demand *ds[] = {&d};
    Escher__ReportNodeRequest req = ESCHER__REPORT_NODE_REQUEST__INIT;
    req.node_id = n0;
    req.has_demand = true;
    req.demand = ds;
    req.n_demand = 1;
    ProtobufCMessage *rep = NULL;
    assert_int_equal(
        esc_rpc_call(f.daemon, &ESC_M_GCS_REPORT_NODE, &req.base, &rep, 5000, 0, NULL), ESC_OK);
    protobuf_c_message_free_unpacked(rep, NULL);
    Escher__GetClusterStatusRequest sreq = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    esc_rpc_channel *ch = gcsf_channel(&f);
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_GCS_GET_CLUSTER_STATUS, &sreq.base, &rep, 5000, 0, NULL),
        ESC_OK);
    const Escher__GetClusterStatusReply *s = (const Escher__GetClusterStatusReply *)rep;
    assert_int_equal(s->n_nodes, 1);
    assert_int_equal(s->nodes[0]->n_demand, 1);
    assert_int_equal(s->nodes[0]->demand[0]->count, 3);
    assert_string_equal(s->nodes[0]->demand[0]->shape[0]->name, "CPU");
    protobuf_c_message_free_unpacked(rep, NULL);
    esc_rpc_channel_free(ch);
    gcsf_stop(&f);
}

/* ------------------------------------------------------------------ persistence */

/* A restarted GCS loads what storage holds: the sequence number, nodes and jobs under
 * their ids. A row filed under another id than its own is skipped as unreadable (it
 * would otherwise be a second entry for that id, and the first would be lost). */
static void test_persist_load(void **state)
{
    (void)state;
    char err[256];
    esc_storage *store = esc_storage_open("memory", err, sizeof err);
    assert_non_null(store);
    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, GCS_T_META, "seq", "42", 2);
    Escher__NodeInfo n = ESCHER__NODE_INFO__INIT;
    n.node_id = (char *)"aaaaaaaaaaaaaaaa";
    n.address = (char *)"127.0.0.1:1";
    gcs_put_msg(b, GCS_T_NODES, n.node_id, &n.base);
    gcs_put_msg(b, GCS_T_NODES, "bbbbbbbbbbbbbbbb", &n.base); /* misfiled */
    Escher__JobInfo j = ESCHER__JOB_INFO__INIT;
    j.job_id = (char *)"cccccccccccccccc";
    j.namespace_ = (char *)"ns";
    gcs_put_msg(b, GCS_T_JOBS, j.job_id, &j.base);
    gcs_put_msg(b, GCS_T_JOBS, "dddddddddddddddd", &j.base); /* misfiled */
    assert_int_equal(esc_storage_commit(store, b, err, sizeof err), 0);
    gcs_config cfg = {.bind = "127.0.0.1", .storage_uri = "memory", .node_timeout_ms = 10000,
                      .heartbeat_ms = 1000, .job_timeout_ms = 10000,
                      .max_resources_per_job = 100000, .storage_timeout_ms = 5000,
                      .dead_node_retention_ms = 60000, .metrics_port = -1,
                      .dashboard_port = -1, .event_history = GCS_EVENT_HISTORY_DEFAULT};
    gcs g;
    assert_int_equal(gcs_open_store(&g, &cfg, store, err, sizeof err), 0);
    assert_int_equal(g.seq, 42);
    assert_int_equal(esc_strmap_count(g.nodes), 1);
    assert_non_null(gcs_node_find(&g, "aaaaaaaaaaaaaaaa"));
    assert_int_equal(esc_strmap_count(g.jobs), 1);
    assert_non_null(gcs_job_find(&g, "cccccccccccccccc"));
    gcs_close(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_replay),
        cmocka_unit_test(test_registry_planning),
        cmocka_unit_test(test_node_death_and_forgetting),
        cmocka_unit_test(test_job_sweep),
        cmocka_unit_test(test_status_demand),
        cmocka_unit_test(test_persist_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
