/* test_resources.c: ephemeral resources across a GCS and three raylets on loopback:
 * targeted, selector and all-nodes writes, atomic batches, wait_applied, concurrent
 * writers, validation, and the held/available semantics enforced by a raylet. */
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

#include "gcs.pb-c.h"
#include "harness.h"
#include "qty.h"
#include "utf8.h"
#include "raylet.pb-c.h"

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    return h_start_cluster(&C, 3, (const char *const[]){"--resources static_a=2", NULL, NULL});
}

/* The row `name` of node i in a fresh cluster status; false when absent. */
static bool row_of(esc_client *cl, int i, const char *name, esc_resource_info *out)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    bool found = false;
    for (size_t n = 0; n < s->nnodes; n++) {
        if (strcmp(s->nodes[n].id, C.raylets[i].node_id) != 0)
            continue;
        const esc_resource_info *r = esc_node_resource(&s->nodes[n], name);
        if (r) {
            *out = *r;
            out->name = out->namespace_ = out->owner = NULL;
            found = true;
        }
    }
    esc_cluster_status_free(s);
    return found;
}

static int64_t total_of(esc_client *cl, int i, const char *name)
{
    esc_resource_info r;
    return row_of(cl, i, name, &r) ? r.total : -1;
}

static void applied(esc_client *cl, uint64_t seq)
{
    esc_status st;
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, &st), ESC_OK);
}

static void test_targeted_write(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "tgt", 0, false);
    uint64_t seq = 0;
    esc_target t1 = ESC_NODE(C.raylets[1].node_id);
    assert_int_equal(esc_resource_set(cl, "gpu_slot", ESC_QTY(2.5), &t1, &seq, NULL), ESC_OK);
    assert_true(seq > 0);
    applied(cl, seq);
    assert_int_equal(total_of(cl, 1, "tgt/gpu_slot"), 25000);
    assert_int_equal(total_of(cl, 0, "tgt/gpu_slot"), -1);
    assert_int_equal(total_of(cl, 2, "tgt/gpu_slot"), -1);
    /* local target = raylet 0 */
    assert_int_equal(esc_resource_set(cl, "mine", ESC_QTY(1), NULL, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_int_equal(total_of(cl, 0, "tgt/mine"), 10000);
    /* add is a delta; present-with-zero stays present */
    assert_int_equal(esc_resource_add(cl, "gpu_slot", ESC_QTY(-2.5), &t1, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_int_equal(total_of(cl, 1, "tgt/gpu_slot"), 0);
    assert_int_equal(esc_resource_delete(cl, "gpu_slot", &t1, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_int_equal(total_of(cl, 1, "tgt/gpu_slot"), -1);
    esc_disconnect(cl);
}

static void test_all_nodes_and_selector(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "sel", -1, false);
    uint64_t seq;
    esc_target all = ESC_ALL_NODES;
    assert_int_equal(esc_resource_set(cl, "everywhere", ESC_QTY(3), &all, &seq, NULL), ESC_OK);
    applied(cl, seq);
    for (int i = 0; i < 3; i++)
        assert_int_equal(total_of(cl, i, "sel/everywhere"), 30000);

    /* Only raylet 0 has static_a: a selector on it picks raylet 0. */
    esc_amount where[] = {{.name = "static_a", .value = ESC_QTY(1)}};
    esc_target sel = {.kind = ESC_TARGET_SELECTOR, .where = where, .nwhere = 1, .num_nodes = 1};
    assert_int_equal(esc_resource_set(cl, "picked", ESC_QTY(1), &sel, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_int_equal(total_of(cl, 0, "sel/picked"), 10000);
    assert_int_equal(total_of(cl, 1, "sel/picked"), -1);

    /* Two nodes with CPU >= 1: any two of the three, and exactly two. */
    esc_amount cpu[] = {{.name = "CPU", .value = ESC_QTY(1)}};
    esc_target two = {.kind = ESC_TARGET_SELECTOR, .where = cpu, .nwhere = 1, .num_nodes = 2};
    assert_int_equal(esc_resource_set(cl, "pair", ESC_QTY(1), &two, &seq, NULL), ESC_OK);
    applied(cl, seq);
    int have = 0;
    for (int i = 0; i < 3; i++)
        have += total_of(cl, i, "sel/pair") == 10000;
    assert_int_equal(have, 2);

    /* Four nodes asked, three exist: refused, nothing applied. */
    esc_status st;
    esc_target four = {.kind = ESC_TARGET_SELECTOR, .where = cpu, .nwhere = 1, .num_nodes = 4};
    assert_int_equal(esc_resource_set(cl, "quad", ESC_QTY(1), &four, &seq, &st),
                     ESC_FAILED_PRECONDITION);
    for (int i = 0; i < 3; i++)
        assert_int_equal(total_of(cl, i, "sel/quad"), -1);
    esc_disconnect(cl);
}

static void test_atomic_batch(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "batch", 0, false);
    esc_cluster_status *before = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &before, NULL), ESC_OK);
    esc_batch *b = esc_batch_new();
    esc_target n0 = ESC_NODE(C.raylets[0].node_id), n1 = ESC_NODE(C.raylets[1].node_id);
    esc_target bad = ESC_NODE("0123456789abcdef");
    esc_batch_set(b, "x", ESC_QTY(1), &n0);
    esc_batch_set(b, "y", ESC_QTY(2), &n1);
    esc_batch_set(b, "z", ESC_QTY(3), &bad);
    uint64_t seq = 0;
    esc_status st;
    assert_int_equal(esc_batch_commit(cl, b, &seq, &st), ESC_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "unknown node"));
    esc_cluster_status *after = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &after, NULL), ESC_OK);
    assert_int_equal(after->committed_seq, before->committed_seq);
    assert_int_equal(total_of(cl, 0, "batch/x"), -1);
    assert_int_equal(total_of(cl, 1, "batch/y"), -1);
    esc_cluster_status_free(before);
    esc_cluster_status_free(after);
    esc_batch_free(b);

    /* The same batch without the bad target commits as one entry. */
    b = esc_batch_new();
    esc_batch_set(b, "x", ESC_QTY(1), &n0);
    esc_batch_set(b, "y", ESC_QTY(2), &n1);
    esc_batch_add(b, "y", ESC_QTY(0.5), &n1);
    assert_int_equal(esc_batch_commit(cl, b, &seq, NULL), ESC_OK);
    const char *ids[] = {C.raylets[0].node_id, C.raylets[1].node_id};
    assert_int_equal(esc_wait_applied(cl, seq, ids, 2, 5000, NULL), ESC_OK);
    assert_int_equal(total_of(cl, 0, "batch/x"), 10000);
    assert_int_equal(total_of(cl, 1, "batch/y"), 25000);
    esc_batch_free(b);
    esc_disconnect(cl);
}

