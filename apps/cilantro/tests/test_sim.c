/* test_sim.c: the simulator loop on a small in-memory environment: determinism,
 * oracles against Resource-Fair, Cilantro-EW near its oracle, dropped reports. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cilantro/sim.h"

/* 4 jobs on 200 CPUs, constant loads; demands at the SLO: 36, 72, 128 and 38 CPUs. */
static const char *ENV_FMT =
    "{\"cpus\": 200, \"round_s\": 60, \"report_s\": %g, \"jobs\": ["
    "{\"name\": \"lin1\", \"curve\": {\"type\": \"linear\", \"demand\": 40}, \"load\": 100,"
    " \"slo\": 0.9, \"utility\": \"linear\"},"
    "{\"name\": \"lin2\", \"curve\": {\"type\": \"linear\", \"demand\": 80}, \"load\": 100,"
    " \"slo\": 0.9, \"utility\": \"linear\"},"
    "{\"name\": \"sig1\", \"curve\": {\"type\": \"sigmoid\", \"offset\": 1}, \"load\": 40,"
    " \"slo\": 0.9, \"utility\": \"linear\"},"
    "{\"name\": \"sig2\", \"curve\": {\"type\": \"sigmoid\", \"offset\": 0.5}, \"load\": 20,"
    " \"slo\": 0.8, \"utility\": \"sqrt\"}]}";

/* Cilantro-EW's time-averaged egalitarian welfare over 3 simulated hours must be
 * within this of oracle-EW's (the learners start from nothing; see docs/cilantro.md). */
#define EW_MARGIN 0.05

static cil_env *make_env(double report_s)
{
    char json[2048], err[256];
    snprintf(json, sizeof json, ENV_FMT, report_s);
    cil_env *env = cil_env_parse(json, NULL, "test", err, sizeof err);
    if (!env)
        fprintf(stderr, "%s\n", err);
    return env;
}

