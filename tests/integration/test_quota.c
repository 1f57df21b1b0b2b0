/* test_quota.c: the GCS flag --max-resources-per-job N bounds the registry rows (one per
 * node and name) of a job's namespace. A batch that would exceed it is RESOURCE_EXHAUSTED
 * and applies nothing; updating rows that exist takes no quota; deleting a row, or the end
 * of the job that owned it, frees quota; namespaces are counted apart; and the count
 * survives a GCS restart on Redis. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define QUOTA 4

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    snprintf(C.gcs_extra, sizeof C.gcs_extra, "--max-resources-per-job %d", QUOTA);
    return h_start_cluster(&C, 2, NULL);
}

/* ------------------------------------------------------------------ helpers */

/* The ephemeral rows of namespace ns as one line of "node|name=total[u]" items, in the
 * status order (nodes, then sorted names); *count gets their number and *committed the
 * committed sequence. Two snapshots are equal exactly when nothing of ns changed. */
static void snapshot(esc_client *cl, const char *ns, char *out, size_t len, int *count,
                     uint64_t *committed)
{
    esc_cluster_status *s = NULL;
    esc_status st;
    assert_int_equal(esc_get_cluster_status(cl, &s, &st), ESC_OK);
    size_t used = 0;
    int n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < s->nnodes; i++)
        for (size_t j = 0; j < s->nodes[i].nresources; j++) {
            const esc_resource_info *r = &s->nodes[i].resources[j];
            if (!r->ephemeral || !r->namespace_ || strcmp(r->namespace_, ns) != 0)
                continue;
            int w = snprintf(out + used, len - used, "%s|%s=%lld%s ", s->nodes[i].id, r->name,
                             (long long)r->total, r->unbounded ? "u" : "");
            assert_true(w > 0 && (size_t)w < len - used);
            used += (size_t)w;
            n++;
        }
    if (count)
        *count = n;
    if (committed)
        *committed = s->committed_seq;
    esc_cluster_status_free(s);
}

static int rows_of(esc_client *cl, const char *ns)
{
    char buf[4096];
    int n;
    snapshot(cl, ns, buf, sizeof buf, &n, NULL);
    return n;
}

/* Total of ns/name on raylet i, -1 when absent. */
static int64_t total_of(esc_client *cl, int i, const char *full)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    int64_t t = -1;
    for (size_t n = 0; n < s->nnodes; n++) {
        if (strcmp(s->nodes[n].id, C.raylets[i].node_id) != 0)
            continue;
        const esc_resource_info *r = esc_node_resource(&s->nodes[n], full);
        if (r)
            t = r->total;
    }
    esc_cluster_status_free(s);
    return t;
}

/* A write must be refused for quota, with the namespace named, and change nothing. */
static void assert_exhausted(esc_client *cl, const char *ns, int rc, const esc_status *st,
                             const char *before, uint64_t committed_before)
{
    assert_int_equal(rc, ESC_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(st->message, "quota"));
    assert_non_null(strstr(st->message, ns));
    char after[4096];
    uint64_t committed_after;
    snapshot(cl, ns, after, sizeof after, NULL, &committed_after);
    assert_string_equal(after, before);
    assert_int_equal(committed_after, committed_before);
}

static void applied(esc_client *cl, uint64_t seq)
{
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, NULL), ESC_OK);
}

/* Fills ns with QUOTA rows r0..r{QUOTA-1} on raylet 0 in one batch. */
static void fill(esc_client *cl)
{
    esc_batch *b = esc_batch_new();
    esc_target n0 = ESC_NODE(C.raylets[0].node_id);
    for (int i = 0; i < QUOTA; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", i);
        esc_batch_set(b, name, ESC_QTY(1), &n0);
    }
    uint64_t seq = 0;
    esc_status st;
    assert_int_equal(esc_batch_commit(cl, b, &seq, &st), ESC_OK);
    esc_batch_free(b);
    applied(cl, seq);
}

/* ------------------------------------------------------------------ tests */

