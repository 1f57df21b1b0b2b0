/* cilantro/baselines.h: the baselines of the Cilantro paper's cluster-sharing
 * evaluation (item 3 of the Cilantro issue), as the policy object (policy.h) runs them.
 *
 * Each baseline sees only what a scheduler sees: at the end of every round, per job,
 * the allocation it ran at, its mean reported load and its mean reported performance
 * (reward); before the next round, a forecast of each job's load. None reads the true
 * curves. Formulas and parameter choices: docs/cilantro.md, section "Baselines".
 *
 *   evoalg-sw, evoalg-ew  black-box evolutionary search on the observed welfare
 *                         (mean, resp. minimum, of the observed utilities)
 *   greedy-ew             one CPU from each of the best-off half to the worst-off half
 *   ernest                per-job performance model fitted by non-negative least
 *                         squares; demands at the SLO, water-filled
 *   quasar                collaborative filtering (non-negative matrix factorization)
 *                         of observed rewards over workload types x allocation;
 *                         demands at the SLO, water-filled
 *   minerva               shares proportional to current share / forecast normalized
 *                         performance min(1, reward / SLO) (not the utility)
 *   parties               demand +20 CPUs on an SLO violation, -5 with slack
 *   miad                  demand x2 on a violation, -1 otherwise
 * The last three but minerva feed their demands to cil_waterfill.
 */
#ifndef CILANTRO_BASELINES_H
#define CILANTRO_BASELINES_H

#include <stddef.h>
#include <stdint.h>

#include "cilantro/env.h"

typedef enum {
    CIL_BL_EVOALG_SW = 0,
    CIL_BL_EVOALG_EW,
    CIL_BL_GREEDY_EW,
    CIL_BL_ERNEST,
    CIL_BL_QUASAR,
    CIL_BL_MINERVA,
    CIL_BL_PARTIES,
    CIL_BL_MIAD,
    CIL_BL_COUNT
} cil_baseline_kind;

typedef struct cil_baseline cil_baseline;

/* A baseline of that kind for env's jobs, its random choices drawn from seed. env must
 * outlive it. NULL on an unknown kind, a NULL or empty env, or no memory. */
cil_baseline *cil_baseline_create(cil_baseline_kind kind, const cil_env *env, uint64_t seed);

/* Frees b and everything it owns; NULL is a no-op. */
void cil_baseline_free(cil_baseline *b);

/* Feedback of the round that just ended, arrays of env->njobs: the allocation each job
 * ran at, its mean reported load and mean reported performance; has[j] == 0 marks a
 * job without a usable report this round (its load and reward are then ignored).
 * The baseline copies what it keeps. 0, or -1 on NULL or no memory. */
int cil_baseline_observe(cil_baseline *b, const long *alloc, const double *load,
                         const double *reward, const int *has);

/* The allocation for the next round into alloc (env->njobs integers >= 0 summing to at
 * most env->cpus), given each job's load forecast (finite, > 0 where known; <= 0 or
 * not finite means unknown). Before any feedback every baseline returns the equal
 * split, or its documented exploration. 0, or -1 (alloc unspecified) on NULL or no
 * memory. */
int cil_baseline_allocate(cil_baseline *b, const double *load_forecast, long *alloc);

/* Non-negative least squares min ||X t - y|| subject to t >= 0 for k <= 8 features,
 * given the normal equations G = X'X (k x k, row-major) and c = X'y: solves every
 * subset of the features exactly and keeps the feasible solution of least error
 * (exact, and cheap for the small k Ernest uses). Writes theta (k) and returns 0;
 * -1 on k == 0, k > 8 or NULL. Features whose subsets are all singular get 0. */
int cil_nnls_small(size_t k, const double *G, const double *c, double *theta);

#endif
