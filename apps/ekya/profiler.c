/* profiler.c: the micro-profiler (model and formulas in ekya/profiler.h). All
 * configurations advance one epoch at a time so that domination can be judged on equal
 * footing after each epoch. */
#include "ekya/profiler.h"

#include "ekya/retrain.h"
#include "ekya/rng.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void ekya_profiler_opts_default(ekya_profiler_opts *o, uint64_t seed)
{
    o->epochs = 5;
    o->data_frac = 0.1;
    o->val_frac = 0.25;
    o->prune_after = 3; /* 2 pruned as much but fitted worse from three points */
    o->prune_margin = 0.05;
    o->data_gamma = 0.5; /* calibrated: docs/ekya_workload.md */
    o->share_alpha = 0.8;
    o->seed = seed;
}

double ekya_share_throughput(double share, double alpha)
{
    return share > 0 ? pow(share > 1 ? 1.0 : share, alpha) : 0.0;
}

double ekya_seconds_under_share(double full_seconds, double share, double alpha)
{
    double t = ekya_share_throughput(share, alpha);
    return t > 0 ? full_seconds / t : HUGE_VAL;
}

static int check_opts(const ekya_profiler_opts *o, char *err, size_t errlen)
{
    if (o->epochs < 2 || o->epochs > EKYA_PROFILE_MAX_EPOCHS)
        return fail(err, errlen, "profiler: epochs %d outside 2..%d", o->epochs, EKYA_PROFILE_MAX_EPOCHS);
    if (!(o->data_frac > 0 && o->data_frac <= 1) || !(o->val_frac > 0 && o->val_frac < 0.9))
        return fail(err, errlen, "profiler: data fraction %g / validation fraction %g out of range",
                    o->data_frac, o->val_frac);
    if (o->prune_after < 1 || !(o->prune_margin >= 0) || !(o->data_gamma > 0) ||
        !(o->share_alpha > 0 && o->share_alpha <= 1))
        return fail(err, errlen, "profiler: pruning or scaling parameters out of range");
    return 0;
}

static const ekya_mlp *model_for(const ekya_mlp *const *models, int n, int hidden)
{
    for (int i = 0; i < n; i++)
        if (models[i] && models[i]->hidden == hidden)
            return models[i];
    return NULL;
}

/* One configuration while it is being profiled. */
typedef struct {
    ekya_mlp m;
    ekya_trainer *t;
    int samples;
    double setup_s, epoch_s; /* CPU-seconds */
} live_run;

double ekya_profile_predict_seconds(const ekya_profile *p, int i, int epochs)
{
    const ekya_config_profile *c = &p->items[i];
    double n = ceil(c->config.data_frac * p->n_train - 1e-9);
    return n * (c->setup_seconds_per_sample + epochs * c->epoch_seconds_per_sample);
}

double ekya_profile_predict_acc(const ekya_profile *p, int i, int epochs,
                                const ekya_profiler_opts *o)
{
    const ekya_config_profile *c = &p->items[i];
    if (!c->fitted)
        return c->acc[c->n_points - 1];
    double e_eff = epochs * pow(c->config.data_frac / p->p, o->data_gamma);
    double a = ekya_curve_eval(&c->curve, e_eff);
    return a < 0 ? 0 : a > 1 ? 1 : a;
}

/* Marks configurations dominated at the current epoch: another live one is more
 * accurate by the margin and predicted no more expensive for a full 30-epoch run. */
static void prune(ekya_profile *p, const ekya_profiler_opts *o)
{
    int *drop = calloc((size_t)p->n, sizeof(int));
    if (!drop)
        return; /* pruning is an optimisation: without memory, keep everything */
    for (int i = 0; i < p->n; i++) {
        ekya_config_profile *c = &p->items[i];
        if (c->pruned)
            continue;
        double ci = ekya_profile_predict_seconds(p, i, EKYA_MAX_EPOCHS);
        for (int j = 0; j < p->n && !drop[i]; j++) {
            const ekya_config_profile *d = &p->items[j];
            if (j == i || d->pruned || d->n_points != c->n_points)
                continue;
            if (d->acc[d->n_points - 1] >= c->acc[c->n_points - 1] + o->prune_margin &&
                ekya_profile_predict_seconds(p, j, EKYA_MAX_EPOCHS) <= ci)
                drop[i] = 1;
        }
    }
    for (int i = 0; i < p->n; i++)
        p->items[i].pruned |= drop[i];
    free(drop);
}

static void update_rates(ekya_config_profile *c, const live_run *r, int epochs)
{
    c->setup_seconds_per_sample = r->setup_s / r->samples;
    c->epoch_seconds_per_sample = r->epoch_s / ((double)r->samples * epochs);
}

