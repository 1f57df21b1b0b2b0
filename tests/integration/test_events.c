/* test_events.c: esc_subscribe delivers a followed namespace's rows with their totals, in
 * log order, and nothing of other namespaces; followed key-value rows with their values,
 * in the same order; resumes after a given seq; and nodes' availability when asked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static h_cluster C;

#define MAX_EVENTS 256

typedef struct {
    pthread_mutex_t mu;
    size_t n;
    esc_event_kind kind[MAX_EVENTS];
    uint64_t seq[MAX_EVENTS];
    char node[MAX_EVENTS][40];
    char name[MAX_EVENTS][80];
    int64_t total[MAX_EVENTS];
    bool deleted[MAX_EVENTS];
    char key[MAX_EVENTS][80];
    char value[MAX_EVENTS][16];
    bool omitted[MAX_EVENTS];
    size_t value_len[MAX_EVENTS];
} seen;

static void on_event(void *ud, const esc_event *e)
{
    seen *s = ud;
    pthread_mutex_lock(&s->mu);
    if (s->n < MAX_EVENTS) {
        size_t i = s->n++;
        s->kind[i] = e->kind;
        s->seq[i] = e->seq;
        snprintf(s->node[i], sizeof s->node[i], "%s", e->node_id ? e->node_id : "");
        snprintf(s->name[i], sizeof s->name[i], "%s", e->name ? e->name : "");
        s->total[i] = e->total;
        s->deleted[i] = e->deleted;
        snprintf(s->key[i], sizeof s->key[i], "%s", e->key ? e->key : "");
        snprintf(s->value[i], sizeof s->value[i], "%.*s", e->value ? (int)e->value_len : 0,
                 e->value ? (const char *)e->value : "");
        s->omitted[i] = e->value_omitted;
        s->value_len[i] = e->value_len;
    }
    pthread_mutex_unlock(&s->mu);
}

typedef struct {
    seen *s;
    size_t want;
} count_probe;

static bool reached(void *p)
{
    count_probe *c = p;
    pthread_mutex_lock(&c->s->mu);
    bool ok = c->s->n >= c->want;
    pthread_mutex_unlock(&c->s->mu);
    return ok;
}

static void wait_events(seen *s, size_t want)
{
    count_probe p = {s, want};
    if (!h_wait_until(reached, &p, 10000)) {
        h_show_logs(&C, 15);
        fail_msg("%zu events, not %zu", s->n, want);
    }
}

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 3000);
    return h_start_cluster(&C, 2, NULL);
}

static int teardown(void **state)
{
    (void)state;
    h_stop(&C);
    return 0;
}

static void test_rows_in_order(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "ev", 0, false);
    esc_client *other = h_connect(&C, "ev_other", 0, false);
    static seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    esc_watch *w = NULL;
    esc_status st;
    const char *prefixes[] = {"ev/"};
    esc_watch_filter f = {.resources = prefixes, .nresources = 1};
    assert_int_equal(esc_subscribe(cl, &f, on_event, &s, &w, &st), ESC_OK);
    wait_events(&s, 1);
    assert_int_equal(s.kind[0], ESC_EVENT_RESET);

    uint64_t seq;
    esc_target all = ESC_ALL_NODES;
    assert_int_equal(esc_resource_set(cl, "a", ESC_QTY(2), &all, &seq, &st), ESC_OK);
    assert_int_equal(esc_resource_set(other, "x", ESC_QTY(5), NULL, NULL, &st), ESC_OK);
    esc_target n0 = ESC_NODE(C.raylets[0].node_id);
    assert_int_equal(esc_resource_add(cl, "a", ESC_QTY(1), &n0, NULL, &st), ESC_OK);
    assert_int_equal(esc_resource_delete(cl, "a", &n0, NULL, &st), ESC_OK);
    wait_events(&s, 5); /* a on two nodes, the add, the delete */
    pthread_mutex_lock(&s.mu);
    for (size_t i = 1; i < s.n; i++) {
        assert_int_equal(s.kind[i], ESC_EVENT_RESOURCE);
        assert_string_equal(s.name[i], "ev/a"); /* never ev_other/x */
        assert_true(s.seq[i] >= s.seq[i - 1]);
    }
    assert_int_equal(s.total[1], ESC_QTY(2));
    assert_int_equal(s.total[2], ESC_QTY(2));
    assert_string_equal(s.node[3], C.raylets[0].node_id);
    assert_int_equal(s.total[3], ESC_QTY(3)); /* the add's delta, as a total */
    assert_true(s.deleted[4]);
    pthread_mutex_unlock(&s.mu);
    esc_unsubscribe(w);
    esc_disconnect(other);
    esc_disconnect(cl);
}

