/* test_gpu_slots.c: GPU instances granted to tasks: whole instances, packed shares,
 * fragmentation that makes a request wait, release. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gpu_slots.h"

#define Q(x) ((int64_t)((x) * 10000))

static void test_whole_instances(void **state)
{
    (void)state;
    gpu_slots *g = gpu_slots_new(2);
    gpu_grant a, b, c;
    assert_true(gpu_slots_acquire(g, Q(1), &a));
    assert_true(gpu_slots_acquire(g, Q(1), &b));
    assert_int_not_equal(a.ids[0], b.ids[0]);
    assert_false(gpu_slots_fit(g, Q(1)));
    assert_false(gpu_slots_acquire(g, Q(0.1), &c));
    gpu_slots_release(g, &a);
    assert_true(gpu_slots_acquire(g, Q(1), &c));
    assert_int_equal(c.ids[0], a.ids[0]);
    char buf[16];
    gpu_slots_release(g, &b);
    gpu_slots_release(g, &c);
    assert_true(gpu_slots_acquire(g, Q(2), &a));
    gpu_grant_format(&a, buf, sizeof buf);
    assert_string_equal(buf, "0,1");
    assert_false(gpu_slots_fit(g, Q(1.5))); /* no instance assignment for 1.5 */
    gpu_slots_free(g);
}

static void test_shares_pack_and_fragment(void **state)
{
    (void)state;
    gpu_slots *g = gpu_slots_new(2);
    gpu_grant h1, h2, h3, whole;
    assert_true(gpu_slots_acquire(g, Q(0.5), &h1));
    assert_true(gpu_slots_acquire(g, Q(0.5), &h2));
    assert_int_equal(h1.ids[0], h2.ids[0]); /* packed on one instance */
    assert_true(gpu_slots_acquire(g, Q(1), &whole)); /* the other stays whole */
    assert_false(gpu_slots_fit(g, Q(0.25)));
    gpu_slots_release(g, &whole);
    gpu_slots_release(g, &h1);
    /* 0.5 free on one instance, 1 on the other: a whole one still fits, 0.5 packs. */
    assert_true(gpu_slots_acquire(g, Q(0.5), &h3));
    assert_int_equal(h3.ids[0], h2.ids[0]);
    assert_true(gpu_slots_fit(g, Q(1)));
    gpu_slots_release(g, &h3);
    gpu_slots_release(g, &h2);
    /* Two halves on different instances leave no whole one: a request of 1 waits. */
    gpu_slots *f = gpu_slots_new(2);
    gpu_grant x, y, z;
    assert_true(gpu_slots_acquire(f, Q(0.75), &x));
    assert_true(gpu_slots_acquire(f, Q(0.75), &y));
    assert_int_not_equal(x.ids[0], y.ids[0]);
    assert_false(gpu_slots_acquire(f, Q(0.5), &z));
    assert_true(gpu_slots_acquire(f, Q(0.25), &z));
    gpu_slots_free(f);
    gpu_slots_free(g);
}

static void test_no_gpus(void **state)
{
    (void)state;
    gpu_slots *g = gpu_slots_new(0);
    gpu_grant a;
    assert_true(gpu_slots_fit(g, 0));
    assert_true(gpu_slots_acquire(g, 0, &a));
    assert_int_equal(a.n, 0);
    assert_false(gpu_slots_fit(g, Q(0.5)));
    gpu_slots_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_instances),
        cmocka_unit_test(test_shares_pack_and_fragment),
        cmocka_unit_test(test_no_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
