/* test_mlp: gradients match finite differences, training reduces the loss, a model
 * trained on held-out streams is far above chance on live windows, last-layer training
 * leaves the first layer alone, step-by-step training is epoch training, and the GPU
 * matches the CPU (skipped without a GPU). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ekya/mlp.h"
#include "ekya/stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ekya_dataset data;
static ekya_pool pool;
static float *hx;
static uint8_t *hy;
static int hn;
static ekya_window live;

static int setup(void **state)
{
    (void)state;
    char err[256];
    ekya_stream_opts o;
    ekya_stream_opts_default(&o, 11);
    o.images_per_window = 400;
    if (ekya_dataset_load(NULL, "t10k", &data, err, sizeof err) != 0 ||
        ekya_pool_init(&pool, &data, err, sizeof err) != 0 ||
        ekya_stream_heldout(&pool, &o, 4, 2, &hx, &hy, &hn, err, sizeof err) != 0 ||
        ekya_window_make(&pool, &o, 0, 0, &live, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ekya_window_free(&live);
    free(hx);
    free(hy);
    ekya_pool_free(&pool);
    ekya_dataset_free(&data);
    return 0;
}

static void finite_differences(void **state)
{
    (void)state;
    ekya_mlp m;
    assert_int_equal(ekya_mlp_init(&m, 7, 8, 3, NULL, 0), 0);
    int n = 4;
    float xin[4 * 49];
    ekya_downscale(hx, n, 7, xin);
    ekya_mlp_grads g;
    assert_int_equal(ekya_grads_alloc(&g, &m), 0);
    double loss;
    assert_int_equal(ekya_mlp_batch_grad(&m, xin, hy, n, 1, &g, &loss), 0);
    float *params[2] = {m.w1, m.w2};
    float *grads[2] = {g.w1, g.w2};
    int sizes[2] = {49 * 8, 8 * 10};
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < sizes[p]; i += 7) {
            float keep = params[p][i];
            double lp, lm;
            ekya_mlp_grads tmp;
            assert_int_equal(ekya_grads_alloc(&tmp, &m), 0);
            params[p][i] = keep + 1e-3f;
            ekya_mlp_batch_grad(&m, xin, hy, n, 0, &tmp, &lp);
            params[p][i] = keep - 1e-3f;
            ekya_mlp_batch_grad(&m, xin, hy, n, 0, &tmp, &lm);
            params[p][i] = keep;
            ekya_grads_free(&tmp);
            double numeric = (lp - lm) / 2e-3;
            if (!(fabs(numeric - grads[p][i]) < 2e-3 + 0.05 * fabs(numeric)))
                printf("layer %d weight %d: numeric %g analytic %g\n", p + 1, i, numeric, (double)grads[p][i]);
            assert_true(fabs(numeric - grads[p][i]) < 2e-3 + 0.05 * fabs(numeric));
        }
    ekya_grads_free(&g);
    ekya_mlp_free(&m);
}

static void training_reduces_loss_and_beats_chance(void **state)
{
    (void)state;
    ekya_mlp m;
    char err[256];
    assert_int_equal(ekya_mlp_init(&m, 28, 64, 5, err, sizeof err), 0);
    double before = ekya_mlp_loss(&m, hx, hy, 1000);
    ekya_train_opts o;
    ekya_train_opts_default(&o);
    o.epochs = 3;
    o.backend = EKYA_BACKEND_CPU;
    double last;
    assert_int_equal(ekya_mlp_train(&m, hx, hy, hn, &o, &last, err, sizeof err), 3);
    double after = ekya_mlp_loss(&m, hx, hy, 1000);
    assert_true(after < 0.6 * before);
    double acc = ekya_mlp_accuracy(&m, live.x, live.y, live.n);
    printf("pretrained on %d held-out frames: loss %.3f -> %.3f, live accuracy %.3f\n", hn,
           before, after, acc);
    assert_true(acc > 0.5); /* chance is 0.1 */
    ekya_mlp_free(&m);
}

static int count_epochs(void *ctx, int epoch, const ekya_mlp *m, double loss)
{
    (void)m;
    (void)loss;
    *(int *)ctx = epoch;
    return epoch >= 2; /* stop after two */
}

static void last_layer_only_and_low_res(void **state)
{
    (void)state;
    ekya_mlp m, before;
    assert_int_equal(ekya_mlp_init(&m, 14, 32, 9, NULL, 0), 0);
    assert_int_equal(ekya_mlp_copy(&before, &m), 0);
    ekya_train_opts o;
    ekya_train_opts_default(&o);
    o.train_all = 0;
    o.epochs = 10;
    o.data_frac = 0.5;
    int seen = 0;
    o.on_epoch = count_epochs;
    o.ctx = &seen;
    char err[256];
    assert_int_equal(ekya_mlp_train(&m, hx, hy, hn, &o, NULL, err, sizeof err), 2);
    assert_int_equal(seen, 2);
    assert_memory_equal(m.w1, before.w1, sizeof(float) * 196 * 32);
    assert_memory_not_equal(m.w2, before.w2, sizeof(float) * 32 * 10);
    assert_true(ekya_mlp_accuracy(&m, live.x, live.y, live.n) > 0.3);
    ekya_mlp_free(&m);
    ekya_mlp_free(&before);
}

