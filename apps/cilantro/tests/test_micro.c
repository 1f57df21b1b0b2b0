/* test_micro.c: the hotel-reservation model's calibration and monotonicity, the
 * policies' allocations, runs' determinism, and bad arguments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cilantro/env.h"
#include "cilantro/micro.h"

#define N CIL_MICRO_NSVC

static void test_names(void **state)
{
    (void)state;
    for (size_t i = 0; i < N; i++) {
        assert_non_null(cil_micro_service_name(i));
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(cil_micro_service_name(i), cil_micro_service_name(j));
    }
    assert_string_equal(cil_micro_service_name(0), "frontend");
    assert_null(cil_micro_service_name(N));
}

static void test_calibration(void **state)
{
    (void)state;
    long a[N];
    double L = cil_micro_nominal_load();
    for (size_t j = 0; j < N; j++)
        a[j] = 8;
    double fair = cil_micro_p99(a, L);
    assert_true(fair > 2.5 && fair < 3.5);
    assert_int_equal(cil_micro_tuned(L, CIL_MICRO_R, a), 0);
    long s = 0;
    for (size_t j = 0; j < N; j++) {
        assert_true(a[j] >= CIL_MICRO_MIN);
        s += a[j];
    }
    assert_int_equal(s, CIL_MICRO_R);
    double good = cil_micro_p99(a, L);
    assert_true(good > 0.09 && good < 0.13);
    /* a lighter load is never slower */
    assert_true(cil_micro_p99(a, 0.8 * L) <= good);
}

/* Random valid allocation (each >= 1, to probe saturated corners too). */
static void random_alloc(cil_rng *r, long *a)
{
    for (size_t j = 0; j < N; j++)
        a[j] = 1 + (long)(cil_rng_next(r) % 20);
}

static void test_monotone(void **state)
{
    (void)state;
    cil_rng r;
    cil_rng_seed(&r, 42);
    long a[N];
    for (int t = 0; t < 60; t++) {
        random_alloc(&r, a);
        double load = cil_micro_nominal_load() * (0.5 + cil_rng_uniform(&r));
        double p = cil_micro_p99(a, load);
        assert_true(isfinite(p) && p > 0);
        for (size_t j = 0; j < N; j++) {
            a[j]++;
            assert_true(cil_micro_p99(a, load) <= p + 1e-12);
            a[j]--;
        }
    }
}

static void test_model_bad_args(void **state)
{
    (void)state;
    long a[N];
    for (size_t j = 0; j < N; j++)
        a[j] = 8;
    assert_true(isnan(cil_micro_p99(NULL, 100)));
    assert_true(isnan(cil_micro_p99(a, 0)));
    assert_true(isnan(cil_micro_p99(a, NAN)));
    a[3] = 0;
    assert_true(isnan(cil_micro_p99(a, 100)));
    assert_int_equal(cil_micro_tuned(100, 10, a), -1);
    assert_int_equal(cil_micro_tuned(-1, CIL_MICRO_R, a), -1);
    assert_int_equal(cil_micro_tuned(100, CIL_MICRO_R, NULL), -1);
}

static void check_alloc(const long *a)
{
    long s = 0;
    for (size_t j = 0; j < N; j++) {
        assert_true(a[j] >= CIL_MICRO_MIN);
        s += a[j];
    }
    assert_true(s <= CIL_MICRO_R);
}

static void test_policies_valid(void **state)
{
    (void)state;
    for (int p = 0; p < CIL_MICRO_NPOLICIES; p++) {
        cil_micro_agent *ag = cil_micro_agent_new((cil_micro_policy)p, 3);
        assert_non_null(ag);
        cil_rng r;
        cil_rng_seed(&r, 5);
        double load = cil_micro_nominal_load();
        for (int t = 0; t < 25; t++) {
            long a[N];
            assert_int_equal(cil_micro_agent_choose(ag, load, a), 0);
            check_alloc(a);
            double obs = cil_micro_p99(a, load) * exp(0.05 * cil_rng_gauss(&r));
            assert_int_equal(cil_micro_agent_observe(ag, a, load, obs), 0);
        }
        long bad[N];
        for (size_t j = 0; j < N; j++)
            bad[j] = 2;
        assert_int_equal(cil_micro_agent_observe(ag, bad, load, 1.0), -1);
        assert_int_equal(cil_micro_agent_choose(ag, -1, bad), -1);
        assert_int_equal(bad[0], 2);
        cil_micro_agent_free(ag);
    }
    assert_null(cil_micro_agent_new(CIL_MICRO_NPOLICIES, 1));
}

static void test_policy_names(void **state)
{
    (void)state;
    cil_micro_policy p;
    assert_int_equal(cil_micro_policy_parse("evoalg", &p), 0);
    assert_int_equal(p, CIL_MICRO_EVOALG);
    assert_int_equal(cil_micro_policy_parse("cilantro", &p), 0);
    assert_int_equal(p, CIL_MICRO_UCB);
    assert_int_equal(cil_micro_policy_parse("resource-fair", &p), 0);
    assert_int_equal(p, CIL_MICRO_FAIR);
    assert_int_equal(cil_micro_policy_parse("greedy", &p), -1);
    assert_string_equal(cil_micro_policy_name(CIL_MICRO_EGREEDY), "egreedy");
    assert_null(cil_micro_policy_name(CIL_MICRO_NPOLICIES));
}

