/* cilantro/alloc.h: Cilantro's allocation policies that need no simulator (item 2 of
 * issue 6), and the utility helper.
 *
 * All allocators hand out integer CPUs a_j >= 0 with sum_j a_j <= R. The welfare
 * optimizers (EW, SW) work over an abstract per-job utility-of-allocation callback, so
 * the learned policies pass upper-bound utilities from a learner and the oracles pass
 * the true curves to the same code. Formulas and choices: docs/cilantro.md.
 */
#ifndef CILANTRO_ALLOC_H
#define CILANTRO_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "cilantro/env.h"

/* ---- utilities: u = g(min(1, p / SLO)) ---- */

/* The utility kinds are env.h's cil_utility_kind (CIL_UTIL_LINEAR g(v) = v,
 * CIL_UTIL_QUADRATIC g(v) = v^2, CIL_UTIL_SQRT g(v) = sqrt(v)); one enum, so that
 * env.h and alloc.h can be included together. */
typedef cil_utility_kind cil_util_kind;

/* g(min(1, max(0, p) / slo)), in [0, 1]; NAN when p is not finite, slo is not finite
 * and > 0, or kind is unknown. */
double cil_utility(cil_util_kind kind, double p, double slo);

/* "linear", "quadratic", "sqrt" -> *kind; 0, or -1 on NULL or another name. */
int cil_util_kind_parse(const char *name, cil_util_kind *kind);

/* Estimated utility of job j (0 <= j < n) at integer allocation a (0 <= a <= R). Should
 * return a finite value; a non-finite one is treated as -infinity (worst). */
typedef double (*cil_util_fn)(void *ctx, size_t j, long a);

/* ---- max-min fairness over demands ---- */

/* Weighted water-filling with integer rounding. Demands are first rounded up to whole
 * CPUs, D_j = ceil(d_j) (a job needing 6.5 CPUs' worth meets it only with 7). Real
 * max-min fair shares x_j = min(D_j, w_j t), with the level t the largest for which
 * sum_j x_j <= R (when sum_j D_j <= R every job gets D_j and the surplus stays
 * unallocated). Then a_j = floor(x_j), and the units left, R_left = min(R, floor(sum
 * x)) - sum floor, go one each to the jobs with the largest fractional parts x_j -
 * floor(x_j) > 0 (ties to the lower index), so a_j <= D_j and sum a_j <= R.
 * demand: finite, >= 0. weight: finite, > 0, or NULL for all 1. R >= 0.
 * 0, or -1 (alloc untouched) on n == 0, NULL, invalid values or no memory. */
int cil_waterfill(size_t n, long R, const double *demand, const double *weight, long *alloc);

/* Resource-Fair: the (weighted) equal split of all R CPUs, rounded as cil_waterfill
 * (water-filling with unbounded demands). Same errors. */
int cil_resource_fair(size_t n, long R, const double *weight, long *alloc);

/* ---- Cilantro-NJC ---- */

typedef struct {
    double beta;        /* unit demand = (1-beta) * mid + beta * upper; in [0, 1] */
    long change_bound;  /* B: |a_j - prev_j| <= B per round; < 0 for none */
} cil_njc_params;

/* The paper's default: beta 0.7 (0.3 * midpoint + 0.7 * upper bound), no bound. */
void cil_njc_params_default(cil_njc_params *p);
/* The paper's variant: beta 0.75, B = 10. */
void cil_njc_params_variant(cil_njc_params *p);

/* Demand of one job: ((1 - beta) * rec_mid + beta * rec_upper) * load_upper, where
 * rec_mid and rec_upper are the learner's demand recommendations per unit load (from
 * the midpoint and the upper-bound curve) and load_upper the forecast's upper bound.
 * NAN on a non-finite or negative argument or beta outside [0, 1]. */
double cil_njc_demand(double rec_mid, double rec_upper, double load_upper, double beta);