/* Steps are an epoch's batches: one step, then the rest of the epoch, then a whole
 * epoch of steps, give the same model as two epochs; batches are batch-sized but the
 * epoch's last, and an epoch's steps cover its samples once. */
static void steps_make_epochs(void **state)
{
    (void)state;
    ekya_mlp a, b;
    assert_int_equal(ekya_mlp_init(&a, 28, 16, 3, NULL, 0), 0);
    assert_int_equal(ekya_mlp_copy(&b, &a), 0);
    ekya_train_opts o;
    ekya_train_opts_default(&o);
    o.batch = 48;
    o.backend = EKYA_BACKEND_CPU;
    int n = 500; /* 10 full batches and one of 20 */
    char err[256];
    ekya_trainer *ta = ekya_trainer_new(&a, hx, hy, n, &o, err, sizeof err);
    ekya_trainer *tb = ekya_trainer_new(&b, hx, hy, n, &o, err, sizeof err);
    assert_non_null(ta);
    assert_non_null(tb);
    double la, lb, l;
    int k, seen = 0;
    assert_int_equal(ekya_trainer_epoch(ta, &la), 0);
    assert_int_equal(ekya_trainer_epoch(ta, &la), 0);
    assert_int_equal(ekya_trainer_step(tb, &l, &k), 0);
    assert_int_equal(k, 48);
    assert_true(l > 0);
    assert_int_equal(ekya_trainer_epoch(tb, &lb), 0);
    for (int i = 0; i < 11; i++, seen += k)
        assert_int_equal(ekya_trainer_step(tb, &l, &k), 0);
    assert_int_equal(k, 20);
    assert_int_equal(seen, n);
    assert_memory_equal(a.w1, b.w1, sizeof(float) * 784 * 16);
    assert_memory_equal(a.w2, b.w2, sizeof(float) * 16 * 10);
    ekya_trainer_free(ta);
    ekya_trainer_free(tb);
    ekya_mlp_free(&a);
    ekya_mlp_free(&b);
}

static void bad_options(void **state)
{
    (void)state;
    ekya_mlp m;
    char err[256];
    assert_int_equal(ekya_mlp_init(&m, 13, 32, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "resolution 13"));
    assert_int_equal(ekya_mlp_init(&m, 28, 0, 1, err, sizeof err), -1);
    assert_int_equal(ekya_mlp_init(&m, 28, 16, 1, err, sizeof err), 0);
    ekya_train_opts o;
    ekya_train_opts_default(&o);
    o.data_frac = 1.5;
    assert_int_equal(ekya_mlp_train(&m, hx, hy, 10, &o, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "data fraction"));
    ekya_train_opts_default(&o);
    o.epochs = 0;
    assert_int_equal(ekya_mlp_train(&m, hx, hy, 10, &o, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "epochs 0"));
    ekya_mlp_free(&m);
}

static float rel_diff(const float *a, const float *b, size_t n)
{
    float worst = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]) / fmaxf(1.0f, fabsf(a[i]));
        worst = d > worst ? d : worst;
    }
    return worst;
}

static void cuda_matches_cpu(void **state)
{
    (void)state;
    if (!ekya_cuda_available()) {
        printf("no GPU (or no CUDA build): skipping the CPU/GPU comparison\n");
        skip();
    }
    ekya_mlp m;
    assert_int_equal(ekya_mlp_init(&m, 28, 64, 13, NULL, 0), 0);
    int n = 32;
    float *xin = malloc(sizeof(float) * (size_t)n * 784);
    float cpu_l[32 * 10], gpu_l[32 * 10];
    ekya_downscale(hx, n, 28, xin);
    ekya_mlp_forward(&m, xin, n, cpu_l, NULL);
    assert_int_equal(ekya_mlp_forward_cuda(&m, xin, n, gpu_l), 0);
    assert_true(rel_diff(cpu_l, gpu_l, 320) <= EKYA_CUDA_TOLERANCE);
    ekya_mlp_grads gc, gg;
    double lc, lg;
    assert_int_equal(ekya_grads_alloc(&gc, &m), 0);
    assert_int_equal(ekya_grads_alloc(&gg, &m), 0);
    assert_int_equal(ekya_mlp_batch_grad(&m, xin, hy, n, 1, &gc, &lc), 0);
    assert_int_equal(ekya_mlp_batch_grad_cuda(&m, xin, hy, n, 1, &gg, &lg), 0);
    assert_true(fabs(lc - lg) <= EKYA_CUDA_TOLERANCE);
    assert_true(rel_diff(gc.w1, gg.w1, 784 * 64) <= EKYA_CUDA_TOLERANCE);
    assert_true(rel_diff(gc.b1, gg.b1, 64) <= EKYA_CUDA_TOLERANCE);
    assert_true(rel_diff(gc.w2, gg.w2, 640) <= EKYA_CUDA_TOLERANCE);
    assert_true(rel_diff(gc.b2, gg.b2, 10) <= EKYA_CUDA_TOLERANCE);
    ekya_grads_free(&gc);
    ekya_grads_free(&gg);
    free(xin);
    ekya_mlp_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finite_differences),
        cmocka_unit_test(training_reduces_loss_and_beats_chance),
        cmocka_unit_test(last_layer_only_and_low_res),
        cmocka_unit_test(steps_make_epochs),
        cmocka_unit_test(bad_options),
        cmocka_unit_test(cuda_matches_cpu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