/* A batch over the quota is refused whole; up to the quota exactly is fine. */
static void test_batch_over_quota_applies_nothing(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "qa", 0, true);
    esc_target n0 = ESC_NODE(C.raylets[0].node_id);
    esc_batch *b = esc_batch_new();
    esc_batch_set(b, "a", ESC_QTY(1), &n0);
    esc_batch_set(b, "b", ESC_QTY(1), &n0);
    esc_batch_set(b, "c", ESC_QTY(1), &n0);
    uint64_t seq = 0;
    esc_status st;
    assert_int_equal(esc_batch_commit(cl, b, &seq, &st), ESC_OK);
    esc_batch_free(b);
    applied(cl, seq);
    assert_int_equal(rows_of(cl, "qa"), 3);

    /* 3 rows + 2 new = 5 > 4: refused, and the change to "a" in the same batch with it. */
    char before[4096];
    uint64_t committed;
    snapshot(cl, "qa", before, sizeof before, NULL, &committed);
    b = esc_batch_new();
    esc_batch_add(b, "a", ESC_QTY(1), &n0);
    esc_batch_set(b, "d", ESC_QTY(1), &n0);
    esc_batch_set(b, "e", ESC_QTY(1), &n0);
    int rc = esc_batch_commit(cl, b, &seq, &st);
    esc_batch_free(b);
    assert_exhausted(cl, "qa", rc, &st, before, committed);
    assert_int_equal(total_of(cl, 0, "qa/a"), 10000);
    assert_int_equal(total_of(cl, 0, "qa/d"), -1);

    /* One new row reaches the quota exactly: allowed. */
    assert_int_equal(esc_resource_set(cl, "d", ESC_QTY(2), NULL, &seq, &st), ESC_OK);
    applied(cl, seq);
    assert_int_equal(rows_of(cl, "qa"), QUOTA);

    /* Full: one more row is refused, by a single write as by a batch. */
    snapshot(cl, "qa", before, sizeof before, NULL, &committed);
    rc = esc_resource_set(cl, "e", ESC_QTY(1), NULL, &seq, &st);
    assert_exhausted(cl, "qa", rc, &st, before, committed);
    rc = esc_resource_add(cl, "e", ESC_QTY(1), NULL, &seq, &st); /* add creates too */
    assert_exhausted(cl, "qa", rc, &st, before, committed);
    rc = esc_resource_set_unbounded(cl, "e", NULL, &seq, &st);
    assert_exhausted(cl, "qa", rc, &st, before, committed);

    /* Changing rows that exist takes no quota, even when full. */
    b = esc_batch_new();
    esc_batch_set(b, "a", ESC_QTY(5), &n0);
    esc_batch_add(b, "b", ESC_QTY(-1), &n0); /* down to present-with-zero */
    esc_batch_set_unbounded(b, "c", &n0);
    assert_int_equal(esc_batch_commit(cl, b, &seq, &st), ESC_OK);
    esc_batch_free(b);
    applied(cl, seq);
    assert_int_equal(total_of(cl, 0, "qa/a"), 50000);
    assert_int_equal(total_of(cl, 0, "qa/b"), 0);
    assert_int_equal(rows_of(cl, "qa"), QUOTA);

    /* A present row at zero still counts. */
    snapshot(cl, "qa", before, sizeof before, NULL, &committed);
    rc = esc_resource_set(cl, "e", 0, NULL, &seq, &st);
    assert_exhausted(cl, "qa", rc, &st, before, committed);
    esc_disconnect(cl);
}

/* Rows are (node, name) pairs: a name on two nodes is two rows. */
static void test_rows_per_node(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "qb", 0, true);
    esc_target all = ESC_ALL_NODES;
    uint64_t seq;
    esc_status st;
    assert_int_equal(esc_resource_set(cl, "x", ESC_QTY(1), &all, &seq, &st), ESC_OK); /* 2 */
    assert_int_equal(esc_resource_set(cl, "y", ESC_QTY(1), NULL, &seq, &st), ESC_OK);  /* 3 */
    /* y already on raylet 0: all-nodes adds only raylet 1's row: 4. */
    assert_int_equal(esc_resource_set(cl, "y", ESC_QTY(2), &all, &seq, &st), ESC_OK);
    applied(cl, seq);
    assert_int_equal(rows_of(cl, "qb"), QUOTA);
    assert_int_equal(total_of(cl, 0, "qb/y"), 20000);
    assert_int_equal(total_of(cl, 1, "qb/y"), 20000);

    /* Two names, four rows: a third name is over. */
    char before[4096];
    uint64_t committed;
    snapshot(cl, "qb", before, sizeof before, NULL, &committed);
    esc_target n1 = ESC_NODE(C.raylets[1].node_id);
    int rc = esc_resource_set(cl, "z", ESC_QTY(1), &n1, &seq, &st);
    assert_exhausted(cl, "qb", rc, &st, before, committed);

    /* Deleting x on one node frees one row; an all-nodes z (two rows) is still over,
     * z on one node fits. */
    assert_int_equal(esc_resource_delete(cl, "x", &n1, &seq, &st), ESC_OK);
    applied(cl, seq);
    assert_int_equal(rows_of(cl, "qb"), QUOTA - 1);
    snapshot(cl, "qb", before, sizeof before, NULL, &committed);
    rc = esc_resource_set(cl, "z", ESC_QTY(1), &all, &seq, &st);
    assert_exhausted(cl, "qb", rc, &st, before, committed);
    assert_int_equal(esc_resource_set(cl, "z", ESC_QTY(1), &n1, &seq, &st), ESC_OK);
    applied(cl, seq);
    assert_int_equal(total_of(cl, 1, "qb/z"), 10000);
    assert_int_equal(total_of(cl, 0, "qb/z"), -1);
    assert_int_equal(rows_of(cl, "qb"), QUOTA);
    esc_disconnect(cl);
}

