/* ekya/cli.h: the `ekya` subcommands of the scheduling layer and their shared option
 * helpers. Each command returns the process exit status: 0 success, 1 bad input
 * file or failed run, 2 usage error. Errors are one line on stderr. */
#ifndef EKYA_CLI_H
#define EKYA_CLI_H

#include "ekya/drive.h"
#include "ekya/profiles.h"

int ekya_cmd_simulate(int argc, char **argv);
int ekya_cmd_plot(int argc, char **argv);
int ekya_cmd_synth(int argc, char **argv);

/* Parses s as a finite number > 0 (>= 0 when allow_zero) for option opt; on failure
 * prints "ekya: OPT: ..." and returns -1. */
int ekya_cli_number(const char *opt, const char *s, int allow_zero, double *out);

/* Parses --delta: a number of GPUs ("0.05"), or a fraction of G with a trailing G
 * ("0.0125G", so one value gives the same granularity at every G). Sets prm->delta
 * and prm->delta_per_gpu; on failure prints one line and returns -1. */
int ekya_cli_delta(const char *s, ekya_params *prm);

/* The timeline options that simulate, plot and run share, as getopt_long entries:
 * --window T, --delta D|FG, --rmax R, --sample S (codes 'w', 'd', 'r', 'I'). */
#define EKYA_CLI_PARAM_OPTIONS                                                              \
    {"window", required_argument, 0, 'w'}, {"delta", required_argument, 0, 'd'},           \
        {"rmax", required_argument, 0, 'r'}, {"sample", required_argument, 0, 'I'}

/* Sets prm to zero with the default delta and rmax (and the paper's 1-s sampling). */
void ekya_cli_params_default(ekya_params *prm);

/* Handles one EKYA_CLI_PARAM_OPTIONS option (code ch, value arg) into prm. Returns 0
 * when handled, -1 on a bad value (one line printed), 1 when ch is not one of them. */
int ekya_cli_param(int ch, const char *arg, ekya_params *prm);

/* After a successful run: prints a one-line note on stderr when accuracy was sampled
 * fewer than 20 times per window (a window of a few seconds at the default 1-s
 * sampling), since retraining that completes between two samples counts late or not
 * at all. */
void ekya_cli_note_sampling(const ekya_params *prm);

/* Loads both profile files; prints the loader's one-line error and returns -1 on
 * failure (nothing left allocated). */
int ekya_cli_load(const char *profiles, const char *inference, ekya_profiles *p,
                  ekya_infer_profile *inf);

/* The same with --accuracy-unit's value (EKYA_ACC_AUTO: the column names decide). */
int ekya_cli_load_unit(const char *profiles, ekya_acc_unit unit, const char *inference,
                       ekya_profiles *p, ekya_infer_profile *inf);

/* Parses --accuracy-unit fraction|percent; on failure prints one line, returns -1. */
int ekya_cli_acc_unit(const char *s, ekya_acc_unit *out);

/* Defaults of --delta and --rmax. */
#define EKYA_DEFAULT_DELTA 0.1
#define EKYA_DEFAULT_RMAX 0.25

#endif
