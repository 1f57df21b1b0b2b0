/* test_esl.c: the ESL's placement policies on a 3-node cluster (loopback raylets), each
 * test recording the node every task ran on (ESCHER_NODE_ID, from the task itself) and,
 * where time matters, when it started and ended (the `stamp` task). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escher/esl.h"
#include "harness.h"

#define NODES 3
#define TIMEOUT_MS 60000

static h_cluster C;
static const char *LIB; /* the test task library */

static int setup(void **state)
{
    *state = &C;
    LIB = h_tasks_lib();
    h_init(&C, 3000);
    return h_start_cluster(&C, 3,
                           (const char *const[]){"--num-cpus 2", "--num-cpus 2",
                                                 "--num-cpus 2 --resources only_c=1"});
}

/* One task: fn(arg) carrying req (may be NULL) and, when ops is set, those operations on
 * success. */
static esc_ref *submit(esc_client *cl, const char *fn, const char *arg, const esl_request *req,
                       const esc_batch *ops)
{
    esc_task_arg a = {.data = arg, .len = strlen(arg)};
    esc_task_spec spec = {.library = LIB, .symbol = fn, .args = &a, .nargs = 1,
                          .resources = req ? req->v : NULL, .nresources = req ? req->n : 0,
                          .on_success = ops};
    esc_ref *ref = NULL;
    esc_status st;
    int rc = esc_task_submit(cl, &spec, &ref, NULL, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "submit %s: %s %s\n", fn, esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return ref;
}

/* Fills spec to run "stamp" for ms, or, with a marker path, "marked_stamp", which also
 * creates that file when it starts (h_wait_marker). a: room for the arguments. */
static void stamp_spec(esc_task_spec *spec, esc_task_arg a[2], const char *ms, const char *marker)
{
    a[0] = (esc_task_arg){.data = ms, .len = strlen(ms)};
    a[1] = (esc_task_arg){.data = marker, .len = marker ? strlen(marker) : 0};
    spec->library = LIB;
    spec->symbol = marker ? "marked_stamp" : "stamp";
    spec->args = a;
    spec->nargs = marker ? 2 : 1;
}

/* A marked_stamp task of ms carrying req: it creates `marker` when it starts. */
static esc_ref *submit_marked(esc_client *cl, const char *ms, const char *marker,
                              const esl_request *req)
{
    esc_task_arg a[2];
    esc_task_spec spec = {.resources = req ? req->v : NULL, .nresources = req ? req->n : 0};
    stamp_spec(&spec, a, ms, marker);
    esc_ref *ref = NULL;
    esc_status st;
    assert_int_equal(esc_task_submit(cl, &spec, &ref, NULL, &st), ESC_OK);
    return ref;
}

static char *get(esc_client *cl, esc_ref *ref)
{
    void *v = NULL;
    size_t len;
    esc_status st;
    int rc = esc_get(cl, ref, TIMEOUT_MS, &v, &len, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "get: %s %s\n", esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    esc_ref_free(ref);
    return v;
}

/* The node a getenv_task ran on. */
static char *node_of(esc_client *cl, esc_ref *ref)
{
    return get(cl, ref);
}

typedef struct {
    long long start, end;
    char node[80];
} stamp;

static stamp get_stamp(esc_client *cl, esc_ref *ref)
{
    char *v = get(cl, ref);
    stamp s = {0};
    assert_int_equal(sscanf(v, "%lld %lld %79s", &s.start, &s.end, s.node), 3);
    free(v);
    return s;
}

static int node_index(const char *id)
{
    for (int i = 0; i < NODES; i++)
        if (!strcmp(C.raylets[i].node_id, id))
            return i;
    fail_msg("unknown node %s", id);
    return -1;
}

static void free_policy(esc_client *cl, esl_policy *p)
{
    esc_status st;
    assert_int_equal(esl_policy_free(cl, p, &st), ESC_OK);
}

/* n tasks with room on one node run there, the two submitted before the group existed
 * included. */
static void test_colocate(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_co", 0, false);
    esl_request each = {0};
    esl_request_add(&each, "CPU", ESC_QTY(0.5));
    esl_request early = {0};
    esl_request_for(cl, "group", ESC_QTY(1), &early);
    esl_request_add(&early, "CPU", ESC_QTY(0.5));
    esc_ref *r[4];
    r[0] = submit(cl, "getenv_task", "ESCHER_NODE_ID", &early, NULL);
    r[1] = submit(cl, "getenv_task", "ESCHER_NODE_ID", &early, NULL);
    /* The group is made by a client on node 1, so it lands there (its local node has
     * room), while the tasks are submitted on node 0 and must follow it. */
    esc_client *maker = h_join(&C, cl, 1); /* the same job, on node 1 */
    esl_policy *p = NULL;
    esc_status st;
    assert_int_equal(esl_colocate(maker, "group", 4, &each, &p, &st), ESC_OK);
    char **nodes;
    assert_int_equal(esl_policy_nodes(p, &nodes), 1);
    assert_string_equal(nodes[0], C.raylets[1].node_id);
    esl_policy_nodes_free(nodes, 1);
    esl_request req = {0};
    assert_int_equal(esl_request_and(cl, esl_policy_request(p), &each, &req, &st), ESC_OK);
    r[2] = submit(cl, "getenv_task", "ESCHER_NODE_ID", &req, NULL);
    r[3] = submit(cl, "getenv_task", "ESCHER_NODE_ID", &req, NULL);
    for (int i = 0; i < 4; i++) {
        char *n = node_of(cl, r[i]);
        assert_string_equal(n, C.raylets[1].node_id);
        free(n);
    }
    /* A group that fits nowhere is refused, not left waiting. */
    esl_policy *big = NULL;
    assert_int_equal(esl_colocate(cl, "huge", 100, &each, &big, &st), ESC_RESOURCE_EXHAUSTED);
    assert_null(big);
    esl_request_clear(&req);
    esl_request_clear(&early);
    esl_request_clear(&each);
    free_policy(maker, p);
    esc_disconnect(maker);
    esc_disconnect(cl);
}

/* Four 1.5 s tasks, one per node at most: three run at once on three nodes, the fourth
 * starts only after one of them ended. */
static void test_anti_affinity(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_anti", 0, false);
    esl_policy *p = NULL;
    esc_status st;
    assert_int_equal(esl_anti_affinity(cl, "apart", &p, &st), ESC_OK);
    esc_ref *r[4];
    for (int i = 0; i < 4; i++)
        r[i] = submit(cl, "stamp", "1500", esl_policy_request(p), NULL);
    stamp s[4];
    for (int i = 0; i < 4; i++)
        s[i] = get_stamp(cl, r[i]);
    /* Sort by start: the first three on distinct nodes, the last after the first end. */
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (s[j].start < s[i].start) {
                stamp t = s[i];
                s[i] = s[j];
                s[j] = t;
            }
    int seen[NODES] = {0};
    for (int i = 0; i < 3; i++)
        seen[node_index(s[i].node)]++;
    for (int i = 0; i < NODES; i++)
        assert_int_equal(seen[i], 1);
    long long first_end = s[0].end;
    for (int i = 1; i < 3; i++)
        if (s[i].end < first_end)
            first_end = s[i].end;
    assert_true(s[3].start >= first_end);
    free_policy(cl, p);
    esc_disconnect(cl);
}

/* Six long tasks over three nodes: two on each. */
static void test_balance(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_lb", 0, false);
    esl_policy *p = NULL;
    esc_status st;
    assert_int_equal(esl_balance(cl, "lb", 6, NODES, &p, &st), ESC_OK);
    esc_ref *r[6];
    for (int i = 0; i < 6; i++)
        r[i] = submit(cl, "stamp", "1500", esl_policy_request(p), NULL);
    int count[NODES] = {0};
    for (int i = 0; i < 6; i++)
        count[node_index(get_stamp(cl, r[i]).node)]++;
    for (int i = 0; i < NODES; i++)
        assert_int_equal(count[i], 2);
    esl_policy *none = NULL;
    assert_int_equal(esl_balance(cl, "lb0", 0, 1, &none, &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esl_balance(cl, "lb9", 5, 9, &none, &st), ESC_FAILED_PRECONDITION);
    free_policy(cl, p);
    esc_disconnect(cl);
}

/* A task runs where its input lives; with no copy anywhere the policy constrains
 * nothing; a consumer submitted before its producer runs where the producer ran (the
 * producer marks its node when it succeeds). */
static void test_locality(void **state)
{
    (void)state;
    esc_client *on1 = h_connect(&C, "esl_loc", 1, false);
    esc_ref *input = NULL;
    esc_status st;
    assert_int_equal(esc_put(on1, "chunk", 5, &input, &st), ESC_OK);
    /* The same job on node 0: an object's locations are its job's (docs/security.md). */
    esc_client *cl = h_join(&C, on1, 0);
    esl_policy *p = NULL;
    assert_int_equal(esl_locality(cl, "near", input, &p, &st), ESC_OK);
    char *n = node_of(cl, submit(cl, "getenv_task", "ESCHER_NODE_ID", esl_policy_request(p), NULL));
    assert_string_equal(n, C.raylets[1].node_id);
    free(n);
    free_policy(cl, p);

    esc_ref *gone = esc_ref_from_id("no-such-object-anywhere");
    assert_int_equal(esl_locality(cl, "nowhere", gone, &p, &st), ESC_OK);
    assert_int_equal(esl_policy_request(p)->n, 0);
    free_policy(cl, p);
    esc_ref_free(gone);

    esl_request consumer = {0};
    esl_request_for(cl, "made_here", ESC_QTY(1), &consumer);
    esc_ref *c_ref = submit(cl, "getenv_task", "ESCHER_NODE_ID", &consumer, NULL);
    esl_request on_c = {0};
    esl_request_add(&on_c, "only_c", ESC_QTY(1));
    esc_batch *ops = esc_batch_new();
    esl_op_mark_here(ops, "made_here");
    char *producer = node_of(cl, submit(cl, "getenv_task", "ESCHER_NODE_ID", &on_c, ops));
    esc_batch_free(ops);
    assert_string_equal(producer, C.raylets[2].node_id);
    n = node_of(cl, c_ref);
    assert_string_equal(n, producer);
    free(n);
    free(producer);
    esl_request_clear(&on_c);
    esl_request_clear(&consumer);
    esc_ref_free(input);
    esc_disconnect(cl);
    esc_disconnect(on1);
}

/* The waiter, submitted first, starts after both producers ended (they signal when they
 * succeed); a driver-side signal counts the same. */
static void test_barrier(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_bar", 0, false);
    esl_policy *b = NULL;
    esc_status st;
    assert_int_equal(esl_barrier(cl, "edge", 3, &b, &st), ESC_OK);
    esc_ref *waiter = submit(cl, "stamp", "0", esl_policy_request(b), NULL);
    esc_batch *ops = esc_batch_new();
    esl_op_signal(ops, "edge");
    esc_ref *p1 = submit(cl, "stamp", "800", NULL, ops);
    esc_ref *p2 = submit(cl, "stamp", "1200", NULL, ops);
    esc_batch_free(ops);
    stamp s1 = get_stamp(cl, p1), s2 = get_stamp(cl, p2);
    void *v = NULL;
    size_t len;
    /* Two of three signals: the waiter still waits (given 300 ms in which a waiter let go
     * too early would have run: it takes no time). */
    assert_int_equal(esc_get(cl, waiter, 300, &v, &len, &st), ESC_DEADLINE_EXCEEDED);
    assert_int_equal(esl_signal(cl, "edge", &st), ESC_OK);
    stamp w = get_stamp(cl, waiter);
    assert_true(w.start >= s1.end && w.start >= s2.end);
    free_policy(cl, b);
    esc_disconnect(cl);
}

/* AND: compatible policies compose; two groups on different nodes conflict and are
 * reported at once. */
static void test_composition(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_and", 0, false);
    esc_status st;
    esl_request none = {0};
    esl_policy *g1 = NULL, *g2 = NULL, *apart = NULL;
    esl_request on_c = {0};
    esl_request_add(&on_c, "only_c", ESC_QTY(1));
    assert_int_equal(esl_colocate(cl, "g1", 1, &none, &g1, &st), ESC_OK);   /* local: node 0 */
    assert_int_equal(esl_colocate(cl, "g2", 1, &on_c, &g2, &st), ESC_OK);   /* node 2 */
    assert_int_equal(esl_anti_affinity(cl, "apart2", &apart, &st), ESC_OK);
    esl_request both = {0};
    assert_int_equal(esl_request_and(cl, esl_policy_request(g1), esl_policy_request(apart),
                                     &both, &st), ESC_OK);
    assert_int_equal(both.n, 2);
    char *n = node_of(cl, submit(cl, "getenv_task", "ESCHER_NODE_ID", &both, NULL));
    assert_string_equal(n, C.raylets[0].node_id);
    free(n);
    esl_request bad = {0};
    assert_int_equal(esl_request_and(cl, esl_policy_request(g1), esl_policy_request(g2), &bad,
                                     &st), ESC_FAILED_PRECONDITION);
    assert_non_null(strstr(st.message, "no node has all of"));
    assert_int_equal(bad.n, 0);
    esl_request_clear(&both);
    esl_request_clear(&on_c);
    free_policy(cl, g1);
    free_policy(cl, g2);
    free_policy(cl, apart);
    esc_disconnect(cl);
}

/* Lines of a file (how many runs append_node recorded). */
static int lines_of(const char *path, char *first, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (n++ == 0 && first)
            snprintf(first, len, "%.*s", (int)strcspn(line, "\n"), line);
    }
    fclose(f);
    return n;
}

/* Runs append_node under soft preferences; returns the preference chosen and the node
 * it ran on (in node); asserts it ran exactly once. */
static size_t soft_run(esc_client *cl, const esl_request *prefs, size_t n, int wait_ms,
                       char *node, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/soft-%d", C.dir, rand());
    esc_task_arg a = {.data = path, .len = strlen(path)};
    esc_task_spec spec = {.library = LIB, .symbol = "append_node", .args = &a, .nargs = 1};
    esc_ref *ref = NULL;
    esl_soft *s = NULL;
    esc_status st;
    assert_int_equal(esl_soft_submit(cl, &spec, prefs, n, wait_ms, &ref, &s, &st), ESC_OK);
    size_t chosen = esl_soft_chosen(s);
    char *v = get(cl, ref);
    snprintf(node, len, "%s", v);
    free(v);
    esl_soft_free(s);
    char first[128] = "";
    assert_int_equal(lines_of(path, first, sizeof first), 1); /* exactly once */
    assert_string_equal(first, node);
    return chosen;
}

/* Soft constraints: an unsatisfiable first preference gives way to the second; a
 * satisfiable one is taken; a busy one (its only node held by a long task) is withdrawn
 * from the node it was forwarded to, and the task runs once, on the fallback. */
static void test_soft_constraints(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_soft", 0, false);
    esl_request prefs[2] = {{0}, {0}};
    esl_request_add(&prefs[0], "no_such_resource", ESC_QTY(1));
    esl_request_add(&prefs[1], "only_c", ESC_QTY(1));
    char node[128];
    assert_int_equal(soft_run(cl, prefs, 2, 300, node, sizeof node), 1);
    assert_string_equal(node, C.raylets[2].node_id);

    esl_request first_fits[2] = {{0}, {0}};
    esl_request_add(&first_fits[0], "only_c", ESC_QTY(1));
    assert_int_equal(soft_run(cl, first_fits, 2, 3000, node, sizeof node), 0);
    assert_string_equal(node, C.raylets[2].node_id);
    esl_request_clear(&first_fits[0]);

    esl_request only_c = {0};
    esl_request_add(&only_c, "only_c", ESC_QTY(1));
    char marker[64];
    h_marker_path(marker, sizeof marker);
    esc_ref *busy = submit_marked(cl, "4000", marker, &only_c);
    assert_true(h_wait_marker(marker, TIMEOUT_MS)); /* it holds only_c on node 2 */
    esl_request fallback[2] = {{0}, {0}};
    esl_request_add(&fallback[0], "only_c", ESC_QTY(1));
    assert_int_equal(soft_run(cl, fallback, 2, 400, node, sizeof node), 1);
    assert_string_equal(node, C.raylets[0].node_id);
    free(get(cl, busy));
    esl_request_clear(&fallback[0]);
    esl_request_clear(&only_c);
    esl_request_clear(&prefs[0]);
    esl_request_clear(&prefs[1]);
    esc_disconnect(cl);
}

/* Largest number of the stamps (on node, or any node when NULL) that overlap in time. */
static int max_overlap(const stamp *s, int n, const char *node)
{
    int best = 0;
    for (int i = 0; i < n; i++) {
        if (node && strcmp(s[i].node, node))
            continue;
        int k = 0;
        for (int j = 0; j < n; j++)
            if ((!node || !strcmp(s[j].node, node)) && s[j].start <= s[i].start &&
                s[i].start < s[j].end)
                k++;
        best = k > best ? k : best;
    }
    return best;
}

/* A stamp task of ms in queue q (marker: as stamp_spec). */
static esc_ref *queue_task(esl_queues *qs, size_t q, const char *ms, const char *marker,
                           const esl_request *req)
{
    esc_task_arg a[2];
    esc_task_spec spec = {.resources = req ? req->v : NULL, .nresources = req ? req->n : 0};
    stamp_spec(&spec, a, ms, marker);
    esc_ref *ref = NULL;
    esc_status st;
    assert_int_equal(esl_queues_submit(qs, q, &spec, &ref, &st), ESC_OK);
    return ref;
}

/* One of the three marker files (char [3][64]) exists. */
static bool any_marker(void *arg)
{
    char(*m)[64] = arg;
    for (int i = 0; i < 3; i++)
        if (access(m[i], F_OK) == 0)
            return true;
    return false;
}

/* Strict priority: with one slot (only_c, on one node), high tasks submitted after low
 * ones all start before the low ones still waiting. */
static void test_priority_queues(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_pq", 0, false);
    esl_queues *qs = NULL;
    esc_status st;
    assert_int_equal(esl_queues_new(cl, "pq", 2, NULL, 1, &qs, &st), ESC_OK);
    esl_request one = {0};
    esl_request_add(&one, "only_c", ESC_QTY(1));
    esc_ref *low[3], *high[3];
    /* The high tasks come once a low one holds the slot and the others wait. */
    char marker[3][64];
    for (int i = 0; i < 3; i++) {
        h_marker_path(marker[i], sizeof marker[i]);
        low[i] = queue_task(qs, 1, "300", marker[i], &one);
    }
    assert_true(h_wait_until(any_marker, marker, TIMEOUT_MS));
    for (int i = 0; i < 3; i++)
        high[i] = queue_task(qs, 0, "300", NULL, &one);
    stamp l[3], h[3];
    for (int i = 0; i < 3; i++) {
        h[i] = get_stamp(cl, high[i]);
        l[i] = get_stamp(cl, low[i]);
    }
    /* The second-earliest low start comes after every high start. */
    long long l1 = l[0].start, l2 = l[1].start, l3 = l[2].start, t;
    if (l2 < l1) { t = l1; l1 = l2; l2 = t; }
    if (l3 < l1) { t = l1; l1 = l3; l3 = t; }
    if (l3 < l2) { t = l2; l2 = l3; l3 = t; }
    for (int i = 0; i < 3; i++)
        assert_true(h[i].start < l2);
    for (int i = 0; i < 3; i++)
        unlink(marker[i]);
    /* Freeing removes the queues wherever they are, also when a node lacks one (as a
     * node that joined after the last capacity change does): a delete aimed at all
     * nodes would be refused then and leave every row behind. */
    esc_target n2 = ESC_NODE(C.raylets[2].node_id);
    assert_int_equal(esc_resource_delete(cl, "pq_0", &n2, NULL, &st), ESC_OK);
    esl_queues_free(qs);
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_resources(cl, &s, &st), ESC_OK);
    for (size_t k = 0; k < s->nnodes; k++)
        for (size_t r = 0; r < s->nodes[k].nresources; r++)
            assert_null(strstr(s->nodes[k].resources[r].name, "esl_pq/pq_"));
    esc_cluster_status_free(s);
    esl_request_clear(&one);
    esc_disconnect(cl);
}

/* Weighted fair, 3:1 over 4 slots per node: the light queue runs at most one task per
 * node at once, and it is not starved (it starts before the heavy one is done). */
static void test_weighted_queues(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_wfq", 0, false);
    esl_queues *qs = NULL;
    esc_status st;
    double w[2] = {3, 1};
    assert_int_equal(esl_queues_new(cl, "wq", 2, w, 4, &qs, &st), ESC_OK);
    enum { N = 9 };
    esc_ref *heavy[N], *light[N];
    for (int i = 0; i < N; i++) {
        heavy[i] = queue_task(qs, 0, "600", NULL, NULL);
        light[i] = queue_task(qs, 1, "600", NULL, NULL);
    }
    stamp hs[N], ls[N];
    for (int i = 0; i < N; i++) {
        hs[i] = get_stamp(cl, heavy[i]);
        ls[i] = get_stamp(cl, light[i]);
    }
    long long first_light = ls[0].start, last_heavy = hs[0].end;
    for (int i = 1; i < N; i++) {
        first_light = ls[i].start < first_light ? ls[i].start : first_light;
        last_heavy = hs[i].end > last_heavy ? hs[i].end : last_heavy;
    }
    assert_true(first_light < last_heavy);
    /* While the heavy queue had tasks, the light one ran at most one per node (once it
     * is alone it may use every slot: the queues are work conserving). */
    stamp early[N];
    int ne = 0;
    for (int i = 0; i < N; i++)
        if (ls[i].start < last_heavy)
            early[ne++] = ls[i];
    for (int k = 0; k < NODES; k++)
        assert_true(max_overlap(early, ne, C.raylets[k].node_id) <= 1);
    esl_queues_free(qs);
    esc_disconnect(cl);
}

/* Bin-packing: four 2 s tasks of one CPU on 2-CPU nodes fill one node, then one more,
 * never a third. */
static void test_binpack(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_bp", 0, false);
    esl_request shape = {0};
    esl_request_add(&shape, "CPU", ESC_QTY(1));
    esl_binpack *bp = NULL;
    esc_status st;
    assert_int_equal(esl_binpack_new(cl, "bp", &shape, &bp, &st), ESC_OK);
    assert_int_equal(esl_binpack_active(bp), 1);
    esl_request req = {0};
    assert_int_equal(esl_request_and(cl, esl_binpack_request(bp), &shape, &req, &st), ESC_OK);
    esc_ref *r[4];
    for (int i = 0; i < 4; i++)
        r[i] = submit(cl, "stamp", "2000", &req, NULL);
    int count[NODES] = {0};
    for (int i = 0; i < 4; i++)
        count[node_index(get_stamp(cl, r[i]).node)]++;
    int used = 0;
    for (int k = 0; k < NODES; k++) {
        used += count[k] > 0;
        assert_true(count[k] == 0 || count[k] == 2);
    }
    assert_int_equal(used, 2);
    assert_int_equal(esl_binpack_active(bp), 2);
    esl_binpack_free(bp);
    esl_request_clear(&req);
    esl_request_clear(&shape);
    esc_disconnect(cl);
}

/* Dynamic load balancing: six 2 s one-CPU tasks over three 2-CPU nodes, capacity 1
 * each at first: the monitor raises every node to 2 while tasks wait, and they spread
 * two per node. */
static void test_dynamic_balance(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_dlb", 0, false);
    esl_request shape = {0};
    esl_request_add(&shape, "CPU", ESC_QTY(1));
    esl_dynamic *d = NULL;
    esc_status st;
    assert_int_equal(esl_dynamic_new(cl, "dlb", &shape, &d, &st), ESC_OK);
    esl_request req = {0};
    assert_int_equal(esl_request_and(cl, esl_dynamic_request(d), &shape, &req, &st), ESC_OK);
    esc_ref *r[6];
    for (int i = 0; i < 6; i++)
        r[i] = submit(cl, "stamp", "2000", &req, NULL);
    int count[NODES] = {0};
    for (int i = 0; i < 6; i++)
        count[node_index(get_stamp(cl, r[i]).node)]++;
    for (int k = 0; k < NODES; k++)
        assert_int_equal(count[k], 2);
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, &st), ESC_OK);
    char full[128];
    snprintf(full, sizeof full, "%s/dlb", esc_client_namespace(cl));
    for (size_t k = 0; k < s->nnodes; k++) {
        const esc_resource_info *ri = esc_node_resource(&s->nodes[k], full);
        assert_non_null(ri);
        assert_int_equal(ri->total, ESC_QTY(2)); /* raised once, evenly */
    }
    esc_cluster_status_free(s);
    esl_dynamic_free(d);
    esl_request_clear(&req);
    esl_request_clear(&shape);
    esc_disconnect(cl);
}