/* Deleting frees quota, by one delete as by a batch of them. */
static void test_delete_frees_quota(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "qc", 0, true);
    fill(cl);
    assert_int_equal(rows_of(cl, "qc"), QUOTA);
    char before[4096];
    uint64_t committed, seq;
    esc_status st;
    snapshot(cl, "qc", before, sizeof before, NULL, &committed);
    int rc = esc_resource_set(cl, "new0", ESC_QTY(1), NULL, &seq, &st);
    assert_exhausted(cl, "qc", rc, &st, before, committed);

    assert_int_equal(esc_resource_delete(cl, "r0", NULL, &seq, &st), ESC_OK);
    applied(cl, seq);
    assert_int_equal(rows_of(cl, "qc"), QUOTA - 1);
    assert_int_equal(esc_resource_set(cl, "new0", ESC_QTY(1), NULL, &seq, &st), ESC_OK);
    applied(cl, seq);
    assert_int_equal(rows_of(cl, "qc"), QUOTA);

    /* Full again. */
    snapshot(cl, "qc", before, sizeof before, NULL, &committed);
    rc = esc_resource_set(cl, "new1", ESC_QTY(1), NULL, &seq, &st);
    assert_exhausted(cl, "qc", rc, &st, before, committed);

    /* Delete everything in one batch: the whole quota is back. */
    esc_batch *b = esc_batch_new();
    esc_batch_delete(b, "r1", NULL);
    esc_batch_delete(b, "r2", NULL);
    esc_batch_delete(b, "r3", NULL);
    esc_batch_delete(b, "new0", NULL);
    assert_int_equal(esc_batch_commit(cl, b, &seq, &st), ESC_OK);
    esc_batch_free(b);
    applied(cl, seq);
    assert_int_equal(rows_of(cl, "qc"), 0);
    fill(cl);
    assert_int_equal(rows_of(cl, "qc"), QUOTA);
    esc_disconnect(cl);
}

/* At the quota, a batch that deletes one row and creates another never has more than the
 * quota (its ops apply in order): it commits, whatever the names. */
static void test_delete_and_create_in_one_batch(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "qd", 0, true);
    fill(cl);
    uint64_t seq;
    esc_status st;
    for (int round = 0; round < 16; round++) {
        char gone[16], made[16];
        /* Rows r0..r3 rotate through fresh names so that many name pairs are tried. */
        snprintf(gone, sizeof gone, round < QUOTA ? "r%d" : "n%d",
                 round < QUOTA ? round : round - QUOTA);
        snprintf(made, sizeof made, "n%d", round);
        esc_batch *b = esc_batch_new();
        esc_batch_delete(b, gone, NULL);
        esc_batch_set(b, made, ESC_QTY(1), NULL);
        int rc = esc_batch_commit(cl, b, &seq, &st);
        esc_batch_free(b);
        if (rc != ESC_OK)
            fail_msg("round %d: delete %s + set %s at the quota: %s: %s", round, gone, made,
                     esc_status_name(st.code), st.message);
        applied(cl, seq);
        char full[32];
        snprintf(full, sizeof full, "qd/%s", made);
        assert_int_equal(total_of(cl, 0, full), 10000);
        snprintf(full, sizeof full, "qd/%s", gone);
        assert_int_equal(total_of(cl, 0, full), -1);
        assert_int_equal(rows_of(cl, "qd"), QUOTA);
    }
    esc_disconnect(cl);
}

/* The quota is per namespace: another namespace has its own; two jobs of one namespace
 * share one. */
static void test_namespaces_counted_apart(void **state)
{
    (void)state;
    esc_client *full = h_connect(&C, "qe", 0, true);
    fill(full);
    esc_client *other = h_connect(&C, "qf", 0, true);
    fill(other);
    assert_int_equal(rows_of(other, "qe"), QUOTA);
    assert_int_equal(rows_of(other, "qf"), QUOTA);

    esc_client *same = h_join(&C, full, 1); /* the same namespace, from node 1 */
    char before[4096];
    uint64_t committed, seq;
    esc_status st;
    snapshot(same, "qe", before, sizeof before, NULL, &committed);
    int rc = esc_resource_set(same, "mine", ESC_QTY(1), NULL, &seq, &st);
    assert_exhausted(same, "qe", rc, &st, before, committed);
    esc_disconnect(same);
    esc_disconnect(other);
    esc_disconnect(full);
}

