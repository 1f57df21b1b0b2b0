/* compare.c: `cilantro compare`: several policies on one environment, one table row
 * each (the paper's cluster-sharing table). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static double median_alloc_ms(const cil_sim_result *r)
{
    double *t = malloc(r->rounds * sizeof *t);
    if (!t)
        return 0;
    for (size_t i = 0; i < r->rounds; i++)
        t[i] = r->alloc_s[i] * 1e3;
    double m = cli_median(t, r->rounds);
    free(t);
    return m;
}

int cmd_compare(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse("compare", argc - 1, argv + 1, OPT_ENV | OPT_POLICIES | OPT_HOURS | OPT_SEED | OPT_JSON,
                  &o) != 0)
        return 2;
    cil_policy_kind pols[CIL_POL_COUNT];
    int np = cli_policy_list("compare", o.policies, pols);
    if (np < 0)
        return 2;
    cil_env *env = cli_load_env("compare", o.env);
    if (!env)
        return 1;
    json_t *rows = json_array();
    if (!o.json)
        printf("%zu jobs, %d CPUs, %g h, seed %llu\n%-14s %7s %7s %7s %7s %7s %9s\n", env->njobs,
               env->cpus, o.hours, (unsigned long long)o.seed, "policy", "SW", "EW", "NJC",
               "NJC-u", "useful", "alloc-ms");
    int rc = 0;
    for (int k = 0; k < np && rc == 0; k++) {
        cil_sim_result r;
        if (cli_run("compare", env, pols[k], &o, &r) != 0) {
            rc = 1;
            break;
        }
        const cil_metrics *m = &r.mean;
        double ms = median_alloc_ms(&r);
        if (o.json)
            json_array_append_new(
                rows, json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f}", "policy",
                                cil_policy_name(pols[k]), "social_welfare", m->social_welfare,
                                "egalitarian_welfare", m->egalitarian_welfare, "njc_fairness",
                                m->njc_fairness, "njc_fairness_utility", m->njc_fairness_utility,
                                "useful_usage", m->useful_usage, "alloc_ms_median", ms));
        else
            printf("%-14s %7.3f %7.3f %7.3f %7.3f %7.3f %9.3f\n", cil_policy_name(pols[k]),
                   m->social_welfare, m->egalitarian_welfare, m->njc_fairness,
                   m->njc_fairness_utility, m->useful_usage, ms);
        fflush(stdout);
        cil_sim_result_free(&r);
    }
    if (rc == 0 && o.json) {
        json_t *root = json_pack("{s:f, s:I, s:o}", "hours", o.hours, "seed",
                                 (json_int_t)o.seed, "policies", rows);
        rc = root && json_dumpf(root, stdout, JSON_REAL_PRECISION(6)) == 0 ? 0 : 1;
        printf("\n");
        json_decref(root);
    } else {
        json_decref(rows);
    }
    cil_env_free(env);
    return rc;
}
