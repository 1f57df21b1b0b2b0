/* common.c: confidence radius beta_t, monotone envelope, Lipschitz cap and
 * recommendation over the pieces of a learner's curve, shared by the IBTree and
 * binning estimators. */
#include "cilantro/common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

double cil_beta(double c_beta, double delta, uint64_t t)
{
    if (!isfinite(c_beta) || c_beta < 0 || !isfinite(delta) || delta <= 0 || delta >= 1)
        return NAN;
    /* k = ceil(log2(t + 1)): the smallest k with 2^k >= t + 1, in integers so that
     * powers of two are exact. */
    unsigned k = 0;
    if (t > ((uint64_t)1 << 63) - 1)
        k = 64;
    else
        while (((uint64_t)1 << k) < t + 1)
            k++;
    double arg = M_PI * M_PI * ldexp(1.0, (int)k) / (6.0 * delta);
    return c_beta * sqrt((4.0 + 2.0 * M_LN2) * log(arg));
}

void cil_monotone_envelope(size_t n, double *lower, double *upper)
{
    if (n == 0 || lower == NULL || upper == NULL)
        return;
    for (size_t i = 1; i < n; i++)
        if (lower[i] < lower[i - 1])
            lower[i] = lower[i - 1];
    for (size_t i = n - 1; i-- > 0;)
        if (upper[i] > upper[i + 1])
            upper[i] = upper[i + 1];
    for (size_t i = 0; i < n; i++) {
        if (lower[i] > upper[i]) {
            double t = lower[i];
            lower[i] = upper[i];
            upper[i] = t;
        }
    }
}

/* The cap of piece i at x. */
static double cap_of(const double *edges, const double *upper, double lipschitz, size_t i,
                     double x)
{
    return upper[i] + lipschitz * (x - edges[i + 1]);
}

void cil_pieces_anchor(size_t n, const double *edges, const double *upper, double lipschitz,
                       size_t *anchor)
{
    if (n == 0 || edges == NULL || upper == NULL || anchor == NULL)
        return;
    anchor[0] = CIL_NO_ANCHOR;
    for (size_t k = 1; k < n; k++) {
        /* at edges[k], piece k - 1's own cap is exactly upper[k - 1] */
        size_t a = anchor[k - 1];
        anchor[k] = a != CIL_NO_ANCHOR && cap_of(edges, upper, lipschitz, a, edges[k]) <
                                              upper[k - 1]
                        ? a
                        : k - 1;
    }
}

/* Upper bound inside piece k at x: the piece's bound, capped through the Lipschitz
 * condition by the pieces to its left, never below the piece's lower bound. x is
 * clamped to the piece, so that a caller's rounding in finding the piece cannot
 * break monotonicity at its edges. */
static double upper_at(const cil_pieces *c, size_t k, double x)
{
    double u = c->upper[k];
    if (c->anchor != NULL && c->lipschitz > 0 && c->anchor[k] != CIL_NO_ANCHOR) {
        x = x < c->edges[k] ? c->edges[k] : x > c->edges[k + 1] ? c->edges[k + 1] : x;
        double cap = cap_of(c->edges, c->upper, c->lipschitz, c->anchor[k], x);
        if (cap < u)
            u = cap;
        if (u < c->lower[k])
            u = c->lower[k];
    }
    return u;
}

void cil_pieces_at(const cil_pieces *c, size_t k, double x, cil_estimate *out)
{
    out->lower = c->lower[k];
    out->upper = upper_at(c, k, x);
    out->mid = 0.5 * (out->lower + out->upper);
}

/* Smallest x in piece k where the upper curve reaches g, or NAN when it does not. */
static double upper_reaches(const cil_pieces *c, size_t k, double g)
{
    double a = c->edges[k], b = c->edges[k + 1];
    if (upper_at(c, k, a) >= g)
        return a;
    if (c->upper[k] < g || upper_at(c, k, b) < g)
        return NAN; /* below g in the whole piece (the curve is continuous only when capped) */
    /* capped, continuous and non-decreasing on [a, b]: bisect to the first double */
    double lo = a, hi = b;
    while (nextafter(lo, hi) < hi) {
        double mid = lo + 0.5 * (hi - lo);
        if (mid <= lo || mid >= hi)
            break;
        if (upper_at(c, k, mid) >= g)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

int cil_pieces_recommend(const cil_pieces *c, double goal, cil_rec_mode mode, double *x)
{
    if (c == NULL || c->n == 0 || c->edges == NULL || c->lower == NULL || c->upper == NULL ||
        x == NULL || !isfinite(goal))
        return -1;
    if (mode != CIL_REC_MID && mode != CIL_REC_UPPER && mode != CIL_REC_LOWER)
        return -1;
    for (size_t k = 0; k < c->n; k++) {
        double at;
        if (mode == CIL_REC_LOWER)
            at = c->lower[k] >= goal ? c->edges[k] : NAN;
        else if (mode == CIL_REC_UPPER)
            at = upper_reaches(c, k, goal);
        else /* mid >= goal  <=>  upper >= 2 goal - lower */
            at = upper_reaches(c, k, 2 * goal - c->lower[k]);
        if (!isnan(at)) {
            *x = at;
            return 0;
        }
    }
    *x = c->edges[c->n];
    return 1;
}

void cil_errorf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *c = err; *c; c++) /* keep it one line */
        if (*c == '\n' || *c == '\r')
            *c = ' ';
}