static bool ns_empty(void *p)
{
    esc_client **cl = p;
    return rows_of(*cl, "qg") == 0;
}

/* The end of a job removes the rows it owned, and their quota with them. */
static void test_job_end_frees_quota(void **state)
{
    (void)state;
    esc_client *owner = h_connect(&C, "qg", 0, false);
    fill(owner);
    esc_client *watcher = h_connect(&C, "watch", -1, true);
    assert_int_equal(rows_of(watcher, "qg"), QUOTA);
    esc_disconnect(owner);
    assert_true(h_wait_until(ns_empty, &watcher, 5000));

    esc_client *next = h_connect(&C, "qg", 0, true);
    fill(next);
    assert_int_equal(rows_of(next, "qg"), QUOTA);
    char before[4096];
    uint64_t committed, seq;
    esc_status st;
    snapshot(next, "qg", before, sizeof before, NULL, &committed);
    int rc = esc_resource_set(next, "more", ESC_QTY(1), NULL, &seq, &st);
    assert_exhausted(next, "qg", rc, &st, before, committed);
    esc_disconnect(next);
    esc_disconnect(watcher);
}

typedef struct {
    esc_client *cl;
    int want;
} qr_probe;

static bool qr_rows_are(void *p)
{
    qr_probe *q = p;
    return rows_of(q->cl, "qr") == q->want;
}

/* A GCS killed with -9 and restarted on Redis counts the rows it reloads. */
static void test_quota_survives_restart(void **state)
{
    (void)state;
    h_cluster R;
    h_init(&R, 5000);
    snprintf(R.gcs_extra, sizeof R.gcs_extra, "--max-resources-per-job %d", 2);
    assert_int_equal(h_redis_start(&R), 0);
    assert_int_equal(h_gcs_start(&R), 0);
    assert_int_equal(h_raylet_start(&R, 0, NULL), 0);
    esc_client *cl = h_connect(&R, "qr", 0, true);
    uint64_t seq;
    esc_status st;
    assert_int_equal(esc_resource_set(cl, "a", ESC_QTY(1), NULL, &seq, &st), ESC_OK);
    assert_int_equal(esc_resource_set(cl, "b", ESC_QTY(1), NULL, &seq, &st), ESC_OK);
    assert_int_equal(esc_resource_set(cl, "c", ESC_QTY(1), NULL, &seq, &st),
                     ESC_RESOURCE_EXHAUSTED);
    esc_disconnect(cl);

    h_kill(&R.gcs_pid, SIGKILL);
    assert_int_equal(h_gcs_start(&R), 0);
    cl = h_connect(&R, "qr", 0, true);
    /* The reloaded rows count: a third is refused and no log entry is written. */
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    uint64_t committed = s->committed_seq;
    esc_cluster_status_free(s);
    int rc = esc_resource_set(cl, "c", ESC_QTY(1), NULL, &seq, &st);
    assert_int_equal(rc, ESC_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(st.message, "quota"));
    assert_int_equal(esc_get_cluster_status(cl, &s, NULL), ESC_OK);
    assert_int_equal(s->committed_seq, committed);
    esc_cluster_status_free(s);

    /* Deleting a reloaded row frees its quota. */
    assert_int_equal(esc_resource_delete(cl, "a", NULL, &seq, &st), ESC_OK);
    assert_int_equal(esc_resource_set(cl, "c", ESC_QTY(1), NULL, &seq, &st), ESC_OK);
    applied(cl, seq);
    qr_probe probe = {cl, 2};
    assert_true(h_wait_until(qr_rows_are, &probe, 5000));
    char before[4096];
    snapshot(cl, "qr", before, sizeof before, NULL, &committed);
    assert_null(strstr(before, "qr/a="));
    assert_non_null(strstr(before, "qr/b="));
    assert_non_null(strstr(before, "qr/c="));
    rc = esc_resource_set(cl, "d", ESC_QTY(1), NULL, &seq, &st);
    assert_exhausted(cl, "qr", rc, &st, before, committed);
    esc_disconnect(cl);
    h_stop(&R);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_over_quota_applies_nothing),
        cmocka_unit_test(test_rows_per_node),
        cmocka_unit_test(test_delete_frees_quota),
        cmocka_unit_test(test_delete_and_create_in_one_batch),
        cmocka_unit_test(test_namespaces_counted_apart),
        cmocka_unit_test(test_job_end_frees_quota),
        cmocka_unit_test(test_quota_survives_restart),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0;
}
