/* test_metrics.c: the Cilantro metrics on hand-computed cases. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cilantro/metrics.h"

#define EPS 1e-12

static void test_welfare(void **state)
{
    (void)state;
    const double u[3] = {0.2, 0.5, 0.8};
    assert_true(fabs(cil_social_welfare(3, u, NULL) - 0.5) < EPS);
    const double w[3] = {2, 1, 1}; /* (0.4 + 0.5 + 0.8) / 4 */
    assert_true(fabs(cil_social_welfare(3, u, w) - 0.425) < EPS);
    assert_true(fabs(cil_egalitarian_welfare(3, u) - 0.2) < EPS);
}

static void test_njc_demand_form(void **state)
{
    (void)state;
    /* R = 30, e = 10. job0: d 5, a 3 -> 2/10; job1: d 20, a 4 -> 6/10; job2: d 20, a 26 -> 0 */
    const double a[3] = {3, 4, 23}, d[3] = {5, 20, 20};
    assert_true(fabs(cil_njc_fairness(3, 30, a, d, NULL) - 0.4) < EPS);
    /* everyone at least min(d, e): fairness 1 */
    const double a2[3] = {5, 10, 15};
    assert_true(fabs(cil_njc_fairness(3, 30, a2, d, NULL) - 1.0) < EPS);
    /* weighted: w = (1, 2, 3), R = 60 -> e = (10, 20, 30); job2: min(20, 30) - 5 = 15 -> 15/30 */
    const double w[3] = {1, 2, 3}, a3[3] = {10, 20, 5};
    assert_true(fabs(cil_njc_fairness(3, 60, a3, d, w) - 0.5) < EPS);
    /* nothing allocated to a job with demand >= e: fairness 0 */
    const double a4[3] = {5, 0, 25};
    assert_true(fabs(cil_njc_fairness(3, 30, a4, d, NULL) - 0.0) < EPS);
}

static void test_njc_utility_form(void **state)
{
    (void)state;
    const double u[3] = {0.3, 0.9, 0.5}, s[3] = {0.6, 0.5, 0.0};
    /* 0.3/0.6 = 0.5; 0.9/0.5 capped at 1; s = 0 counts as 1 */
    assert_true(fabs(cil_njc_fairness_utility(3, u, s) - 0.5) < EPS);
    const double s2[3] = {0.3, 0.9, 0.5};
    assert_true(fabs(cil_njc_fairness_utility(3, u, s2) - 1.0) < EPS);
}

static void test_useful_usage(void **state)
{
    (void)state;
    const double a[3] = {10, 30, 0}, d[3] = {20, 25, 7};
    /* (10 + 25 + 0) / 50 */
    assert_true(fabs(cil_useful_usage(3, 50, a, d) - 0.7) < EPS);
}

static void test_compute_and_average(void **state)
{
    (void)state;
    const double a[2] = {5, 5}, d[2] = {5, 10}, u[2] = {1.0, 0.5}, s[2] = {1.0, 0.5};
    cil_metrics m;
    assert_int_equal(cil_metrics_compute(2, 10, a, d, u, s, NULL, &m), 0);
    assert_true(fabs(m.social_welfare - 0.75) < EPS);
    assert_true(fabs(m.egalitarian_welfare - 0.5) < EPS);
    assert_true(fabs(m.njc_fairness - 1.0) < EPS);
    assert_true(fabs(m.njc_fairness_utility - 1.0) < EPS);
    assert_true(fabs(m.useful_usage - 1.0) < EPS);

    cil_metrics_avg avg;
    cil_metrics_avg_init(&avg);
    cil_metrics out;
    assert_int_equal(cil_metrics_avg_mean(&avg, &out), -1);
    assert_int_equal(cil_metrics_avg_add(&avg, &m), 0);
    cil_metrics m2 = {0.25, 0.0, 0.5, 0.0, 0.5};
    assert_int_equal(cil_metrics_avg_add(&avg, &m2), 0);
    assert_int_equal(cil_metrics_avg_mean(&avg, &out), 0);
    assert_true(fabs(out.social_welfare - 0.5) < EPS);
    assert_true(fabs(out.egalitarian_welfare - 0.25) < EPS);
    assert_true(fabs(out.njc_fairness - 0.75) < EPS);
    assert_true(fabs(out.njc_fairness_utility - 0.5) < EPS);
    assert_true(fabs(out.useful_usage - 0.75) < EPS);
    m2.useful_usage = NAN;
    assert_int_equal(cil_metrics_avg_add(&avg, &m2), -1);
}

static void test_invalid(void **state)
{
    (void)state;
    const double u[2] = {0.5, 1.5}, ok[2] = {0.5, 0.5}, neg[2] = {-1, 2}, w0[2] = {1, 0};
    assert_true(isnan(cil_social_welfare(0, ok, NULL)));
    assert_true(isnan(cil_social_welfare(2, NULL, NULL)));
    assert_true(isnan(cil_social_welfare(2, u, NULL)));
    assert_true(isnan(cil_social_welfare(2, ok, w0)));
    assert_true(isnan(cil_egalitarian_welfare(2, u)));
    assert_true(isnan(cil_njc_fairness(2, 10, neg, ok, NULL)));
    assert_true(isnan(cil_njc_fairness(2, 0, ok, ok, NULL)));
    assert_true(isnan(cil_njc_fairness(2, NAN, ok, ok, NULL)));
    assert_true(isnan(cil_njc_fairness_utility(2, ok, u)));
    assert_true(isnan(cil_useful_usage(2, -1, ok, ok)));
    assert_true(isnan(cil_useful_usage(2, 10, ok, NULL)));
    cil_metrics m = {9, 9, 9, 9, 9};
    assert_int_equal(cil_metrics_compute(2, 10, ok, ok, u, ok, NULL, &m), -1);
    assert_true(m.social_welfare == 9);
    assert_int_equal(cil_metrics_compute(2, 10, ok, ok, ok, ok, NULL, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_welfare),
        cmocka_unit_test(test_njc_demand_form),
        cmocka_unit_test(test_njc_utility_form),
        cmocka_unit_test(test_useful_usage),
        cmocka_unit_test(test_compute_and_average),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
