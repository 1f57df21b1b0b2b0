/* cilantro/policy.h: one allocation policy as an object, fed feedback as it comes and
 * asked for an allocation once per round. The simulator (sim.h) drives every policy
 * through it; a live controller receiving feedback over the network can drive the same
 * object. Semantics: docs/cilantro.md, section "Policy object".
 *
 *   cil_policy *p = cil_policy_new("cilantro-ew", env, &opts, err, sizeof err);
 *   ... cil_policy_report(p, j, load, alloc, reward, sigma, span_s);  (any number)
 *   ... cil_policy_round(p, now, alloc, err, sizeof err);             (each round)
 *   cil_policy_free(p);
 */
#ifndef CILANTRO_POLICY_H
#define CILANTRO_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "cilantro/alloc.h"
#include "cilantro/env.h"

/* The policies by kind, for listing and parsing; cil_policy_new takes the name. */
typedef enum {
    CIL_POL_RESOURCE_FAIR = 0,
    CIL_POL_CILANTRO_NJC,
    CIL_POL_CILANTRO_SW,
    CIL_POL_CILANTRO_EW,
    CIL_POL_ORACLE_NJC,
    CIL_POL_ORACLE_SW,
    CIL_POL_ORACLE_EW,
    /* the baselines (baselines.h), in cil_baseline_kind order */
    CIL_POL_EVOALG_SW,
    CIL_POL_EVOALG_EW,
    CIL_POL_GREEDY_EW,
    CIL_POL_ERNEST,
    CIL_POL_QUASAR,
    CIL_POL_MINERVA,
    CIL_POL_PARTIES,
    CIL_POL_MIAD,
    CIL_POL_COUNT
} cil_policy_kind;

/* "resource-fair", "cilantro-njc", ..., "oracle-ew", "evoalg-sw", ..., "miad"; NULL
 * for an unknown value. */
const char *cil_policy_name(cil_policy_kind k);
/* The inverse; 0, or -1 on NULL or an unknown name. */
int cil_policy_parse(const char *name, cil_policy_kind *k);

typedef struct {
    double unit;           /* allocation unit (resource per step); default 1 (whole
                            * CPUs). Allocations are integer multiples of it, and
                            * floor(env->cpus / unit) units are shared. The baselines
                            * count in whole CPUs and need unit 1. */
    uint64_t seed;         /* the SW optimizer's seeds and the baselines' draws */
    size_t skip_points;    /* feedback points each learner ignores first; default 5 */
    cil_njc_params njc;    /* default cil_njc_params_default */
    cil_sw_params sw;      /* default cil_sw_params_default; seed is mixed per round */
    size_t ew_max_moves;   /* cil_alloc_ew's max_moves; default 0 (its default) */
    double c_beta, c_tau, delta; /* IBTree constants; defaults 1e-3, 1e-5, 0.001 */
    int max_depth;         /* IBTree depth; default 12 */
    double plan_span_s;    /* oracles: plan for the true mean load over [now, now +
                            * plan_span_s) (the round); 0: the load at now. Default 0. */
} cil_policy_opts;

/* unit 1, seed 1, the defaults above. */
void cil_policy_opts_default(cil_policy_opts *o);

typedef struct cil_policy cil_policy;

/* A policy called name for the tenants of env: env->jobs (their weight, SLO and
 * utility; their curve gives the learner's domain and Quasar's workload type, and only
 * the oracles read the curve itself and the true load) sharing env->cpus. env must
 * outlive the policy. opts NULL: defaults. NULL with a one-line message in err on an
 * unknown name, invalid arguments or no memory. */
cil_policy *cil_policy_new(const char *name, const cil_env *env, const cil_policy_opts *opts,
                           char *err, size_t errlen);

/* Feedback of job j over the last time_span seconds: its mean load, the allocation it
 * ran at (resource, not units), its performance reward with standard deviation sigma.
 * A report whose performance is not usable (it straddles a reallocation, say) passes
 * reward NAN: its load still counts. The load reported during a round is what the
 * load forecasters see; the Cilantro learners take (alloc / load, reward, sigma) after
 * their first skip_points; the baselines the round's mean reward and load. 0, or -1 on
 * invalid arguments or a learner failure. */
int cil_policy_report(cil_policy *p, int job, double load, double alloc, double reward,
                      double sigma, double time_span);

/* The allocation for the round starting at now (seconds): feeds the round's feedback
 * to the forecasters and baselines, then decides. Writes env->njobs resource amounts
 * (multiples of the unit, summing to at most env->cpus) into alloc_out and returns 0;
 * -1 with a one-line message in err on failure (alloc_out unspecified). */
int cil_policy_round(cil_policy *p, double now, double *alloc_out, char *err, size_t errlen);

/* Counters and timings of a policy: points given to the learners so far, and the wall
 * seconds of the last round's load forecasts and of its decision (CLOCK_MONOTONIC). */
typedef struct {
    uint64_t points_fed;
    size_t rounds;
    double forecast_s, decide_s;
} cil_policy_stats;
void cil_policy_get_stats(const cil_policy *p, cil_policy_stats *st);

/* Frees p; NULL is a no-op. */
void cil_policy_free(cil_policy *p);

/* The learner's domain [lo, hi] of x = CPUs per unit load, its Lipschitz constant
 * and its performance range [p_lo, p_hi] for job j of env (rules in
 * docs/cilantro.md, "Learners"). 0, or -1 on NULL. */
int cil_policy_learner_domain(const cil_env *env, size_t j, double *lo, double *hi,
                              double *lip, double *p_hi);

#endif