/* Starts run i: copies the model and builds its trainer on the profiling subset. */
static int start_run(live_run *r, const ekya_mlp *base, const ekya_window *w, int n_prof,
                     const ekya_retrain_config *c, uint64_t seed, char *err, size_t errlen)
{
    if (ekya_mlp_copy(&r->m, base) != 0)
        return fail(err, errlen, "profiler: out of memory");
    ekya_train_opts to;
    ekya_train_opts_default(&to);
    to.batch = c->batch;
    to.train_all = c->train_all;
    to.seed = seed;
    to.lr = EKYA_RETRAIN_LR; /* the same steps as the retraining it predicts */
    to.data_frac = 1.0;      /* n_prof frames are already the profiling share */
    double t0 = ekya_cost_seconds();
    r->t = ekya_trainer_new(&r->m, w->train_x, w->train_y, n_prof, &to, err, errlen);
    r->setup_s = ekya_cost_seconds() - t0;
    if (!r->t)
        return -1;
    r->samples = ekya_trainer_samples(r->t);
    return 0;
}

static void free_runs(live_run *runs, int n)
{
    for (int i = 0; i < n; i++) {
        ekya_trainer_free(runs[i].t);
        ekya_mlp_free(&runs[i].m);
    }
    free(runs);
}

/* Fits every configuration's curve to its (epoch, accuracy) points. */
static void fit_all(ekya_profile *p)
{
    for (int i = 0; i < p->n; i++) {
        ekya_config_profile *c = &p->items[i];
        double e[EKYA_PROFILE_MAX_EPOCHS + 1];
        for (int k = 0; k < c->n_points; k++)
            e[k] = k;
        c->fitted = ekya_curve_fit(e, c->acc, c->n_points, &c->curve, NULL, 0) == 0;
    }
}

int ekya_profile_window(const ekya_mlp *const *models, int n_models, const ekya_window *w,
                        const ekya_retrain_config *set, int n_configs,
                        const ekya_profiler_opts *o, ekya_profile *out, char *err,
                        size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (check_opts(o, err, errlen) != 0)
        return -1;
    if (n_configs < 1)
        return fail(err, errlen, "profiler: no configurations");
    for (int i = 0; i < n_configs; i++)
        if (!model_for(models, n_models, set[i].hidden))
            return fail(err, errlen, "profiler: no model of width %d", set[i].hidden);
    /* Training frames: [0, n_fit) may be trained on, [n_fit, n_train) validate. */
    int n_val = (int)lround(o->val_frac * w->n_train);
    int n_fit = w->n_train - n_val;
    int n_prof = (int)lround(o->data_frac * w->n_train);
    n_prof = n_prof < 4 ? 4 : n_prof > n_fit ? n_fit : n_prof;
    if (n_val < 4 || n_fit < 4)
        return fail(err, errlen, "profiler: window has too few training frames (%d)", w->n_train);
    const float *vx = w->train_x + (size_t)n_fit * EKYA_PIXELS;
    const uint8_t *vy = w->train_y + n_fit;
    double t_start = ekya_cost_seconds();
    out->n = n_configs;
    out->n_train = w->n_train;
    out->p = (double)n_prof / w->n_train;
    out->items = calloc((size_t)n_configs, sizeof *out->items);
    live_run *runs = calloc((size_t)n_configs, sizeof *runs);
    if (!out->items || !runs) {
        free(runs);
        ekya_profile_free(out);
        return fail(err, errlen, "profiler: out of memory");
    }
    for (int i = 0; i < n_configs; i++) {
        ekya_config_profile *c = &out->items[i];
        c->config = set[i];
        const ekya_mlp *base = model_for(models, n_models, set[i].hidden);
        c->acc[0] = ekya_mlp_accuracy(base, vx, vy, n_val);
        c->n_points = 1;
        if (start_run(&runs[i], base, w, n_prof, &set[i],
                      ekya_seed_mix(o->seed, (uint64_t)w->stream, (uint64_t)w->window, (uint64_t)i),
                      err, errlen) != 0) {
            free_runs(runs, n_configs);
            ekya_profile_free(out);
            return -1;
        }
    }
    for (int e = 1; e <= o->epochs; e++) {
        for (int i = 0; i < n_configs; i++) {
            ekya_config_profile *c = &out->items[i];
            if (c->pruned)
                continue;
            double t0 = ekya_cost_seconds();
            if (ekya_trainer_epoch(runs[i].t, NULL) != 0) {
                free_runs(runs, n_configs);
                ekya_profile_free(out);
                return fail(err, errlen, "profiler: training failed");
            }
            runs[i].epoch_s += ekya_cost_seconds() - t0;
            c->acc[c->n_points++] = ekya_mlp_accuracy(&runs[i].m, vx, vy, n_val);
            update_rates(c, &runs[i], e);
        }
        if (e >= o->prune_after && e < o->epochs)
            prune(out, o);
    }
    free_runs(runs, n_configs);
    fit_all(out);
    out->profile_seconds = ekya_cost_seconds() - t_start;
    return 0;
}

void ekya_profile_free(ekya_profile *p)
{
    if (!p)
        return;
    free(p->items);
    memset(p, 0, sizeof *p);
}
