/* cilantro/micro.h: microservices (item 7 of the Cilantro issue).
 *
 * A synthetic model of DeathStarBench's hotelReservation application: 19 services,
 * each a multi-server (M/M/c) queue with c = its CPUs, four request types with their
 * call paths, and an end-to-end P99 latency composed from the per-service latencies
 * along each path and mixed over request types. Calibrated so that 8 CPUs per service
 * (152 CPUs) give about 3 s at the nominal load and good splits of the same 152 CPUs
 * about 110 ms. Four allocation policies learn from noisy P99 observations, one per
 * round: Cilantro's UCB over a Gaussian process (cilantro/gp.h), EvoAlg,
 * epsilon-greedy and Resource-Fair. Formulas and numbers: docs/cilantro_micro.md.
 */
#ifndef CILANTRO_MICRO_H
#define CILANTRO_MICRO_H

#include <stddef.h>
#include <stdint.h>

#define CIL_MICRO_NSVC 19   /* services */
#define CIL_MICRO_R 152     /* CPUs in the cluster */
#define CIL_MICRO_MIN 4     /* CPUs every service gets at least */
#define CIL_MICRO_CAP_S 10.0 /* latency reported for a saturated queue, seconds */
#define CIL_MICRO_ROUND_S 60.0  /* one allocation round of virtual time, seconds */

/* ---- the model (micro.c) ---- */

/* Name of service j (0 <= j < CIL_MICRO_NSVC), e.g. "frontend"; NULL otherwise.
 * Static storage. */
const char *cil_micro_service_name(size_t j);

/* The nominal load in requests/s (where 8 CPUs each give about 3 s). */
double cil_micro_nominal_load(void);

/* True end-to-end P99 latency in seconds of the application with alloc[j] CPUs for
 * service j (CIL_MICRO_NSVC entries, each >= 1) at load requests/s (> 0): per-service
 * M/M/c latencies (each capped at CIL_MICRO_CAP_S), composed along each request
 * type's path, mixed over types (no end-to-end cap). Non-increasing in every alloc[j]. NAN on a NULL alloc, an entry
 * < 1 or a load that is not finite and > 0. */
double cil_micro_p99(const long *alloc, double load);

/* Load in requests/s at virtual time t_s seconds: a slow diurnal-like sine around the
 * nominal load (the same for every run; the per-round jitter is the runner's). */
double cil_micro_load_at(double t_s);

/* A good allocation for the given load, found with the true model: every service
 * starts at CIL_MICRO_MIN and the remaining CPUs of R go one at a time to the service
 * whose extra CPU lowers the P99 most (then a pairwise-swap polish). alloc gets
 * CIL_MICRO_NSVC entries summing to R. 0, or -1 on NULL, a bad load or
 * R < CIL_MICRO_NSVC * CIL_MICRO_MIN. */
int cil_micro_tuned(double load, long R, long *alloc);

/* ---- policies (micro_policy.c) ---- */

typedef enum {
    CIL_MICRO_UCB = 0,   /* Cilantro: GP of -log P99, UCB = mean + 2.5 sd */
    CIL_MICRO_EVOALG,    /* evolutionary search on observed P99 */
    CIL_MICRO_EGREEDY,   /* epsilon-greedy over observed allocations */
    CIL_MICRO_FAIR,      /* Resource-Fair: R / NSVC each */
    CIL_MICRO_NPOLICIES
} cil_micro_policy;

/* "ucb" (also "cilantro"), "evoalg", "egreedy", "resource-fair" -> *p. 0 or -1. */
int cil_micro_policy_parse(const char *name, cil_micro_policy *p);
/* The canonical name ("ucb", ...), or NULL for an unknown value. */
const char *cil_micro_policy_name(cil_micro_policy p);

typedef struct cil_micro_agent cil_micro_agent;

/* A policy instance, deterministic for seed. NULL on an unknown policy or no memory.
 * Free with cil_micro_agent_free. */
cil_micro_agent *cil_micro_agent_new(cil_micro_policy p, uint64_t seed);
void cil_micro_agent_free(cil_micro_agent *a);

/* The allocation for the next round, given the load measured in the last round (the
 * forecast; > 0): CIL_MICRO_NSVC integers, each >= CIL_MICRO_MIN, summing to at most
 * CIL_MICRO_R. 0, or -1 on bad arguments or no memory (alloc then untouched). */
int cil_micro_agent_choose(cil_micro_agent *a, double load, long *alloc);

/* Feedback for a round: the allocation used, the load measured and the measured
 * (noisy) P99 in seconds. 0, or -1 on bad arguments. */
int cil_micro_agent_observe(cil_micro_agent *a, const long *alloc, double load, double p99);

/* ---- runs (micro_run.c) ---- */

typedef struct {
    size_t rounds;
    double mean_p99;  /* mean over rounds of the true P99, seconds */
    double *t_s;      /* rounds entries: start of each round */
    double *load;     /* the round's load, requests/s */
    double *p99;      /* the round's true P99, seconds */
    double *p99_obs;  /* what the policy observed */
} cil_micro_result;

/* Runs policy for hours of virtual time (rounds of CIL_MICRO_ROUND_S; hours > 0 and
 * at most 1000) with seed: each round the policy chooses, the load jitters around
 * cil_micro_load_at, the true P99 is recorded and a noisy one observed. Fills res (its
 * arrays are the caller's to free with cil_micro_result_free). Deterministic for a
 * seed. 0, or -1 on bad arguments or no memory (res then zeroed). */
int cil_micro_run(cil_micro_policy policy, double hours, uint64_t seed,
                  cil_micro_result *res);
void cil_micro_result_free(cil_micro_result *res);

/* `cilantro micro --policy ucb|evoalg|egreedy|resource-fair|all [--hours H] [--seed S]
 * [--json]`: argv[0] is the command name. Prints mean P99 per policy and its ratio to
 * Cilantro UCB's (when UCB ran). Returns 0, 2 on bad usage (one line on stderr), 1 on
 * a failed run. */
int cil_micro_cmd(int argc, char **argv);

#endif
