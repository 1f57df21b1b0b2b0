/* ekya/sched.h: the scheduler interface (thief and baselines) and PickConfigs.
 *
 * A scheduler is called at each window start and again after each retraining
 * completion with what remains of the window; it fills one ekya_stream_alloc per
 * stream. Schedulers see only the predicted profile values (ekya_cell.pred_*).
 */
#ifndef EKYA_SCHED_H
#define EKYA_SCHED_H

#include <stddef.h>

#include "ekya/decision.h"
#include "ekya/profiles.h"

/* Everything a scheduler may look at. Arrays have nstreams entries, owned by caller. */
typedef struct {
    const ekya_profiles *prof;
    const ekya_infer_profile *infer;
    int window;                /* window index, 0-based */
    double length;             /* window length T, seconds */
    double elapsed;            /* seconds of the window already gone */
    double gpus;               /* G */
    double delta;              /* allocation quantum, GPUs */
    double rmax;               /* inference share at which a stream processes every frame */
    const double *model_acc;   /* accuracy of each stream's deployed model, 0..1 */
    const int *training_cfg;   /* configuration in progress, or EKYA_NO_RETRAIN */
    const double *progress;    /* GPU-seconds already spent on it */
    const int *completed;      /* 1: retrained already this window, no more retraining */
} ekya_sched_state;

typedef struct ekya_scheduler {
    const char *name;          /* as given on the command line */
    void *ctx;                 /* owned by the scheduler */
    /* Fills out[0..nstreams). Returns 0, or -1 with a message in err. */
    int (*schedule)(void *ctx, const ekya_sched_state *st, ekya_stream_alloc *out, char *err,
                    size_t errlen);
    void (*destroy)(void *ctx);
    int plans_with_predictions; /* 1: chooses configurations by the profiler's predictions
                                 * (thief, fixedconfig, fixedres), so configurations the
                                 * profiler pruned are withheld from it; 0: a fixed choice */
} ekya_scheduler;

/* Builds the scheduler a --scheduler spec names: thief, noretrain, fixedres,
 * uniform:CONFIG:EPOCHS:SHARE, fixedconfig:CONFIG:EPOCHS. CONFIG/EPOCHS must name a
 * configuration of p. Returns 0, or -1 with a one-line message in err. Release with
 * ekya_scheduler_destroy. */
int ekya_scheduler_create(const char *spec, const ekya_profiles *p, ekya_scheduler *out,
                          char *err, size_t errlen);

void ekya_scheduler_destroy(ekya_scheduler *s);

/* Configurations PickConfigs may choose from: all, or the single index `only`. */
#define EKYA_ANY_CONFIG (-2)

/* PickConfigs for one stream: given its retraining and inference shares, the best
 * retraining configuration that finishes (by prediction) within the remaining window
 * and the inference subsampling its share runs; returns the estimated accuracy
 * averaged over the remaining window (model accuracy until the predicted completion,
 * the predicted end accuracy after, times the inference multiplier) and writes the
 * choice to *out (shares copied in). `only` restricts the configurations. */
double ekya_pick_stream(const ekya_sched_state *st, int s, double retrain_share,
                        double infer_share, int only, ekya_stream_alloc *out);

/* Predicted time (seconds from now) for stream s to finish configuration c with
 * `share` GPUs, counting progress already made on it; INFINITY when share is 0 or the
 * configuration has no profile row there. */
double ekya_finish_time(const ekya_sched_state *st, int s, int c, double share);

/* The thief scheduler (Ekya Algorithm 1), restricted to config `only` (or any). */
int ekya_thief_schedule(const ekya_sched_state *st, int only, ekya_stream_alloc *out);

#endif
