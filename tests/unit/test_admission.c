/* test_admission.c: the node's one admission queue: entries of any kind are tried in
 * arrival order, an entry may leave during its turn, and what is queued during a pass
 * waits for the next one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "admission.h"

typedef struct {
    admission_entry q; /* first */
    admission *owner;
    char name;
    bool leave;        /* leaves the queue in its turn */
    bool requeue;      /* leaves and queues itself again, last */
} item;

static char order[64];
static size_t norder;
static uint64_t passes[64];

static void try_item(admission_entry *a, uint64_t pass)
{
    item *it = (item *)a;
    passes[norder] = pass;
    order[norder++] = it->name;
    if (it->leave || it->requeue)
        admission_remove(it->owner, a);
    if (it->requeue) {
        it->requeue = false;
        admission_push(it->owner, a);
    }
}

/* A second kind: only its function differs. */
static void try_other(admission_entry *a, uint64_t pass)
{
    try_item(a, pass);
}

static void push(admission *q, item *it, char name, admission_try_fn fn)
{
    memset(it, 0, sizeof *it);
    it->owner = q;
    it->name = name;
    it->q.try_fn = fn;
    admission_push(q, &it->q);
}

static void test_fifo_across_kinds(void **state)
{
    (void)state;
    admission *q = admission_new();
    item a, b, c, d;
    push(q, &a, 'a', try_item);
    push(q, &b, 'b', try_other);
    push(q, &c, 'c', try_item);
    push(q, &d, 'd', try_other);
    b.leave = true;        /* admitted in its turn */
    c.requeue = true;      /* placed back: not tried again in this pass */
    norder = 0;
    admission_reexamine(q);
    order[norder] = 0;
    assert_string_equal(order, "abcd");
    assert_int_equal(admission_count(q), 3);
    assert_int_equal(passes[0], passes[3]);
    /* The next pass sees c last, after d, and counts as a new pass. */
    norder = 0;
    admission_reexamine(q);
    order[norder] = 0;
    assert_string_equal(order, "adc");
    assert_int_equal(passes[0], 2);
    admission_remove(q, &a.q);
    admission_remove(q, &c.q);
    admission_remove(q, &d.q);
    assert_int_equal(admission_count(q), 0);
    assert_null(admission_first(q));
    admission_free(q);
}

static void test_last_entry_leaves(void **state)
{
    (void)state;
    admission *q = admission_new();
    item a, b;
    push(q, &a, 'a', try_item);
    push(q, &b, 'b', try_item);
    a.leave = b.leave = true;
    norder = 0;
    admission_reexamine(q);
    assert_int_equal(norder, 2);
    assert_int_equal(admission_count(q), 0);
    admission_reexamine(q); /* empty: nothing tried */
    assert_int_equal(norder, 2);
    admission_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_across_kinds),
        cmocka_unit_test(test_last_entry_leaves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
