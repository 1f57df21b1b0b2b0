/* test_forecast.c: ARIMA(1,1,1) forecaster against the mean fallback on seeded series. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cilantro/env.h"
#include "cilantro/forecast.h"

/* The library's PRNG (cilantro/env.h), seeded per test. */
static cil_rng rng;

static double gauss(void) { return cil_rng_gauss(&rng); }

/* Runs both forecasters over series y[0..n-1], scoring one-step predictions from
 * index `from` on: mean squared error of each, and the ARIMA upper-bound coverage. */
static void score(const double *y, int n, int from, double *mse_arima, double *mse_mean,
                  double *coverage)
{
    cil_forecast_params p;
    cil_forecast_params_default(&p);
    cil_forecaster *a = cil_forecaster_create(&p);
    p.mode = CIL_FC_MEAN;
    cil_forecaster *m = cil_forecaster_create(&p);
    assert_non_null(a);
    assert_non_null(m);
    double sa = 0, sm = 0;
    int cov = 0, k = 0;
    for (int t = 0; t < n; t++) {
        if (t >= from) {
            cil_forecast fa, fm;
            assert_int_equal(cil_forecaster_predict(a, &fa), 0);
            assert_int_equal(cil_forecaster_predict(m, &fm), 0);
            assert_int_equal(fa.method, CIL_FC_ARIMA);
            assert_int_equal(fm.method, CIL_FC_MEAN);
            assert_true(fa.lower <= fa.value && fa.value <= fa.upper);
            sa += (fa.value - y[t]) * (fa.value - y[t]);
            sm += (fm.value - y[t]) * (fm.value - y[t]);
            cov += y[t] <= fa.upper;
            k++;
        }
        assert_int_equal(cil_forecaster_observe(a, y[t]), 0);
        assert_int_equal(cil_forecaster_observe(m, y[t]), 0);
    }
    *mse_arima = sa / k;
    *mse_mean = sm / k;
    *coverage = (double)cov / k;
    cil_forecaster_free(a);
    cil_forecaster_free(m);
}

#define N 600

static void test_linear_trend(void **state)
{
    (void)state;
    static double y[N];
    cil_rng_seed(&rng, 99);
    for (int t = 0; t < N; t++)
        y[t] = 100 + 2.0 * t + gauss();
    double ma, mm, cov;
    score(y, N, 70, &ma, &mm, &cov);
    assert_true(ma < 4.0);        /* about the noise variance (2 after differencing) */
    assert_true(ma < 0.05 * mm);  /* the window mean lags the trend by ~64 */
    assert_true(cov > 0.75 && cov < 0.99);
}

static void test_ar1(void **state)
{
    (void)state;
    static double y[N];
    cil_rng_seed(&rng, 2024);
    y[0] = 50;
    for (int t = 1; t < N; t++)
        y[t] = 50 + 0.8 * (y[t - 1] - 50) + gauss();
    double ma, mm, cov;
    score(y, N, 70, &ma, &mm, &cov);
    assert_true(ma < 0.8 * mm);
    assert_true(ma < 1.6); /* innovation variance 1 */
    assert_true(cov > 0.8 && cov < 0.97);
}

