/* test_gp.c: the Matérn 5/2 kernel, Cholesky on hand cases, GP interpolation and
 * uncertainty, the data cap, ML-II and bad arguments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cilantro/gp.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

static void test_matern_values(void **state)
{
    (void)state;
    NEAR(cil_matern52(0, 1, 1), 1.0, 1e-15);
    NEAR(cil_matern52(0, 2, 3.5), 3.5, 1e-15);
    /* r = ls: (1 + sqrt5 + 5/3) e^-sqrt5 */
    NEAR(cil_matern52(1, 1, 1), 0.523994108, 1e-8);
    NEAR(cil_matern52(2, 2, 1), 0.523994108, 1e-8);
    /* r = 2 ls: (1 + 2 sqrt5 + 20/3) e^-2sqrt5 */
    NEAR(cil_matern52(2, 1, 2), 2 * (1 + 2 * sqrt(5.0) + 20.0 / 3) * exp(-2 * sqrt(5.0)), 1e-12);
    NEAR(cil_matern52(0.5, 1, 1), 0.828649, 1e-6);
    /* decreasing in r */
    assert_true(cil_matern52(0.3, 1, 1) > cil_matern52(0.4, 1, 1));
    assert_true(isnan(cil_matern52(-1, 1, 1)));
    assert_true(isnan(cil_matern52(1, 0, 1)));
    assert_true(isnan(cil_matern52(1, 1, -1)));
    assert_true(isnan(cil_matern52(NAN, 1, 1)));
}

static void test_cholesky_hand(void **state)
{
    (void)state;
    double a[9] = {4, 12, -16, 12, 37, -43, -16, -43, 98};
    const double L[9] = {2, 0, 0, 6, 1, 0, -8, 5, 3};
    assert_int_equal(cil_cholesky(3, a), 0);
    for (int i = 0; i < 9; i++)
        NEAR(a[i], L[i], 1e-12);
    /* A x = b with x = (1, 2, 3): b = A x */
    double b[3] = {4 + 24 - 48, 12 + 74 - 129, -16 - 86 + 294};
    cil_chol_solve(3, a, b);
    NEAR(b[0], 1, 1e-9);
    NEAR(b[1], 2, 1e-9);
    NEAR(b[2], 3, 1e-9);
    double c[4] = {4, 2, 2, 3};
    assert_int_equal(cil_cholesky(2, c), 0);
    NEAR(c[0], 2, 1e-15);
    NEAR(c[2], 1, 1e-15);
    NEAR(c[3], sqrt(2.0), 1e-15);
    double bad[4] = {1, 2, 2, 1}; /* indefinite */
    assert_int_equal(cil_cholesky(2, bad), -1);
    assert_int_equal(cil_cholesky(2, NULL), -1);
}

static cil_gp *sine_gp(double sn2)
{
    cil_gp *gp = cil_gp_new(1, 50, NULL, 0);
    assert_non_null(gp);
    for (int i = 0; i <= 8; i++) {
        double x = 0.5 * i;
        assert_int_equal(cil_gp_add(gp, &x, sin(x)), 0);
    }
    assert_int_equal(cil_gp_set_hyper(gp, 1.0, 1.0, sn2), 0);
    assert_int_equal(cil_gp_fit(gp), 0);
    return gp;
}

static void test_gp_interpolates(void **state)
{
    (void)state;
    cil_gp *gp = sine_gp(1e-6);
    double m, sd;
    for (int i = 0; i <= 8; i++) {
        double x = 0.5 * i;
        assert_int_equal(cil_gp_predict(gp, &x, &m, &sd), 0);
        NEAR(m, sin(x), 1e-3);
        assert_true(sd < 0.01);
    }
    /* between points: close to the function, with some uncertainty */
    double x = 1.25;
    assert_int_equal(cil_gp_predict(gp, &x, &m, &sd), 0);
    NEAR(m, sin(x), 0.05);
    double sd_mid = sd;
    /* far away: back to the prior, sd near the targets' sd */
    x = 30;
    assert_int_equal(cil_gp_predict(gp, &x, &m, &sd), 0);
    assert_true(sd > 10 * sd_mid);
    assert_true(sd > 0.5);
    cil_gp_free(gp);
}

static void test_gp_noise_smooths(void **state)
{
    (void)state;
    /* with a large noise term the mean no longer passes through the points and the sd
     * at them is no longer tiny */
    cil_gp *gp = sine_gp(0.5);
    double m, sd, x = 1.5;
    assert_int_equal(cil_gp_predict(gp, &x, &m, &sd), 0);
    assert_true(fabs(m - sin(x)) > 1e-3);
    assert_true(sd > 0.05);
    cil_gp_free(gp);
}

