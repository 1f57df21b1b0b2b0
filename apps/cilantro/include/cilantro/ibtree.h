/* cilantro/ibtree.h: the interval binary tree (IBTree) estimator of Cilantro.
 *
 * Learns performance p as a non-decreasing function of x = allocation / load over
 * [lo, hi] from noisy feedback (x, p, sigma). The root covers the domain; a leaf
 * is split in two halves once it holds 3 points and enough weight. Every node keeps
 * the 1/sigma^2-weighted mean of the points in its interval and a confidence
 * interval; an estimate intersects the intervals of all nodes that contain x,
 * makes the bounds monotone and caps the upper bound through the Lipschitz
 * condition by the leaves to its left (cil_pieces). Formulas: docs/cilantro.md.
 *
 * Not thread-safe: estimate and recommend refresh a cache inside the tree.
 */
#ifndef CILANTRO_IBTREE_H
#define CILANTRO_IBTREE_H

#include <stddef.h>
#include <stdint.h>

#include "cilantro/common.h"

#define CIL_IBTREE_MAX_DEPTH 30

typedef struct {
    double lo, hi;     /* domain of x; finite, lo < hi */
    double lipschitz;  /* L > 0: |p(x) - p(y)| <= L |x - y| */
    double c_beta;     /* >= 0, paper default 1e-3 */
    double c_tau;      /* >= 0, paper default 1e-5 */
    double delta;      /* in (0, 1), paper default 0.001 */
    int max_depth;     /* 0..CIL_IBTREE_MAX_DEPTH; the root has depth 0 */
    double p_lo, p_hi; /* range of performance, p_lo < p_hi (default 0 and 1); the
                        * bounds are clipped to it and it is the no-data interval */
} cil_ibtree_params;

typedef struct cil_ibtree cil_ibtree;

/* Fills *p with the paper's defaults for the given domain and Lipschitz constant:
 * c_beta 1e-3, c_tau 1e-5, delta 0.001, max_depth 12, p in [0, 1]. */
void cil_ibtree_params_default(cil_ibtree_params *p, double lo, double hi, double lipschitz);

/* Returns a new empty tree (a copy of *params is kept), or NULL when params is NULL
 * or invalid (see the field comments) or memory runs out. Free with cil_ibtree_free. */
cil_ibtree *cil_ibtree_create(const cil_ibtree_params *params);

/* Frees the tree and all its nodes; NULL is a no-op. */
void cil_ibtree_free(cil_ibtree *t);

/* Adds one observation: performance p measured at x with standard deviation sigma
 * (weight 1/sigma^2). x outside [lo, hi] is clamped to the nearer end. May expand
 * the leaf it lands in. Returns 0, or -1 (nothing changed) when t is NULL, x or p is
 * not finite, sigma is not finite and > 0, or memory runs out. */
int cil_ibtree_add(cil_ibtree *t, double x, double p, double sigma);

/* Writes the estimate at x (clamped to [lo, hi]) to *out and returns 0; -1 when t or
 * out is NULL, x is not finite or memory runs out. */
int cil_ibtree_estimate(cil_ibtree *t, double x, cil_estimate *out);

/* The smallest x in [lo, hi] at which the curve picked by mode (midpoint, upper or
 * lower bound) reaches goal; the demand is x * load. Writes *x and returns 0; returns
 * 1 with *x = hi when the curve never reaches the goal in the domain; -1 (*x
 * untouched) on NULL, a non-finite goal, an unknown mode or no memory. For one goal,
 * the LOWER answer >= the MID answer >= the UPPER answer. */
int cil_ibtree_recommend(cil_ibtree *t, double goal, cil_rec_mode mode, double *x);

/* Number of observations added. */
uint64_t cil_ibtree_num_points(const cil_ibtree *t);

/* Number of leaves (1 for a new tree). */
size_t cil_ibtree_num_leaves(const cil_ibtree *t);

/* Depth of the deepest leaf (0 for a new tree). */
int cil_ibtree_depth(const cil_ibtree *t);

/* beta_t(N) at the current number of points N (see cil_beta). */
double cil_ibtree_beta(const cil_ibtree *t);

#endif
