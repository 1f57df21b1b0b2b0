/* test_policy.c: the policy object (cilantro/policy.h) driven by hand, as a live
 * controller would: every name, errors, the allocation unit, what a report feeds, and
 * Cilantro-NJC learning the small jobs' demands from feedback alone. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cilantro/policy.h"
#include "cilantro/sim.h"

/* 4 jobs on 200 CPUs, constant loads; demands at the SLO: 36, 72, 128 and 38 CPUs. */
static const char *ENV_JSON =
    "{\"cpus\": 200, \"round_s\": 60, \"report_s\": 10, \"jobs\": ["
    "{\"name\": \"lin1\", \"curve\": {\"type\": \"linear\", \"demand\": 40}, \"load\": 100,"
    " \"slo\": 0.9, \"utility\": \"linear\"},"
    "{\"name\": \"lin2\", \"curve\": {\"type\": \"linear\", \"demand\": 80}, \"load\": 100,"
    " \"slo\": 0.9, \"utility\": \"linear\"},"
    "{\"name\": \"sig1\", \"curve\": {\"type\": \"sigmoid\", \"offset\": 1}, \"load\": 40,"
    " \"slo\": 0.9, \"utility\": \"linear\"},"
    "{\"name\": \"sig2\", \"curve\": {\"type\": \"sigmoid\", \"offset\": 0.5}, \"load\": 20,"
    " \"slo\": 0.8, \"utility\": \"sqrt\"}]}";

static int setup(void **state)
{
    char err[256];
    *state = cil_env_parse(ENV_JSON, NULL, "test", err, sizeof err);
    if (!*state)
        fprintf(stderr, "%s\n", err);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    cil_env_free(*state);
    return 0;
}

/* Sum within R, every share a non-negative multiple of unit. */
static void check_alloc(const cil_env *env, const double *a, double unit)
{
    double s = 0;
    for (size_t j = 0; j < env->njobs; j++) {
        assert_true(a[j] >= 0);
        assert_true(fabs(a[j] / unit - round(a[j] / unit)) < 1e-12);
        s += a[j];
    }
    assert_true(s <= env->cpus + 1e-9);
}

static void test_every_name(void **state)
{
    const cil_env *env = *state;
    double a[4];
    char err[256];
    for (int k = 0; k < CIL_POL_COUNT; k++) {
        cil_policy_opts o;
        cil_policy_opts_default(&o);
        o.sw.iterations = 200;
        cil_policy *p = cil_policy_new(cil_policy_name((cil_policy_kind)k), env, &o, err,
                                       sizeof err);
        if (!p)
            fail_msg("%s", err);
        /* round 0 without feedback, a report per job, round 1 */
        assert_int_equal(cil_policy_round(p, 0, a, err, sizeof err), 0);
        check_alloc(env, a, 1);
        for (int j = 0; j < 4; j++)
            assert_int_equal(cil_policy_report(p, j, env->jobs[j].load, a[j], 0.5, 0.05, 60), 0);
        assert_int_equal(cil_policy_round(p, 60, a, err, sizeof err), 0);
        check_alloc(env, a, 1);
        cil_policy_stats st;
        cil_policy_get_stats(p, &st);
        assert_int_equal(st.rounds, 2);
        cil_policy_free(p);
    }
    cil_policy_free(NULL);
}

static void test_errors(void **state)
{
    const cil_env *env = *state;
    char err[256] = "";
    assert_null(cil_policy_new("bogus", env, NULL, err, sizeof err));
    assert_non_null(strstr(err, "unknown policy 'bogus'"));
    assert_null(cil_policy_new("miad", NULL, NULL, err, sizeof err));
    cil_policy_opts o;
    cil_policy_opts_default(&o);
    o.unit = 2;
    assert_null(cil_policy_new("parties", env, &o, err, sizeof err));
    assert_non_null(strstr(err, "whole CPUs"));
    o.unit = 0;
    assert_null(cil_policy_new("resource-fair", env, &o, err, sizeof err));
    o.unit = 500;
    assert_null(cil_policy_new("resource-fair", env, &o, err, sizeof err));
    cil_policy *p = cil_policy_new("cilantro-ew", env, NULL, err, sizeof err);
    assert_non_null(p);
    assert_int_equal(cil_policy_report(p, 4, 1, 1, 0.5, 0.1, 10), -1);
    assert_int_equal(cil_policy_report(p, -1, 1, 1, 0.5, 0.1, 10), -1);
    assert_int_equal(cil_policy_report(p, 0, NAN, 1, 0.5, 0.1, 10), -1);
    assert_int_equal(cil_policy_report(NULL, 0, 1, 1, 0.5, 0.1, 10), -1);
    assert_int_equal(cil_policy_round(p, 0, NULL, err, sizeof err), -1);
    cil_policy_free(p);
}

