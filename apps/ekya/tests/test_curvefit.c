/* test_curvefit: the fit recovers known (b0, b1, b2) from exact and from slightly noisy
 * points, extrapolates to 30 epochs, handles flat curves and rejects bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ekya/curvefit.h"
#include "ekya/rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double truth(double b0, double b1, double b2, double e)
{
    return 1.0 - 1.0 / (b0 * e + b1) - b2;
}

static void recovers_exact(void **state)
{
    (void)state;
    const double cases[][3] = {{0.5, 2.0, 0.1}, {2.0, 5.0, 0.05}, {0.2, 1.5, 0.3}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        double e[6], acc[6];
        for (int i = 0; i < 6; i++) {
            e[i] = i;
            acc[i] = truth(cases[k][0], cases[k][1], cases[k][2], i);
        }
        ekya_curve c;
        char err[128];
        assert_int_equal(ekya_curve_fit(e, acc, 6, &c, err, sizeof err), 0);
        printf("true (%g, %g, %g) fitted (%.4f, %.4f, %.4f) sse %.2e\n", cases[k][0],
               cases[k][1], cases[k][2], c.b0, c.b1, c.b2, c.sse);
        assert_true(fabs(c.b0 - cases[k][0]) < 0.02 * cases[k][0] + 1e-3);
        assert_true(fabs(c.b1 - cases[k][1]) < 0.02 * cases[k][1] + 1e-3);
        assert_true(fabs(c.b2 - cases[k][2]) < 2e-3);
        double at30 = truth(cases[k][0], cases[k][1], cases[k][2], 30);
        assert_true(fabs(ekya_curve_eval(&c, 30) - at30) < 2e-3);
    }
}

static void noisy_extrapolation(void **state)
{
    (void)state;
    ekya_rng r;
    ekya_rng_seed(&r, 5);
    double e[6], acc[6];
    for (int i = 0; i < 6; i++) {
        e[i] = i;
        acc[i] = truth(0.8, 2.5, 0.12, i) + 0.003 * ekya_rng_normal(&r);
    }
    ekya_curve c;
    assert_int_equal(ekya_curve_fit(e, acc, 6, &c, NULL, 0), 0);
    double err30 = fabs(ekya_curve_eval(&c, 30) - truth(0.8, 2.5, 0.12, 30));
    printf("noisy: fitted (%.3f, %.3f, %.3f), |error| at 30 epochs %.4f\n", c.b0, c.b1, c.b2, err30);
    assert_true(err30 < 0.03);
}

static void flat_and_bad(void **state)
{
    (void)state;
    double e[4] = {0, 1, 2, 3}, flat[4] = {0.7, 0.7, 0.7, 0.7};
    ekya_curve c;
    char err[128];
    assert_int_equal(ekya_curve_fit(e, flat, 4, &c, err, sizeof err), 0);
    assert_true(fabs(ekya_curve_eval(&c, 30) - 0.7) < 1e-6);
    double down[4] = {0.8, 0.75, 0.7, 0.72}; /* overfitting: still a valid curve */
    assert_int_equal(ekya_curve_fit(e, down, 4, &c, err, sizeof err), 0);
    assert_true(c.b0 >= 0 && c.b1 >= 0);
    double perfect[3] = {0.9, 1.0, 1.0};
    assert_int_equal(ekya_curve_fit(e, perfect, 3, &c, err, sizeof err), 0);
    assert_int_equal(ekya_curve_fit(e, flat, 1, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "at least 2"));
    double bad[2] = {0.5, 1.5};
    assert_int_equal(ekya_curve_fit(e, bad, 2, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "out of range"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(recovers_exact),
        cmocka_unit_test(noisy_extrapolation),
        cmocka_unit_test(flat_and_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
