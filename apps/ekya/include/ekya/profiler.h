/* ekya/profiler.h: Ekya's micro-profiler. For each retraining configuration it trains a
 * copy of the current model on a small share of the window's training frames (10%) for
 * a few epochs (5), measuring validation accuracy after each epoch on frames of the
 * window held out from that training, and CPU time per sample and epoch. It fits the
 * Optimus curve (ekya/curvefit.h) to the accuracies and extrapolates:
 *
 *   accuracy after E epochs on fraction f of the frames = curve(E * (f / p)^gamma)
 *
 * where p is the profiling fraction: gamma = 1 would equate runs with equal numbers of
 * SGD steps; the default gamma = 0.5 (calibrated on seed 1, checked on seed 2) credits
 * ten times the data with about three times the epochs, because steps on more frames
 * of the same window give diminishing returns. Time: setup + per-epoch cost, each per sample, times f * n_train samples.
 * Under a GPU share s the time divides by throughput(s) = s^alpha (alpha = 0.8 default:
 * sublinear, a half share keeps 57% of the speed; see docs/ekya_workload.md).
 * Configurations that stay dominated (lower accuracy by a margin at no lower predicted
 * cost) from epoch prune_after on stop being profiled and are predicted from the points
 * they have. */
#ifndef EKYA_PROFILER_H
#define EKYA_PROFILER_H

#include "ekya/config.h"
#include "ekya/curvefit.h"
#include "ekya/mlp.h"
#include "ekya/stream.h"

#include <stddef.h>
#include <stdint.h>

#define EKYA_PROFILE_MAX_EPOCHS 10

typedef struct {
    int epochs;          /* micro-profiling epochs, 2..EKYA_PROFILE_MAX_EPOCHS (5) */
    double data_frac;    /* share p of the window's training frames profiled (0.1) */
    double val_frac;     /* share of training frames held out for accuracy (0.25) */
    int prune_after;     /* first epoch at which pruning is considered (3) */
    double prune_margin; /* accuracy gap, as a fraction, that marks domination (0.05) */
    double data_gamma;   /* exponent of the data-fraction scaling (0.5) */
    double share_alpha;  /* throughput(s) = s^alpha (0.8) */
    uint64_t seed;
} ekya_profiler_opts;

typedef struct {
    ekya_retrain_config config;
    int n_points;                            /* acc[0..n_points): epochs 0.. profiled */
    double acc[EKYA_PROFILE_MAX_EPOCHS + 1]; /* validation accuracy (0..1) after e epochs */
    ekya_curve curve;
    int fitted;                    /* curve valid; else predictions use the last point */
    int pruned;                    /* stopped early as dominated */
    double setup_seconds_per_sample; /* CPU-seconds per training sample, once per run */
    double epoch_seconds_per_sample; /* CPU-seconds per training sample per epoch */
} ekya_config_profile;

typedef struct {
    int n;
    ekya_config_profile *items; /* owned, one per configuration, in the given order */
    int n_train;                /* training frames of the window (predictions scale to it) */
    double profile_seconds;     /* CPU-seconds the whole micro-profiling took */
    double p;                   /* the profiled fraction actually used */
} ekya_profile;

void ekya_profiler_opts_default(ekya_profiler_opts *o, uint64_t seed);

/* Profiles every configuration of set[0..n_configs) on window w. Each configuration
 * starts from the model in models[0..n_models) whose hidden width matches it. Returns 0
 * and fills *out (free with ekya_profile_free), or -1 with a one-line err. */
int ekya_profile_window(const ekya_mlp *const *models, int n_models, const ekya_window *w,
                        const ekya_retrain_config *set, int n_configs,
                        const ekya_profiler_opts *o, ekya_profile *out, char *err,
                        size_t errlen);
void ekya_profile_free(ekya_profile *p);

/* Predicted accuracy (0..1) after `epochs` full epochs on the configuration's data
 * fraction of the window's training frames. */
double ekya_profile_predict_acc(const ekya_profile *p, int i, int epochs,
                                const ekya_profiler_opts *o);

/* Predicted CPU-seconds of that retraining on a full device. */
double ekya_profile_predict_seconds(const ekya_profile *p, int i, int epochs);

/* Relative throughput of a share s in (0, 1] of a device: s^alpha; 0 for s <= 0. */
double ekya_share_throughput(double share, double alpha);

/* Seconds a job needing full_seconds on a whole device takes under share s. */
double ekya_seconds_under_share(double full_seconds, double share, double alpha);

#endif
