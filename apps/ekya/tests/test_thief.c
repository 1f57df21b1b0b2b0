/* test_thief.c: invariants of the thief scheduler over random profiles and states:
 * shares are non-negative multiples of delta summing to at most G, completed streams
 * get no retraining, and no stream gets a configuration it cannot finish in what is
 * left of the window. Also the fixedconfig restriction and a scale smoke test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ekya/sched.h"
#include "ekya/sim.h"
#include "ekya/synth.h"

static double uniform01(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static ekya_infer_profile paper_table(void)
{
    const double sub[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20};
    const double mult[12] = {1, .78, .64, .60, .44, .42, .41, .33, .28, .15, .12, .04};
    ekya_infer_profile ip;
    assert_int_equal(ekya_infer_from_arrays(&ip, 12, sub, mult), 0);
    return ip;
}

static int is_multiple(double x, double delta)
{
    double k = x / delta;
    return fabs(k - round(k)) < 1e-6;
}

static void check_alloc(const ekya_sched_state *st, const ekya_stream_alloc *out, int only)
{
    double total = 0, rem = st->length - st->elapsed;
    for (int s = 0; s < st->prof->nstreams; s++) {
        const ekya_stream_alloc *a = &out[s];
        assert_true(a->retrain_share >= 0 && a->infer_share >= 0);
        assert_true(is_multiple(a->retrain_share, st->delta));
        assert_true(is_multiple(a->infer_share, st->delta));
        total += a->retrain_share + a->infer_share;
        if (a->retrain_cfg == EKYA_NO_RETRAIN)
            continue;
        assert_false(st->completed[s]);
        assert_true(only == EKYA_ANY_CONFIG || a->retrain_cfg == only);
        double t = ekya_finish_time(st, s, a->retrain_cfg, a->retrain_share);
        if (t > rem + 1e-6)
            fail_msg("stream %d: config %d needs %g s of %g left", s, a->retrain_cfg, t, rem);
    }
    assert_true(total <= st->gpus + 1e-9);
}

/* Random shapes, GPUs, deltas and mid-window states, straight into the thief. */
static void test_random_states(void **state)
{
    (void)state;
    const double gpus[] = {0.5, 1, 2, 2.7, 3, 4, 8}, deltas[] = {0.1, 0.25, 0.5};
    ekya_infer_profile ip = paper_table();
    uint64_t rng = 42;
    for (int iter = 0; iter < 300; iter++) {
        ekya_profiles p;
        int ns = 1 + (int)(uniform01(&rng) * 6), nc = 1 + (int)(uniform01(&rng) * 6);
        assert_int_equal(ekya_profiles_synth(&p, ns, 1, nc, (uint64_t)iter), 0);
        double acc[8], prog[8];
        int cfg[8], done[8];
        ekya_sched_state st = {&p, &ip, 0, 50 + 150 * uniform01(&rng), 0,
                               gpus[iter % 7], deltas[iter % 3], 0.25 + uniform01(&rng),
                               acc, cfg, prog, done};
        st.elapsed = iter % 2 ? uniform01(&rng) * 0.9 * st.length : 0;
        for (int s = 0; s < ns; s++) {
            acc[s] = p.start_acc[s];
            done[s] = st.elapsed > 0 && uniform01(&rng) < 0.2;
            cfg[s] = !done[s] && st.elapsed > 0 && uniform01(&rng) < 0.5
                         ? (int)(uniform01(&rng) * nc) : EKYA_NO_RETRAIN;
            prog[s] = cfg[s] >= 0 ? uniform01(&rng) *
                                        ekya_profiles_cell(&p, s, 0, cfg[s])->pred_gpu_seconds
                                  : 0;
        }
        ekya_stream_alloc out[8];
        int only = iter % 5 == 0 ? nc - 1 : EKYA_ANY_CONFIG;
        assert_int_equal(ekya_thief_schedule(&st, only, out), 0);
        check_alloc(&st, out, only);
        ekya_profiles_free(&p);
    }
    ekya_infer_free(&ip);
}

/* Whole simulations: every step the driver recorded obeys the same invariants. */
static void test_random_simulations(void **state)
{
    (void)state;
    ekya_infer_profile ip = paper_table();
    for (int seed = 1; seed <= 25; seed++) {
        ekya_profiles p;
        int ns = 1 + seed % 5;
        assert_int_equal(ekya_profiles_synth(&p, ns, 3, 6, (uint64_t)seed), 0);
        ekya_params prm = {.gpus = 1 + seed % 4, .length = 120, .delta = 0.1, .rmax = 0.25};
        ekya_scheduler sched;
        char err[256];
        const char *spec = seed % 3 == 0 ? "fixedconfig:hp1:15" : "thief";
        assert_int_equal(ekya_scheduler_create(spec, &p, &sched, err, sizeof err), 0);
        ekya_window_decision log[3] = {{0}};
        ekya_sim_result r;
        assert_int_equal(ekya_simulate(&p, &ip, &prm, &sched, NULL, log, &r, err, sizeof err), 0);
        for (int w = 0; w < 3; w++) {
            assert_true(log[w].nsteps >= 1 && log[w].steps[0].kind == EKYA_STEP_START);
            for (int k = 0; k < log[w].nsteps; k++) {
                const ekya_step *stp = &log[w].steps[k];
                assert_true(ekya_alloc_total(ns, stp->alloc) <= prm.gpus + 1e-9);
                for (int s = 0; s < ns; s++) {
                    assert_true(is_multiple(stp->alloc[s].retrain_share, prm.delta));
                    assert_true(is_multiple(stp->alloc[s].infer_share, prm.delta));
                    int c = stp->alloc[s].retrain_cfg;
                    assert_true(c == EKYA_NO_RETRAIN || seed % 3 != 0 || c == 1 * 3 + 1);
                }
            }
            ekya_window_decision_free(&log[w]);
        }
        assert_true(r.mean >= 0 && r.mean <= 1);
        ekya_sim_result_free(&r);
        ekya_scheduler_destroy(&sched);
        ekya_profiles_free(&p);
    }
    ekya_infer_free(&ip);
}

/* The scale of the paper's measurement: 10 streams, 8 GPUs, 18 configurations. */
static void test_scale(void **state)
{
    (void)state;
    ekya_infer_profile ip = paper_table();
    ekya_profiles p;
    assert_int_equal(ekya_profiles_synth(&p, 10, 2, 18, 7), 0);
    ekya_params prm = {.gpus = 8, .length = 200, .delta = 0.1, .rmax = 0.25};
    ekya_scheduler sched;
    char err[256];
    assert_int_equal(ekya_scheduler_create("thief", &p, &sched, err, sizeof err), 0);
    ekya_sim_result r;
    assert_int_equal(ekya_simulate(&p, &ip, &prm, &sched, NULL, NULL, &r, err, sizeof err), 0);
    print_message("thief: %d calls, max %.6f s, mean %.6f s per call\n", r.sched.calls,
                  r.sched.max_seconds, r.sched.total_seconds / r.sched.calls);
    assert_true(r.sched.max_seconds < 5.0);
    ekya_sim_result_free(&r);
    ekya_scheduler_destroy(&sched);
    ekya_profiles_free(&p);
    ekya_infer_free(&ip);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_states),
        cmocka_unit_test(test_random_simulations),
        cmocka_unit_test(test_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
