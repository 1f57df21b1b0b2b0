/* test_profiler: configuration names and sets, the share model, measured retraining
 * (including "under share r"), the micro-profiler's predictions against real retraining
 * on a small case, and `ekya profile` end to end writing its two CSV files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ekya/config.h"
#include "ekya/profile_cmd.h"
#include "ekya/profiler.h"
#include "ekya/retrain.h"
#include "ekya/workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ekya_workload wl;
static ekya_window win;

static int setup(void **state)
{
    (void)state;
    char err[256];
    ekya_workload_opts o;
    ekya_workload_opts_default(&o, 3);
    o.images_per_window = 1000;
    o.pretrain_streams = 6;
    o.pretrain_windows = 1;
    o.pretrain_epochs = 4;
    int widths[2] = {128, 32};
    if (ekya_workload_open(&wl, &o, widths, 2, err, sizeof err) != 0 ||
        ekya_window_make(&wl.live, &wl.stream, 0, 1, &win, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ekya_window_free(&win);
    ekya_workload_close(&wl);
    return 0;
}

static void config_names(void **state)
{
    (void)state;
    const ekya_retrain_config *set;
    char err[256], a[EKYA_CONFIG_NAME_MAX], b[EKYA_CONFIG_NAME_MAX];
    int n = ekya_config_set("full", &set, err, sizeof err);
    assert_int_equal(n, 18);
    for (int i = 0; i < n; i++) {
        ekya_retrain_config c;
        assert_int_equal(ekya_config_name(&set[i], a, sizeof a), 0);
        assert_int_equal(ekya_config_parse(a, &c, err, sizeof err), 0);
        assert_memory_equal(&c, &set[i], sizeof c);
        for (int j = 0; j < i; j++) {
            ekya_config_name(&set[j], b, sizeof b);
            assert_string_not_equal(a, b);
        }
    }
    ekya_config_name(&set[1], a, sizeof a);
    assert_string_equal(a, "w128-all-f0.5-b16");
    assert_int_equal(ekya_config_carry_index(set, n, 128), 0);
    assert_int_equal(ekya_config_carry_index(set, n, 32), 12);
    assert_int_equal(ekya_config_carry_index(set, n, 64), -1);
    assert_int_equal(ekya_config_set("small", &set, err, sizeof err), 4);
    assert_int_equal(ekya_config_set("huge", &set, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown set"));
    ekya_retrain_config c;
    assert_int_equal(ekya_config_parse("w64-some-f0.5-b32", &c, err, sizeof err), -1);
    assert_int_equal(ekya_config_parse("w64-all-f1.5-b32", &c, err, sizeof err), -1);
    assert_int_equal(ekya_config_parse("w64-all-f0.5-b32x", &c, err, sizeof err), -1);
    assert_int_equal(ekya_config_parse("w64-last-f0.25-b8", &c, err, sizeof err), 0);
    assert_int_equal(c.hidden, 64);
    assert_int_equal(c.train_all, 0);
}

static void share_model(void **state)
{
    (void)state;
    assert_true(fabs(ekya_share_throughput(1.0, 0.8) - 1.0) < 1e-12);
    assert_true(fabs(ekya_share_throughput(0.5, 0.8) - pow(0.5, 0.8)) < 1e-12);
    assert_true(ekya_share_throughput(0.5, 0.8) > 0.5); /* sublinear: a half keeps > half */
    assert_true(ekya_share_throughput(0.0, 0.8) == 0.0);
    assert_true(ekya_seconds_under_share(10.0, 0.25, 0.8) > 10.0 / 0.25 * 0.3);
    assert_true(isinf(ekya_seconds_under_share(10.0, 0.0, 0.8)));
}

static void retrain_under_share(void **state)
{
    (void)state;
    ekya_retrain_config c = {32, 1, 0.5, 32};
    ekya_retrain_result r;
    double secs;
    ekya_mlp next;
    char err[256];
    assert_int_equal(ekya_retrain_once(ekya_workload_base(&wl, 32), &win, &c, 5, 0.5, 0.8, 1,
                                       &r, &secs, &next, err, sizeof err), 0);
    assert_int_equal(r.n_checkpoints, 1);
    assert_true(r.gpu_seconds[0] > 0);
    assert_true(fabs(secs - r.gpu_seconds[0] / pow(0.5, 0.8)) < 1e-12);
    assert_true(r.end_acc[0] >= 0 && r.end_acc[0] <= 1);
    assert_true(fabs(ekya_mlp_accuracy(&next, win.test_x, win.test_y, win.n_test) - r.end_acc[0]) < 1e-12);
    ekya_mlp_free(&next);
    c.hidden = 128; /* the 32-wide model cannot be retrained as a 128-wide one */
    assert_int_equal(ekya_retrain_once(ekya_workload_base(&wl, 32), &win, &c, 5, 0.5, 0.8, 1,
                                       &r, &secs, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "does not match"));
    assert_int_equal(ekya_retrain_once(ekya_workload_base(&wl, 128), &win, &c, 5, 1.5, 0.8, 1,
                                       &r, &secs, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "share"));
}