static void test_validation(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "val", 0, false);
    esc_status st;
    assert_int_equal(esc_resource_set(cl, "CPU", ESC_QTY(1), NULL, NULL, &st), ESC_PERMISSION_DENIED);
    assert_int_equal(esc_resource_set(cl, "node:127.0.0.1", 1, NULL, NULL, &st), ESC_PERMISSION_DENIED);
    assert_int_equal(esc_resource_set(cl, "bad name!", 1, NULL, NULL, &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esc_resource_set(cl, "", 1, NULL, NULL, &st), ESC_INVALID_ARGUMENT);
    char longname[80];
    memset(longname, 'a', 70);
    longname[70] = 0;
    assert_int_equal(esc_resource_set(cl, longname, 1, NULL, NULL, &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esc_resource_set(cl, "neg", -1, NULL, NULL, &st), ESC_INVALID_ARGUMENT);
    esc_target ghost = ESC_NODE("feedfacefeedface");
    assert_int_equal(esc_resource_set(cl, "ok", 1, &ghost, NULL, &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esc_resource_delete(cl, "never_made", NULL, NULL, &st), ESC_NOT_FOUND);
    assert_int_equal(esc_wait_applied(cl, UINT64_MAX / 2, NULL, 0, 100, &st), ESC_INVALID_ARGUMENT);
    /* Nothing above left a row behind. */
    assert_int_equal(total_of(cl, 0, "val/neg"), -1);
    assert_int_equal(total_of(cl, 0, "val/ok"), -1);
    esc_disconnect(cl);
}

static void test_cross_namespace(void **state)
{
    (void)state;
    esc_client *alice = h_connect(&C, "alice", 0, false);
    esc_client *bob = h_connect(&C, "bob", 0, false);
    uint64_t seq;
    assert_int_equal(esc_resource_set(alice, "secret", ESC_QTY(1), NULL, &seq, NULL), ESC_OK);
    /* bob names alice's namespace explicitly through a raw batch op: refused. */
    esc_status st;
    assert_int_equal(esc_resource_set_ns(bob, "alice", "secret", ESC_QTY(5), NULL, NULL, &st),
                     ESC_PERMISSION_DENIED);
    /* bob's own "secret" is a different resource. */
    assert_int_equal(esc_resource_set(bob, "secret", ESC_QTY(7), NULL, &seq, NULL), ESC_OK);
    applied(alice, seq);
    assert_int_equal(total_of(alice, 0, "alice/secret"), 10000);
    assert_int_equal(total_of(alice, 0, "bob/secret"), 70000);
    esc_disconnect(alice);
    esc_disconnect(bob);
}

typedef struct {
    int id;
    int rounds;
    esc_client *owner; /* the job whose namespace they write: each writer joins it */
} writer_arg;

static void *writer(void *p)
{
    writer_arg *w = p;
    esc_client *cl = h_join(&C, w->owner, 0);
    char own[32];
    snprintf(own, sizeof own, "own%d", w->id);
    esc_target n2 = ESC_NODE(C.raylets[2].node_id);
    for (int i = 0; i < w->rounds; i++) {
        if (esc_resource_add(cl, "shared", ESC_QTY(1), &n2, NULL, NULL) != ESC_OK ||
            esc_resource_add(cl, own, ESC_QTY(0.5), &n2, NULL, NULL) != ESC_OK)
            abort();
    }
    esc_disconnect(cl);
    return NULL;
}

static void test_concurrent_writers(void **state)
{
    (void)state;
    enum { THREADS = 8, ROUNDS = 100 };
    pthread_t th[THREADS];
    writer_arg args[THREADS];
    /* One job, many clients: a namespace is one running job's (docs/security.md). */
    esc_client *cl = h_connect(&C, "conc", 0, true);
    for (int i = 0; i < THREADS; i++) {
        args[i] = (writer_arg){i, ROUNDS, cl};
        pthread_create(&th[i], NULL, writer, &args[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    applied(cl, s->committed_seq);
    esc_cluster_status_free(s);
    assert_int_equal(total_of(cl, 2, "conc/shared"), THREADS * ROUNDS * 10000LL);
    for (int i = 0; i < THREADS; i++) {
        char name[48];
        snprintf(name, sizeof name, "conc/own%d", i);
        assert_int_equal(total_of(cl, 2, name), ROUNDS * 5000LL);
    }
    esc_disconnect(cl);
}

/* Leases through the raylet's own service: the node's admission authority. */
static esc_rpc_channel *raylet_channel(int i)
{
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[i].port);
    return esc_rpc_channel_new(addr, C.token);
}

static int lease(esc_rpc_channel *ch, const char *name, int64_t qty, int wait_ms, uint64_t *id)
{
    Escher__Amount a = ESCHER__AMOUNT__INIT;
    a.name = (char *)name;
    a.value = qty;
    Escher__Amount *list[] = {&a};
    Escher__RequestLeaseRequest req = ESCHER__REQUEST_LEASE_REQUEST__INIT;
    req.resources = list;
    req.n_resources = 1;
    req.wait_ms = (uint32_t)wait_ms;
    Escher__RequestLeaseReply *rep = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_RAYLET_REQUEST_LEASE, &req.base, (ProtobufCMessage **)&rep,
                          wait_ms + 5000, 0, NULL);
    assert_int_equal(rc, ESC_OK);
    int granted = rep->granted;
    *id = rep->lease_id;
    protobuf_c_message_free_unpacked(&rep->base, NULL);
    return granted;
}

static void unlease(esc_rpc_channel *ch, uint64_t id)
{
    Escher__ReturnLeaseRequest req = ESCHER__RETURN_LEASE_REQUEST__INIT;
    req.lease_id = id;
    ProtobufCMessage *rep = NULL;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_RAYLET_RETURN_LEASE, &req.base, &rep, 5000, 0, NULL), ESC_OK);
    protobuf_c_message_free_unpacked(rep, NULL);
}

typedef struct {
    esc_rpc_channel *ch;
    int granted;
    uint64_t id;
    double done_ms;
} queued_lease;

static void *queued_lease_thread(void *p)
{
    queued_lease *q = p;
    q->granted = lease(q->ch, "held/q", ESC_QTY(1), 8000, &q->id);
    q->done_ms = h_now_ms();
    return NULL;
}

/* Queued leases and queued tasks of raylet i, from its GetNodeState. */
static void node_queues(esc_rpc_channel *ch, unsigned *leases, unsigned *tasks)
{
    Escher__GetNodeStateRequest req = ESCHER__GET_NODE_STATE_REQUEST__INIT;
    Escher__GetNodeStateReply *rep = NULL;
    assert_int_equal(esc_rpc_call(ch, &ESC_M_RAYLET_GET_NODE_STATE, &req.base,
                                  (ProtobufCMessage **)&rep, 5000, 0, NULL),
                     ESC_OK);
    *leases = rep->queued_leases;
    *tasks = 0;
    for (size_t i = 0; i < rep->n_demand; i++)
        *tasks += rep->demand[i]->count;
    protobuf_c_message_free_unpacked(&rep->base, NULL);
}

typedef struct {
    esc_rpc_channel *ch;
    unsigned leases, tasks;
} queue_probe;

static bool queues_reach(void *p)
{
    queue_probe *q = p;
    unsigned l, t;
    node_queues(q->ch, &l, &t);
    return l >= q->leases && t >= q->tasks;
}

static bool slot_row_gone(void *cl)
{
    esc_resource_info r;
    return !row_of(cl, 1, "held/slot", &r);
}

static void *fifo_lease_thread(void *p)
{
    queued_lease *q = p;
    q->granted = lease(q->ch, "fifo/slot", ESC_QTY(1), 20000, &q->id);
    q->done_ms = h_now_ms();
    return NULL;
}

/* One admission queue per node: a task waiting for a resource, then a lease request for
 * the same capacity; when the capacity comes, the earlier (the task) gets it. With two
 * queues the lease was always tried first, and the task waited behind it. */
static void test_task_and_lease_share_one_queue(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "fifo", 0, false);
    esc_target here = ESC_NODE(C.raylets[0].node_id);
    uint64_t seq;
    assert_int_equal(esc_resource_set(cl, "slot", 0, &here, &seq, NULL), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
    esc_amount slot[] = {{.name = "fifo/slot", .value = ESC_QTY(1)}};
    esc_task_arg arg = {.data = "100", .len = 3};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "stamp", .resources = slot,
                          .nresources = 1, .args = &arg, .nargs = 1};
    esc_ref *ref = NULL;
    assert_int_equal(esc_task_submit(cl, &spec, &ref, NULL, NULL), ESC_OK);
    esc_rpc_channel *ch = raylet_channel(0);
    queue_probe task_queued = {ch, 0, 1};
    assert_true(h_wait_until(queues_reach, &task_queued, 10000));
    queued_lease q = {.ch = ch};
    pthread_t t;
    pthread_create(&t, NULL, fifo_lease_thread, &q);
    queue_probe both_queued = {ch, 1, 1};
    assert_true(h_wait_until(queues_reach, &both_queued, 10000));
    assert_int_equal(esc_resource_set(cl, "slot", ESC_QTY(1), &here, &seq, NULL), ESC_OK);
    void *v = NULL;
    size_t len;
    esc_status st;
    int rc = esc_get(cl, ref, 10000, &v, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "task: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK); /* it ran although the lease waited too */
    free(v);
    esc_ref_free(ref);
    /* The lease comes once the task released the slot. */
    pthread_join(t, NULL);
    assert_true(q.granted);
    unlease(ch, q.id);
    esc_rpc_channel_free(ch);
    esc_disconnect(cl);
}

static void test_shrink_and_delete_while_held(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "held", 1, false);
    esc_rpc_channel *ch = raylet_channel(1);
    uint64_t seq, a, b, c;
    assert_int_equal(esc_resource_set(cl, "slot", ESC_QTY(2), NULL, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_true(lease(ch, "held/slot", ESC_QTY(1), 0, &a));
    assert_true(lease(ch, "held/slot", ESC_QTY(1), 0, &b));
    assert_false(lease(ch, "held/slot", ESC_QTY(1), 50, &c)); /* full */

    /* Shrink to 1 below held 2: nobody preempted; available -1. */
    assert_int_equal(esc_resource_set(cl, "slot", ESC_QTY(1), NULL, &seq, NULL), ESC_OK);
    applied(cl, seq);
    esc_resource_info r;
    assert_true(row_of(cl, 1, "held/slot", &r));
    assert_int_equal(r.total, 10000);
    assert_int_equal(r.held, 20000);
    assert_int_equal(r.available, -10000);
    unlease(ch, a);
    assert_false(lease(ch, "held/slot", ESC_QTY(1), 50, &c)); /* held 1 == total 1 */
    unlease(ch, b);
    assert_true(lease(ch, "held/slot", ESC_QTY(1), 0, &c));

    /* Delete while held: the holder finishes, nothing new is admitted, then it is gone. */
    assert_int_equal(esc_resource_delete(cl, "slot", NULL, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_true(row_of(cl, 1, "held/slot", &r));
    assert_true(r.deleted);
    uint64_t d;
    assert_false(lease(ch, "held/slot", ESC_QTY(0.1), 50, &d));
    unlease(ch, c);
    /* The release reaches the GCS with the raylet's next report. */
    assert_true(h_wait_until(slot_row_gone, cl, 2000));

    /* A request queued on a present-with-zero resource is admitted as soon as capacity
     * is added (event driven: long before its 8 s wait runs out). */
    assert_int_equal(esc_resource_set(cl, "q", 0, NULL, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_true(row_of(cl, 1, "held/q", &r)); /* present with zero */
    assert_int_equal(r.total, 0);
    queued_lease ql = {ch, 0, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, queued_lease_thread, &ql);
    queue_probe waiting = {ch, 1, 0};
    assert_true(h_wait_until(queues_reach, &waiting, 5000)); /* the request waits */
    double t0 = h_now_ms();
    assert_int_equal(esc_resource_add(cl, "q", ESC_QTY(1), NULL, &seq, NULL), ESC_OK);
    pthread_join(th, NULL);
    assert_true(ql.granted);
    assert_true(ql.done_ms - t0 < 3000);
    unlease(ch, ql.id);
    esc_rpc_channel_free(ch);
    esc_disconnect(cl);
}

static void test_unbounded(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "unb", 2, false);
    esc_rpc_channel *ch = raylet_channel(2);
    uint64_t seq, id;
    assert_int_equal(esc_resource_set_unbounded(cl, "any", NULL, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_true(lease(ch, "unb/any", ESC_QTY(1e6), 0, &id));
    esc_resource_info r;
    assert_true(row_of(cl, 2, "unb/any", &r));
    assert_true(r.unbounded);
    unlease(ch, id);
    esc_rpc_channel_free(ch);
    esc_disconnect(cl);
}

/* Selector entries naming one resource are summed, as admission sums a request's
 * repeated names: static_a=1.5 twice needs 3 of raylet 0's 2. */
static void test_selector_sums_repeated_names(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "sum", -1, false);
    uint64_t seq;
    esc_status st;
    esc_amount over[] = {{.name = "static_a", .value = ESC_QTY(1.5)},
                         {.name = "static_a", .value = ESC_QTY(1.5)}};
    esc_target t = {.kind = ESC_TARGET_SELECTOR, .where = over, .nwhere = 2, .num_nodes = 1};
    assert_int_equal(esc_resource_set(cl, "no", ESC_QTY(1), &t, &seq, &st),
                     ESC_FAILED_PRECONDITION);
    for (int i = 0; i < 3; i++)
        assert_int_equal(total_of(cl, i, "sum/no"), -1);

    esc_amount exact[] = {{.name = "static_a", .value = ESC_QTY(1)},
                          {.name = "static_a", .value = ESC_QTY(1)}};
    t.where = exact;
    assert_int_equal(esc_resource_set(cl, "yes", ESC_QTY(1), &t, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_int_equal(total_of(cl, 0, "sum/yes"), 10000);
    esc_disconnect(cl);
}

typedef struct {
    esc_client *cl;
    esc_target *t;
} selector_probe;

/* Does a write through the selector find a node? (Selectors read the availability the
 * raylets last reported, which trails the write that created a resource.) */
static bool selector_matches(void *arg)
{
    selector_probe *p = arg;
    return esc_resource_set(p->cl, "probe", ESC_QTY(1), p->t, NULL, NULL) == ESC_OK;
}

/* A short and a full name of the same ephemeral resource are one resource: summed. */
static void test_selector_sums_short_and_full_names(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "sumf", -1, false);
    uint64_t seq;
    esc_target n1 = ESC_NODE(C.raylets[1].node_id);
    assert_int_equal(esc_resource_set(cl, "sq", ESC_QTY(2), &n1, &seq, NULL), ESC_OK);
    applied(cl, seq);
    esc_amount fits[] = {{.name = "sq", .value = ESC_QTY(1)},
                         {.name = "sumf/sq", .value = ESC_QTY(1)}};
    esc_target t = {.kind = ESC_TARGET_SELECTOR, .where = fits, .nwhere = 2, .num_nodes = 1};
    selector_probe p = {cl, &t};
    assert_true(h_wait_until(selector_matches, &p, 10000));
    esc_cluster_status *s = NULL; /* the probe's write landed on raylet 1 */
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    applied(cl, s->committed_seq);
    esc_cluster_status_free(s);
    assert_int_equal(total_of(cl, 1, "sumf/probe"), 10000);

    esc_amount over[] = {{.name = "sq", .value = ESC_QTY(1.5)},
                         {.name = "sumf/sq", .value = ESC_QTY(1.5)}};
    t.where = over;
    esc_status st;
    assert_int_equal(esc_resource_set(cl, "no", ESC_QTY(1), &t, NULL, &st),
                     ESC_FAILED_PRECONDITION);
    for (int i = 0; i < 3; i++)
        assert_int_equal(total_of(cl, i, "sumf/no"), -1);
    esc_disconnect(cl);
}

/* A delete aimed at all nodes of a resource that some node lacks is a delete of an
 * absent resource: the batch is refused, naming the node, and nothing is deleted. */
static void test_delete_all_nodes_absent_somewhere(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "delall", -1, false);
    uint64_t seq;
    esc_target n0 = ESC_NODE(C.raylets[0].node_id), n1 = ESC_NODE(C.raylets[1].node_id);
    assert_int_equal(esc_resource_set(cl, "part", ESC_QTY(1), &n0, NULL, NULL), ESC_OK);
    assert_int_equal(esc_resource_set(cl, "part", ESC_QTY(1), &n1, &seq, NULL), ESC_OK);
    applied(cl, seq);
    esc_target all = ESC_ALL_NODES;
    esc_status st;
    assert_int_equal(esc_resource_delete(cl, "part", &all, &seq, &st), ESC_NOT_FOUND);
    assert_non_null(strstr(st.message, C.raylets[2].node_id));
    assert_int_equal(total_of(cl, 0, "delall/part"), 10000);
    assert_int_equal(total_of(cl, 1, "delall/part"), 10000);

    /* Present everywhere: deleted everywhere. */
    esc_target n2 = ESC_NODE(C.raylets[2].node_id);
    assert_int_equal(esc_resource_set(cl, "part", ESC_QTY(1), &n2, NULL, NULL), ESC_OK);
    assert_int_equal(esc_resource_delete(cl, "part", &all, &seq, NULL), ESC_OK);
    applied(cl, seq);
    for (int i = 0; i < 3; i++)
        assert_int_equal(total_of(cl, i, "delall/part"), -1);
    esc_disconnect(cl);
}

/* An add whose result leaves [-ESC_QTY_MAX, ESC_QTY_MAX] is refused and commits
 * nothing, alone or in a batch (where ops see each other's results). */
static void test_add_out_of_range(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "rng", 0, false);
    uint64_t seq;
    esc_status st;
    assert_int_equal(esc_resource_set(cl, "big", ESC_QTY_MAX - 10, NULL, &seq, NULL), ESC_OK);
    assert_int_equal(esc_resource_set(cl, "low", 0, NULL, &seq, NULL), ESC_OK);
    assert_int_equal(esc_resource_add(cl, "low", -ESC_QTY_MAX, NULL, &seq, NULL), ESC_OK);
    applied(cl, seq);
    esc_cluster_status *before = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &before, NULL), ESC_OK);

    assert_int_equal(esc_resource_add(cl, "big", 11, NULL, NULL, &st), ESC_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "range"));
    assert_int_equal(esc_resource_add(cl, "low", -1, NULL, NULL, &st), ESC_INVALID_ARGUMENT);
    esc_batch *b = esc_batch_new();
    esc_batch_set(b, "other", ESC_QTY(1), NULL);
    esc_batch_add(b, "big", 5, NULL);
    esc_batch_add(b, "big", 6, NULL); /* 5 + 6 > 10 left */
    assert_int_equal(esc_batch_commit(cl, b, NULL, &st), ESC_INVALID_ARGUMENT);
    esc_batch_free(b);

    esc_cluster_status *after = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &after, NULL), ESC_OK);
    assert_int_equal(after->committed_seq, before->committed_seq);
    esc_cluster_status_free(before);
    esc_cluster_status_free(after);
    assert_int_equal(total_of(cl, 0, "rng/big"), ESC_QTY_MAX - 10);
    assert_int_equal(total_of(cl, 0, "rng/low"), -ESC_QTY_MAX);
    assert_int_equal(total_of(cl, 0, "rng/other"), -1);
    /* Up to the maximum itself is fine. */
    assert_int_equal(esc_resource_add(cl, "big", 10, NULL, &seq, NULL), ESC_OK);
    applied(cl, seq);
    assert_int_equal(total_of(cl, 0, "rng/big"), ESC_QTY_MAX);
    esc_disconnect(cl);
}

