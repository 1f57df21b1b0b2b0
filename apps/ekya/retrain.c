/* retrain.c: measured retraining (the ground truth the profiler predicts) and the
 * pretraining of base models on held-out streams. */
#include "ekya/retrain.h"

#include "ekya/profiler.h"

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

static int check_checkpoints(const int *cp, int n, int keep_epoch, int want_keep, char *err,
                             size_t errlen)
{
    if (n < 1 || n > EKYA_MAX_CHECKPOINTS)
        return fail(err, errlen, "retrain: %d checkpoints (1..%d allowed)", n, EKYA_MAX_CHECKPOINTS);
    int found = !want_keep;
    for (int i = 0; i < n; i++) {
        if (cp[i] < 1 || (i > 0 && cp[i] <= cp[i - 1]))
            return fail(err, errlen, "retrain: checkpoints must be increasing epochs >= 1");
        found |= cp[i] == keep_epoch;
    }
    return found ? 0 : fail(err, errlen, "retrain: epoch %d to keep is not a checkpoint", keep_epoch);
}

int ekya_retrain(const ekya_mlp *start, const ekya_window *w, const ekya_retrain_config *c,
                 const int *checkpoints, int n, uint64_t seed, ekya_retrain_result *res,
                 ekya_mlp *keep, int keep_epoch, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    if (keep)
        memset(keep, 0, sizeof *keep);
    if (!start || !w || !c)
        return fail(err, errlen, "retrain: missing model, window or configuration");
    if (start->hidden != c->hidden)
        return fail(err, errlen, "retrain: model width %d does not match configuration width %d",
                    start->hidden, c->hidden);
    if (check_checkpoints(checkpoints, n, keep_epoch, keep != NULL, err, errlen) != 0)
        return -1;
    ekya_mlp m;
    if (ekya_mlp_copy(&m, start) != 0)
        return fail(err, errlen, "retrain: out of memory");
    res->start_acc = ekya_mlp_accuracy(&m, w->test_x, w->test_y, w->n_test);
    ekya_train_opts o;
    ekya_train_opts_default(&o);
    o.epochs = checkpoints[n - 1];
    o.batch = c->batch;
    o.train_all = c->train_all;
    o.data_frac = c->data_frac;
    o.seed = seed;
    o.lr = EKYA_RETRAIN_LR;
    double t0 = ekya_cost_seconds(), spent = 0;
    ekya_trainer *t = ekya_trainer_new(&m, w->train_x, w->train_y, w->n_train, &o, err, errlen);
    if (!t) { /* err already says why */
        ekya_mlp_free(&m);
        return -1;
    }
    int rc = 0;
    for (int e = 1, k = 0; rc == 0 && e <= o.epochs; e++) {
        rc = ekya_trainer_epoch(t, NULL);
        if (rc != 0 || e != checkpoints[k])
            continue;
        spent += ekya_cost_seconds() - t0; /* evaluation below is not training cost */
        res->epochs[k] = e;
        res->gpu_seconds[k] = spent;
        res->end_acc[k] = ekya_mlp_accuracy(&m, w->test_x, w->test_y, w->n_test);
        if (keep && e == keep_epoch && ekya_mlp_copy(keep, &m) != 0)
            rc = -1;
        res->n_checkpoints = ++k;
        t0 = ekya_cost_seconds();
    }
    ekya_trainer_free(t);
    ekya_mlp_free(&m);
    if (rc != 0) {
        if (keep)
            ekya_mlp_free(keep);
        return fail(err, errlen, "retrain: training failed (out of memory or CUDA error)");
    }
    return 0;
}

int ekya_retrain_once(const ekya_mlp *start, const ekya_window *w, const ekya_retrain_config *c,
                      int epochs, double share, double alpha, uint64_t seed,
                      ekya_retrain_result *res, double *seconds_under_share, ekya_mlp *keep,
                      char *err, size_t errlen)
{
    if (!(share > 0 && share <= 1) || !(alpha > 0 && alpha <= 1))
        return fail(err, errlen, "retrain: share %g / alpha %g outside (0, 1]", share, alpha);
    if (ekya_retrain(start, w, c, &epochs, 1, seed, res, keep, epochs, err, errlen) != 0)
        return -1;
    if (seconds_under_share)
        *seconds_under_share = ekya_seconds_under_share(res->gpu_seconds[0], share, alpha);
    return 0;
}

double ekya_pretrain(ekya_mlp *m, const ekya_pool *heldout, const ekya_stream_opts *o,
                     int streams, int windows, int epochs, uint64_t seed, char *err,
                     size_t errlen)
{
    float *x;
    uint8_t *y;
    int n;
    if (ekya_stream_heldout(heldout, o, streams, windows, &x, &y, &n, err, errlen) != 0)
        return -1;
    ekya_train_opts to;
    ekya_train_opts_default(&to);
    to.epochs = epochs;
    to.batch = 32;
    to.seed = seed;
    double t0 = ekya_cost_seconds();
    int rc = ekya_mlp_train(m, x, y, n, &to, NULL, err, errlen);
    double spent = ekya_cost_seconds() - t0;
    free(x);
    free(y);
    return rc < 0 ? -1 : spent;
}
