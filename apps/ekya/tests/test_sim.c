/* test_sim.c: the simulator and the driver: hand-computed accuracies, reallocation at
 * retraining completion, subsampled inference under a small share, carry-over of the
 * retrained model into the next window, the executor protocol with a fake executor,
 * and the decisions' JSON lines. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ekya/sched.h"
#include "ekya/sim.h"

typedef struct {
    ekya_profiles p;
    ekya_infer_profile ip;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    char err[512];
    if (ekya_profiles_load(EKYA_DATA_DIR "/toy_profiles.csv", &f->p, err, sizeof err) != 0 ||
        ekya_infer_load(EKYA_DATA_DIR "/inference_paper.csv", &f->ip, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ekya_profiles_free(&f->p);
    ekya_infer_free(&f->ip);
    free(f);
    return 0;
}

static void simulate(fixture *f, const char *spec, ekya_params prm, ekya_window_decision *log,
                     ekya_sim_result *r)
{
    ekya_scheduler s;
    char err[512];
    assert_int_equal(ekya_scheduler_create(spec, &f->p, &s, err, sizeof err), 0);
    if (ekya_simulate(&f->p, &f->ip, &prm, &s, NULL, log, r, err, sizeof err) != 0)
        fail_msg("%s", err);
    ekya_scheduler_destroy(&s);
}

static const ekya_params toy = {.gpus = 3, .length = 120, .delta = 0.1, .rmax = 1.0};

/* uniform cfg1, half for inference: worked out by hand in docs/ekya.md. */
static void test_uniform_by_hand(void **state)
{
    fixture *f = *state;
    ekya_window_decision log[2] = {{0}};
    ekya_sim_result r;
    simulate(f, "uniform:cfg1:1:0.5", toy, log, &r);
    /* window 1: A finishes at 85/0.75 = 113.3 s, B at 80/0.75 = 106.7 s */
    double a1 = (114 * 0.65 * 0.78 + 6 * 0.75) / 120, b1 = (107 * 0.50 * 0.78 + 13 * 0.90) / 120;
    /* window 2 starts at 75/90; A needs 90/0.75 = 120 s (no gain inside the window) */
    double a2 = 0.75 * 0.78, b2 = (107 * 0.90 * 0.78 + 13 * 0.98) / 120;
    assert_true(fabs(r.acc[0 * 2 + 0] - a1) < 1e-9 && fabs(r.acc[1 * 2 + 0] - b1) < 1e-9);
    assert_true(fabs(r.acc[0 * 2 + 1] - a2) < 1e-9 && fabs(r.acc[1 * 2 + 1] - b2) < 1e-9);
    assert_true(fabs(r.mean - (a1 + b1 + a2 + b2) / 4) < 1e-9);
    /* reallocation: at B's completion B's retraining share goes to B's inference */
    assert_int_equal(log[0].nsteps, 3);
    const ekya_step *st = &log[0].steps[1];
    assert_int_equal(st->kind, EKYA_STEP_COMPLETION);
    assert_int_equal(st->completed_stream, 1);
    assert_true(fabs(st->time - 80 / 0.75) < 1e-9);
    assert_int_equal(st->alloc[1].retrain_cfg, EKYA_NO_RETRAIN);
    assert_true(fabs(st->alloc[1].infer_share - 1.5) < 1e-12 && st->alloc[1].infer_subsampling == 1);
    assert_int_equal(r.completions, 4);
    for (int w = 0; w < 2; w++)
        ekya_window_decision_free(&log[w]);
    ekya_sim_result_free(&r);
}