/* Strings the GCS would store and echo back must be UTF-8 (protobuf's rule, which
 * protobuf-c does not enforce): a job registered with a Latin-1 entrypoint would break
 * every strict client that lists jobs. Refused at the edge, naming the field. */
static void test_strings_must_be_utf8(void **state)
{
    (void)state;
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    Escher__RegisterJobRequest rj = ESCHER__REGISTER_JOB_REQUEST__INIT;
    rj.entrypoint = "python3 caf\xe9.py";
    ProtobufCMessage *rep = NULL;
    esc_status st;
    assert_int_equal(esc_rpc_call(ch, &ESC_M_GCS_REGISTER_JOB, &rj.base, &rep, 5000, 0, &st),
                     ESC_INVALID_ARGUMENT);
    assert_string_equal(st.message, "RegisterJobRequest.entrypoint is not valid UTF-8");
    Escher__KvPutRequest kv = ESCHER__KV_PUT_REQUEST__INIT;
    kv.ns = "default";
    kv.key = "k\xc0\xaf";
    assert_int_equal(esc_rpc_call(ch, &ESC_M_GCS_KV_PUT, &kv.base, &rep, 5000, 0, &st),
                     ESC_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "KvPutRequest.key"));

    /* Nothing was stored: every listed entrypoint is UTF-8. A valid one goes through. */
    rj.entrypoint = "python3 caf\xc3\xa9.py";
    assert_int_equal(esc_rpc_call(ch, &ESC_M_GCS_REGISTER_JOB, &rj.base, &rep, 5000, 0, &st),
                     ESC_OK);
    protobuf_c_message_free_unpacked(rep, NULL);
    Escher__ListJobsRequest lj = ESCHER__LIST_JOBS_REQUEST__INIT;
    assert_int_equal(esc_rpc_call(ch, &ESC_M_GCS_LIST_JOBS, &lj.base, &rep, 5000, 0, &st),
                     ESC_OK);
    const Escher__ListJobsReply *jobs = (const Escher__ListJobsReply *)rep;
    int named = 0;
    for (size_t i = 0; i < jobs->n_jobs; i++) {
        const char *e = jobs->jobs[i]->entrypoint;
        assert_true(esc_utf8_valid(e, strlen(e)));
        named += strcmp(e, "python3 caf\xc3\xa9.py") == 0;
    }
    assert_int_equal(named, 1);
    protobuf_c_message_free_unpacked(rep, NULL);
    esc_rpc_channel_free(ch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targeted_write),
        cmocka_unit_test(test_all_nodes_and_selector),
        cmocka_unit_test(test_atomic_batch),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_cross_namespace),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_shrink_and_delete_while_held),
        cmocka_unit_test(test_unbounded),
        cmocka_unit_test(test_selector_sums_repeated_names),
        cmocka_unit_test(test_selector_sums_short_and_full_names),
        cmocka_unit_test(test_delete_all_nodes_absent_somewhere),
        cmocka_unit_test(test_add_out_of_range),
        cmocka_unit_test(test_strings_must_be_utf8),
        cmocka_unit_test(test_task_and_lease_share_one_queue),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
