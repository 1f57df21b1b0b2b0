/* test_profiles.c: the profile loaders: the shipped files, the inference step-up rule,
 * and one-line path:line:col errors for every kind of bad input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ekya/profiles.h"

#define EPS 1e-9

/* Writes text to a fresh temporary file; returns its path (caller unlinks, frees). */
static char *temp_file(const char *text)
{
    char *path = strdup("/tmp/ekya_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_toy_file(void **state)
{
    (void)state;
    ekya_profiles p;
    char err[512];
    assert_int_equal(ekya_profiles_load(EKYA_DATA_DIR "/toy_profiles.csv", &p, err, sizeof err), 0);
    assert_int_equal(p.nstreams, 2);
    assert_int_equal(p.nwindows, 2);
    assert_int_equal(p.nconfigs, 2);
    assert_int_equal(p.has_pred, 0);
    int a = ekya_profiles_find_stream(&p, "A"), c1 = ekya_profiles_find_config(&p, "cfg1", 1);
    assert_true(a >= 0 && c1 >= 0);
    assert_int_equal(ekya_profiles_find_config(&p, "cfg1", 2), -1);
    assert_int_equal(p.window_ids[0], 1);
    assert_true(fabs(p.start_acc[a * 2 + 0] - 0.65) < EPS);
    const ekya_cell *cell = ekya_profiles_cell(&p, a, 1, c1);
    assert_true(cell->present && fabs(cell->end_acc - 0.95) < EPS && cell->gpu_seconds == 90);
    assert_true(cell->pred_end_acc == cell->end_acc);
    ekya_profiles_free(&p);
}

static void test_pred_columns_any_order(void **state)
{
    (void)state;
    char *path = temp_file("gpu_seconds,pred_gpu_seconds,stream,end_pct,window,config,"
                           "pred_end_pct,epochs,start_pct,extra\n"
                           "10,12,x,80,0,c,75,3,40,ignored\n");
    ekya_profiles p;
    char err[512];
    assert_int_equal(ekya_profiles_load(path, &p, err, sizeof err), 0);
    assert_int_equal(p.has_pred, 1);
    const ekya_cell *cell = ekya_profiles_cell(&p, 0, 0, 0);
    assert_true(fabs(cell->end_acc - 0.80) < EPS && fabs(cell->pred_end_acc - 0.75) < EPS);
    assert_true(cell->gpu_seconds == 10 && cell->pred_gpu_seconds == 12);
    assert_int_equal(p.configs[0].epochs, 3);
    ekya_profiles_free(&p);
    unlink(path);
    free(path);
}

/* Loads text, expects failure with a single-line message starting path:line:col and
 * containing `want`. */
static void expect_error(const char *text, int line, const char *want, int inference)
{
    char *path = temp_file(text);
    char err[512], prefix[128];
    int rc;
    if (inference) {
        ekya_infer_profile ip;
        rc = ekya_infer_load(path, &ip, err, sizeof err);
    } else {
        ekya_profiles p;
        rc = ekya_profiles_load(path, &p, err, sizeof err);
    }
    assert_int_equal(rc, -1);
    snprintf(prefix, sizeof prefix, "%s:%d:", path, line);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, want) || strchr(err, '\n'))
        fail_msg("error '%s' lacks '%s' or '%s'", err, prefix, want);
    unlink(path);
    free(path);
}

#define HDR "stream,window,config,epochs,start_pct,end_pct,gpu_seconds\n"
#define HDR_FRAC "stream,window,config,epochs,start_acc,end_acc,gpu_seconds\n"

static void test_errors(void **state)
{
    (void)state;
    expect_error("stream,window,config,epochs,start_pct,end_pct\nA,1,c,1,50,60\n", 1,
                 "lacks column 'gpu_seconds'", 0);
    expect_error("stream,window,config,epochs,end_pct,gpu_seconds\nA,1,c,1,60,10\n", 1,
                 "lacks column 'start_pct' (percent 0..100) or 'start_acc' (fraction 0..1)", 0);
    expect_error(HDR "A,1,c,1,50,60,10\nA,1,d,1,50,60,-3\n", 3, "must not be negative", 0);
    expect_error(HDR "A,1,c,1,50,sixty,10\n", 2, "'sixty' is not a number", 0);
    expect_error(HDR "A,1,c,1,50,160,10\n", 2, "percentage", 0);
    expect_error(HDR "A,1,c,1,50,60,10\n\n# comment\nA,1,c,1,50,70,20\n", 5, "duplicate row", 0);
    expect_error(HDR "A,1,c,1,50,60,10\nA,1,d,1,55,60,10\n", 3, "start_pct 55 differs", 0);
    expect_error(HDR "A,1,c,1.5,50,60,10\n", 2, "epochs must be an integer", 0);
    expect_error(HDR "A,1,c,1,50,60\n", 2, "gpu_seconds is missing", 0);
    expect_error(HDR "A,1,c,1,50,60,10\nB,2,c,1,50,60,10\n", 1, "stream 'A' has no rows for "
                 "window 2", 0);
    expect_error(HDR, 1, "no data rows", 0);
}

