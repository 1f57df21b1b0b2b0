/* test_alloc.c: water-filling, Cilantro-NJC, -EW and -SW on hand-made cases. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cilantro/env.h"
#include "cilantro/alloc.h"

/* The library's PRNG (cilantro/env.h), seeded per test. */
static cil_rng rng;

static uint64_t rng_next(void) { return cil_rng_next(&rng); }
static double uniform(void) { return cil_rng_uniform(&rng); }

static long lsum(size_t n, const long *a)
{
    long s = 0;
    for (size_t j = 0; j < n; j++)
        s += a[j];
    return s;
}

static void expect(size_t n, const long *got, const long *want)
{
    for (size_t j = 0; j < n; j++)
        assert_int_equal(got[j], want[j]);
}

static void test_utility(void **state)
{
    (void)state;
    assert_true(fabs(cil_utility(CIL_UTIL_LINEAR, 0.45, 0.9) - 0.5) < 1e-12);
    assert_true(fabs(cil_utility(CIL_UTIL_QUADRATIC, 0.45, 0.9) - 0.25) < 1e-12);
    assert_true(fabs(cil_utility(CIL_UTIL_SQRT, 0.45, 0.9) - sqrt(0.5)) < 1e-12);
    assert_true(cil_utility(CIL_UTIL_SQRT, 0.95, 0.9) == 1.0);
    assert_true(cil_utility(CIL_UTIL_LINEAR, -0.1, 0.9) == 0.0);
    assert_true(isnan(cil_utility(CIL_UTIL_LINEAR, 0.5, 0.0)));
    assert_true(isnan(cil_utility(CIL_UTIL_LINEAR, NAN, 0.9)));
    assert_true(isnan(cil_utility((cil_util_kind)7, 0.5, 0.9)));
    cil_util_kind k;
    assert_int_equal(cil_util_kind_parse("quadratic", &k), 0);
    assert_int_equal(k, CIL_UTIL_QUADRATIC);
    assert_int_equal(cil_util_kind_parse("sqrt", &k), 0);
    assert_int_equal(k, CIL_UTIL_SQRT);
    assert_int_equal(cil_util_kind_parse("cubic", &k), -1);
}

static void test_waterfill_known(void **state)
{
    (void)state;
    long a[4];
    /* level 4: {2, 4, 4} */
    const double d1[3] = {2, 4, 8};
    assert_int_equal(cil_waterfill(3, 10, d1, NULL, a), 0);
    expect(3, a, (const long[]){2, 4, 4});
    /* level 10/3: x = {1, 3.33, 3.33, 3.33}; floors sum 10, one unit to job 1 */
    const double d2[4] = {1, 5, 5, 5};
    assert_int_equal(cil_waterfill(4, 11, d2, NULL, a), 0);
    expect(4, a, (const long[]){1, 4, 3, 3});
    /* weighted: job 2 satisfied (1), level 11/3 -> x = {3.67, 7.33, 1} -> {4, 7, 1} */
    const double d3[3] = {10, 10, 1}, w3[3] = {1, 2, 1};
    assert_int_equal(cil_waterfill(3, 12, d3, w3, a), 0);
    expect(3, a, (const long[]){4, 7, 1});
    /* demands in whole CPUs: 2.5 needs 3 */
    const double d4[2] = {2.5, 3};
    assert_int_equal(cil_waterfill(2, 100, d4, NULL, a), 0);
    expect(2, a, (const long[]){3, 3});
    const double d5[2] = {1.5, 1.5};
    assert_int_equal(cil_waterfill(2, 100, d5, NULL, a), 0);
    expect(2, a, (const long[]){2, 2});
    /* rounding error in a computed demand does not cost a CPU */
    const double d6[2] = {7.000000000001, 0.1 * 3};
    assert_int_equal(cil_waterfill(2, 100, d6, NULL, a), 0);
    expect(2, a, (const long[]){7, 1});
    /* whole-CPU demands that do not fit: {2, 6, 6} on 12 -> level 5 */
    const double d7[3] = {1.2, 5.5, 5.5};
    assert_int_equal(cil_waterfill(3, 12, d7, NULL, a), 0);
    expect(3, a, (const long[]){2, 5, 5});
    /* R = 0 */
    assert_int_equal(cil_waterfill(3, 0, d1, NULL, a), 0);
    expect(3, a, (const long[]){0, 0, 0});
    /* resource-fair */
    assert_int_equal(cil_resource_fair(3, 10, NULL, a), 0);
    expect(3, a, (const long[]){4, 3, 3});
    assert_int_equal(cil_resource_fair(2, 9, (const double[]){1, 2}, a), 0);
    expect(2, a, (const long[]){3, 6});
}

