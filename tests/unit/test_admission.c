/* test_admission.c: the node's one admission queue: entries of any kind are tried in
 * arrival order, an entry may leave during its turn, and what is queued during a pass
 * waits for the next one; of entries alike, those behind one that stays are not tried,
 * and arrival order holds across keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
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

static void push_alike(admission *q, item *it, char name, const char *key)
{
    memset(it, 0, sizeof *it);
    it->owner = q;
    it->name = name;
    it->q.try_fn = try_item;
    admission_push_alike(q, &it->q, key);
}

static const char *run_pass(admission *q)
{
    norder = 0;
    admission_reexamine(q);
    order[norder] = 0;
    return order;
}

/* Behind an entry of a key that stays, the rest of that key is not tried; other keys and
 * entries on their own still are, in arrival order. */
static void test_alike_stop_at_first_that_stays(void **state)
{
    (void)state;
    admission *q = admission_new();
    item a1, b1, a2, c, a3, b2;
    push_alike(q, &a1, '1', "A");
    push_alike(q, &b1, 'x', "B");
    push_alike(q, &a2, '2', "A");
    push(q, &c, 'c', try_other);
    push_alike(q, &a3, '3', "A");
    push_alike(q, &b2, 'y', "B");
    assert_string_equal(run_pass(q), "1xc"); /* a1, b1 stay: their keys end there */
    /* a1 and b1 leave in their turns: a2 is next of A (after b1, which came first), and
     * b2 of B comes after c. */
    a1.leave = true;
    b1.leave = true;
    assert_string_equal(run_pass(q), "1x2cy");
    assert_int_equal(admission_count(q), 4); /* a2, c, a3, b2 */
    /* Every entry of A leaves: all tried, in arrival order, with c between. */
    a2.leave = a3.leave = true;
    assert_string_equal(run_pass(q), "2c3y");
    assert_int_equal(admission_count(q), 2);
    admission_remove(q, &c.q);
    admission_remove(q, &b2.q);
    assert_null(admission_first(q));
    admission_free(q);
}

/* A kind may free its entry in its turn (a granted lease): the pass does not read it. */
static void try_and_free(admission_entry *a, uint64_t pass)
{
    (void)pass;
    item *it = (item *)a;
    order[norder++] = it->name;
    admission_remove(it->owner, a);
    free(it);
}

static void test_entry_freed_in_its_turn(void **state)
{
    (void)state;
    admission *q = admission_new();
    for (int i = 0; i < 3; i++) {
        item *it = calloc(1, sizeof *it);
        it->owner = q;
        it->name = (char)('a' + i);
        it->q.try_fn = try_and_free;
        admission_push_alike(q, &it->q, "K");
    }
    item solo;
    push(q, &solo, 's', try_item);
    assert_string_equal(run_pass(q), "abcs");
    assert_int_equal(admission_count(q), 1);
    admission_remove(q, &solo.q);
    admission_free(q);
}

/* An entry that leaves and comes back alike in its turn waits for the next pass, behind
 * the entries already there; a removal from the middle keeps the rest in order. */
static void test_alike_requeue_and_middle_removal(void **state)
{
    (void)state;
    admission *q = admission_new();
    item a1, a2, a3, b;
    push_alike(q, &a1, '1', "A");
    push_alike(q, &a2, '2', "A");
    push_alike(q, &a3, '3', "A");
    push(q, &b, 'b', try_item);
    admission_remove(q, &a2.q); /* cancelled while it waited */
    a1.leave = true;
    assert_string_equal(run_pass(q), "13b");
    admission_push_alike(q, &a1.q, "A"); /* back, last */
    a1.leave = false;
    assert_string_equal(run_pass(q), "3b"); /* a3 stays: a1 behind it is not tried */
    a3.leave = true;
    assert_string_equal(run_pass(q), "3b1");
    admission_remove(q, &a1.q);
    admission_remove(q, &b.q);
    admission_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_across_kinds),
        cmocka_unit_test(test_last_entry_leaves),
        cmocka_unit_test(test_alike_stop_at_first_that_stays),
        cmocka_unit_test(test_entry_freed_in_its_turn),
        cmocka_unit_test(test_alike_requeue_and_middle_removal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
