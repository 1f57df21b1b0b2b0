/* micro_run.c: runs of the microservice policies and the `cilantro micro` command.
 * See cilantro/micro.h and docs/cilantro_micro.md. */
#include "cilantro/micro.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cilantro/env.h"

#define LOAD_JITTER 0.01 /* per-round load: diurnal * (1 + LOAD_JITTER * N(0,1)) */
#define OBS_NOISE 0.05   /* observed P99 = true * exp(OBS_NOISE * N(0,1)) */

void cil_micro_result_free(cil_micro_result *res)
{
    if (!res)
        return;
    free(res->t_s);
    free(res->load);
    free(res->p99);
    free(res->p99_obs);
    memset(res, 0, sizeof *res);
}

static int result_alloc(cil_micro_result *res, size_t rounds)
{
    memset(res, 0, sizeof *res);
    res->t_s = malloc(rounds * sizeof *res->t_s);
    res->load = malloc(rounds * sizeof *res->load);
    res->p99 = malloc(rounds * sizeof *res->p99);
    res->p99_obs = malloc(rounds * sizeof *res->p99_obs);
    if (!res->t_s || !res->load || !res->p99 || !res->p99_obs) {
        cil_micro_result_free(res);
        return -1;
    }
    res->rounds = rounds;
    return 0;
}

/* One round: the policy picks with last round's measured load as the forecast, the
 * environment draws this round's load and the noisy P99 the policy gets back. */
static int run_round(cil_micro_agent *ag, cil_rng *env, size_t r, double *forecast,
                     cil_micro_result *res)
{
    long alloc[CIL_MICRO_NSVC];
    double t = (double)r * CIL_MICRO_ROUND_S;
    if (cil_micro_agent_choose(ag, *forecast, alloc) != 0)
        return -1;
    double load = cil_micro_load_at(t) * (1.0 + LOAD_JITTER * cil_rng_gauss(env));
    double p = cil_micro_p99(alloc, load);
    double obs = p * exp(OBS_NOISE * cil_rng_gauss(env));
    if (!isfinite(p) || cil_micro_agent_observe(ag, alloc, load, obs) != 0)
        return -1;
    res->t_s[r] = t;
    res->load[r] = load;
    res->p99[r] = p;
    res->p99_obs[r] = obs;
    *forecast = load;
    return 0;
}

int cil_micro_run(cil_micro_policy policy, double hours, uint64_t seed,
                  cil_micro_result *res)
{
    if (!res)
        return -1;
    memset(res, 0, sizeof *res);
    if (!cil_micro_policy_name(policy) || !isfinite(hours) || hours <= 0 || hours > 1000)
        return -1;
    size_t rounds = (size_t)ceil(hours * 3600.0 / CIL_MICRO_ROUND_S);
    /* The environment's stream depends on the seed only, so every policy sees the
     * same loads and noise draws for a seed; the agent gets a stream of its own. */
    cil_rng env;
    cil_rng_seed(&env, seed);
    cil_micro_agent *ag = cil_micro_agent_new(policy, seed ^ 0xC1A7C0DEULL);
    if (!ag || result_alloc(res, rounds) != 0) {
        cil_micro_agent_free(ag);
        return -1;
    }
    double forecast = cil_micro_load_at(0), sum = 0;
    for (size_t r = 0; r < rounds; r++) {
        if (run_round(ag, &env, r, &forecast, res) != 0) {
            cil_micro_agent_free(ag);
            cil_micro_result_free(res);
            return -1;
        }
        sum += res->p99[r];
    }
    res->mean_p99 = sum / (double)rounds;
    cil_micro_agent_free(ag);
    return 0;
}

/* ---- the command ---- */

static int usage(const char *msg)
{
    fprintf(stderr,
            "cilantro micro: %s (usage: --policy ucb|evoalg|egreedy|resource-fair|all "
            "[--hours H] [--seed S] [--json])\n",
            msg);
    return 2;
}

typedef struct {
    int all;
    cil_micro_policy policy;
    double hours;
    uint64_t seed;
    int json;
} micro_args;

static int parse_args(int argc, char **argv, micro_args *o)
{
    int have_policy = 0;
    o->all = 0;
    o->hours = 6.0;
    o->seed = 1;
    o->json = 0;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (strcmp(k, "--json") == 0) {
            o->json = 1;
            continue;
        }
        if (strcmp(k, "--policy") && strcmp(k, "--hours") && strcmp(k, "--seed"))
            return usage("unknown argument");
        if (i + 1 >= argc)
            return usage("missing value");
        const char *v = argv[++i];
        char *end;
        errno = 0;
        if (strcmp(k, "--policy") == 0) {
            have_policy = 1;
            if (strcmp(v, "all") == 0)
                o->all = 1;
            else if (cil_micro_policy_parse(v, &o->policy) != 0)
                return usage("unknown policy");
        } else if (strcmp(k, "--hours") == 0) {
            o->hours = strtod(v, &end);
            if (errno || end == v || *end || !(o->hours > 0) || o->hours > 1000)
                return usage("--hours must be a number in (0, 1000]");
        } else {
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-')
                return usage("--seed must be a non-negative integer");
            o->seed = (uint64_t)s;
        }
    }
    return have_policy ? 0 : usage("--policy is required");
}

static void print_row(const micro_args *o, cil_micro_policy p, const cil_micro_result *r,
                      double ucb_mean)
{
    double ratio = ucb_mean / r->mean_p99;
    if (o->json) {
        printf("{\"policy\":\"%s\",\"hours\":%g,\"seed\":%llu,\"rounds\":%zu,"
               "\"mean_p99_s\":%.6f,\"ucb_over_policy\":",
               cil_micro_policy_name(p), o->hours, (unsigned long long)o->seed, r->rounds,
               r->mean_p99);
        if (isfinite(ratio))
            printf("%.4f}\n", ratio);
        else
            printf("null}\n");
    } else {
        printf("%-14s %12.4f", cil_micro_policy_name(p), r->mean_p99);
        if (isfinite(ratio))
            printf(" %18.3f\n", ratio);
        else
            printf(" %18s\n", "-");
    }
}

int cil_micro_cmd(int argc, char **argv)
{
    micro_args o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc;
    cil_micro_result res[CIL_MICRO_NPOLICIES];
    int ran[CIL_MICRO_NPOLICIES] = {0};
    for (int p = 0; p < CIL_MICRO_NPOLICIES; p++) {
        if (!o.all && p != (int)o.policy)
            continue;
        if (cil_micro_run((cil_micro_policy)p, o.hours, o.seed, &res[p]) != 0) {
            fprintf(stderr, "cilantro micro: run of %s failed\n",
                    cil_micro_policy_name((cil_micro_policy)p));
            rc = 1;
            break;
        }
        ran[p] = 1;
    }
    if (rc == 0) {
        double ucb = ran[CIL_MICRO_UCB] ? res[CIL_MICRO_UCB].mean_p99 : NAN;
        if (!o.json)
            printf("# %g h, seed %llu, %g-s rounds\n%-14s %12s %18s\n", o.hours,
                   (unsigned long long)o.seed, CIL_MICRO_ROUND_S, "policy", "mean_p99_s",
                   "ucb_over_policy");
        for (int p = 0; p < CIL_MICRO_NPOLICIES; p++)
            if (ran[p])
                print_row(&o, (cil_micro_policy)p, &res[p], ucb);
    }
    for (int p = 0; p < CIL_MICRO_NPOLICIES; p++)
        if (ran[p])
            cil_micro_result_free(&res[p]);
    return rc;
}