static void test_waterfill_random(void **state)
{
    (void)state;
    cil_rng_seed(&rng, 42);
    double d[12], w[12];
    long a[12];
    for (int c = 0; c < 500; c++) {
        size_t n = 1 + rng_next() % 12;
        long R = (long)(rng_next() % 200);
        for (size_t j = 0; j < n; j++) {
            d[j] = 40 * uniform();
            w[j] = 0.5 + 2 * uniform();
        }
        assert_int_equal(cil_waterfill(n, R, d, (c & 1) ? w : NULL, a), 0);
        long s = lsum(n, a);
        assert_true(s <= R);
        double whole = 0;
        for (size_t j = 0; j < n; j++)
            whole += ceil(d[j]);
        double full = whole < (double)R ? whole : (double)R;
        assert_int_equal(s, (long)full);
        for (size_t j = 0; j < n; j++) {
            assert_true(a[j] >= 0);
            assert_true((double)a[j] <= ceil(d[j]) + 1e-9);
        }
        /* max-min: a job short of its demand by >= 2 units is never below another
         * (unweighted) job's allocation minus 1 */
        if (!(c & 1))
            for (size_t j = 0; j < n; j++)
                for (size_t k = 0; k < n; k++)
                    if ((double)a[j] + 2 <= d[j])
                        assert_true(a[j] >= a[k] - 1);
    }
}

static void test_njc_demand_rule(void **state)
{
    (void)state;
    assert_true(fabs(cil_njc_demand(10, 20, 2, 0.7) - 34.0) < 1e-12);
    cil_njc_params p;
    cil_njc_params_default(&p);
    assert_true(p.beta == 0.7 && p.change_bound < 0);
    cil_njc_params_variant(&p);
    assert_true(p.beta == 0.75 && p.change_bound == 10);
    assert_true(isnan(cil_njc_demand(10, 20, 2, 1.5)));
    assert_true(isnan(cil_njc_demand(-1, 20, 2, 0.7)));

    /* no bound: plain water-filling of the demands {34, 34, 3.4} over R = 50 */
    cil_njc_params_default(&p);
    const double mid[3] = {10, 10, 1}, up[3] = {20, 20, 2}, load[3] = {2, 2, 2};
    long a[3];
    double d[3];
    assert_int_equal(cil_alloc_njc(3, 50, mid, up, load, NULL, &p, NULL, a, d), 0);
    assert_true(fabs(d[2] - 3.4) < 1e-12);
    /* x = {23.3, 23.3, 3.4}: floors 23 + 23 + 3 = 49, one unit to job 2 (largest fraction) */
    expect(3, a, (const long[]){23, 23, 4});
}

static void test_njc_change_bound(void **state)
{
    (void)state;
    cil_njc_params p;
    cil_njc_params_variant(&p);
    const double mid[3] = {10, 10, 40}, up[3] = {10, 10, 40}, load[3] = {1, 1, 1};
    const long prev[3] = {50, 50, 0};
    long a[8];
    /* unbounded answer {10, 10, 40}; B = 10 holds jobs 0, 1 at >= 40 and job 2 at <= 10 */
    assert_int_equal(cil_alloc_njc(3, 100, mid, up, load, NULL, &p, prev, a, NULL), 0);
    expect(3, a, (const long[]){40, 40, 10});

    cil_rng_seed(&rng, 7);
    double m[8], u[8], l[8];
    long pv[8];
    for (int c = 0; c < 300; c++) {
        size_t n = 2 + rng_next() % 7;
        long R = 20 + (long)(rng_next() % 300);
        long left = R;
        for (size_t j = 0; j < n; j++) {
            m[j] = 5 * uniform();
            u[j] = m[j] * uniform();
            l[j] = 1 + 20 * uniform();
            pv[j] = (long)(rng_next() % (uint64_t)(left / 2 + 1));
            left -= pv[j];
        }
        assert_int_equal(cil_alloc_njc(n, R, m, u, l, NULL, &p, pv, a, NULL), 0);
        assert_true(lsum(n, a) <= R);
        for (size_t j = 0; j < n; j++) {
            assert_true(a[j] >= 0);
            assert_true(labs(a[j] - pv[j]) <= p.change_bound);
        }
    }
    /* previous allocation over R, negative entries: rejected */
    const long bad[3] = {60, 50, 0};
    assert_int_equal(cil_alloc_njc(3, 100, mid, up, load, NULL, &p, bad, a, NULL), -1);
    const long neg[3] = {-1, 50, 0};
    assert_int_equal(cil_alloc_njc(3, 100, mid, up, load, NULL, &p, neg, a, NULL), -1);
}