/* A stamp task of ms for user u (marker: as stamp_spec). */
static esc_ref *share_task(esl_share *sh, size_t u, const char *ms, const char *marker)
{
    esc_task_arg a[2];
    esc_task_spec spec = {0};
    stamp_spec(&spec, a, ms, marker);
    esc_ref *ref = NULL;
    esc_status st;
    assert_int_equal(esl_share_submit(sh, u, &spec, &ref, &st), ESC_OK);
    return ref;
}

static bool in_list(char **ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ids[i], id))
            return true;
    return false;
}

static void free_list(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* User 0 of the share holds exactly one node. */
static bool on_all_nodes(void *sh)
{
    char **ids = NULL;
    size_t k = esl_share_nodes(sh, 0, &ids);
    free_list(ids, k);
    return k == NODES;
}

static bool on_one_node(void *sh)
{
    char **ids = NULL;
    size_t k = esl_share_nodes(sh, 0, &ids);
    free_list(ids, k);
    return k == 1;
}

/* Hierarchical fair sharing, weights 2:1 over three nodes, two slots each. A alone
 * borrows every node; when B wants one it is reclaimed while A still has work (B's
 * tasks start before A's last ends) and B's tasks share that one node; a child of A runs
 * only on A's nodes. */
static void test_fair_share(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_share", 0, false);
    double w[2] = {2, 1};
    esl_share *sh = NULL;
    esc_status st;
    assert_int_equal(esl_share_new(cl, "fs", NULL, 0, w, 2, 2, &sh, &st), ESC_OK);
    enum { NA = 12 };
    esc_ref *a[NA];
    /* B comes once A's first six run (on every node). */
    char marker[6][64];
    for (int i = 0; i < 6; i++) {
        h_marker_path(marker[i], sizeof marker[i]);
        a[i] = share_task(sh, 0, "1500", marker[i]);
    }
    /* A alone: the share lends it every node while its six are outstanding. (Where they
     * run is the raylets' choice: a burst that can run nowhere yet is spilled to the first
     * node granted and waits there when the other grants come: docs/tasks.md, "Where a
     * task runs".) */
    assert_true(h_wait_until(on_all_nodes, sh, TIMEOUT_MS));
    for (int i = 0; i < 6; i++) {
        bool started = h_wait_marker(marker[i], TIMEOUT_MS);
        if (!started) /* seen once under ASan: the daemons' side, for whoever explains it */
            h_show_logs(&C, 80);
        assert_true(started);
    }
    esc_ref *b[2] = {share_task(sh, 1, "500", NULL), share_task(sh, 1, "500", NULL)};
    for (int i = 6; i < NA; i++)
        a[i] = share_task(sh, 0, "1500", NULL);
    stamp sa[NA], sb[2];
    for (int i = 0; i < 2; i++)
        sb[i] = get_stamp(cl, b[i]);
    for (int i = 0; i < NA; i++)
        sa[i] = get_stamp(cl, a[i]);
    assert_string_equal(sb[0].node, sb[1].node);     /* B: one node */
    long long a_last = 0;
    for (int i = 0; i < NA; i++)
        a_last = sa[i].end > a_last ? sa[i].end : a_last;
    assert_true(sb[0].start < a_last && sb[1].start < a_last); /* reclaimed, not waited */

    /* A child of A divides only A's grant. */
    esl_share *child = NULL;
    double cw[2] = {1, 1};
    assert_int_equal(esl_share_child(sh, 0, "fsc", cw, 2, 1, &child, &st), ESC_OK);
    esc_ref *keep = share_task(sh, 0, "4000", NULL); /* A keeps one node */
    /* Wait until A's grant settled on that one node (the other tasks ended). */
    assert_true(h_wait_until(on_one_node, sh, TIMEOUT_MS));
    esc_ref *c1 = share_task(child, 0, "300", NULL);
    stamp sc = get_stamp(cl, c1);
    char **mine = NULL;
    size_t n = esl_share_nodes(sh, 0, &mine);
    assert_true(n >= 1);
    assert_true(in_list(mine, n, sc.node));
    free_list(mine, n);
    free(get(cl, keep));
    esl_share_free(child);
    esl_share_free(sh);
    esc_disconnect(cl);
}

/* Fault tolerance (last: it kills a node): a co-location group whose node dies is made
 * again on a node with room, and its tasks, retried by the raylet that placed them, run
 * there. */
static void test_group_survives_node_death(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "esl_ft", 0, false);
    esc_client *maker = h_join(&C, cl, 1); /* the same job, on node 1 */
    esl_request none = {0};
    esl_policy *p = NULL;
    esc_status st;
    assert_int_equal(esl_colocate(maker, "ftgroup", 2, &none, &p, &st), ESC_OK);
    char **nodes;
    assert_int_equal(esl_policy_nodes(p, &nodes), 1);
    assert_string_equal(nodes[0], C.raylets[1].node_id);
    esl_policy_nodes_free(nodes, 1);
    esc_ref *r[2];
    char marker[2][64];
    for (int i = 0; i < 2; i++) {
        esc_task_arg a[2];
        esc_task_spec spec = {.resources = esl_policy_request(p)->v,
                              .nresources = esl_policy_request(p)->n, .max_retries = 1};
        h_marker_path(marker[i], sizeof marker[i]);
        stamp_spec(&spec, a, "2500", marker[i]);
        assert_int_equal(esc_task_submit(cl, &spec, &r[i], NULL, &st), ESC_OK);
    }
    for (int i = 0; i < 2; i++) /* both run on node 1 */
        assert_true(h_wait_marker(marker[i], TIMEOUT_MS));
    h_kill(&C.raylets[1].pid, SIGKILL);
    char first[80] = "";
    for (int i = 0; i < 2; i++) {
        stamp s = get_stamp(cl, r[i]);
        assert_string_not_equal(s.node, C.raylets[1].node_id);
        if (i == 0)
            snprintf(first, sizeof first, "%s", s.node);
        else
            assert_string_equal(s.node, first); /* still together */
    }
    for (int i = 0; i < 2; i++)
        unlink(marker[i]); /* made again by the retried runs */
    /* The policy records its new node on the event thread after the resource is set
     * there, so the retried tasks can finish before it does: wait for it. */
    size_t n = 0;
    for (int i = 0; i < TIMEOUT_MS / 10; i++) {
        if ((n = esl_policy_nodes(p, &nodes)) == 1)
            break;
        esl_policy_nodes_free(nodes, n);
        usleep(10000);
    }
    assert_int_equal(n, 1);
    assert_string_equal(nodes[0], first);
    esl_policy_nodes_free(nodes, n);
    free_policy(maker, p);
    esc_disconnect(maker);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colocate),
        cmocka_unit_test(test_anti_affinity),
        cmocka_unit_test(test_balance),
        cmocka_unit_test(test_locality),
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_composition),
        cmocka_unit_test(test_soft_constraints),
        cmocka_unit_test(test_priority_queues),
        cmocka_unit_test(test_weighted_queues),
        cmocka_unit_test(test_binpack),
        cmocka_unit_test(test_dynamic_balance),
        cmocka_unit_test(test_fair_share),
        cmocka_unit_test(test_group_survives_node_death),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