static void profiler_predicts(void **state)
{
    (void)state;
    const ekya_retrain_config *set;
    int n = ekya_config_set("small", &set, NULL, 0);
    const ekya_mlp *models[2] = {ekya_workload_base(&wl, 128), ekya_workload_base(&wl, 32)};
    ekya_profiler_opts po;
    ekya_profiler_opts_default(&po, 3);
    ekya_profile p;
    char err[256];
    assert_int_equal(ekya_profile_window(models, 2, &win, set, n, &po, &p, err, sizeof err), 0);
    assert_int_equal(p.n, n);
    double errs[32];
    int k = 0;
    for (int i = 0; i < n; i++) {
        const ekya_mlp *start = set[i].hidden == 128 ? models[0] : models[1];
        ekya_retrain_result r;
        const int cps[2] = {5, 15};
        assert_int_equal(ekya_retrain(start, &win, &set[i], cps, 2, 9, &r, NULL, 0, err, sizeof err), 0);
        for (int j = 0; j < 2; j++) {
            double pred = ekya_profile_predict_acc(&p, i, cps[j], &po);
            errs[k++] = fabs(pred - r.end_acc[j]);
            printf("  config %d epochs %d: start %.3f real %.3f predicted %.3f (pruned %d, points %d)\n", i,
                   cps[j], r.start_acc, r.end_acc[j], pred, p.items[i].pruned, p.items[i].n_points);
            double ps = ekya_profile_predict_seconds(&p, i, cps[j]);
            assert_true(ps > 0);
            /* time predictions within a factor of four (timer noise on tiny runs) */
            assert_true(ps < 4 * r.gpu_seconds[j] + 1e-3 && r.gpu_seconds[j] < 4 * ps + 1e-3);
        }
        assert_true(p.items[i].n_points >= po.prune_after + 1);
    }
    double mean = 0;
    for (int i = 0; i < k; i++)
        mean += errs[i] / k;
    printf("profiler: mean |error| %.1f points over %d predictions, %.3f s profiling\n",
           100 * mean, k, p.profile_seconds);
    assert_true(mean < 0.10); /* 3.0 points measured here; ~4 median in full runs */
    ekya_profile_free(&p);
    po.epochs = 1;
    assert_int_equal(ekya_profile_window(models, 2, &win, set, n, &po, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "epochs 1"));
}

static int count_lines(const char *path, char *first, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (n == 0 && first)
            snprintf(first, len, "%s", line);
        n++;
    }
    fclose(f);
    return n;
}

static void command_end_to_end(void **state)
{
    (void)state;
    char dir[] = "/tmp/ekya_prof_XXXXXX", out[128], infer[128], cmd[160], first[512];
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/p.csv", dir);
    snprintf(infer, sizeof infer, "%s/p_infer.csv", dir);
    char *argv[] = {"profile", "--streams", "1", "--windows", "2", "--images-per-window", "200",
                    "--configs", "small", "--seed", "5", "--out", out, "--quiet"};
    assert_int_equal(ekya_cmd_profile(14, argv), 0);
    /* 1 stream x 2 windows x 4 configurations x 3 epoch counts, plus the header */
    assert_int_equal(count_lines(out, first, sizeof first), 1 + 1 * 2 * 4 * 3);
    assert_string_equal(first, "stream,window,config,epochs,start_pct,end_pct,gpu_seconds,"
                               "pred_end_pct,pred_gpu_seconds\n");
    assert_int_equal(count_lines(infer, first, sizeof first), 1 + 8);
    assert_string_equal(first, "subsampling,accuracy_multiplier\n");

    char *bad1[] = {"profile", "--streams", "x", "--windows", "1"};
    assert_int_equal(ekya_cmd_profile(5, bad1), 2);
    char *bad2[] = {"profile", "--windows", "1"};
    assert_int_equal(ekya_cmd_profile(3, bad2), 2);
    char *bad3[] = {"profile", "--streams", "1", "--windows", "1", "--configs", "tiny"};
    assert_int_equal(ekya_cmd_profile(7, bad3), 2);
    char *bad4[] = {"profile", "--streams", "1", "--windows", "1", "--frobnicate"};
    assert_int_equal(ekya_cmd_profile(6, bad4), 2);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_names),
        cmocka_unit_test(share_model),
        cmocka_unit_test(retrain_under_share),
        cmocka_unit_test(profiler_predicts),
        cmocka_unit_test(command_end_to_end),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