static void test_bad_prefix(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "ev2", 0, false);
    esc_watch *w = NULL;
    esc_status st;
    const char *bad[] = {"noslash"};
    esc_watch_filter f = {.resources = bad, .nresources = 1};
    assert_int_equal(esc_subscribe(cl, &f, on_event, NULL, &w, &st), ESC_INVALID_ARGUMENT);
    assert_null(w);
    esc_kv_filter nl = {.ns = "a\nb"};
    esc_watch_filter g = {.kv = &nl, .nkv = 1};
    assert_int_equal(esc_subscribe(cl, &g, on_event, NULL, &w, &st), ESC_INVALID_ARGUMENT);
    assert_null(w);
    esc_disconnect(cl);
}

/* Index of the first event of kind k at or after from, or s->n. */
static size_t find_kind(seen *s, size_t from, esc_event_kind k)
{
    while (from < s->n && s->kind[from] != k)
        from++;
    return from;
}

static void test_kv_rows(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "evkv", 0, false);
    static seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    esc_watch *w = NULL;
    esc_status st;
    assert_int_equal(esc_kv_put(cl, NULL, "cfg.old", "0", 1, true, NULL, &st), ESC_OK);
    esc_kv_filter kv = {.prefix = "cfg."};
    const char *prefixes[] = {"evkv/"};
    esc_watch_filter f = {.resources = prefixes, .nresources = 1, .kv = &kv, .nkv = 1};
    assert_int_equal(esc_subscribe(cl, &f, on_event, &s, &w, &st), ESC_OK);
    wait_events(&s, 2); /* RESET, then the row already there */
    assert_int_equal(s.kind[0], ESC_EVENT_RESET);
    assert_int_equal(s.kind[1], ESC_EVENT_KV);
    assert_string_equal(s.key[1], "cfg.old");
    assert_string_equal(s.value[1], "0");

    assert_int_equal(esc_kv_put(cl, NULL, "cfg.a", "1", 1, true, NULL, &st), ESC_OK);
    assert_int_equal(esc_kv_put(cl, NULL, "other", "x", 1, true, NULL, &st), ESC_OK);
    esc_target n0 = ESC_NODE(C.raylets[0].node_id);
    assert_int_equal(esc_resource_set(cl, "r", ESC_QTY(1), &n0, NULL, &st), ESC_OK);
    assert_int_equal(esc_kv_put(cl, NULL, "cfg.a", "22", 2, true, NULL, &st), ESC_OK);
    static char big[ESC_EVENT_KV_VALUE_MAX + 1];
    memset(big, 'b', sizeof big);
    assert_int_equal(esc_kv_put(cl, NULL, "cfg.big", big, sizeof big, true, NULL, &st), ESC_OK);
    assert_int_equal(esc_kv_del(cl, NULL, "cfg.a", NULL, &st), ESC_OK);
    wait_events(&s, 7);
    pthread_mutex_lock(&s.mu);
    assert_int_equal(s.n, 7); /* never "other" */
    assert_string_equal(s.key[2], "cfg.a");
    assert_string_equal(s.value[2], "1");
    assert_int_equal(s.kind[3], ESC_EVENT_RESOURCE); /* in log order with the rows */
    assert_string_equal(s.name[3], "evkv/r");
    assert_string_equal(s.value[4], "22");
    assert_true(s.omitted[5]);
    assert_int_equal(s.value_len[5], sizeof big);
    assert_string_equal(s.key[6], "cfg.a");
    assert_true(s.deleted[6]);
    for (size_t i = 2; i < s.n; i++)
        assert_true(s.seq[i] > s.seq[i - 1]);
    pthread_mutex_unlock(&s.mu);
    esc_unsubscribe(w);
    esc_disconnect(cl);
}

/* A watch started from an earlier watch's last seq gets what came after, no RESET. */
static void test_resume_from_seq(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "evres", 0, false);
    static seen a = {.mu = PTHREAD_MUTEX_INITIALIZER}, b = {.mu = PTHREAD_MUTEX_INITIALIZER};
    esc_watch *w = NULL;
    esc_status st;
    esc_kv_filter kv = {.prefix = "k"};
    esc_watch_filter f = {.kv = &kv, .nkv = 1};
    assert_int_equal(esc_subscribe(cl, &f, on_event, &a, &w, &st), ESC_OK);
    assert_int_equal(esc_kv_put(cl, NULL, "k1", "1", 1, true, NULL, &st), ESC_OK);
    wait_events(&a, 2);
    esc_unsubscribe(w);
    assert_int_equal(esc_kv_put(cl, NULL, "k2", "2", 1, true, NULL, &st), ESC_OK);
    f.from_seq = a.seq[1];
    assert_int_equal(esc_subscribe(cl, &f, on_event, &b, &w, &st), ESC_OK);
    wait_events(&b, 1);
    pthread_mutex_lock(&b.mu);
    assert_int_equal(b.kind[0], ESC_EVENT_KV);
    assert_string_equal(b.key[0], "k2");
    assert_true(b.seq[0] > a.seq[1]);
    pthread_mutex_unlock(&b.mu);
    esc_unsubscribe(w);
    esc_disconnect(cl);
}

