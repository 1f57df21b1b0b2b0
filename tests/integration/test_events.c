/* test_events.c: esc_subscribe delivers a followed namespace's rows with their totals, in
 * log order, and nothing of other namespaces. */
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
    assert_int_equal(esc_subscribe(cl, prefixes, 1, on_event, &s, &w, &st), ESC_OK);
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
    assert_int_equal(esc_subscribe(cl, bad, 1, on_event, NULL, &w, &st), ESC_INVALID_ARGUMENT);
    assert_null(w);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_in_order),
        cmocka_unit_test(test_bad_prefix),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