static void test_errors_column_and_pred(void **state)
{
    (void)state;
    /* the column points at the bad field: "A,1,c,1,50," is 11 characters */
    char *path = temp_file(HDR "A,1,c,1,50,x,10\n");
    char err[512], want[128];
    ekya_profiles p;
    assert_int_equal(ekya_profiles_load(path, &p, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:2:12:", path);
    assert_true(strncmp(err, want, strlen(want)) == 0);
    unlink(path);
    free(path);
    expect_error("stream,window,config,epochs,start_pct,end_pct,gpu_seconds,pred_end_pct\n"
                 "A,1,c,1,50,60,10,55\n", 1, "only one of pred_end_pct", 0);
    expect_error("stream,window,config,epochs,start_acc,end_acc,gpu_seconds,pred_gpu_seconds\n"
                 "A,1,c,1,0.5,0.6,10,5\n", 1, "only one of pred_end_acc", 0);
}

/* The unit is in the column names: _acc fractions 0..1, _pct percent 0..100. */
static void test_fraction_file(void **state)
{
    (void)state;
    char *fpath = temp_file("# fractions, as the Ekya authors' tables\n" HDR_FRAC
                            "A,1,c,1,0.65,0.75,85\nA,2,c,1,0.5,0.8,10\n");
    char *ppath = temp_file(HDR "A,1,c,1,65,75,85\nA,2,c,1,50,80,10\n");
    ekya_profiles f, p;
    char err[512];
    assert_int_equal(ekya_profiles_load(fpath, &f, err, sizeof err), 0);
    assert_int_equal(ekya_profiles_load(ppath, &p, err, sizeof err), 0);
    for (int w = 0; w < 2; w++) {
        /* integral percents divided by 100 round to the same double as the fraction */
        assert_true(f.start_acc[w] == p.start_acc[w]);
        assert_true(ekya_profiles_cell(&f, 0, w, 0)->end_acc ==
                    ekya_profiles_cell(&p, 0, w, 0)->end_acc);
    }
    assert_true(f.start_acc[0] == 0.65 && ekya_profiles_cell(&f, 0, 0, 0)->end_acc == 0.75);
    ekya_profiles_free(&f);
    ekya_profiles_free(&p);
    /* --accuracy-unit overrides the names: a percent file named _acc, and the reverse */
    char *legacy = temp_file(HDR_FRAC "A,1,c,1,65,75,85\nA,2,c,1,50,80,10\n");
    assert_int_equal(ekya_profiles_load_unit(legacy, EKYA_ACC_PERCENT, &f, err, sizeof err), 0);
    assert_true(f.start_acc[0] == 0.65);
    ekya_profiles_free(&f);
    assert_int_equal(ekya_profiles_load_unit(fpath, EKYA_ACC_AUTO, &f, err, sizeof err), 0);
    ekya_profiles_free(&f);
    char *pfrac = temp_file(HDR "A,1,c,1,0.65,0.75,85\nA,2,c,1,0.5,0.8,10\n");
    assert_int_equal(ekya_profiles_load_unit(pfrac, EKYA_ACC_FRACTION, &f, err, sizeof err), 0);
    assert_true(f.start_acc[0] == 0.65);
    ekya_profiles_free(&f);
    /* ... and checks the values against the unit it was given */
    assert_int_equal(ekya_profiles_load_unit(ppath, EKYA_ACC_FRACTION, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "--accuracy-unit fraction"));
    assert_int_equal(ekya_profiles_load_unit(fpath, EKYA_ACC_PERCENT, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "--accuracy-unit percent"));
    ekya_acc_unit u;
    assert_int_equal(ekya_acc_unit_parse("fraction", &u), 0);
    assert_int_equal(u, EKYA_ACC_FRACTION);
    assert_int_equal(ekya_acc_unit_parse("percent", &u), 0);
    assert_int_equal(u, EKYA_ACC_PERCENT);
    assert_int_equal(ekya_acc_unit_parse("pct", &u), -1);
    const char *paths[] = {fpath, ppath, legacy, pfrac};
    for (int i = 0; i < 4; i++) {
        unlink(paths[i]);
        free((char *)paths[i]);
    }
}

/* Files whose values contradict their names are refused at the field that shows it. */
static void test_unit_errors(void **state)
{
    (void)state;
    /* "A,1,c,1," is 8 characters: start is column 9 */
    expect_error(HDR_FRAC "A,1,c,1,65,75,85\n", 2,
                 "2:9: start_acc is a fraction 0..1 but holds 65; did you mean start_pct?", 0);
    expect_error(HDR_FRAC "A,1,c,1,0.5,80,85\n", 2,
                 "2:13: end_acc is a fraction 0..1 but holds 80; did you mean end_pct?", 0);
    expect_error("stream,window,config,epochs,start_acc,end_acc,gpu_seconds,pred_end_acc,"
                 "pred_gpu_seconds\nA,1,c,1,0.5,0.8,85,75,80\n", 2,
                 "pred_end_acc is a fraction 0..1 but holds 75", 0);
    expect_error("stream,window,config,epochs,start_pct,end_acc,gpu_seconds\n"
                 "A,1,c,1,50,0.6,10\n", 1, "1:39: header mixes start_pct (percent) with "
                 "end_acc (fraction)", 0);
    expect_error("stream,window,config,epochs,start_pct,end_pct,gpu_seconds,pred_end_acc,"
                 "pred_gpu_seconds\nA,1,c,1,50,60,10,0.5,9\n", 1, "header mixes", 0);
    expect_error("stream,window,config,epochs,start_acc,start_pct,end_pct,gpu_seconds\n"
                 "A,1,c,1,50,50,60,10\n", 1, "header has both start_acc (fraction 0..1) and "
                 "start_pct (percent 0..100); keep one", 0);
    /* every accuracy <= 1 in a percent file: fractions under the wrong name */
    expect_error(HDR "\nA,1,c,1,0.65,0.75,85\nA,1,d,1,0.65,1,85\n", 3,
                 "3:9: every accuracy is <= 1, but _pct columns hold percent 0..100; these "
                 "look like fractions: name the columns start_acc, end_acc, pred_end_acc", 0);
    expect_error(HDR "A,1,c,1,0,0,85\n", 2, "every accuracy is <= 1", 0);
    expect_error(HDR "A,1,c,1,65,160,10\n", 2, "end_pct is a percentage, 0..100 (got 160)", 0);
}

static void test_inference_errors(void **state)
{
    (void)state;
    expect_error("subsampling,accuracy\n1,1\n", 1, "lacks column 'accuracy_multiplier'", 1);
    expect_error("subsampling,accuracy_multiplier\n1,1.2\n", 2, "in 0..1", 1);
    expect_error("subsampling,accuracy_multiplier\n0.5,1\n", 2, "must be >= 1", 1);
    expect_error("subsampling,accuracy_multiplier\n2,0.5\n2,0.4\n", 3, "duplicate", 1);
    expect_error("subsampling,accuracy_multiplier\n2,-0.5\n", 2, "in 0..1", 1);
}

static void test_inference_step_up(void **state)
{
    (void)state;
    ekya_infer_profile ip;
    char err[512];
    assert_int_equal(ekya_infer_load(EKYA_DATA_DIR "/inference_paper.csv", &ip, err, sizeof err), 0);
    assert_int_equal(ip.n, 12);
    const double r = 0.25;
    assert_true(fabs(ekya_infer_multiplier(&ip, 0.25, r) - 1.0) < EPS);
    assert_true(fabs(ekya_infer_multiplier(&ip, 1.0, r) - 1.0) < EPS);   /* more than enough */
    assert_true(fabs(ekya_infer_multiplier(&ip, 0.125, r) - 0.78) < EPS);/* exactly 1 in 2 */
    assert_true(fabs(ekya_infer_multiplier(&ip, 0.1, r) - 0.64) < EPS);  /* 2.5 -> 3 */
    assert_true(fabs(ekya_infer_multiplier(&ip, 0.02, r) - 0.12) < EPS); /* 12.5 -> 15 */
    assert_true(fabs(ekya_infer_multiplier(&ip, 0.0125, r) - 0.04) < EPS);/* 20 */
    assert_true(ekya_infer_multiplier(&ip, 0.01, r) == 0);              /* 25: cannot keep up */
    assert_true(ekya_infer_multiplier(&ip, 0, r) == 0);
    assert_true(ekya_infer_subsampling(&ip, 0.1, r) == 3);
    /* 0.1 * 3 is 0.30000000000000004: still exactly "every frame" for rmax 0.3 */
    assert_true(ekya_infer_subsampling(&ip, 0.1 * 3, 0.3) == 1);
    ekya_infer_free(&ip);
    /* a table without a row for 1 still gives 1.0 at full share */
    double sub[2] = {4, 2}, mult[2] = {0.5, 0.8};
    assert_int_equal(ekya_infer_from_arrays(&ip, 2, sub, mult), 0);
    assert_true(ip.subsampling[0] == 2 && ekya_infer_multiplier(&ip, 1, 1) == 1.0);
    assert_true(ekya_infer_multiplier(&ip, 0.3, 1) == 0.5);
    ekya_infer_free(&ip);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toy_file),          cmocka_unit_test(test_pred_columns_any_order),
        cmocka_unit_test(test_errors),            cmocka_unit_test(test_errors_column_and_pred),
        cmocka_unit_test(test_inference_errors),  cmocka_unit_test(test_inference_step_up),
        cmocka_unit_test(test_fraction_file),     cmocka_unit_test(test_unit_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
