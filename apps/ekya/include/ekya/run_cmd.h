/* ekya/run_cmd.h: `ekya run`, the real workload end to end (micro-profile, schedule,
 * retrain the chosen configurations for real, deploy, infer). Needs both layers. */
#ifndef EKYA_RUN_CMD_H
#define EKYA_RUN_CMD_H

/* argv[0] is "run"; options as in `ekya run --help`. Prints the same summary as
 * `ekya simulate` (text, or one JSON object with --json: mean_accuracy, streams,
 * windows, scheduler_seconds and the run's costs). Returns 0, 1 on a failed run
 * (one line on stderr), 2 on bad usage. */
int ekya_cmd_run(int argc, char **argv);

#endif
