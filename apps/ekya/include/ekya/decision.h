/* ekya/decision.h: scheduling decisions as data, and the executor interface that
 * carries them out.
 *
 * A decision is what a scheduler chose for one moment of one retraining window: per
 * stream, the retraining configuration (or none) with its GPU share and the inference
 * share with the subsampling that share can run. A window's decisions are a list of
 * steps: one at the window start and one after each retraining completion (the
 * reallocation). Keeping decisions as plain data lets the simulator and, later, a
 * cluster executor run exactly the same schedule, and lets --decisions print it.
 */
#ifndef EKYA_DECISION_H
#define EKYA_DECISION_H

#include <stdio.h>

#include "ekya/profiles.h"

#define EKYA_NO_RETRAIN (-1)

/* One stream's allocation. */
typedef struct {
    int retrain_cfg;         /* index into profiles->configs, or EKYA_NO_RETRAIN */
    double retrain_share;    /* GPUs for the retraining job (0 without one) */
    double infer_share;      /* GPUs for the inference job */
    double infer_subsampling;/* one frame in this many is processed; 0: cannot keep up */
} ekya_stream_alloc;

/* Why a step was taken. */
typedef enum { EKYA_STEP_START = 0, EKYA_STEP_COMPLETION = 1 } ekya_step_kind;

/* One (re)allocation: takes effect at `time` seconds into the window. */
typedef struct {
    ekya_step_kind kind;
    double time;
    int completed_stream;    /* the stream whose retraining just finished, or -1 */
    int nstreams;
    ekya_stream_alloc *alloc;/* nstreams entries, owned by the step */
} ekya_step;

/* All steps of one window, in time order. */
typedef struct {
    int window;              /* window index (0-based) */
    double length;           /* seconds */
    int nsteps, cap;
    ekya_step *steps;        /* owned */
} ekya_window_decision;

/* Appends a copy of alloc[0..nstreams) as a new step of d. Returns 0 or -1 (memory). */
int ekya_window_add_step(ekya_window_decision *d, ekya_step_kind kind, double time,
                         int completed_stream, int nstreams, const ekya_stream_alloc *alloc);

/* Frees the steps d owns and zeroes it. */
void ekya_window_decision_free(ekya_window_decision *d);

/* Writes each step of d as one JSON object per line:
 * {"window":W,"window_id":ID,"time":T,"reason":"start"|"completion","completed":NAME|null,
 *  "streams":[{"stream":NAME,"retrain":{"config":C,"epochs":E}|null,
 *              "retrain_gpus":R,"infer_gpus":I,"subsampling":S},...]}
 * Returns 0, or -1 when writing fails. */
int ekya_window_decision_write_json(FILE *f, const ekya_profiles *p,
                                    const ekya_window_decision *d);

/* Sum of all shares of one allocation. */
double ekya_alloc_total(int nstreams, const ekya_stream_alloc *alloc);

/* The executor: whatever carries decisions out (the simulator here; cluster tasks
 * later). The driver (ekya/drive.h) calls, per window: start_window, then apply with
 * the start step, then advance repeatedly; after each completion it asks the
 * scheduler again and calls apply with the new step; at the window end end_window.
 * Every function returns 0 on success, -1 with a message in err otherwise. */
typedef struct ekya_executor {
    void *ctx;
    /* A window begins: reset per-window state, load the models' start accuracies. */
    int (*start_window)(void *ctx, int window, double length, char *err, size_t errlen);
    /* What the scheduler needs to know right now, per stream: accuracy of the deployed
     * model (0..1), the configuration being retrained (or EKYA_NO_RETRAIN), GPU-seconds
     * already spent on it, and whether a retraining already completed this window. */
    int (*observe)(void *ctx, double *model_acc, int *training_cfg, double *progress,
                   int *completed);
    /* Puts a step into effect from step->time on. */
    int (*apply)(void *ctx, const ekya_step *step, char *err, size_t errlen);
    /* Runs until the next retraining completes (*stream = that stream) or the window
     * ends (*stream = -1); *now = the time reached, seconds into the window. */
    int (*advance)(void *ctx, double *now, int *stream, char *err, size_t errlen);
    /* The window is over. */
    int (*end_window)(void *ctx, char *err, size_t errlen);
} ekya_executor;

#endif
