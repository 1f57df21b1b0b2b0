/* ekya/config.h: the knobs Ekya chooses between.
 *
 * Retraining configurations: hidden width of the model retrained, which layers train
 * (the last only, or all), the share of the window's training frames used and the
 * minibatch size. Each has a stable name "w<width>-<last|all>-f<frac>-b<batch>", e.g.
 * "w128-all-f0.5-b16"; the epoch count is a separate column in the profiles (5, 15 or
 * 30) because one training run yields all three as checkpoints.
 *
 * Inference configurations: frame subsampling (process every k-th frame, reuse the
 * last answer in between) and input resolution (28, 14, 7), each measured for accuracy
 * on a window and for CPU-seconds per frame. */
#ifndef EKYA_CONFIG_H
#define EKYA_CONFIG_H

#include "ekya/mlp.h"
#include "ekya/stream.h"

#include <stddef.h>

#define EKYA_CONFIG_NAME_MAX 40
#define EKYA_N_EPOCH_CHOICES 3
#define EKYA_MAX_EPOCHS 30

/* The epoch counts every configuration is profiled at: {5, 15, 30}. */
extern const int ekya_epoch_choices[EKYA_N_EPOCH_CHOICES];

typedef struct {
    int hidden;       /* 32 or 128 in the standard sets; any 1..4096 parses */
    int train_all;    /* 1: all layers; 0: last layer only */
    double data_frac; /* 0.1, 0.5 or 1 in the standard sets; (0, 1] parses */
    int batch;        /* minibatch size */
} ekya_retrain_config;

/* Writes c's name into buf. Returns 0, or -1 if it does not fit. */
int ekya_config_name(const ekya_retrain_config *c, char *buf, size_t len);

/* Parses a name made by ekya_config_name. Returns 0, or -1 with a one-line err. */
int ekya_config_parse(const char *name, ekya_retrain_config *c, char *err, size_t errlen);

/* A standard set: "full" (18 configurations: width 128 with last/all x f0.1/0.5/1 x
 * b16/b64, and width 32 with last/all x f0.1/0.5/1 x b32) or "small" (4 of them, for
 * quick runs). Returns the count and points *out at static storage, or -1 with err. */
int ekya_config_set(const char *which, const ekya_retrain_config **out, char *err,
                    size_t errlen);

/* The configuration whose retrained model a stream carries into its next window, for
 * models of width `hidden`: all layers, all data, the set's first batch size at that
 * width (see docs/ekya_workload.md). Returns its index in set[0..n), or -1 if the set
 * has no all-layers, full-data configuration of that width. */
int ekya_config_carry_index(const ekya_retrain_config *set, int n, int hidden);

typedef struct {
    int subsample;  /* process every k-th frame */
    int res;        /* input side */
    double accuracy; /* share of the window's frames answered correctly, 0..1 */
    double cpu_seconds_per_frame; /* measured forward cost, divided by subsample */
} ekya_infer_config;

/* Measures every (model, subsample) pair on window w's frames in stream order; a frame
 * that is skipped gets the last processed frame's answer. models[i] may have different
 * resolutions. Writes n_models * n_subs entries into out (caller's array, model-major).
 * Returns 0, or -1 with err (bad subsample, OOM). */
int ekya_infer_measure(const ekya_mlp *const *models, int n_models, const ekya_window *w,
                       const int *subs, int n_subs, ekya_infer_config *out, char *err,
                       size_t errlen);

/* CPU seconds used by the calling thread so far (CLOCK_THREAD_CPUTIME_ID). */
double ekya_thread_seconds(void);

/* The clock training costs are measured with: the thread's CPU time on the CPU
 * backend; CLOCK_MONOTONIC seconds when the GPU backend is in use (ekya_cuda_available),
 * where the thread mostly waits on the device. Differences of two calls are costs. */
double ekya_cost_seconds(void);

#endif