/* The thief re-runs at each completion; the finished job's GPUs go to the others. */
static void test_thief_reallocates(void **state)
{
    fixture *f = *state;
    ekya_window_decision log[2] = {{0}};
    ekya_sim_result r;
    simulate(f, "thief", toy, log, &r);
    for (int w = 0; w < 2; w++) {
        assert_true(log[w].nsteps >= 2);
        for (int k = 1; k < log[w].nsteps; k++) {
            const ekya_step *st = &log[w].steps[k], *prev = &log[w].steps[k - 1];
            int done = st->completed_stream;
            assert_int_equal(st->kind, EKYA_STEP_COMPLETION);
            assert_true(st->time > prev->time && st->time < 120);
            assert_true(prev->alloc[done].retrain_cfg != EKYA_NO_RETRAIN);
            assert_int_equal(st->alloc[done].retrain_cfg, EKYA_NO_RETRAIN);
            assert_true(st->alloc[done].retrain_share == 0);
            /* nothing is left idle: the freed share went to other jobs */
            assert_true(fabs(ekya_alloc_total(2, st->alloc) - 3) < 1e-9);
        }
        ekya_window_decision_free(&log[w]);
    }
    ekya_sim_result_free(&r);
}

/* Too little GPU for every frame: the stream subsamples and loses accuracy. */
static void test_small_share_subsamples(void **state)
{
    fixture *f = *state;
    ekya_params prm = toy;
    prm.gpus = 0.5; /* 0.25 per stream with rmax 1: one frame in 4 -> 0.60 */
    ekya_window_decision log[2] = {{0}};
    ekya_sim_result r;
    simulate(f, "noretrain", prm, log, &r);
    assert_true(log[0].steps[0].alloc[0].infer_subsampling == 4);
    assert_true(fabs(r.acc[0] - 0.65 * 0.60) < 1e-9);
    assert_true(r.acc[0] < 0.65);
    assert_true(fabs(r.mean - (0.65 + 0.50) / 2 * 0.60) < 1e-9);
    for (int w = 0; w < 2; w++)
        ekya_window_decision_free(&log[w]);
    ekya_sim_result_free(&r);
}

/* Multiplies every retraining cost (actual and predicted) by k. */
static void scale_costs(ekya_profiles *p, double k)
{
    for (int i = 0; i < p->nstreams * p->nwindows * p->nconfigs; i++) {
        p->cells[i].gpu_seconds *= k;
        p->cells[i].pred_gpu_seconds *= k;
    }
}

/* Sampling every S seconds is the same clock as sampling every second with time
 * stretched by 1/S: costs / 100, window / 100 and --sample 0.01 give the 120-s result. */
static void test_sample_interval(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"thief", "uniform:cfg1:1:0.5", "fixedres"};
    for (int k = 0; k < 3; k++) {
        ekya_sim_result whole, fine, coarse;
        simulate(f, specs[k], toy, NULL, &whole);
        ekya_params prm = toy;
        prm.length = 1.2;
        prm.sample = 0.01;
        scale_costs(&f->p, 0.01);
        simulate(f, specs[k], prm, NULL, &fine);
        prm.sample = 0; /* the default 1 s: two samples, t = 0 and t = 1 */
        simulate(f, specs[k], prm, NULL, &coarse);
        scale_costs(&f->p, 100);
        assert_true(fabs(whole.mean - fine.mean) < 1e-6);
        assert_true(fabs(whole.mean - coarse.mean) > 1e-3);
        ekya_sim_result_free(&whole);
        ekya_sim_result_free(&fine);
        ekya_sim_result_free(&coarse);
    }
}

/* Window 2 starts from the model retrained in window 1, unless --no-carry. */
static void test_carry(void **state)
{
    fixture *f = *state;
    ekya_sim_result carry, fresh;
    ekya_params prm = toy;
    prm.gpus = 100; /* plenty: everyone retrains with cfg1 and infers every frame */
    simulate(f, "fixedconfig:cfg1:1", prm, NULL, &carry);
    prm.no_carry = 1;
    simulate(f, "fixedconfig:cfg1:1", prm, NULL, &fresh);
    assert_true(carry.acc[1] > fresh.acc[1]); /* A, window 2 */
    assert_true(fabs(carry.acc[0] - fresh.acc[0]) < 1e-12);
    ekya_sim_result_free(&carry);
    ekya_sim_result_free(&fresh);
}

