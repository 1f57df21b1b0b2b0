/* simulate.c: cilantro-simulate ENV.json [--hours H] [--seed S]: runs every policy of
 * cil_sim_run on an environment and prints one JSON line per policy with the five
 * metrics averaged over rounds (the figures in docs/cilantro.md come from it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cilantro/sim.h"

static int usage(void)
{
    fprintf(stderr, "usage: cilantro-simulate ENV.json [--hours H] [--seed S]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-')
        return usage();
    cil_sim_params p;
    cil_sim_params_default(&p);
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc)
            return usage();
        if (!strcmp(argv[i], "--hours"))
            p.duration_s = atof(argv[i + 1]) * 3600.0;
        else if (!strcmp(argv[i], "--seed"))
            p.seed = strtoull(argv[i + 1], NULL, 10);
        else
            return usage();
    }
    if (!(p.duration_s > 0))
        return usage();
    char err[512];
    cil_env *env = cil_env_load(argv[1], err, sizeof err);
    if (!env) {
        fprintf(stderr, "cilantro-simulate: %s\n", err);
        return 1;
    }
    int rc = 0;
    for (int k = 0; k < CIL_POL_COUNT && rc == 0; k++) {
        cil_sim_result r;
        if (cil_sim_run(env, (cil_policy)k, &p, &r, err, sizeof err) != 0) {
            fprintf(stderr, "cilantro-simulate: %s\n", err);
            rc = 1;
            break;
        }
        printf("{\"policy\": \"%s\", \"hours\": %g, \"seed\": %llu, \"rounds\": %zu, "
               "\"social_welfare\": %.3f, \"egalitarian_welfare\": %.3f, \"njc_fairness\": %.3f, "
               "\"useful_usage\": %.3f}\n",
               cil_policy_name((cil_policy)k), p.duration_s / 3600.0,
               (unsigned long long)p.seed, r.rounds, r.mean.social_welfare,
               r.mean.egalitarian_welfare, r.mean.njc_fairness, r.mean.useful_usage);
        cil_sim_result_free(&r);
    }
    cil_env_free(env);
    return rc;
}