static void test_fallback_and_oracle(void **state)
{
    (void)state;
    cil_forecast_params p;
    cil_forecast_params_default(&p);
    cil_forecaster *f = cil_forecaster_create(&p);
    assert_non_null(f);
    cil_forecast out;
    assert_int_equal(cil_forecaster_predict(f, &out), -1); /* nothing yet */
    double v[] = {10, 12, 14, 16};
    for (int i = 0; i < 4; i++)
        assert_int_equal(cil_forecaster_observe(f, v[i]), 0);
    /* too few points: mean 13, sd sqrt(20/3) */
    assert_int_equal(cil_forecaster_predict(f, &out), 0);
    assert_int_equal(out.method, CIL_FC_MEAN);
    double sd = sqrt(20.0 / 3.0);
    assert_true(fabs(out.value - 13) < 1e-12);
    assert_true(fabs(out.upper - (13 + 1.8 * sd)) < 1e-9);
    assert_true(fabs(out.lower - (13 - 1.8 * sd)) < 1e-9);
    assert_int_equal(cil_forecaster_tell_next(f, 5.0), -1); /* not an oracle */
    cil_forecaster_free(f);

    /* the window slides */
    p.window = 8;
    p.min_fit = 8;
    f = cil_forecaster_create(&p);
    for (int i = 0; i < 20; i++)
        cil_forecaster_observe(f, (double)i);
    assert_int_equal(cil_forecaster_size(f), 8);
    assert_int_equal(cil_forecaster_predict(f, &out), 0);
    assert_int_equal(out.method, CIL_FC_ARIMA);
    assert_true(fabs(out.value - 20.0) < 1e-6); /* exact line: differences all 1 */
    cil_forecaster_free(f);

    cil_forecast_params_default(&p);
    p.mode = CIL_FC_ORACLE;
    f = cil_forecaster_create(&p);
    assert_int_equal(cil_forecaster_predict(f, &out), -1);
    assert_int_equal(cil_forecaster_tell_next(f, 42.0), 0);
    assert_int_equal(cil_forecaster_predict(f, &out), 0);
    assert_int_equal(out.method, CIL_FC_ORACLE);
    assert_true(out.value == 42.0 && out.upper == 42.0 && out.lower == 42.0);
    assert_int_equal(cil_forecaster_observe(f, 42.0), 0);
    assert_int_equal(cil_forecaster_predict(f, &out), 0); /* told value forgotten */
    assert_int_equal(out.method, CIL_FC_MEAN);
    assert_true(out.value == 42.0);
    assert_int_equal(cil_forecaster_tell_next(f, NAN), -1);
    cil_forecaster_free(f);
}

static void test_invalid(void **state)
{
    (void)state;
    cil_forecast_params p, q;
    cil_forecast_params_default(&p);
    assert_null(cil_forecaster_create(NULL));
    q = p; q.window = 1; assert_null(cil_forecaster_create(&q));
    q = p; q.min_fit = 7; assert_null(cil_forecaster_create(&q));
    q = p; q.min_fit = q.window + 1; assert_null(cil_forecaster_create(&q));
    q = p; q.difference = 2; assert_null(cil_forecaster_create(&q));
    q = p; q.z = -1; assert_null(cil_forecaster_create(&q));
    q = p; q.fallback_k = NAN; assert_null(cil_forecaster_create(&q));
    q = p; q.mode = (cil_fc_mode)9; assert_null(cil_forecaster_create(&q));
    cil_forecaster *f = cil_forecaster_create(&p);
    assert_int_equal(cil_forecaster_observe(f, INFINITY), -1);
    assert_int_equal(cil_forecaster_observe(NULL, 1.0), -1);
    assert_int_equal(cil_forecaster_size(f), 0);
    cil_forecast out;
    assert_int_equal(cil_forecaster_predict(NULL, &out), -1);
    assert_int_equal(cil_forecaster_predict(f, NULL), -1);
    cil_forecaster_free(f);
    cil_forecaster_free(NULL);
}

static void test_arma_levels(void **state)
{
    (void)state;
    cil_forecast_params p;
    cil_forecast_params_default(&p);
    p.difference = 0;
    cil_forecaster *f = cil_forecaster_create(&p);
    cil_rng_seed(&rng, 7);
    double y = 50, se = 0;
    int k = 0;
    for (int t = 0; t < 400; t++) {
        double next = 50 + 0.8 * (y - 50) + gauss();
        if (t >= 70) {
            cil_forecast out;
            assert_int_equal(cil_forecaster_predict(f, &out), 0);
            assert_int_equal(out.method, CIL_FC_ARIMA);
            se += (out.value - next) * (out.value - next);
            k++;
        }
        y = next;
        cil_forecaster_observe(f, y);
    }
    assert_true(se / k < 1.5);
    cil_forecaster_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_trend),
        cmocka_unit_test(test_ar1),
        cmocka_unit_test(test_fallback_and_oracle),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_arma_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
