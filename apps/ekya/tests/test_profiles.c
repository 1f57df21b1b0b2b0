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
    char *path = temp_file("gpu_seconds,pred_gpu_seconds,stream,end_acc,window,config,"
                           "pred_end_acc,epochs,start_acc,extra\n"
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

#define HDR "stream,window,config,epochs,start_acc,end_acc,gpu_seconds\n"

static void test_errors(void **state)
{
    (void)state;
    expect_error("stream,window,config,epochs,start_acc,end_acc\nA,1,c,1,50,60\n", 1,
                 "lacks column 'gpu_seconds'", 0);
    expect_error(HDR "A,1,c,1,50,60,10\nA,1,d,1,50,60,-3\n", 3, "must not be negative", 0);
    expect_error(HDR "A,1,c,1,50,sixty,10\n", 2, "'sixty' is not a number", 0);
    expect_error(HDR "A,1,c,1,50,160,10\n", 2, "percentage", 0);
    expect_error(HDR "A,1,c,1,50,60,10\n\n# comment\nA,1,c,1,50,70,20\n", 5, "duplicate row", 0);
    expect_error(HDR "A,1,c,1,50,60,10\nA,1,d,1,55,60,10\n", 3, "start_acc 55 differs", 0);
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
    expect_error("stream,window,config,epochs,start_acc,end_acc,gpu_seconds,pred_end_acc\n"
                 "A,1,c,1,50,60,10,55\n", 1, "only one of pred_end_acc", 0);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
