/* simulate.c: `cilantro simulate`: one policy on an environment; the metrics averaged
 * over time and each job's mean utility and allocation. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static json_t *result_json(const cil_env *env, cil_policy_kind pol, const cli_opts *o,
                           const cil_sim_result *r)
{
    json_t *jobs = json_object();
    for (size_t j = 0; j < r->njobs; j++)
        json_object_set_new(jobs, env->jobs[j].name,
                            json_pack("{s:f, s:f}", "utility", r->job_util[j], "alloc",
                                      r->job_alloc[j]));
    /* the metrics of every round, for analyses by period */
    json_t *sw = json_array(), *ew = json_array(), *njc = json_array();
    for (size_t i = 0; i < r->rounds; i++) {
        json_array_append_new(sw, json_real(r->series[i].social_welfare));
        json_array_append_new(ew, json_real(r->series[i].egalitarian_welfare));
        json_array_append_new(njc, json_real(r->series[i].njc_fairness));
    }
    json_t *series = json_pack("{s:o, s:o, s:o}", "social_welfare", sw, "egalitarian_welfare",
                               ew, "njc_fairness", njc);
    double *t = malloc(r->rounds * sizeof *t);
    double med = 0;
    if (t) {
        for (size_t i = 0; i < r->rounds; i++)
            t[i] = r->alloc_s[i];
        med = cli_median(t, r->rounds);
        free(t);
    }
    return json_pack("{s:s, s:f, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:o}", "policy",
                     cil_policy_name(pol), "hours", o->hours, "seed", (json_int_t)o->seed,
                     "rounds", (json_int_t)r->rounds, "social_welfare",
                     r->mean.social_welfare, "egalitarian_welfare",
                     r->mean.egalitarian_welfare, "njc_fairness", r->mean.njc_fairness,
                     "njc_fairness_utility", r->mean.njc_fairness_utility, "useful_usage",
                     r->mean.useful_usage, "alloc_ms_median", med * 1e3, "jobs", jobs,
                     "series", series);
}

static void print_text(const cil_env *env, cil_policy_kind pol, const cli_opts *o,
                       const cil_sim_result *r)
{
    printf("%s on %zu jobs, %d CPUs: %g h (%zu rounds), seed %llu\n", cil_policy_name(pol),
           env->njobs, env->cpus, o->hours, r->rounds, (unsigned long long)o->seed);
    printf("social_welfare        %.4f\n", r->mean.social_welfare);
    printf("egalitarian_welfare   %.4f\n", r->mean.egalitarian_welfare);
    printf("njc_fairness          %.4f\n", r->mean.njc_fairness);
    printf("njc_fairness_utility  %.4f\n", r->mean.njc_fairness_utility);
    printf("useful_usage          %.4f\n", r->mean.useful_usage);
    printf("%-16s %8s %8s\n", "job", "utility", "alloc");
    for (size_t j = 0; j < r->njobs; j++)
        printf("%-16s %8.4f %8.1f\n", env->jobs[j].name, r->job_util[j], r->job_alloc[j]);
}

int cmd_simulate(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse("simulate", argc - 1, argv + 1, OPT_ENV | OPT_POLICY | OPT_HOURS | OPT_SEED | OPT_JSON,
                  &o) != 0)
        return 2;
    cil_policy_kind pol;
    if (cil_policy_parse(o.policy, &pol) != 0) {
        fprintf(stderr, "cilantro simulate: unknown policy '%s' (see cilantro --help)\n",
                o.policy);
        return 2;
    }
    cil_env *env = cli_load_env("simulate", o.env);
    if (!env)
        return 1;
    cil_sim_result r;
    int rc = 1;
    if (cli_run("simulate", env, pol, &o, &r) == 0) {
        if (o.json) {
            json_t *j = result_json(env, pol, &o, &r);
            rc = j && json_dumpf(j, stdout, JSON_REAL_PRECISION(6)) == 0 ? 0 : 1;
            printf("\n");
            json_decref(j);
        } else {
            print_text(env, pol, &o, &r);
            rc = 0;
        }
        cil_sim_result_free(&r);
    }
    cil_env_free(env);
    return rc;
}