static void test_gp_cap_and_prior(void **state)
{
    (void)state;
    cil_gp *gp = cil_gp_new(2, 5, NULL, 0);
    assert_non_null(gp);
    double m, sd, x[2] = {0, 0};
    /* no data: the prior */
    assert_int_equal(cil_gp_predict(gp, x, &m, &sd), -1); /* not fitted */
    assert_int_equal(cil_gp_fit(gp), 0);
    assert_int_equal(cil_gp_predict(gp, x, &m, &sd), 0);
    NEAR(m, 0, 1e-12);
    NEAR(sd, 1, 1e-12);
    for (int i = 0; i < 12; i++) {
        x[0] = i;
        x[1] = -i;
        assert_int_equal(cil_gp_add(gp, x, (double)i), 0);
    }
    assert_int_equal(cil_gp_size(gp), 5);
    /* only the newest five (7..11) remain: the model interpolates those */
    assert_int_equal(cil_gp_set_hyper(gp, 3.0, 1.0, 1e-6), 0);
    assert_int_equal(cil_gp_fit(gp), 0);
    x[0] = 9;
    x[1] = -9;
    assert_int_equal(cil_gp_predict(gp, x, &m, &sd), 0);
    NEAR(m, 9, 1e-2);
    cil_gp_free(gp);
}

static void test_gp_ml(void **state)
{
    (void)state;
    cil_gp *gp = cil_gp_new(1, 100, NULL, 0);
    assert_non_null(gp);
    /* a smooth function: ML-II should prefer the long length-scale */
    for (int i = 0; i < 40; i++) {
        double x = 0.25 * i;
        assert_int_equal(cil_gp_add(gp, &x, sin(0.3 * x)), 0);
    }
    const double ls[] = {0.05, 3.0};
    const double sn[] = {1e-4, 0.5};
    double lml, l, sf2, sn2;
    assert_int_equal(cil_gp_fit_ml(gp, ls, 2, sn, 2, &lml), 0);
    assert_true(isfinite(lml));
    NEAR(lml, cil_gp_lml(gp), 1e-12);
    cil_gp_get_hyper(gp, &l, &sf2, &sn2);
    NEAR(l, 3.0, 0);
    NEAR(sn2, 1e-4, 0);
    assert_int_equal(cil_gp_fit_ml(gp, NULL, 2, sn, 2, NULL), -1);
    cil_gp_free(gp);
}

static void test_gp_bad_args(void **state)
{
    (void)state;
    char err[128] = "";
    assert_null(cil_gp_new(0, 10, err, sizeof err));
    assert_true(strlen(err) > 0 && strchr(err, '\n') == NULL);
    assert_null(cil_gp_new(3, 1, err, sizeof err));
    cil_gp *gp = cil_gp_new(2, 10, err, sizeof err);
    assert_non_null(gp);
    double x[2] = {1, NAN}, m, sd;
    assert_int_equal(cil_gp_add(gp, x, 1.0), -1);
    x[1] = 0;
    assert_int_equal(cil_gp_add(gp, x, INFINITY), -1);
    assert_int_equal(cil_gp_add(gp, NULL, 1.0), -1);
    assert_int_equal(cil_gp_size(gp), 0);
    assert_int_equal(cil_gp_set_hyper(gp, 0, 1, 1), -1);
    assert_int_equal(cil_gp_set_hyper(gp, 1, 1, -1), -1);
    assert_int_equal(cil_gp_predict(gp, x, &m, &sd), -1);
    assert_true(isnan(cil_gp_lml(gp)));
    /* duplicated inputs with a tiny noise term: the jitter keeps the fit alive */
    assert_int_equal(cil_gp_set_hyper(gp, 1, 1, 1e-12), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(cil_gp_add(gp, x, 1.0 + i), 0);
    assert_int_equal(cil_gp_fit(gp), 0);
    assert_int_equal(cil_gp_predict(gp, x, &m, &sd), 0);
    NEAR(m, 2.5, 1e-3);
    cil_gp_free(gp);
    cil_gp_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matern_values),  cmocka_unit_test(test_cholesky_hand),
        cmocka_unit_test(test_gp_interpolates), cmocka_unit_test(test_gp_noise_smooths),
        cmocka_unit_test(test_gp_cap_and_prior), cmocka_unit_test(test_gp_ml),
        cmocka_unit_test(test_gp_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
