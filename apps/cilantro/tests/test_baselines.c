/* test_baselines.c: the baselines' rules on hand-made feedback, the exact NNLS, and
 * Ernest / Quasar demands on known curves. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cilantro/baselines.h"

/* 4 jobs on 100 CPUs; linear curves p = min(1, a / d) at load 10: demands at the SLO
 * 0.9 are 18, 27, 36 and 9 CPUs. */
static const char *ENV_JSON =
    "{\"cpus\": 100, \"round_s\": 60, \"report_s\": 5, \"jobs\": ["
    "{\"name\": \"a\", \"curve\": {\"type\": \"linear\", \"demand\": 20}, \"load\": 10,"
    " \"slo\": 0.9, \"utility\": \"linear\"},"
    "{\"name\": \"b\", \"curve\": {\"type\": \"linear\", \"demand\": 30}, \"load\": 10,"
    " \"slo\": 0.9, \"utility\": \"linear\"},"
    "{\"name\": \"c\", \"curve\": {\"type\": \"linear\", \"demand\": 40}, \"load\": 10,"
    " \"slo\": 0.9, \"utility\": \"linear\"},"
    "{\"name\": \"d\", \"curve\": {\"type\": \"linear\", \"demand\": 10}, \"load\": 10,"
    " \"slo\": 0.9, \"utility\": \"linear\"}]}";

static cil_env *make_env(void)
{
    char err[256];
    cil_env *env = cil_env_parse(ENV_JSON, NULL, "test", err, sizeof err);
    if (!env)
        fprintf(stderr, "%s\n", err);
    assert_non_null(env);
    return env;
}

static long sum(const long *a, size_t n)
{
    long s = 0;
    for (size_t j = 0; j < n; j++) {
        assert_true(a[j] >= 0);
        s += a[j];
    }
    return s;
}

/* One round of feedback at allocation a from the true (noise-free) linear curves. */
static void feed(cil_baseline *b, const cil_env *env, const long *a)
{
    double load[4], reward[4];
    int has[4];
    for (size_t j = 0; j < 4; j++) {
        load[j] = 10;
        reward[j] = cil_job_perf(&env->jobs[j], (double)a[j], 10);
        has[j] = 1;
    }
    assert_int_equal(cil_baseline_observe(b, a, load, reward, has), 0);
}

static void test_nnls_exact(void **state)
{
    (void)state;
    /* y = 2 + 3 x exactly on x = 0..4: NNLS gives the least-squares answer */
    double G[4] = {0}, c[2] = {0}, t[2];
    for (int x = 0; x < 5; x++) {
        double phi[2] = {1, x}, y = 2 + 3 * x;
        for (int r = 0; r < 2; r++) {
            c[r] += phi[r] * y;
            for (int q = 0; q < 2; q++)
                G[r * 2 + q] += phi[r] * phi[q];
        }
    }
    assert_int_equal(cil_nnls_small(2, G, c, t), 0);
    assert_float_equal(t[0], 2, 1e-9);
    assert_float_equal(t[1], 3, 1e-9);
    /* y = 5 - x: the unconstrained slope is negative, so NNLS drops x and fits the
     * mean (3 on x = 0..4) */
    memset(G, 0, sizeof G);
    memset(c, 0, sizeof c);
    for (int x = 0; x < 5; x++) {
        double phi[2] = {1, x}, y = 5 - x;
        for (int r = 0; r < 2; r++) {
            c[r] += phi[r] * y;
            for (int q = 0; q < 2; q++)
                G[r * 2 + q] += phi[r] * phi[q];
        }
    }
    assert_int_equal(cil_nnls_small(2, G, c, t), 0);
    assert_float_equal(t[0], 3, 1e-9);
    assert_float_equal(t[1], 0, 1e-12);
    assert_int_equal(cil_nnls_small(0, G, c, t), -1);
    assert_int_equal(cil_nnls_small(9, G, c, t), -1);
}

static void test_create_rejects(void **state)
{
    (void)state;
    cil_env *env = make_env();
    assert_null(cil_baseline_create(CIL_BL_COUNT, env, 1));
    assert_null(cil_baseline_create(CIL_BL_PARTIES, NULL, 1));
    cil_baseline *b = cil_baseline_create(CIL_BL_PARTIES, env, 1);
    long a[4];
    assert_int_equal(cil_baseline_observe(b, NULL, NULL, NULL, NULL), -1);
    assert_int_equal(cil_baseline_allocate(b, NULL, NULL), -1);
    assert_int_equal(cil_baseline_allocate(NULL, NULL, a), -1);
    cil_baseline_free(b);
    cil_baseline_free(NULL);
    cil_env_free(env);
}

