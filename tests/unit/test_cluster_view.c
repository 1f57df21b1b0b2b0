/* test_cluster_view.c: other nodes' advertised availability (EV_NODE_LOAD): which node
 * a busy task may go to, headroom, excluding self and the sender, debits until an
 * advertisement shows them, changed rows versus full rows, deleted and unbounded rows,
 * dead nodes, deaths a snapshot shows that no event told. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster_view.h"

#define Q(x) ((int64_t)((x) * 10000))

static Escher__NodeInfo node_info(const char *id, const char *addr, bool dead)
{
    Escher__NodeInfo info = ESCHER__NODE_INFO__INIT;
    info.node_id = (char *)id;
    info.address = (char *)addr;
    info.state = dead ? ESCHER__NODE_STATE__NODE_DEAD : ESCHER__NODE_STATE__NODE_ALIVE;
    return info;
}

static void add_node(cluster_view *v, const char *id, const char *addr, bool dead)
{
    Escher__NodeInfo info = node_info(id, addr, dead);
    Escher__Event ev = ESCHER__EVENT__INIT;
    ev.kind = dead ? ESCHER__EVENT_KIND__EV_NODE_DEAD : ESCHER__EVENT_KIND__EV_NODE_ADDED;
    ev.node = &info;
    cluster_view_apply(v, &ev);
}

/* One node's load with one row. */
static void load(cluster_view *v, const char *id, bool full, const char *name, int64_t total,
                 int64_t held, bool unbounded, bool deleted)
{
    Escher__ResourceState row = ESCHER__RESOURCE_STATE__INIT;
    row.name = (char *)name;
    row.total = total;
    row.held = held;
    row.unbounded = unbounded;
    row.deleted = deleted;
    Escher__ResourceState *rows[] = {&row};
    Escher__NodeLoad l = ESCHER__NODE_LOAD__INIT;
    l.node_id = (char *)id;
    l.full = full;
    l.rows = rows;
    l.n_rows = 1;
    Escher__NodeLoad *loads[] = {&l};
    Escher__Event ev = ESCHER__EVENT__INIT;
    ev.kind = ESCHER__EVENT_KIND__EV_NODE_LOAD;
    ev.loads = loads;
    ev.n_loads = 1;
    cluster_view_apply(v, &ev);
}

static const char *pick(cluster_view *v, const char *exclude, const char *name, int64_t qty)
{
    accounting_req req[] = {{name, qty, 0}};
    const char *id = NULL;
    const char *addr = cluster_view_find_available(v, "self", req, 1, exclude, &id);
    assert_true((addr == NULL) == (id == NULL));
    return id;
}

static void test_most_headroom_self_and_sender_excluded(void **state)
{
    (void)state;
    cluster_view *v = cluster_view_new();
    add_node(v, "self", "h:1", false);
    add_node(v, "a", "h:2", false);
    add_node(v, "b", "h:3", false);
    assert_null(pick(v, NULL, "CPU", Q(1))); /* nothing advertised yet */
    load(v, "self", true, "CPU", Q(8), 0, false, false);
    load(v, "a", true, "CPU", Q(4), Q(3), false, false);
    load(v, "b", true, "CPU", Q(4), Q(1), false, false);
    assert_string_equal(pick(v, NULL, "CPU", Q(1)), "b");
    assert_string_equal(pick(v, "b", "CPU", Q(1)), "a");
    assert_null(pick(v, NULL, "CPU", Q(4)));
    assert_null(pick(v, NULL, "GPU", Q(1)));
    assert_string_equal(cluster_view_node_at(v, "h:2"), "a");
    assert_null(cluster_view_node_at(v, "h:9"));
    cluster_view_free(v);
}

/* A debit stays until an advertisement shows what was sent (availability fallen by the
 * debit), so one made before the tasks arrived does not free their room; an
 * advertisement 100 ms or more after the last debit clears every debit. */
