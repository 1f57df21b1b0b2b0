/* cilantro/metrics.h: the evaluation metrics of the Cilantro paper (item 4 of issue 6).
 *
 * For n jobs sharing R CPUs, with allocations a_j, demands d_j and utilities u_j in
 * [0, 1], one round's metrics are:
 *   social welfare       SW  = sum_j w_j u_j / sum_j w_j   (the mean when weights are NULL)
 *   egalitarian welfare  EW  = min_j u_j
 *   NJC fairness         F   = 1 - max_j max(0, min(d_j, e_j) - a_j) / e_j,
 *                              e_j = R w_j / sum_k w_k (the equal share, R/n unweighted)
 *   NJC utility form     F_u = min_j min(1, u_j / s_j), s_j the utility job j would get
 *                              at its equal share e_j; a term with s_j <= 0 counts as 1
 *   useful usage         U   = sum_j min(a_j, d_j) / R
 * cil_metrics_avg averages them over rounds (time). Formulas: docs/cilantro.md.
 */
#ifndef CILANTRO_METRICS_H
#define CILANTRO_METRICS_H

#include <stddef.h>

typedef struct {
    double social_welfare;
    double egalitarian_welfare;
    double njc_fairness;         /* demand-violation form */
    double njc_fairness_utility; /* utility-ratio form */
    double useful_usage;
} cil_metrics;

/* Each function returns NAN on invalid input: n == 0, a NULL array that is required,
 * R not finite and > 0, or an entry that is not finite, a negative allocation or
 * demand, a utility outside [0, 1], or a weight that is not finite and > 0. weight may
 * be NULL everywhere (all weights 1). */
double cil_social_welfare(size_t n, const double *util, const double *weight);
double cil_egalitarian_welfare(size_t n, const double *util);
double cil_njc_fairness(size_t n, double R, const double *alloc, const double *demand,
                        const double *weight);
/* util_share[j] (s_j) is the utility of job j at its equal share, in [0, 1]. */
double cil_njc_fairness_utility(size_t n, const double *util, const double *util_share);
double cil_useful_usage(size_t n, double R, const double *alloc, const double *demand);

/* All five at once into *out. 0, or -1 (out untouched) when any is invalid or out is
 * NULL. */
int cil_metrics_compute(size_t n, double R, const double *alloc, const double *demand,
                        const double *util, const double *util_share, const double *weight,
                        cil_metrics *out);

/* Time average of per-round metrics; each round counts once (rounds are equally long). */
typedef struct {
    cil_metrics sum;
    size_t rounds;
} cil_metrics_avg;

void cil_metrics_avg_init(cil_metrics_avg *avg);
/* Adds one round. 0, or -1 on NULL or a non-finite field. */
int cil_metrics_avg_add(cil_metrics_avg *avg, const cil_metrics *m);
/* Writes the mean over the rounds added. 0, or -1 on NULL or no rounds. */
int cil_metrics_avg_mean(const cil_metrics_avg *avg, cil_metrics *out);

#endif
