/* ekya/run_cmd.h: `ekya run`, the real workload end to end (micro-profile, schedule,
 * retrain the chosen configurations for real, deploy, infer). Needs both layers. */
#ifndef EKYA_RUN_CMD_H
#define EKYA_RUN_CMD_H

#include <stddef.h>

#include "ekya/profiles.h"
#include "ekya/workload.h"

/* argv[0] is "run"; options as in `ekya run --help`. Prints the same summary as
 * `ekya simulate` (text, or one JSON object with --json: mean_accuracy, streams,
 * windows, scheduler_seconds and the run's costs). Returns 0, 1 on a failed run
 * (one line on stderr), 2 on bad usage. */
int ekya_cmd_run(int argc, char **argv);

/* The inference profile of a workload: accuracy multipliers at each subsampling,
 * measured with the widest base model on stream 0's first window (all its frames, or with
 * test_frames only its test frames in stream order, what a live run serves), and
 * (frame_seconds, may be NULL) the CPU-seconds that model takes per frame. Returns 0, or
 * -1 with err. */
int ekya_run_inference_profile(const ekya_workload *wl, int test_frames, ekya_infer_profile *inf,
                               double *frame_seconds, char *err, size_t errlen);

#endif
