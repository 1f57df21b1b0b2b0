/* test_stream: windows are reproducible from (seed, stream, window), class mixes drift
 * between windows and differ between streams, and held-out data has the expected size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ekya/stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ekya_dataset data;
static ekya_pool pool;

static int setup(void **state)
{
    (void)state;
    char err[256];
    if (ekya_dataset_load(NULL, "t10k", &data, err, sizeof err) != 0)
        return -1;
    return ekya_pool_init(&pool, &data, err, sizeof err);
}

static int teardown(void **state)
{
    (void)state;
    ekya_pool_free(&pool);
    ekya_dataset_free(&data);
    return 0;
}

static void deterministic(void **state)
{
    (void)state;
    ekya_stream_opts o;
    ekya_stream_opts_default(&o, 42);
    o.images_per_window = 60;
    char err[256];
    ekya_window a, b;
    assert_int_equal(ekya_window_make(&pool, &o, 3, 5, &a, err, sizeof err), 0);
    assert_int_equal(ekya_window_make(&pool, &o, 3, 5, &b, err, sizeof err), 0);
    assert_int_equal(a.n, 60);
    assert_int_equal(a.n_train + a.n_test, 60);
    assert_int_equal(a.n_train, 42);
    assert_memory_equal(a.x, b.x, sizeof(float) * 60 * EKYA_PIXELS);
    assert_memory_equal(a.y, b.y, 60);
    assert_memory_equal(a.test_y, b.test_y, (size_t)a.n_test);
    for (int i = 0; i < 60 * EKYA_PIXELS; i++)
        assert_true(a.x[i] >= 0.0f && a.x[i] <= 1.0f);
    ekya_window_free(&b);
    o.seed = 43; /* another seed, another window */
    assert_int_equal(ekya_window_make(&pool, &o, 3, 5, &b, err, sizeof err), 0);
    assert_memory_not_equal(a.x, b.x, sizeof(float) * 60 * EKYA_PIXELS);
    ekya_window_free(&a);
    ekya_window_free(&b);
}

static double l1(const double *p, const double *q)
{
    double s = 0;
    for (int c = 0; c < EKYA_NUM_CLASSES; c++)
        s += fabs(p[c] - q[c]);
    return s;
}

static void drift(void **state)
{
    (void)state;
    ekya_stream_opts o;
    ekya_stream_opts_default(&o, 7);
    char err[256];
    double mix[12][EKYA_NUM_CLASSES];
    ekya_appearance app[12];
    int absent_seen = 0;
    for (int w = 0; w < 12; w++) {
        assert_int_equal(ekya_stream_state(&o, 0, w, mix[w], &app[w], err, sizeof err), 0);
        double s = 0;
        int present = 0;
        for (int c = 0; c < EKYA_NUM_CLASSES; c++) {
            s += mix[w][c];
            present += mix[w][c] > 0;
        }
        assert_true(fabs(s - 1.0) < 1e-9);
        assert_true(present >= 3);
        absent_seen += present < EKYA_NUM_CLASSES;
    }
    assert_true(absent_seen > 0); /* some classes vanish for a while */
    double total = 0;
    for (int w = 1; w < 12; w++)
        total += l1(mix[w], mix[w - 1]);
    assert_true(total / 11 > 0.2); /* mixes move between consecutive windows */
    int appearance_moved = 0;
    for (int w = 1; w < 12; w++)
        appearance_moved += app[w].brightness != app[0].brightness;
    assert_true(appearance_moved > 0);
    double other[EKYA_NUM_CLASSES];
    ekya_appearance oa;
    assert_int_equal(ekya_stream_state(&o, 1, 0, other, &oa, err, sizeof err), 0);
    assert_true(l1(other, mix[0]) > 0.1 || oa.contrast != app[0].contrast);

    /* the drawn frames follow the window's mix: labels of absent classes never appear */
    o.images_per_window = 300;
    ekya_window w;
    assert_int_equal(ekya_window_make(&pool, &o, 0, 4, &w, err, sizeof err), 0);
    for (int i = 0; i < w.n; i++)
        assert_true(w.class_mix[w.y[i]] > 0);
    ekya_window_free(&w);
}

static void bad_input(void **state)
{
    (void)state;
    ekya_stream_opts o;
    ekya_stream_opts_default(&o, 1);
    char err[256];
    ekya_window w;
    assert_int_equal(ekya_window_make(&pool, &o, -1, 0, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "must be >= 0"));
    o.images_per_window = 3;
    assert_int_equal(ekya_window_make(&pool, &o, 0, 0, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "images per window"));
    ekya_window_free(&w);
}

static void heldout(void **state)
{
    (void)state;
    ekya_stream_opts o;
    ekya_stream_opts_default(&o, 9);
    o.images_per_window = 50;
    float *x;
    uint8_t *y;
    int n;
    char err[256];
    assert_int_equal(ekya_stream_heldout(&pool, &o, 2, 3, &x, &y, &n, err, sizeof err), 0);
    assert_int_equal(n, 300);
    free(x);
    free(y);
    assert_int_equal(ekya_stream_heldout(&pool, &o, 0, 3, &x, &y, &n, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deterministic),
        cmocka_unit_test(drift),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(heldout),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
