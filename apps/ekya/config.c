/* config.c: names and standard sets of retraining configurations, and the measurement
 * of inference configurations (accuracy and CPU cost per frame). */
#include "ekya/config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const int ekya_epoch_choices[EKYA_N_EPOCH_CHOICES] = {5, 15, 30};

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int ekya_config_name(const ekya_retrain_config *c, char *buf, size_t len)
{
    int n = snprintf(buf, len, "w%d-%s-f%g-b%d", c->hidden, c->train_all ? "all" : "last",
                     c->data_frac, c->batch);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int ekya_config_parse(const char *name, ekya_retrain_config *c, char *err, size_t errlen)
{
    char layers[8];
    int used = 0;
    memset(c, 0, sizeof *c);
    if (!name || sscanf(name, "w%d-%4[a-z]-f%lf-b%d%n", &c->hidden, layers, &c->data_frac,
                        &c->batch, &used) != 4 || name[used] != '\0')
        return fail(err, errlen, "config: cannot parse '%s' (expected w<width>-<last|all>-f<frac>-b<batch>)",
                    name ? name : "(null)");
    if (strcmp(layers, "all") == 0)
        c->train_all = 1;
    else if (strcmp(layers, "last") != 0)
        return fail(err, errlen, "config: '%s': layers must be 'last' or 'all'", name);
    if (c->hidden < 1 || c->hidden > 4096 || c->batch < 1 || c->batch > 65536 ||
        !(c->data_frac > 0.0 && c->data_frac <= 1.0))
        return fail(err, errlen, "config: '%s': width, fraction or batch out of range", name);
    return 0;
}

static const ekya_retrain_config full_set[] = {
    {128, 1, 1.0, 16}, {128, 1, 0.5, 16}, {128, 1, 0.1, 16},
    {128, 1, 1.0, 64}, {128, 1, 0.5, 64}, {128, 1, 0.1, 64},
    {128, 0, 1.0, 16}, {128, 0, 0.5, 16}, {128, 0, 0.1, 16},
    {128, 0, 1.0, 64}, {128, 0, 0.5, 64}, {128, 0, 0.1, 64},
    {32, 1, 1.0, 32},  {32, 1, 0.5, 32},  {32, 1, 0.1, 32},
    {32, 0, 1.0, 32},  {32, 0, 0.5, 32},  {32, 0, 0.1, 32},
};

static const ekya_retrain_config small_set[] = {
    {128, 1, 1.0, 16}, {128, 0, 0.5, 64}, {32, 1, 1.0, 32}, {32, 0, 0.1, 32},
};

int ekya_config_set(const char *which, const ekya_retrain_config **out, char *err,
                    size_t errlen)
{
    if (which && strcmp(which, "full") == 0) {
        *out = full_set;
        return (int)(sizeof full_set / sizeof full_set[0]);
    }
    if (which && strcmp(which, "small") == 0) {
        *out = small_set;
        return (int)(sizeof small_set / sizeof small_set[0]);
    }
    *out = NULL;
    return fail(err, errlen, "config: unknown set '%s' (small or full)", which ? which : "(null)");
}

int ekya_config_carry_index(const ekya_retrain_config *set, int n, int hidden)
{
    for (int i = 0; i < n; i++)
        if (set[i].hidden == hidden && set[i].train_all && set[i].data_frac >= 1.0)
            return i;
    return -1;
}

double ekya_thread_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double ekya_cost_seconds(void)
{
    if (!ekya_cuda_available())
        return ekya_thread_seconds();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Accuracy when only every k-th frame is classified and the rest reuse its answer. */
static double subsampled_accuracy(const uint8_t *pred, const uint8_t *y, int n, int k)
{
    int ok = 0;
    uint8_t last = pred[0];
    for (int i = 0; i < n; i++) {
        if (i % k == 0)
            last = pred[i];
        ok += last == y[i];
    }
    return n > 0 ? (double)ok / n : 0.0;
}

int ekya_infer_measure(const ekya_mlp *const *models, int n_models, const ekya_window *w,
                       const int *subs, int n_subs, ekya_infer_config *out, char *err,
                       size_t errlen)
{
    for (int s = 0; s < n_subs; s++)
        if (subs[s] < 1 || subs[s] > w->n)
            return fail(err, errlen, "infer: subsample %d outside 1..%d", subs[s], w->n);
    uint8_t *pred = malloc((size_t)w->n);
    if (!pred)
        return fail(err, errlen, "infer: out of memory");
    for (int m = 0; m < n_models; m++) {
        /* Time a full pass: all frames classified, which is the k = 1 cost. */
        double t0 = ekya_thread_seconds();
        if (ekya_mlp_predict(models[m], w->x, w->n, pred) != 0) {
            free(pred);
            return fail(err, errlen, "infer: out of memory");
        }
        double per_frame = (ekya_thread_seconds() - t0) / w->n;
        for (int s = 0; s < n_subs; s++) {
            ekya_infer_config *c = &out[m * n_subs + s];
            c->subsample = subs[s];
            c->res = models[m]->res;
            c->accuracy = subsampled_accuracy(pred, w->y, w->n, subs[s]);
            c->cpu_seconds_per_frame = per_frame / subs[s];
        }
    }
    free(pred);
    return 0;
}