/* Before feedback every baseline gives integers summing to at most R, and the equal
 * split for all but the exploring model fitters. */
static void test_first_round(void **state)
{
    (void)state;
    cil_env *env = make_env();
    for (int k = 0; k < CIL_BL_COUNT; k++) {
        cil_baseline *b = cil_baseline_create((cil_baseline_kind)k, env, 3);
        assert_non_null(b);
        long a[4];
        assert_int_equal(cil_baseline_allocate(b, NULL, a), 0);
        assert_true(sum(a, 4) <= 100);
        if (k != CIL_BL_ERNEST && k != CIL_BL_QUASAR && k != CIL_BL_PARTIES && k != CIL_BL_MIAD)
            for (int j = 0; j < 4; j++)
                assert_int_equal(a[j], 25);
        cil_baseline_free(b);
    }
    cil_env_free(env);
}

/* PARTIES: +20 on a violation, -5 with slack; MIAD: x2 and -1. From the equal share 25:
 * at a = (25, 25, 25, 25) jobs a and d meet the SLO, b and c do not. */
static void test_parties_miad_rules(void **state)
{
    (void)state;
    cil_env *env = make_env();
    long a[4] = {25, 25, 25, 25}, out[4];
    cil_baseline *p = cil_baseline_create(CIL_BL_PARTIES, env, 1);
    feed(p, env, a);
    assert_int_equal(cil_baseline_allocate(p, NULL, out), 0);
    /* demands 20, 45, 45, 20 (sum 130 > 100): water-filling gives 20, 30, 30, 20 */
    assert_int_equal(out[0], 20);
    assert_int_equal(out[1], 30);
    assert_int_equal(out[2], 30);
    assert_int_equal(out[3], 20);
    cil_baseline_free(p);

    cil_baseline *m = cil_baseline_create(CIL_BL_MIAD, env, 1);
    feed(m, env, a);
    assert_int_equal(cil_baseline_allocate(m, NULL, out), 0);
    /* demands 49, 100, 100, 49: water level 25.5 each -> floors 25, ties to low index */
    assert_true(sum(out, 4) == 100);
    for (int j = 0; j < 4; j++)
        assert_true(out[j] == 25 || out[j] == 26);
    cil_baseline_free(m);
    cil_env_free(env);
}

/* Greedy-EW: the two worst-off take one CPU each from the two best-off. */
static void test_greedy_moves_one(void **state)
{
    (void)state;
    cil_env *env = make_env();
    long a[4] = {25, 25, 25, 25}, out[4];
    cil_baseline *g = cil_baseline_create(CIL_BL_GREEDY_EW, env, 1);
    feed(g, env, a);
    assert_int_equal(cil_baseline_allocate(g, NULL, out), 0);
    /* utilities min(1, (25/d)/0.9): a 1, b 0.93, c 0.69, d 1: c and b gain */
    assert_int_equal(out[2], 26);
    assert_int_equal(out[1], 26);
    assert_int_equal(out[0] + out[3], 48);
    assert_int_equal(sum(out, 4), 100);
    cil_baseline_free(g);
    cil_env_free(env);
}

/* Minerva moves CPUs towards the worst-off job and keeps the total. */
static void test_minerva_favours_worst(void **state)
{
    (void)state;
    cil_env *env = make_env();
    long a[4] = {25, 25, 25, 25}, out[4];
    cil_baseline *m = cil_baseline_create(CIL_BL_MINERVA, env, 1);
    feed(m, env, a);
    assert_int_equal(cil_baseline_allocate(m, NULL, out), 0);
    assert_int_equal(sum(out, 4), 100);
    assert_true(out[2] > 25);
    assert_true(out[0] < 25 && out[3] < 25);
    cil_baseline_free(m);
    cil_env_free(env);
}

/* Minerva equalizes normalized performance, not utility: two jobs at the same
 * performance / SLO keep equal shares although one's utility is quadratic (0.81 against
 * 0.9), and a job at half its SLO gets about twice the share of a job meeting it. */