/* With loads, every node's CPU row (a physical resource) comes right after the
 * subscription. */
static void test_loads(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "evload", 0, false);
    static seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    esc_watch *w = NULL;
    esc_status st;
    esc_watch_filter f = {.loads = true};
    assert_int_equal(esc_subscribe(cl, &f, on_event, &s, &w, &st), ESC_OK);
    wait_events(&s, 3); /* RESET, then at least one row per node */
    pthread_mutex_lock(&s.mu);
    assert_int_equal(s.kind[0], ESC_EVENT_RESET);
    bool cpu[2] = {false, false};
    for (size_t i = find_kind(&s, 0, ESC_EVENT_LOAD); i < s.n; i++)
        for (int k = 0; k < 2; k++)
            cpu[k] |= s.kind[i] == ESC_EVENT_LOAD && !strcmp(s.name[i], "CPU") &&
                      !strcmp(s.node[i], C.raylets[k].node_id) && s.total[i] > 0;
    pthread_mutex_unlock(&s.mu);
    assert_true(cpu[0] && cpu[1]);
    esc_unsubscribe(w);
    esc_disconnect(cl);
}

/* Demand as events: a task waiting for a resource shows in its node's DEMAND event,
 * and the queue's next DEMAND event is empty once capacity lets it run. */
typedef struct {
    pthread_mutex_t mu;
    unsigned waiting;   /* tasks asking for evd/slot in the last DEMAND event */
    unsigned events;
} demand_seen;

static void on_demand(void *ud, const esc_event *e)
{
    demand_seen *d = ud;
    if (e->kind != ESC_EVENT_DEMAND)
        return;
    unsigned n = 0;
    for (size_t i = 0; i < e->ndemand; i++)
        for (size_t k = 0; k < e->demand[i].nshape; k++)
            if (!strcmp(e->demand[i].shape[k].name, "evd/slot"))
                n += e->demand[i].count;
    pthread_mutex_lock(&d->mu);
    d->waiting = n;
    d->events++;
    pthread_mutex_unlock(&d->mu);
}

typedef struct {
    demand_seen *d;
    unsigned want;
} demand_probe;

static bool demand_is(void *p)
{
    demand_probe *q = p;
    pthread_mutex_lock(&q->d->mu);
    bool ok = q->d->events > 0 && q->d->waiting == q->want;
    pthread_mutex_unlock(&q->d->mu);
    return ok;
}

static void test_demand(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "evd", 0, false);
    static demand_seen d = {.mu = PTHREAD_MUTEX_INITIALIZER};
    esc_status st;
    uint64_t seq;
    esc_target n0 = ESC_NODE(C.raylets[0].node_id);
    assert_int_equal(esc_resource_set(cl, "slot", 0, &n0, &seq, &st), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 5000, &st), ESC_OK);
    esc_watch *w = NULL;
    esc_watch_filter f = {.loads = true};
    assert_int_equal(esc_subscribe(cl, &f, on_demand, &d, &w, &st), ESC_OK);

    esc_amount need = {"evd/slot", ESC_QTY(1), false};
    esc_task_arg a = {.data = "x", .len = 1};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = "echo", .args = &a, .nargs = 1,
                          .resources = &need, .nresources = 1};
    esc_ref *ref = NULL;
    assert_int_equal(esc_task_submit(cl, &spec, &ref, NULL, &st), ESC_OK);
    demand_probe one = {&d, 1}, none = {&d, 0};
    assert_true(h_wait_until(demand_is, &one, 10000));
    assert_int_equal(esc_resource_set(cl, "slot", ESC_QTY(1), &n0, NULL, &st), ESC_OK);
    void *out = NULL;
    size_t len = 0;
    assert_int_equal(esc_get(cl, ref, 10000, &out, &len, &st), ESC_OK);
    free(out);
    assert_true(h_wait_until(demand_is, &none, 10000));
    esc_ref_free(ref);
    esc_unsubscribe(w);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_in_order),
        cmocka_unit_test(test_bad_prefix),
        cmocka_unit_test(test_kv_rows),
        cmocka_unit_test(test_resume_from_seq),
        cmocka_unit_test(test_loads),
        cmocka_unit_test(test_demand),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
