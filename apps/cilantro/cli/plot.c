/* plot.c: `cilantro plot`: each policy's social welfare, egalitarian welfare and NJC
 * fairness over time, written as a table (DIR/series.tsv) and drawn with gnuplot
 * (DIR/welfare.png, DIR/egalitarian.png, DIR/fairness.png). Curves are a moving
 * average over 5 rounds (10 minutes at the default round), which keeps the policies
 * apart on one plot without hiding trends. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#define SMOOTH 5

static double field(const cil_metrics *m, int f)
{
    return f == 0 ? m->social_welfare : f == 1 ? m->egalitarian_welfare : m->njc_fairness;
}

/* series.tsv: hour, then per policy its three smoothed metrics. */
static int write_table(const char *path, int np, const cil_policy_kind *pols,
                       cil_sim_result *res, double round_h)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "hour");
    for (int k = 0; k < np; k++)
        fprintf(f, "\t%s_sw\t%s_ew\t%s_njc", cil_policy_name(pols[k]), cil_policy_name(pols[k]),
                cil_policy_name(pols[k]));
    fprintf(f, "\n");
    size_t rounds = res[0].rounds;
    for (size_t i = 0; i < rounds; i++) {
        fprintf(f, "%.4f", (double)(i + 1) * round_h);
        size_t lo = i + 1 >= SMOOTH ? i + 1 - SMOOTH : 0;
        for (int k = 0; k < np; k++)
            for (int m = 0; m < 3; m++) {
                double s = 0;
                for (size_t q = lo; q <= i; q++)
                    s += field(&res[k].series[q], m);
                fprintf(f, "\t%.5f", s / (double)(i + 1 - lo));
            }
        fprintf(f, "\n");
    }
    return fclose(f) == 0 ? 0 : -1;
}

static int draw(const char *dir, int np, const cil_policy_kind *pols)
{
    FILE *g = popen("gnuplot 2>&1", "w");
    if (!g)
        return -1;
    static const char *const names[3] = {"welfare", "egalitarian", "fairness"};
    static const char *const titles[3] = {"social welfare", "egalitarian welfare",
                                          "NJC fairness"};
    fprintf(g, "set terminal pngcairo size 900,480\nset datafile separator '\\t'\n"
               "set key outside right\nset xlabel 'hours'\nset grid\n");
    for (int m = 0; m < 3; m++) {
        fprintf(g, "set output '%s/%s.png'\nset ylabel '%s'\nplot ", dir, names[m], titles[m]);
        for (int k = 0; k < np; k++)
            fprintf(g, "%s'%s/series.tsv' using 1:%d with lines title '%s'", k ? ", " : "", dir,
                    2 + 3 * k + m, cil_policy_name(pols[k]));
        fprintf(g, "\n");
    }
    fprintf(g, "set output\n");
    int st = pclose(g);
    return st == 0 ? 0 : -1;
}

int cmd_plot(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse("plot", argc - 1, argv + 1, OPT_ENV | OPT_POLICIES | OPT_OUT | OPT_HOURS | OPT_SEED,
                  &o) != 0)
        return 2;
    cil_policy_kind pols[CIL_POL_COUNT];
    int np = cli_policy_list("plot", o.policies, pols);
    if (np < 0)
        return 2;
    if (mkdir(o.out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "cilantro plot: cannot create %s: %s\n", o.out, strerror(errno));
        return 1;
    }
    cil_env *env = cli_load_env("plot", o.env);
    if (!env)
        return 1;
    cil_sim_result res[CIL_POL_COUNT];
    int done = 0, rc = 0;
    for (; done < np; done++)
        if (cli_run("plot", env, pols[done], &o, &res[done]) != 0) {
            rc = 1;
            break;
        }
    char path[4096];
    snprintf(path, sizeof path, "%s/series.tsv", o.out);
    if (rc == 0 && write_table(path, np, pols, res, env->round_s / 3600) != 0) {
        fprintf(stderr, "cilantro plot: cannot write %s\n", path);
        rc = 1;
    }
    if (rc == 0 && draw(o.out, np, pols) != 0) {
        fprintf(stderr, "cilantro plot: gnuplot failed (is gnuplot installed?)\n");
        rc = 1;
    }
    if (rc == 0)
        printf("wrote %s/series.tsv, %s/welfare.png, %s/egalitarian.png, %s/fairness.png\n",
               o.out, o.out, o.out, o.out);
    for (int k = 0; k < done; k++)
        cil_sim_result_free(&res[k]);
    cil_env_free(env);
    return rc;
}