static void test_run_deterministic(void **state)
{
    (void)state;
    cil_micro_result a, b, c;
    assert_int_equal(cil_micro_run(CIL_MICRO_UCB, 1.0, 7, &a), 0);
    assert_int_equal(cil_micro_run(CIL_MICRO_UCB, 1.0, 7, &b), 0);
    assert_int_equal(cil_micro_run(CIL_MICRO_UCB, 1.0, 8, &c), 0);
    assert_int_equal(a.rounds, (size_t)(3600 / CIL_MICRO_ROUND_S));
    assert_memory_equal(a.p99, b.p99, a.rounds * sizeof *a.p99);
    assert_memory_equal(a.p99_obs, b.p99_obs, a.rounds * sizeof *a.p99_obs);
    assert_true(a.mean_p99 == b.mean_p99);
    assert_true(memcmp(a.p99_obs, c.p99_obs, a.rounds * sizeof *a.p99_obs) != 0);
    cil_micro_result_free(&a);
    cil_micro_result_free(&b);
    cil_micro_result_free(&c);
}

static void test_run_ordering(void **state)
{
    (void)state;
    /* 3 h: the learner has left the equal split behind (docs: cilantro_micro.md) */
    cil_micro_result u, f;
    assert_int_equal(cil_micro_run(CIL_MICRO_UCB, 3.0, 1, &u), 0);
    assert_int_equal(cil_micro_run(CIL_MICRO_FAIR, 3.0, 1, &f), 0);
    assert_true(u.mean_p99 < f.mean_p99);
    /* in the last half hour most rounds are near the tuned latency (UCB still makes
     * the odd exploratory move) */
    size_t k = (size_t)(1800 / CIL_MICRO_ROUND_S), fast = 0;
    for (size_t i = u.rounds - k; i < u.rounds; i++)
        fast += u.p99[i] < 0.2;
    assert_true(fast >= k * 4 / 5);
    cil_micro_result_free(&u);
    cil_micro_result_free(&f);
}

static void test_run_bad_args(void **state)
{
    (void)state;
    cil_micro_result r;
    assert_int_equal(cil_micro_run(CIL_MICRO_UCB, 0, 1, &r), -1);
    assert_int_equal(r.rounds, 0);
    assert_null(r.p99);
    assert_int_equal(cil_micro_run(CIL_MICRO_UCB, NAN, 1, &r), -1);
    assert_int_equal(cil_micro_run(CIL_MICRO_UCB, 2000, 1, &r), -1);
    assert_int_equal(cil_micro_run(CIL_MICRO_NPOLICIES, 1, 1, &r), -1);
    assert_int_equal(cil_micro_run(CIL_MICRO_UCB, 1, 1, NULL), -1);
    cil_micro_result_free(&r);
}

static int cmd(int argc, const char *const *argv)
{
    char *v[8];
    for (int i = 0; i < argc; i++)
        v[i] = (char *)argv[i];
    return cil_micro_cmd(argc, v);
}

static void test_cmd(void **state)
{
    (void)state;
    const char *nopol[] = {"micro"};
    const char *badpol[] = {"micro", "--policy", "best"};
    const char *badh[] = {"micro", "--policy", "all", "--hours", "-3"};
    const char *badh2[] = {"micro", "--policy", "all", "--hours", "2x"};
    const char *bads[] = {"micro", "--policy", "ucb", "--seed", "-1"};
    const char *missing[] = {"micro", "--policy"};
    const char *unknown[] = {"micro", "--policy", "ucb", "--fast"};
    const char *ok[] = {"micro", "--policy", "all", "--hours", "0.25", "--seed", "2", "--json"};
    const char *ok2[] = {"micro", "--policy", "resource-fair", "--hours", "0.1"};
    assert_int_equal(cmd(1, nopol), 2);
    assert_int_equal(cmd(3, badpol), 2);
    assert_int_equal(cmd(5, badh), 2);
    assert_int_equal(cmd(5, badh2), 2);
    assert_int_equal(cmd(5, bads), 2);
    assert_int_equal(cmd(2, missing), 2);
    assert_int_equal(cmd(4, unknown), 2);
    assert_int_equal(cmd(8, ok), 0);
    assert_int_equal(cmd(5, ok2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),           cmocka_unit_test(test_calibration),
        cmocka_unit_test(test_monotone),        cmocka_unit_test(test_model_bad_args),
        cmocka_unit_test(test_policies_valid),  cmocka_unit_test(test_policy_names),
        cmocka_unit_test(test_run_deterministic), cmocka_unit_test(test_run_ordering),
        cmocka_unit_test(test_run_bad_args),    cmocka_unit_test(test_cmd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
