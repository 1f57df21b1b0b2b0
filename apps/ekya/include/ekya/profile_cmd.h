/* ekya/profile_cmd.h: `ekya profile`, the command that runs the real workload and
 * writes the profiles the scheduler consumes.
 *
 *   ekya profile --streams V --windows W [--seed S] [--images-per-window N]
 *                [--out FILE] [--configs small|full] [--infer-out FILE]
 *                [--infer-configs-out FILE] [--quiet]
 *
 * Profiles CSV (FILE, default stdout), accuracies in percent (0..100):
 *   stream,window,config,epochs,start_pct,end_pct,gpu_seconds,pred_end_pct,pred_gpu_seconds
 * one row per (stream, window, configuration, epochs in {5,15,30}); gpu_seconds are
 * measured CPU-seconds of the retraining (the cost on a full device), the pred_ columns
 * are the micro-profiler's predictions. Inference CSV (--infer-out, default
 * <FILE minus .csv>_infer.csv when --out is given, else not written):
 *   subsampling,accuracy_multiplier
 * and optionally (--infer-configs-out) resolution,subsampling,accuracy,cpu_seconds_per_frame.
 * A summary (profiler error, timings) goes to stderr unless --quiet. */
#ifndef EKYA_PROFILE_CMD_H
#define EKYA_PROFILE_CMD_H

#include <stdio.h>

/* Runs `ekya profile`; argv[0] is "profile" (or the program name), options follow.
 * Returns 0 on success, 2 on bad usage (message on stderr), 1 on other errors. */
int ekya_cmd_profile(int argc, char **argv);

/* Writes the usage text to out. Returns 0. */
int ekya_cmd_profile_usage(FILE *out);

#endif