/* A fake executor: records the call order and never completes anything. */
typedef struct {
    char trace[256];
    int n;
} fake;

static int f_start(void *c, int w, double len, char *e, size_t l)
{
    (void)w, (void)len, (void)e, (void)l;
    strcat(((fake *)c)->trace, "S");
    return 0;
}
static int f_observe(void *c, double *acc, int *cfg, double *prog, int *done)
{
    for (int s = 0; s < 2; s++)
        acc[s] = 0.5, cfg[s] = EKYA_NO_RETRAIN, prog[s] = 0, done[s] = 0;
    strcat(((fake *)c)->trace, "o");
    return 0;
}
static int f_apply(void *c, const ekya_step *st, char *e, size_t l)
{
    (void)e, (void)l;
    assert_int_equal(st->nstreams, 2);
    strcat(((fake *)c)->trace, "a");
    return 0;
}
static int f_advance(void *c, double *now, int *stream, char *e, size_t l)
{
    (void)e, (void)l;
    fake *f = c;
    /* one fake completion per window, then the window end */
    *stream = f->n++ % 2 == 0 ? 0 : -1;
    *now = *stream == 0 ? 60 : 120;
    strcat(f->trace, "v");
    return 0;
}
static int f_end(void *c, char *e, size_t l)
{
    (void)e, (void)l;
    strcat(((fake *)c)->trace, "E");
    return 0;
}

static void test_executor_protocol(void **state)
{
    fixture *f = *state;
    fake fk = {{0}, 0};
    ekya_executor ex = {&fk, f_start, f_observe, f_apply, f_advance, f_end};
    ekya_scheduler s;
    ekya_sched_stats stats;
    char err[256];
    assert_int_equal(ekya_scheduler_create("thief", &f->p, &s, err, sizeof err), 0);
    assert_int_equal(ekya_drive(&f->p, &f->ip, &toy, &s, &ex, NULL, NULL, &stats, err, sizeof err), 0);
    assert_string_equal(fk.trace, "SoavoavESoavoavE");
    assert_int_equal(stats.calls, 4);
    ekya_scheduler_destroy(&s);
}

static void test_decisions_json(void **state)
{
    fixture *f = *state;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    ekya_scheduler s;
    ekya_sim_result r;
    char err[256];
    assert_int_equal(ekya_scheduler_create("thief", &f->p, &s, err, sizeof err), 0);
    assert_int_equal(ekya_simulate(&f->p, &f->ip, &toy, &s, mem, NULL, &r, err, sizeof err), 0);
    fclose(mem);
    int lines = 0;
    for (char *save, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        assert_non_null(o);
        assert_true(json_is_integer(json_object_get(o, "window")));
        assert_true(json_is_number(json_object_get(o, "time")));
        assert_true(json_is_string(json_object_get(o, "reason")));
        json_t *streams = json_object_get(o, "streams");
        assert_int_equal(json_array_size(streams), 2);
        json_t *a = json_array_get(streams, 0);
        assert_string_equal(json_string_value(json_object_get(a, "stream")), "A");
        assert_non_null(json_object_get(a, "retrain"));
        assert_true(json_is_number(json_object_get(a, "retrain_gpus")));
        assert_true(json_is_number(json_object_get(a, "infer_gpus")));
        assert_true(json_is_number(json_object_get(a, "subsampling")));
        json_decref(o);
        lines++;
    }
    assert_int_equal(lines, r.sched.calls);
    free(buf);
    ekya_sim_result_free(&r);
    ekya_scheduler_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_by_hand),   cmocka_unit_test(test_thief_reallocates),
        cmocka_unit_test(test_small_share_subsamples), cmocka_unit_test(test_carry),
        cmocka_unit_test(test_sample_interval),
        cmocka_unit_test(test_executor_protocol), cmocka_unit_test(test_decisions_json),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