static cil_sim_result run(const cil_env *env, cil_policy_kind p, double hours, uint64_t seed)
{
    cil_sim_params prm;
    cil_sim_params_default(&prm);
    prm.duration_s = hours * 3600;
    prm.seed = seed;
    prm.sw.iterations = 1000;
    cil_sim_result r;
    char err[256] = "";
    int rc = cil_sim_run(env, p, &prm, &r, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_true(r.max_total_alloc <= env->cpus);
    double s = 0;
    for (size_t j = 0; j < r.njobs; j++)
        s += r.job_alloc[j];
    assert_true(s <= env->cpus + 1e-9);
    printf("  %-14s SW %.4f EW %.4f NJC %.4f NJCu %.4f useful %.4f (fed %llu, dropped %llu)\n",
           cil_policy_name(p), r.mean.social_welfare, r.mean.egalitarian_welfare,
           r.mean.njc_fairness, r.mean.njc_fairness_utility, r.mean.useful_usage,
           (unsigned long long)r.points_fed, (unsigned long long)r.reports_dropped);
    return r;
}

static void test_names(void **state)
{
    (void)state;
    for (int i = 0; i < CIL_POL_COUNT; i++) {
        cil_policy_kind p;
        assert_int_equal(cil_policy_parse(cil_policy_name((cil_policy_kind)i), &p), 0);
        assert_int_equal(p, i);
    }
    cil_policy_kind p;
    assert_int_equal(cil_policy_parse("ernest-x", &p), -1);
    assert_null(cil_policy_name(CIL_POL_COUNT));
}

static void test_deterministic(void **state)
{
    (void)state;
    cil_env *env = make_env(5);
    assert_non_null(env);
    for (int p = 0; p < CIL_POL_COUNT; p++) {
        cil_sim_result a = run(env, (cil_policy_kind)p, 0.5, 7);
        cil_sim_result b = run(env, (cil_policy_kind)p, 0.5, 7);
        assert_int_equal(a.rounds, 30);
        assert_memory_equal(&a.mean, &b.mean, sizeof a.mean);
        assert_memory_equal(a.job_util, b.job_util, a.njobs * sizeof(double));
        assert_memory_equal(a.job_alloc, b.job_alloc, a.njobs * sizeof(double));
        assert_true(a.points_fed == b.points_fed);
        /* 360 report events x 4 jobs; report_s divides round_s: nothing dropped */
        assert_true(a.reports == 360 * 4);
        assert_true(a.reports_dropped == 0);
        cil_sim_result_free(&a);
        cil_sim_result_free(&b);
    }
    cil_env_free(env);
}

static void test_oracles_beat_fair(void **state)
{
    (void)state;
    cil_env *env = make_env(5);
    assert_non_null(env);
    cil_sim_result rf = run(env, CIL_POL_RESOURCE_FAIR, 1, 3);
    cil_sim_result on = run(env, CIL_POL_ORACLE_NJC, 1, 3);
    cil_sim_result oe = run(env, CIL_POL_ORACLE_EW, 1, 3);
    cil_sim_result os = run(env, CIL_POL_ORACLE_SW, 1, 3);
    assert_true(on.mean.njc_fairness >= rf.mean.njc_fairness - 1e-12);
    assert_true(oe.mean.egalitarian_welfare >= rf.mean.egalitarian_welfare - 1e-12);
    assert_true(os.mean.social_welfare >= rf.mean.social_welfare - 1e-12);
    assert_true(os.mean.social_welfare >= oe.mean.social_welfare - 1e-12);
    assert_true(oe.mean.egalitarian_welfare >= os.mean.egalitarian_welfare - 1e-12);
    /* oracles use all of R on demands exceeding R here */
    assert_true(on.max_total_alloc == 200);
    cil_sim_result_free(&rf);
    cil_sim_result_free(&on);
    cil_sim_result_free(&oe);
    cil_sim_result_free(&os);
    cil_env_free(env);
}

static void test_cilantro_ew_near_oracle(void **state)
{
    (void)state;
    cil_env *env = make_env(5);
    assert_non_null(env);
    cil_sim_result oe = run(env, CIL_POL_ORACLE_EW, 3, 11);
    cil_sim_result ce = run(env, CIL_POL_CILANTRO_EW, 3, 11);
    cil_sim_result rf = run(env, CIL_POL_RESOURCE_FAIR, 3, 11);
    cil_sim_result cn = run(env, CIL_POL_CILANTRO_NJC, 3, 11);
    cil_sim_result cs = run(env, CIL_POL_CILANTRO_SW, 3, 11);
    assert_true(ce.mean.egalitarian_welfare >= oe.mean.egalitarian_welfare - EW_MARGIN);
    assert_true(ce.mean.egalitarian_welfare > rf.mean.egalitarian_welfare);
    assert_true(ce.points_fed > 0 && cn.points_fed > 0 && cs.points_fed > 0);
    cil_sim_result_free(&oe);
    cil_sim_result_free(&ce);
    cil_sim_result_free(&rf);
    cil_sim_result_free(&cn);
    cil_sim_result_free(&cs);
    cil_env_free(env);
}

static void test_straddling_reports_dropped(void **state)
{
    (void)state;
    cil_env *env = make_env(7); /* 7 does not divide 60: some reports straddle */
    assert_non_null(env);
    cil_sim_result r = run(env, CIL_POL_CILANTRO_EW, 1, 5);
    /* 3600/7 -> 514 report events; those whose span (t-7, t) holds a round start
     * k*60 (k = 1..59) strictly inside is dropped */
    assert_true(r.reports == 514 * 4);
    size_t straddle = 0;
    for (int k = 1; k <= 514; k++) {
        double t0 = 7.0 * (k - 1), t1 = 7.0 * k;
        for (int m = 1; m < 60; m++)
            if (60.0 * m > t0 && 60.0 * m < t1)
                straddle++;
    }
    assert_true(r.reports_dropped == straddle * 4);
    assert_true(r.points_fed == r.reports - r.reports_dropped - 4 * 5);
    cil_sim_result_free(&r);
    cil_env_free(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_oracles_beat_fair),
        cmocka_unit_test(test_cilantro_ew_near_oracle),
        cmocka_unit_test(test_straddling_reports_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
