/* test_binning.c: fixed-bin estimator on p = min(1, x / 2). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cilantro/env.h"
#include "cilantro/binning.h"

/* The library's PRNG (cilantro/env.h), seeded per test. */
static cil_rng rng;

static double uniform(void) { return cil_rng_uniform(&rng); }
static double gauss(void) { return cil_rng_gauss(&rng); }

static double truth(double x) { return x / 2 < 1 ? x / 2 : 1; }

#define SIGMA 0.05

static void feed(cil_binning *b, int n)
{
    for (int i = 0; i < n; i++) {
        double x = 4.0 * uniform();
        assert_int_equal(cil_binning_add(b, x, truth(x) + SIGMA * gauss(), SIGMA), 0);
    }
}

static cil_binning *make(void)
{
    cil_binning_params p;
    cil_binning_params_default(&p, 0.0, 4.0, 40, 0.5);
    p.c_beta = 0.5;
    return cil_binning_create(&p);
}

static double mean_width(cil_binning *b)
{
    double sum = 0;
    for (int i = 0; i < 100; i++) {
        cil_estimate e;
        assert_int_equal(cil_binning_estimate(b, 0.02 + 0.04 * i, &e), 0);
        sum += e.upper - e.lower;
    }
    return sum / 100;
}

static void test_converges(void **state)
{
    (void)state;
    cil_rng_seed(&rng, 4242);
    cil_binning *b = make();
    assert_non_null(b);
    double w0 = mean_width(b);
    assert_true(w0 >= 0.999);
    feed(b, 200);
    double w1 = mean_width(b);
    feed(b, 3000);
    double w2 = mean_width(b);
    assert_true(w1 < w0 && w2 < w1 && w2 < 0.2);
    int inside = 0, total = 0;
    cil_estimate prev = {-1, -1, -1, 0};
    for (int i = 0; i <= 400; i++) {
        double x = 0.01 * i;
        cil_estimate e;
        assert_int_equal(cil_binning_estimate(b, x, &e), 0);
        assert_true(e.lower <= e.mid && e.mid <= e.upper);
        assert_true(e.lower >= prev.lower && e.mid >= prev.mid && e.upper >= prev.upper);
        prev = e;
        total++;
        if (truth(x) >= e.lower - 1e-12 && truth(x) <= e.upper + 1e-12)
            inside++;
    }
    assert_true(inside >= 0.9 * total);
    assert_true(cil_binning_num_points(b) == 3200);

    double goals[] = {0.3, 0.6, 0.8};
    for (size_t g = 0; g < 3; g++) {
        double xl, xm, xu;
        assert_int_equal(cil_binning_recommend(b, goals[g], CIL_REC_LOWER, &xl), 0);
        assert_int_equal(cil_binning_recommend(b, goals[g], CIL_REC_MID, &xm), 0);
        assert_int_equal(cil_binning_recommend(b, goals[g], CIL_REC_UPPER, &xu), 0);
        assert_true(xl >= xm && xm >= xu);
        assert_true(fabs(xm - 2 * goals[g]) < 0.2);
        assert_true(fabs(xl - 2 * goals[g]) < 0.4 && fabs(xu - 2 * goals[g]) < 0.4);
    }
    double x;
    assert_int_equal(cil_binning_recommend(b, 1.5, CIL_REC_MID, &x), 1);
    assert_true(x == 4.0);
    cil_binning_free(b);
}

static void test_empty_bins(void **state)
{
    (void)state;
    cil_binning_params p;
    cil_binning_params_default(&p, 0.0, 4.0, 4, 0.1);
    cil_binning *b = cil_binning_create(&p);
    assert_non_null(b);
    for (int i = 0; i < 20; i++)
        assert_int_equal(cil_binning_add(b, 2.5, 0.6, 0.01), 0);
    cil_estimate e;
    /* bin [2, 3) has data: about 0.6 +- (0.1 + tiny) */
    assert_int_equal(cil_binning_estimate(b, 2.5, &e), 0);
    assert_true(fabs(e.wmean - 0.6) < 1e-12);
    assert_true(e.lower > 0.45 && e.upper < 0.75);
    /* empty bin left of it: lower 0, upper capped by the bin to its right */
    assert_int_equal(cil_binning_estimate(b, 0.5, &e), 0);
    assert_true(e.lower == 0.0 && e.upper < 0.75 && isnan(e.wmean));
    /* empty bin right of it: lower raised by monotonicity; upper capped through the
     * Lipschitz condition by the data bin's upper bound U: U + L (x - 3) */
    cil_estimate d;
    assert_int_equal(cil_binning_estimate(b, 2.5, &d), 0);
    assert_int_equal(cil_binning_estimate(b, 3.5, &e), 0);
    assert_true(e.lower > 0.45 && fabs(e.upper - (d.upper + 0.1 * 0.5)) < 1e-12);
    /* the optimistic recommendation for a goal above U lies inside that bin */
    double x;
    assert_int_equal(cil_binning_recommend(b, d.upper + 0.05, CIL_REC_UPPER, &x), 0);
    assert_true(fabs(x - 3.5) < 1e-9);
    /* without L there is no cap */
    cil_binning_params_default(&p, 0.0, 4.0, 4, 0.0);
    cil_binning *flat = cil_binning_create(&p);
    assert_non_null(flat);
    for (int i = 0; i < 20; i++)
        assert_int_equal(cil_binning_add(flat, 2.5, 0.6, 0.01), 0);
    assert_int_equal(cil_binning_estimate(flat, 3.5, &e), 0);
    assert_true(e.upper == 1.0);
    cil_binning_free(flat);
    cil_binning_free(b);
}

static void test_invalid(void **state)
{
    (void)state;
    cil_binning_params p, q;
    cil_binning_params_default(&p, 0.0, 4.0, 10, 0.5);
    assert_null(cil_binning_create(NULL));
    q = p; q.nbins = 0; assert_null(cil_binning_create(&q));
    q = p; q.nbins = CIL_BINNING_MAX_BINS + 1; assert_null(cil_binning_create(&q));
    q = p; q.lo = 5; assert_null(cil_binning_create(&q));
    q = p; q.lipschitz = -1; assert_null(cil_binning_create(&q));
    q = p; q.delta = 2; assert_null(cil_binning_create(&q));
    q = p; q.c_beta = NAN; assert_null(cil_binning_create(&q));
    q = p; q.p_lo = 2; assert_null(cil_binning_create(&q));
    cil_binning *b = cil_binning_create(&p);
    assert_non_null(b);
    assert_int_equal(cil_binning_add(b, NAN, 0.5, 0.1), -1);
    assert_int_equal(cil_binning_add(b, 1, 0.5, 0), -1);
    assert_int_equal(cil_binning_add(b, 1, NAN, 0.1), -1);
    assert_int_equal(cil_binning_add(b, -1e300, 0.5, 0.1), 0); /* clamped */
    cil_estimate e;
    assert_int_equal(cil_binning_estimate(b, INFINITY, &e), -1);
    double x;
    assert_int_equal(cil_binning_recommend(b, NAN, CIL_REC_MID, &x), -1);
    assert_int_equal(cil_binning_recommend(NULL, 0.5, CIL_REC_MID, &x), -1);
    cil_binning_free(b);
    cil_binning_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_converges),
        cmocka_unit_test(test_empty_bins),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