/* A unit of 8 CPUs: 25 units of 200 CPUs, shares in multiples of 8. */
static void test_unit(void **state)
{
    const cil_env *env = *state;
    char err[256];
    double a[4];
    static const char *const names[] = {"resource-fair", "oracle-njc", "oracle-ew", "oracle-sw"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        cil_policy_opts o;
        cil_policy_opts_default(&o);
        o.unit = 8;
        o.sw.iterations = 200;
        cil_policy *p = cil_policy_new(names[k], env, &o, err, sizeof err);
        if (!p)
            fail_msg("%s", err);
        assert_int_equal(cil_policy_round(p, 0, a, err, sizeof err), 0);
        check_alloc(env, a, 8);
        if (k == 0)
            for (int j = 0; j < 4; j++)
                assert_true(a[j] == 48 || a[j] == 56);
        if (k == 1) /* demands 36, 72, 128, 38 in units of 8: lin1 and sig2 get 40 */
            assert_true(a[0] == 40 && a[3] == 40);
        cil_policy_free(p);
    }
}

/* What a report feeds: a NAN reward counts its load only; a learner skips its first
 * skip_points points. */
static void test_report_feeds(void **state)
{
    const cil_env *env = *state;
    char err[256];
    cil_policy *p = cil_policy_new("cilantro-njc", env, NULL, err, sizeof err);
    assert_non_null(p);
    cil_policy_stats st;
    for (int i = 0; i < 5; i++)
        assert_int_equal(cil_policy_report(p, 0, 100, 50, 1, 0.05, 10), 0);
    assert_int_equal(cil_policy_report(p, 0, 100, 50, NAN, NAN, 10), 0);
    cil_policy_get_stats(p, &st);
    assert_int_equal(st.points_fed, 0);
    assert_int_equal(cil_policy_report(p, 0, 100, 50, 1, 0.05, 10), 0);
    cil_policy_get_stats(p, &st);
    assert_int_equal(st.points_fed, 1);
    cil_policy_free(p);
}

/* Cilantro-NJC driven by hand with feedback from the true curves (small Gaussian
 * noise): the jobs whose demand is below the equal share (lin1 36, sig2 38) end with
 * at least their demand. */
static void test_njc_learns(void **state)
{
    const cil_env *env = *state;
    char err[256];
    cil_policy *p = cil_policy_new("cilantro-njc", env, NULL, err, sizeof err);
    assert_non_null(p);
    cil_rng rng;
    cil_rng_seed(&rng, 3);
    double a[4];
    for (int r = 0; r < 120; r++) {
        assert_int_equal(cil_policy_round(p, 60.0 * r, a, err, sizeof err), 0);
        check_alloc(env, a, 1);
        for (int k = 0; k < 6; k++)
            for (int j = 0; j < 4; j++) {
                const cil_job *job = &env->jobs[j];
                double perf = cil_job_perf(job, a[j], job->load) + 0.02 * cil_rng_gauss(&rng);
                assert_int_equal(cil_policy_report(p, j, job->load, a[j], perf, 0.02, 10), 0);
            }
    }
    printf("  cilantro-njc after 120 rounds: %g %g %g %g\n", a[0], a[1], a[2], a[3]);
    assert_true(a[0] >= 36 && a[3] >= 38);
    cil_policy_free(p);
}

/* The oracles plan for the true mean load over [now, now + plan_span_s): with span 0,
 * the same answer as cil_sim_alloc_once at that time. */
static void test_oracle_matches_alloc_once(void **state)
{
    const cil_env *env = *state;
    char err[256];
    long ref[4];
    double a[4];
    assert_int_equal(cil_sim_alloc_once(env, CIL_POL_ORACLE_EW, 30, NULL, ref, err, sizeof err), 0);
    cil_policy *p = cil_policy_new("oracle-ew", env, NULL, err, sizeof err);
    assert_non_null(p);
    assert_int_equal(cil_policy_round(p, 30, a, err, sizeof err), 0);
    for (int j = 0; j < 4; j++)
        assert_true(a[j] == (double)ref[j]);
    cil_policy_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_name),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_unit),
        cmocka_unit_test(test_report_feeds),
        cmocka_unit_test(test_njc_learns),
        cmocka_unit_test(test_oracle_matches_alloc_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