static void test_minerva_ignores_utility_shape(void **state)
{
    (void)state;
    char err[256];
    cil_env *env = cil_env_parse(
        "{\"cpus\": 100, \"round_s\": 60, \"report_s\": 5, \"jobs\": ["
        "{\"name\": \"lin\", \"curve\": {\"type\": \"linear\", \"demand\": 50}, \"load\": 10,"
        " \"slo\": 1, \"utility\": \"linear\"},"
        "{\"name\": \"quad\", \"curve\": {\"type\": \"linear\", \"demand\": 50}, \"load\": 10,"
        " \"slo\": 1, \"utility\": \"quadratic\"},"
        "{\"name\": \"half\", \"curve\": {\"type\": \"linear\", \"demand\": 50}, \"load\": 10,"
        " \"slo\": 1, \"utility\": \"linear\"}]}",
        NULL, "test", err, sizeof err);
    assert_non_null(env);
    cil_baseline *m = cil_baseline_create(CIL_BL_MINERVA, env, 1);
    long a[3] = {30, 30, 30}, out[3];
    double load[3] = {10, 10, 10}, reward[3] = {0.9, 0.9, 0.45};
    int has[3] = {1, 1, 1};
    assert_int_equal(cil_baseline_observe(m, a, load, reward, has), 0);
    assert_int_equal(cil_baseline_allocate(m, NULL, out), 0);
    assert_int_equal(sum(out, 3), 100);
    assert_int_equal(out[0], out[1]);
    assert_true(out[2] >= 2 * out[0] - 2 && out[2] <= 2 * out[0] + 2);
    cil_baseline_free(m);
    cil_env_free(env);
}

/* EvoAlg keeps all CPUs allocated and, fed its own proposals, moves off the equal split
 * towards a better observed welfare. */
static void test_evoalg_improves(void **state)
{
    (void)state;
    cil_env *env = make_env();
    cil_baseline *e = cil_baseline_create(CIL_BL_EVOALG_SW, env, 9);
    long a[4];
    double first = NAN, best = 0;
    for (int round = 0; round < 60; round++) {
        assert_int_equal(cil_baseline_allocate(e, NULL, a), 0);
        assert_int_equal(sum(a, 4), 100);
        double w = 0;
        for (int j = 0; j < 4; j++)
            w += cil_job_utility(&env->jobs[j], cil_job_perf(&env->jobs[j], (double)a[j], 10)) / 4;
        if (round == 0)
            first = w;
        if (w > best)
            best = w;
        feed(e, env, a);
    }
    assert_true(best > first);
    cil_baseline_free(e);
    cil_env_free(env);
}

/* Ernest and Quasar, after their exploration on noise-free feedback, ask for demands
 * that let every job meet its SLO (total demand 90 <= 100). */
static void test_model_fitters_meet_slo(void **state)
{
    (void)state;
    cil_env *env = make_env();
    for (int k = CIL_BL_ERNEST; k <= CIL_BL_QUASAR; k++) {
        cil_baseline *b = cil_baseline_create((cil_baseline_kind)k, env, 4);
        long a[4];
        double fc[4] = {10, 10, 10, 10};
        for (int round = 0; round < 40; round++) {
            assert_int_equal(cil_baseline_allocate(b, fc, a), 0);
            assert_true(sum(a, 4) <= 100);
            feed(b, env, a);
        }
        int met = 0;
        for (int j = 0; j < 4; j++)
            met += cil_job_perf(&env->jobs[j], (double)a[j], 10) >= 0.9 - 1e-9;
        printf("  %s: %ld %ld %ld %ld, %d of 4 meet the SLO\n",
               k == CIL_BL_ERNEST ? "ernest" : "quasar", a[0], a[1], a[2], a[3], met);
        assert_true(met >= 3);
        cil_baseline_free(b);
    }
    cil_env_free(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nnls_exact),
        cmocka_unit_test(test_create_rejects),
        cmocka_unit_test(test_first_round),
        cmocka_unit_test(test_parties_miad_rules),
        cmocka_unit_test(test_greedy_moves_one),
        cmocka_unit_test(test_minerva_favours_worst),
        cmocka_unit_test(test_minerva_ignores_utility_shape),
        cmocka_unit_test(test_evoalg_improves),
        cmocka_unit_test(test_model_fitters_meet_slo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