/* Cilantro-NJC: demands by cil_njc_demand, then cil_waterfill. With a change bound
 * B >= 0 and prev non-NULL (last round's allocation, entries >= 0 summing to <= R),
 * each a_j is then clamped to [max(0, prev_j - B), prev_j + B]; if that leaves more
 * than R, units are taken one at a time from the job with the largest a_j / w_j still
 * above its lower bound; if it leaves less than R, units go one at a time to the job
 * with the smallest a_j / w_j still below both its upper bound and ceil(d_j).
 * prev NULL (first round) or B < 0: no bound. demand_out (optional) gets d_j.
 * 0, or -1 (alloc untouched) on invalid input or no memory. */
int cil_alloc_njc(size_t n, long R, const double *rec_mid, const double *rec_upper,
                  const double *load_upper, const double *weight, const cil_njc_params *p,
                  const long *prev, long *alloc, double *demand_out);

/* ---- welfare optimizers ---- */

/* Cilantro-EW (and oracle-EW with true curves): maximin hill climb. Starts from the
 * water level (the highest utility every job reaches at once within R CPUs, by
 * bisection, for utilities that grow with CPUs) or from cil_resource_fair (unweighted)
 * when that has the higher minimum, and repeatedly applies the best move of s CPUs from
 * one job to another, under the lexicographic order (minimum utility, then the minimum
 * of tie(ctx, j, a_j) when tie is non-NULL, then sum of utilities), accepting only
 * strict improvements; s starts at max(1, R / (4n)) and halves when no move improves,
 * ending after s = 1 finds nothing (or after max_moves accepted moves; 0 means
 * 100000). All R CPUs are allocated. The learned policy passes upper-bound utilities
 * as util and midpoint utilities as tie: among allocations equally good for the
 * optimistic minimum it prefers the best expected one. 0, or -1 (alloc untouched) on
 * n == 0, R < 0, NULL util/alloc or no memory. */
int cil_alloc_ew(size_t n, long R, cil_util_fn util, cil_util_fn tie, void *ctx,
                 size_t max_moves, long *alloc);

typedef struct {
    size_t iterations;  /* offspring evaluated; the paper's 4000 */
    size_t population;  /* 3..4096; default 16 */
    uint64_t seed;      /* PRNG seed (splitmix64); same seed, same answer */
} cil_sw_params;

/* iterations 4000, population 16, seed 1. */
void cil_sw_params_default(cil_sw_params *p);

/* Cilantro-SW (and oracle-SW): maximizes sum_j u_j(a_j) with a steady-state elitist
 * evolutionary optimizer. The first population holds the maximin climb's answer
 * (cil_alloc_ew), the equal split, and population - 2 random splits of R (random
 * weights, floored, remainder to random jobs). Each iteration picks a parent by a 2-way
 * tournament, mutates it by moving a random number of CPUs (1 .. max(1, R/n)) between
 * 1-3 random pairs of jobs, and replaces the worst member when the child is better.
 * Returns the best member, so its welfare is >= that of the maximin climb and of the
 * equal split. All R CPUs are allocated. Deterministic for a seed.
 * 0, or -1 (alloc untouched) on invalid input or no memory. */
int cil_alloc_sw(size_t n, long R, cil_util_fn util, void *ctx, const cil_sw_params *p,
                 long *alloc);

/* A random split of all R CPUs: uniform random weights, floored, the remainder one CPU
 * at a time to random jobs. Writes alloc (n) and returns 0; -1 on n == 0, R < 0, NULL
 * or no memory. */
int cil_alloc_random(size_t n, long R, cil_rng *st, long *alloc);

/* The evolutionary optimizers' mutation, in place: moves a random number of CPUs
 * (1 .. max(1, R/n), at most what the donor has) between 1-3 random pairs of jobs, so
 * the sum is unchanged and no entry goes negative. No-op for n < 2, R <= 0 or NULL. */
void cil_alloc_mutate(size_t n, long R, cil_rng *st, long *a);

#endif
