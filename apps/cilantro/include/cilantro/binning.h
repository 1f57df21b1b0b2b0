/* cilantro/binning.h: fixed-bin estimator, the simple baseline learner.
 *
 * Splits [lo, hi] into nbins equal bins; each keeps the 1/sigma^2-weighted mean of
 * its points and the interval mean +- (L * bin width + beta_t(N) / sqrt(S)), an
 * empty bin [p_lo, p_hi]. Bounds are then made monotone and the upper bound capped
 * through L (when L > 0) as in the IBTree. Same
 * estimate/recommend interface as cilantro/ibtree.h. Not thread-safe.
 */
#ifndef CILANTRO_BINNING_H
#define CILANTRO_BINNING_H

#include <stddef.h>
#include <stdint.h>

#include "cilantro/common.h"

#define CIL_BINNING_MAX_BINS 1048576

typedef struct {
    double lo, hi;     /* domain of x; finite, lo < hi */
    size_t nbins;      /* 1..CIL_BINNING_MAX_BINS */
    double lipschitz;  /* L >= 0 (0 drops the width term) */
    double c_beta;     /* >= 0 */
    double delta;      /* in (0, 1) */
    double p_lo, p_hi; /* range of performance, p_lo < p_hi */
} cil_binning_params;

typedef struct cil_binning cil_binning;

/* Fills *p: the given domain, bin count and L, c_beta 1e-3, delta 0.001, p in [0, 1]. */
void cil_binning_params_default(cil_binning_params *p, double lo, double hi, size_t nbins,
                                double lipschitz);

/* Returns a new estimator, or NULL when params is NULL or invalid or memory runs out.
 * Free with cil_binning_free. */
cil_binning *cil_binning_create(const cil_binning_params *params);

/* Frees the estimator; NULL is a no-op. */
void cil_binning_free(cil_binning *b);

/* Adds (x, p, sigma); x is clamped to [lo, hi]. Returns 0, or -1 (nothing changed)
 * on NULL, non-finite x or p, or sigma not finite and > 0. */
int cil_binning_add(cil_binning *b, double x, double p, double sigma);

/* Writes the estimate at x (clamped) to *out; 0, or -1 on NULL or non-finite x. */
int cil_binning_estimate(cil_binning *b, double x, cil_estimate *out);

/* As cil_ibtree_recommend: 0 with the smallest x (a bin's left edge, or a point inside
 * a bin where the capped upper bound reaches the goal) where the chosen curve reaches
 * goal, 1 with *x = hi when none does, -1 on bad arguments. */
int cil_binning_recommend(cil_binning *b, double goal, cil_rec_mode mode, double *x);

/* Number of observations added. */
uint64_t cil_binning_num_points(const cil_binning *b);

#endif
