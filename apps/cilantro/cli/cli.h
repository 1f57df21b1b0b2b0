/* cli.h: the `cilantro` command's subcommands and the option parsing they share. */
#ifndef CILANTRO_CLI_H
#define CILANTRO_CLI_H

#include <stdint.h>

#include "cilantro/sim.h"

/* Options a subcommand may accept (bits of cli_parse's allowed). */
enum {
    OPT_ENV = 1 << 0,      /* --env FILE (required where allowed) */
    OPT_POLICY = 1 << 1,   /* --policy NAME (required where allowed) */
    OPT_POLICIES = 1 << 2, /* --policies a,b,c | all (required where allowed) */
    OPT_HOURS = 1 << 3,    /* --hours H, > 0 (default 6) */
    OPT_SEED = 1 << 4,     /* --seed S (default 1) */
    OPT_JSON = 1 << 5,     /* --json */
    OPT_OUT = 1 << 6,      /* --out DIR (required where allowed) */
    OPT_AT = 1 << 7,       /* --at SECONDS into the load traces (default 0) */
    OPT_LIVE = 1 << 8,     /* --live LOG,LOG... (`cilantro serve --log` files; required
                              where allowed) */
};

typedef struct {
    const char *env, *policy, *policies, *out, *live;
    double hours, at;
    uint64_t seed;
    int json;
} cli_opts;

/* Parses argv[0..argc) (the words after the subcommand) into *o, accepting only the
 * allowed options. On an error prints one line "cilantro CMD: ..." to stderr and
 * returns -1. */
int cli_parse(const char *cmd, int argc, char **argv, unsigned allowed, cli_opts *o);

/* The environment file, or NULL after one line on stderr. Free with cil_env_free. */
cil_env *cli_load_env(const char *cmd, const char *path);

/* Parses a comma-separated policy list ("all" for every policy) into p (room for
 * CIL_POL_COUNT). Returns how many, or -1 after one line on stderr naming the bad one. */
int cli_policy_list(const char *cmd, const char *list, cil_policy_kind *p);

/* Median of the n values (n > 0), which it sorts in place. */
double cli_median(double *v, size_t n);

/* Runs policy on env with the options' hours and seed. 0, or -1 after one line. */
int cli_run(const char *cmd, const cil_env *env, cil_policy_kind pol, const cli_opts *o,
            cil_sim_result *r);

/* The subcommands: argv[0] is the subcommand's name, options follow. Each returns the
 * process's exit status (0, 1 on a failed input or run, 2 on bad usage). */
int cmd_simulate(int argc, char **argv);
int cmd_alloc(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_plot(int argc, char **argv);

#endif