/* utility curves for the welfare optimizers: u_j = min(1, a / scale_j), optionally
 * through a sigmoid */
typedef struct {
    double scale[8];
    int sigmoid;
    size_t calls;
} curves;

static double curve_util(void *ctx, size_t j, long a)
{
    curves *c = ctx;
    c->calls++;
    double v = (double)a / c->scale[j];
    if (c->sigmoid)
        return 1.0 / (1.0 + exp(-(v - 1.0) * 6.0));
    return v < 1 ? v : 1;
}

static void utils_of(curves *c, size_t n, const long *a, double *mn, double *sum)
{
    *mn = INFINITY;
    *sum = 0;
    for (size_t j = 0; j < n; j++) {
        double u = curve_util(c, j, a[j]);
        if (u < *mn)
            *mn = u;
        *sum += u;
    }
}

static void test_ew(void **state)
{
    (void)state;
    curves c = {.scale = {10, 40}};
    long rf[2], ew[2];
    assert_int_equal(cil_resource_fair(2, 40, NULL, rf), 0);
    assert_int_equal(cil_alloc_ew(2, 40, curve_util, NULL, &c, 0, ew), 0);
    assert_int_equal(lsum(2, ew), 40);
    double rmin, rsum, emin, esum;
    utils_of(&c, 2, rf, &rmin, &rsum);
    utils_of(&c, 2, ew, &emin, &esum);
    assert_true(fabs(rmin - 0.5) < 1e-12);
    /* max-min optimum a = {8, 32}: both at 0.8 */
    assert_true(emin >= rmin);
    assert_true(emin >= 0.8 - 1e-12);
    expect(2, ew, (const long[]){8, 32});
}

/* Optimistic utilities that are 1 everywhere (nothing learned yet) leave every split
 * tied; the tie curve (here a / 10 and a / 30) then decides: its maximin on 10 CPUs is
 * {3, 7} (minimum 0.233; {2, 8} gives 0.2, {4, 6} 0.2). Without it the climb has no
 * reason to leave the start, the equal split. */
static double flat_one(void *ctx, size_t j, long a)
{
    (void)ctx, (void)j, (void)a;
    return 1.0;
}

static double tie_linear(void *ctx, size_t j, long a)
{
    (void)ctx;
    return (double)a / (j == 0 ? 10.0 : 30.0);
}

static void test_ew_tie(void **state)
{
    (void)state;
    long a[2];
    assert_int_equal(cil_alloc_ew(2, 10, flat_one, tie_linear, NULL, 0, a), 0);
    expect(2, a, (const long[]){3, 7});
    assert_int_equal(cil_alloc_ew(2, 10, flat_one, NULL, NULL, 0, a), 0);
    expect(2, a, (const long[]){5, 5});
}

static void test_sw(void **state)
{
    (void)state;
    /* job 0 gains 1/40 per CPU, jobs 1 and 2 only 1/200: welfare wants job 0 at 40 */
    curves c = {.scale = {40, 200, 200}};
    long rf[3], ew[3], sw[3];
    cil_sw_params p;
    cil_sw_params_default(&p);
    assert_true(p.iterations == 4000);
    assert_int_equal(cil_resource_fair(3, 60, NULL, rf), 0);
    assert_int_equal(cil_alloc_ew(3, 60, curve_util, NULL, &c, 0, ew), 0);
    assert_int_equal(cil_alloc_sw(3, 60, curve_util, &c, &p, sw), 0);
    assert_int_equal(lsum(3, sw), 60);
    double rmin, rsum, emin, esum, smin, ssum;
    utils_of(&c, 3, rf, &rmin, &rsum);
    utils_of(&c, 3, ew, &emin, &esum);
    utils_of(&c, 3, sw, &smin, &ssum);
    assert_true(emin >= rmin);
    assert_true(ssum >= rsum);
    assert_true(ssum >= esum);
    assert_true(ssum >= 1.1 - 1e-9); /* the optimum: 1 + 20/200 */
    assert_int_equal(sw[0], 40);
}

