/* ekya/drive.h: the loop that asks a scheduler for decisions and hands them to an
 * executor, window by window, re-scheduling at every retraining completion. It does
 * not know whether the executor simulates or runs real jobs. */
#ifndef EKYA_DRIVE_H
#define EKYA_DRIVE_H

#include <stdio.h>

#include "ekya/decision.h"
#include "ekya/profiles.h"
#include "ekya/sched.h"

/* Knobs shared by the driver, the schedulers and the simulator. */
typedef struct {
    double gpus;    /* G */
    double length;  /* window length T, seconds */
    double delta;   /* allocation quantum (default 0.1 GPU) */
    int delta_per_gpu; /* 1: delta is a fraction of G, the quantum is delta * gpus */
    double rmax;    /* inference share that processes every frame (default 0.25 GPU) */
    int no_carry;   /* 1: every window starts at the profile's start_acc, even after a
                     * retraining completed in the previous window (see docs/ekya.md) */
    double sample;  /* accuracy is sampled every `sample` seconds of the window; 0 means
                     * 1 s, the paper's (a workload whose costs are milliseconds of CPU
                     * needs a finer one for the same number of samples per window) */
} ekya_params;

/* The allocation quantum in GPUs: delta, or delta * gpus when delta_per_gpu. */
double ekya_params_delta(const ekya_params *prm);

/* The sampling interval in seconds: prm->sample, or 1 when it is 0. */
double ekya_params_sample(const ekya_params *prm);

/* Accuracy samples in a window of `length` seconds sampled every `interval` seconds:
 * ceil(length / interval), ignoring rounding error in the division. */
int ekya_samples_per_window(double length, double interval);

/* Scheduler running time, CLOCK_MONOTONIC around each schedule call. */
typedef struct {
    double total_seconds;
    double max_seconds;
    int calls;
} ekya_sched_stats;

/* Runs every window of p through sched and ex. Each window's decisions are printed
 * as JSON lines to `decisions` when it is not NULL, and kept in log[w] when log is not
 * NULL (an array of p->nwindows zeroed structs; the caller frees each with
 * ekya_window_decision_free). Scheduler output is checked (non-negative shares, sum
 * <= G, valid configurations, no retraining after completion). Returns 0, or -1 with
 * a one-line message in err. */
int ekya_drive(const ekya_profiles *p, const ekya_infer_profile *inf, const ekya_params *prm,
               const ekya_scheduler *sched, const ekya_executor *ex, FILE *decisions,
               ekya_window_decision *log, ekya_sched_stats *stats, char *err, size_t errlen);

/* One window: window index w of p (0-based) through sched and ex, its steps recorded in
 * *d (zeroed by the caller; free with ekya_window_decision_free). The scheduler time
 * adds to *stats (not reset), so a caller driving windows one by one, or several
 * schedulers side by side (one per node), sums them. Same checks and return as
 * ekya_drive. */
int ekya_drive_window(const ekya_profiles *p, const ekya_infer_profile *inf,
                      const ekya_params *prm, const ekya_scheduler *sched,
                      const ekya_executor *ex, int w, ekya_window_decision *d,
                      ekya_sched_stats *stats, char *err, size_t errlen);

#endif