static void test_debit_until_advertised(void **state)
{
    (void)state;
    cluster_view *v = cluster_view_new();
    add_node(v, "a", "h:2", false);
    load(v, "a", true, "CPU", Q(2), 0, false, false);
    accounting_req req[] = {{"CPU", Q(1), 0}};
    cluster_view_debit(v, "a", req, 1);
    assert_string_equal(pick(v, NULL, "CPU", Q(1)), "a");
    cluster_view_debit(v, "a", req, 1);
    assert_null(pick(v, NULL, "CPU", Q(1))); /* both sent there count */
    load(v, "a", false, "CPU", Q(2), 0, false, false);
    assert_null(pick(v, NULL, "CPU", Q(1))); /* made before they arrived: still debited */
    load(v, "a", false, "CPU", Q(2), Q(1), false, false);
    assert_null(pick(v, NULL, "CPU", Q(1))); /* one arrived, one on its way */
    load(v, "a", false, "CPU", Q(2), Q(2), false, false);
    assert_null(pick(v, NULL, "CPU", Q(1))); /* both arrived: the debit goes, no room */
    load(v, "a", false, "CPU", Q(2), Q(1), false, false);
    assert_string_equal(pick(v, NULL, "CPU", Q(1)), "a"); /* one ended: room, no debit */
    cluster_view_debit(v, "a", req, 1);
    assert_null(pick(v, NULL, "CPU", Q(1)));
    struct timespec ts = {0, 110 * 1000000L}; /* past the 100 ms */
    nanosleep(&ts, NULL);
    load(v, "a", false, "CPU", Q(2), Q(1), false, false);
    assert_string_equal(pick(v, NULL, "CPU", Q(1)), "a"); /* late enough to hold it */
    cluster_view_free(v);
}

static void test_rows_changed_full_deleted_unbounded_dead(void **state)
{
    (void)state;
    cluster_view *v = cluster_view_new();
    add_node(v, "a", "h:2", false);
    load(v, "a", true, "CPU", Q(2), 0, false, false);
    load(v, "a", false, "ns/x", 0, 0, true, false); /* a changed row adds to the rest */
    assert_string_equal(pick(v, NULL, "CPU", Q(1)), "a");
    assert_string_equal(pick(v, NULL, "ns/x", Q(1000)), "a");
    load(v, "a", false, "ns/x", Q(5), Q(5), false, true); /* deleted while held: none */
    assert_null(pick(v, NULL, "ns/x", Q(1)));
    load(v, "a", false, "ns/x", 0, 0, false, true); /* gone */
    assert_null(pick(v, NULL, "ns/x", Q(1)));
    load(v, "a", true, "ns/y", Q(1), 0, false, false); /* full: CPU is gone */
    assert_null(pick(v, NULL, "CPU", Q(1)));
    assert_string_equal(pick(v, NULL, "ns/y", Q(1)), "a");
    add_node(v, "a", "h:2", true);
    assert_null(pick(v, NULL, "ns/y", Q(1)));
    cluster_view_free(v);
}

/* Equally idle nodes: each is chosen some of the time. */
static void test_ties_spread(void **state)
{
    (void)state;
    cluster_view *v = cluster_view_new();
    add_node(v, "a", "h:2", false);
    add_node(v, "b", "h:3", false);
    load(v, "a", true, "CPU", Q(4), 0, false, false);
    load(v, "b", true, "CPU", Q(4), 0, false, false);
    int a = 0;
    for (int i = 0; i < 200; i++)
        a += !strcmp(pick(v, NULL, "CPU", Q(1)), "a");
    assert_true(a > 20 && a < 180);
    cluster_view_free(v);
}

/* A snapshot after a GCS restart may list as dead a node whose EV_NODE_DEAD never came:
 * only such nodes are missed deaths, not nodes known dead, alive or unknown here. */
static void test_missed_deaths(void **state)
{
    (void)state;
    cluster_view *v = cluster_view_new();
    add_node(v, "alive-dead", "h:2", false);
    add_node(v, "alive-alive", "h:3", false);
    add_node(v, "dead-dead", "h:4", false);
    add_node(v, "dead-dead", "h:4", true);
    add_node(v, "alive-absent", "h:5", false);
    Escher__NodeInfo n[] = {node_info("alive-dead", "h:2", true),
                            node_info("alive-alive", "h:3", false),
                            node_info("dead-dead", "h:4", true),
                            node_info("unknown-dead", "h:6", true)};
    Escher__NodeInfo *nodes[] = {&n[0], &n[1], &n[2], &n[3]};
    Escher__Event snap = ESCHER__EVENT__INIT;
    snap.kind = ESCHER__EVENT_KIND__EV_SNAPSHOT;
    snap.nodes = nodes;
    snap.n_nodes = 4;
    size_t nmissed;
    const Escher__NodeInfo **missed = cluster_view_missed_deaths(v, &snap, &nmissed);
    assert_int_equal(nmissed, 1);
    assert_ptr_equal(missed[0], &n[0]);
    free(missed);
    cluster_view_apply(v, &snap);
    missed = cluster_view_missed_deaths(v, &snap, &nmissed); /* told once */
    assert_int_equal(nmissed, 0);
    free(missed);
    cluster_view_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_most_headroom_self_and_sender_excluded),
        cmocka_unit_test(test_debit_until_advertised),
        cmocka_unit_test(test_rows_changed_full_deleted_unbounded_dead),
        cmocka_unit_test(test_ties_spread),
        cmocka_unit_test(test_missed_deaths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
