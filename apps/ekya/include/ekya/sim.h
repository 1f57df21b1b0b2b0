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

#endif