static void test_sw_deterministic(void **state)
{
    (void)state;
    curves c = {.scale = {30, 55, 80, 20, 140, 65, 90, 35}, .sigmoid = 1};
    cil_sw_params p;
    cil_sw_params_default(&p);
    p.seed = 12345;
    long a1[8], a2[8];
    assert_int_equal(cil_alloc_sw(8, 400, curve_util, &c, &p, a1), 0);
    assert_int_equal(cil_alloc_sw(8, 400, curve_util, &c, &p, a2), 0);
    expect(8, a1, a2);
    assert_int_equal(lsum(8, a1), 400);
    long e1[8], e2[8];
    assert_int_equal(cil_alloc_ew(8, 400, curve_util, NULL, &c, 0, e1), 0);
    assert_int_equal(cil_alloc_ew(8, 400, curve_util, NULL, &c, 0, e2), 0);
    expect(8, e1, e2);
    assert_int_equal(lsum(8, e1), 400);
    double emin, esum, smin, ssum;
    utils_of(&c, 8, e1, &emin, &esum);
    utils_of(&c, 8, a1, &smin, &ssum);
    assert_true(ssum >= esum);
}

static double nan_util(void *ctx, size_t j, long a)
{
    (void)ctx;
    (void)a;
    return j == 0 ? NAN : 0.5;
}

static void test_invalid(void **state)
{
    (void)state;
    long a[3] = {-7, -7, -7};
    const double d[3] = {1, 2, 3}, bad[3] = {1, -2, 3}, nan3[3] = {1, NAN, 3},
                 w0[3] = {1, 0, 1};
    assert_int_equal(cil_waterfill(0, 10, d, NULL, a), -1);
    assert_int_equal(cil_waterfill(3, -1, d, NULL, a), -1);
    assert_int_equal(cil_waterfill(3, 10, bad, NULL, a), -1);
    assert_int_equal(cil_waterfill(3, 10, nan3, NULL, a), -1);
    assert_int_equal(cil_waterfill(3, 10, d, w0, a), -1);
    assert_int_equal(cil_waterfill(3, 10, NULL, NULL, a), -1);
    assert_int_equal(cil_waterfill(3, 10, d, NULL, NULL), -1);
    assert_int_equal(a[0], -7);
    cil_njc_params p;
    cil_njc_params_default(&p);
    assert_int_equal(cil_alloc_njc(3, 10, d, d, d, NULL, NULL, NULL, a, NULL), -1);
    p.beta = 2;
    assert_int_equal(cil_alloc_njc(3, 10, d, d, d, NULL, &p, NULL, a, NULL), -1);
    assert_int_equal(a[0], -7);
    curves c = {.scale = {1, 1, 1}};
    assert_int_equal(cil_alloc_ew(0, 10, curve_util, NULL, &c, 0, a), -1);
    assert_int_equal(cil_alloc_ew(3, 10, NULL, NULL, &c, 0, a), -1);
    assert_int_equal(cil_alloc_ew(3, -1, curve_util, NULL, &c, 0, a), -1);
    cil_sw_params sp;
    cil_sw_params_default(&sp);
    assert_int_equal(cil_alloc_sw(3, 10, curve_util, &c, NULL, a), -1);
    sp.population = 2;
    assert_int_equal(cil_alloc_sw(3, 10, curve_util, &c, &sp, a), -1);
    assert_int_equal(a[0], -7);
    /* a non-finite utility counts as the worst: still a valid allocation */
    cil_sw_params_default(&sp);
    assert_int_equal(cil_alloc_sw(3, 10, nan_util, NULL, &sp, a), 0);
    assert_int_equal(lsum(3, a), 10);
    assert_int_equal(cil_alloc_ew(3, 10, nan_util, NULL, NULL, 0, a), 0);
    assert_int_equal(lsum(3, a), 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utility),
        cmocka_unit_test(test_waterfill_known),
        cmocka_unit_test(test_waterfill_random),
        cmocka_unit_test(test_njc_demand_rule),
        cmocka_unit_test(test_njc_change_bound),
        cmocka_unit_test(test_ew),
        cmocka_unit_test(test_ew_tie),
        cmocka_unit_test(test_sw),
        cmocka_unit_test(test_sw_deterministic),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
