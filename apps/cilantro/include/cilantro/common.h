/* cilantro/common.h: types and helpers shared by the Cilantro learners (and the
 * library's one-line error formatting).
 *
 * The estimators (ibtree.h, binning.h) learn performance p in [p_lo, p_hi] as a
 * function of x = allocation / load over a domain [lo, hi]. Their estimates are
 * piecewise constant over a partition of the domain ("pieces"), the upper bound
 * capped through the Lipschitz condition where the data allow (cil_pieces), with
 * confidence bounds that are non-decreasing in x. Formulas: docs/cilantro.md.
 */
#ifndef CILANTRO_COMMON_H
#define CILANTRO_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* An estimate of performance at one x. lower <= mid <= upper, and each of the three
 * is non-decreasing in x. wmean is the weighted mean of the data in the finest
 * piece (IBTree: deepest node) around x that holds data, NAN when there is none;
 * it is informative only and need not be monotone nor lie in [lower, upper]. */
typedef struct {
    double lower;
    double mid;   /* (lower + upper) / 2 */
    double upper;
    double wmean;
} cil_estimate;

/* Which curve a demand recommendation reads: the smallest x at which the chosen
 * curve reaches the goal. LOWER is the most conservative (largest x), UPPER the
 * most optimistic (smallest x). */
typedef enum {
    CIL_REC_MID = 0,
    CIL_REC_UPPER = 1,
    CIL_REC_LOWER = 2,
} cil_rec_mode;

/* beta_t(t) = c_beta * sqrt((4 + 2 ln 2) * ln(pi^2 * 2^ceil(log2(t+1)) / (6 delta))).
 * Returns the value, or NAN when c_beta < 0, delta is not in (0, 1) or an argument
 * is not finite. */
double cil_beta(double c_beta, double delta, uint64_t t);

/* Makes n pieces' bounds monotone, in place: lower[i] becomes the max of lower[0..i]
 * (a non-decreasing truth is at least every bound to its left), upper[i] the min of
 * upper[i..n-1]; then, where the two cross, lower takes the smaller and upper the
 * larger of them, which keeps both non-decreasing. Arrays are the caller's. */
void cil_monotone_envelope(size_t n, double *lower, double *upper);

/* A learner's curve over n pieces: piece i spans [edges[i], edges[i+1]) (edges has n + 1
 * entries) with bounds lower[i] <= upper[i], monotone as cil_monotone_envelope leaves
 * them. With lipschitz > 0 and anchor non-NULL (from cil_pieces_anchor), the upper bound
 * also uses the Lipschitz condition |p(x) - p(y)| <= L |x - y|: a piece's upper bound
 * holds at its right edge, so it caps every x to the right by upper[i] + L (x -
 * edges[i + 1]). Inside piece k the upper bound is then
 *     max(lower[k], min(upper[k], cap)),  cap = upper[i] + L (x - edges[i + 1]),
 * with i = anchor[k] the piece to the left whose cap is lowest (no cap when anchor[k] is
 * CIL_NO_ANCHOR). The result is continuous where the cap binds and non-decreasing in x,
 * exactly also in floating point; where noise makes the cap cross lower[k], upper takes
 * the larger, as in cil_monotone_envelope. Without anchors the bounds are piecewise
 * constant. The arrays are the caller's. */
typedef struct {
    size_t n;
    const double *edges, *lower, *upper;
    const size_t *anchor; /* n entries, or NULL */
    double lipschitz;     /* L >= 0; 0 disables the cap */
} cil_pieces;

#define CIL_NO_ANCHOR ((size_t)-1)

/* Fills anchor[k] for n pieces: the piece i < k whose cap upper[i] + L (x - edges[i + 1])
 * is lowest on piece k (CIL_NO_ANCHOR for k = 0, or when no cap is below upper[k - 1]
 * at edges[k]). Decided at each left edge with the same arithmetic as the evaluation,
 * so that the capped curve stays exactly monotone. */
void cil_pieces_anchor(size_t n, const double *edges, const double *upper, double lipschitz,
                       size_t *anchor);

/* The bounds at x inside piece k (k < c->n; x is not checked against the piece): writes
 * out->lower, out->upper and out->mid = their mean; out->wmean is left alone. */
void cil_pieces_at(const cil_pieces *c, size_t k, double x, cil_estimate *out);

/* Smallest x at which the curve picked by mode reaches goal (mid = (lower + upper) / 2).
 * The answer is a piece's left edge, or, where the Lipschitz cap binds, the point inside
 * a piece where the capped curve reaches the goal. Writes *x and returns 0; returns 1
 * with *x = edges[n] when no piece reaches the goal; -1 (and *x untouched) on n == 0, a
 * NULL pointer, a non-finite goal or an unknown mode. Nothing is allocated. */
int cil_pieces_recommend(const cil_pieces *c, double goal, cil_rec_mode mode, double *x);

/* Formats a one-line error message into err (errlen bytes; nothing when err is NULL or
 * errlen 0): printf-style, newlines replaced by spaces, truncated to fit. The library's
 * functions report their errors this way. */
void cil_errorf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
