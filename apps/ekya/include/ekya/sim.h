/* ekya/sim.h: the trace-driven simulator, an ekya_executor over the profiles.
 *
 * Retraining advances in GPU-seconds at the rate of its share and completes when the
 * profile's actual gpu_seconds are spent; the new model (actual end_acc) replaces the
 * old one at that instant and the scheduler is asked again. A retraining unfinished at
 * the window end is lost. Accuracy is sampled at t = 0, 1, ..., ceil(T)-1 seconds of
 * each window: a stream's accuracy is its deployed model's accuracy times the
 * inference multiplier of its current inference share.
 */
#ifndef EKYA_SIM_H
#define EKYA_SIM_H

#include <stdio.h>

#include "ekya/drive.h"

typedef struct {
    int nstreams, nwindows;
    double *acc;            /* [s * nwindows + w]: stream s's mean accuracy in window w */
    double *window_mean;    /* [w]: mean over streams */
    double *stream_mean;    /* [s]: mean over windows */
    double mean;            /* overall mean, 0..1 */
    int completions;        /* retraining jobs that finished */
    ekya_sched_stats sched; /* scheduler running time */
} ekya_sim_result;

/* Simulates sched on p. Decisions go to `decisions` (JSON lines) and `log` as in
 * ekya_drive (either may be NULL). Fills *res (free with ekya_sim_result_free).
 * Returns 0, or -1 with a one-line message in err. */
int ekya_simulate(const ekya_profiles *p, const ekya_infer_profile *inf, const ekya_params *prm,
                  const ekya_scheduler *sched, FILE *decisions, ekya_window_decision *log,
                  ekya_sim_result *res, char *err, size_t errlen);

void ekya_sim_result_free(ekya_sim_result *res);

/* Optional calls into whoever owns the profiles while the simulation runs, so that the
 * values can be produced as they are needed rather than read from a file (`ekya run`
 * retrains for real). p is read through its pointer after each call, so a hook may
 * fill the cells the simulator is about to read. Each returns 0, or -1 with a
 * one-line message in err (the simulation then stops with that error); NULL members
 * are skipped. */
typedef struct {
    void *ctx;
    /* Window w is about to start: start_acc of every stream and the cells the
     * scheduler reads (present, pred_*) for w must be in place after this call. */
    int (*window_begins)(void *ctx, int w, char *err, size_t errlen);
    /* Stream s starts retraining configuration cfg in window w: the cell's actual
     * end_acc and gpu_seconds must be in place after this call. */
    int (*retrain_begins)(void *ctx, int s, int w, int cfg, char *err, size_t errlen);
    /* Stream s's retraining of cfg completed in window w: its model is deployed. */
    int (*retrain_completes)(void *ctx, int s, int w, int cfg, char *err, size_t errlen);
} ekya_sim_hooks;

/* ekya_simulate with hooks (NULL: none, the same as ekya_simulate). */
int ekya_simulate_hooked(const ekya_profiles *p, const ekya_infer_profile *inf,
                         const ekya_params *prm, const ekya_scheduler *sched,
                         const ekya_sim_hooks *hooks, FILE *decisions, ekya_window_decision *log,
                         ekya_sim_result *res, char *err, size_t errlen);

#endif
