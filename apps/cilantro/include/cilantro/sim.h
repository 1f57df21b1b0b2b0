/* cilantro/sim.h: the discrete-event simulator loop (item 5 of the Cilantro issue).
 *
 * Runs one allocation policy on an environment (env.h) in virtual time: every
 * report_s each job reports noisy feedback from its true curve at its current
 * allocation and load, which goes to the policy (a cil_policy, policy.h: the
 * simulator reaches policies only through it); every round_s the policy allocates
 * integer CPUs; each round's metrics (metrics.h) are computed from the true
 * curves and averaged. Seeded and deterministic. Event order and choices:
 * docs/cilantro.md, section "Simulator loop".
 */
#ifndef CILANTRO_SIM_H
#define CILANTRO_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "cilantro/alloc.h"
#include "cilantro/env.h"
#include "cilantro/metrics.h"
#include "cilantro/policy.h"

typedef struct {
    double duration_s;     /* simulated time; rounds = max(1, floor(duration_s / round_s)) */
    uint64_t seed;         /* feedback noise and the SW optimizer's seeds */
    size_t skip_points;    /* reports each learner ignores first; default 5 */
    cil_njc_params njc;    /* default cil_njc_params_default */
    cil_sw_params sw;      /* default cil_sw_params_default; seed is mixed per round */
    size_t ew_max_moves;   /* cil_alloc_ew's max_moves; default 0 (its default) */
    double c_beta, c_tau, delta; /* IBTree constants; defaults 1e-3, 1e-5, 0.001 */
    int max_depth;         /* IBTree depth; default 12 */
} cil_sim_params;

/* duration 6 h, seed 1, the defaults above. */
void cil_sim_params_default(cil_sim_params *p);

typedef struct {
    cil_metrics mean;      /* the five metrics averaged over rounds */
    size_t rounds;
    size_t njobs;
    double *job_util;      /* njobs: each job's true utility averaged over rounds */
    double *job_alloc;     /* njobs: each job's CPUs averaged over rounds */
    cil_metrics *series;   /* rounds: each round's metrics, in time order */
    double *alloc_s;       /* rounds: wall seconds each round's allocation took (the
                            * policy's decision alone, given the round's load
                            * forecasts, CLOCK_MONOTONIC) */
    double *forecast_s;    /* rounds: wall seconds the round's load forecasts took (one
                            * ARIMA fit per job, when the round's loads arrive) */
    uint64_t reports;      /* reports produced */
    uint64_t reports_dropped; /* of those, dropped: straddled a reallocation */
    uint64_t points_fed;   /* given to learners (after the skipped first points) */
    long max_total_alloc;  /* largest sum_j a_j of any round (<= cpus) */
} cil_sim_result;

/* Simulates policy on env. params NULL: defaults. Fills *out (free its arrays with
 * cil_sim_result_free) and returns 0; returns -1 with a one-line message in err
 * (when err is non-NULL) on invalid arguments, an allocator failure or no memory. */
int cil_sim_run(const cil_env *env, cil_policy_kind policy, const cil_sim_params *params,
                cil_sim_result *out, char *err, size_t errlen);

void cil_sim_result_free(cil_sim_result *r);

/* One allocation from the true curves at the loads of time t_s (seconds into the
 * traces), for the policies that need no feedback: resource-fair, oracle-njc,
 * oracle-sw and oracle-ew (others: -1 with a message saying so). params NULL:
 * defaults (the SW optimizer's seed and iterations). Writes env->njobs CPUs into alloc
 * and returns 0; -1 with a one-line message in err on invalid arguments or failure. */
int cil_sim_alloc_once(const cil_env *env, cil_policy_kind pol, double t_s,
                       const cil_sim_params *params, long *alloc, char *err, size_t errlen);

#endif
