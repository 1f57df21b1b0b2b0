/* ekya/retrain.h: actually retraining a model on a window with a configuration, the
 * measurement behind every profile row: accuracy on the window's test frames before and
 * after, and the CPU-seconds training took (the cost on a full device). */
#ifndef EKYA_RETRAIN_H
#define EKYA_RETRAIN_H

#include "ekya/config.h"
#include "ekya/mlp.h"
#include "ekya/stream.h"

#include <stddef.h>
#include <stdint.h>

#define EKYA_MAX_CHECKPOINTS 8
/* Step size for retraining and micro-profiling: fine-tuning a pretrained model takes
 * smaller steps than pretraining (0.05); 0.02 halved the profiler's error against 0.05
 * and kept most of the accuracy gain (docs/ekya_workload.md). */
#define EKYA_RETRAIN_LR 0.02f

typedef struct {
    double start_acc; /* test accuracy of the starting model, 0..1 */
    int n_checkpoints;
    int epochs[EKYA_MAX_CHECKPOINTS];
    double end_acc[EKYA_MAX_CHECKPOINTS];     /* test accuracy after epochs[i], 0..1 */
    double gpu_seconds[EKYA_MAX_CHECKPOINTS]; /* training cost up to epochs[i] on a full
                                                 device, ekya_cost_seconds (CPU-seconds on
                                                 the CPU backend); setup included,
                                                 evaluation excluded */
} ekya_retrain_result;

/* Retrains a copy of `start` (its width must equal c->hidden) on c->data_frac of w's
 * training frames with c's batch and layers, for checkpoints[n-1] epochs, measuring at
 * each of the n (1..EKYA_MAX_CHECKPOINTS, increasing) checkpoints. If keep is not NULL
 * it receives (allocated here; caller frees with ekya_mlp_free) the model as it was at
 * epoch keep_epoch, which must be one of the checkpoints. Returns 0 or -1 with err. */
int ekya_retrain(const ekya_mlp *start, const ekya_window *w, const ekya_retrain_config *c,
                 const int *checkpoints, int n, uint64_t seed, ekya_retrain_result *res,
                 ekya_mlp *keep, int keep_epoch, char *err, size_t errlen);

/* "Retrain with configuration c for `epochs` under share `share` of a device": one
 * checkpoint, and *seconds_under_share (optional) = full-device seconds / share^alpha.
 * keep (optional) gets the retrained model. Returns 0 or -1 with err. */
int ekya_retrain_once(const ekya_mlp *start, const ekya_window *w, const ekya_retrain_config *c,
                      int epochs, double share, double alpha, uint64_t seed,
                      ekya_retrain_result *res, double *seconds_under_share, ekya_mlp *keep,
                      char *err, size_t errlen);

/* Pretrains m (already initialised: width and resolution chosen) on the held-out
 * streams of `heldout` (the t10k pool; ekya_stream_heldout) for `epochs` epochs at
 * batch 32, all layers. Returns the seconds it took (ekya_cost_seconds), or -1 with err. */
double ekya_pretrain(ekya_mlp *m, const ekya_pool *heldout, const ekya_stream_opts *o,
                     int streams, int windows, int epochs, uint64_t seed, char *err,
                     size_t errlen);

#endif
