/* main.c: the `ekya` command: dispatches to the subcommands (simulate, plot, synth
 * from the scheduling layer; profile from the workload layer; run from both). */
#include <stdio.h>
#include <string.h>

#include "ekya/cli.h"
#include "ekya/profile_cmd.h"
#include "ekya/run_cmd.h"

static const char help[] =
    "usage: ekya COMMAND [OPTIONS]\n"
    "Ekya (NSDI'22): scheduling retraining and inference of video analytics models.\n"
    "\n"
    "commands:\n"
    "  simulate   run a scheduler on retraining profiles and report inference accuracy\n"
    "             ekya simulate --profiles F --inference-profile F --gpus G --window T\n"
    "                 --scheduler thief|noretrain|fixedres|uniform:CONFIG:EPOCHS:SHARE|\n"
    "                             fixedconfig:CONFIG:EPOCHS\n"
    "                 [--delta D|FG] [--rmax R] [--sample S] [--no-carry] [--json]\n"
    "                 [--decisions FILE]\n"
    "  plot       accuracy against GPUs for every scheduler (gnuplot, svg)\n"
    "             ekya plot --profiles F --inference-profile F --window T --gpus 1,2,4,8\n"
    "                 --out DIR [--target ACC] [--schedulers S1,S2,..] [--delta D|FG] [--rmax R]\n"
    "  synth      write a synthetic retraining profile CSV to stdout\n"
    "             ekya synth [--streams N] [--windows W] [--configs C] [--seed S]\n"
    "  profile    micro-profile retraining configurations (workload layer)\n"
    "  run        the real workload end to end: micro-profile, schedule, retrain the\n"
    "             chosen configurations, deploy, infer (same summary as simulate)\n"
    "             ekya run --streams V --windows W --gpus G --window T [--scheduler S]\n"
    "                 [--configs small|full] [--images-per-window N] [--seed S] [--json]\n"
    "\n"
    "--delta D|FG: the GPU quantum, D GPUs or the fraction F of G (default 0.1).\n"
    "--sample S: accuracy is sampled every S seconds of a window (default 1).\n"
    "Profile accuracy columns name their unit: start_pct,end_pct,pred_end_pct percent\n"
    "(0..100, what synth and profile write), start_acc,end_acc,pred_end_acc fractions\n"
    "(0..1); --accuracy-unit fraction|percent overrides. Reports are fractions (0..1).\n"
    "See docs/ekya.md.\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(help, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(help, stdout);
        return 0;
    }
    if (strcmp(cmd, "simulate") == 0)
        return ekya_cmd_simulate(argc - 1, argv + 1);
    if (strcmp(cmd, "plot") == 0)
        return ekya_cmd_plot(argc - 1, argv + 1);
    if (strcmp(cmd, "synth") == 0)
        return ekya_cmd_synth(argc - 1, argv + 1);
    if (strcmp(cmd, "profile") == 0)
        return ekya_cmd_profile(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return ekya_cmd_run(argc - 1, argv + 1);
    fprintf(stderr, "ekya: unknown command '%s' (see ekya --help)\n", cmd);
    return 2;
}
