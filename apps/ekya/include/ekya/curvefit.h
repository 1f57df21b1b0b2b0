/* ekya/curvefit.h: the Optimus training-progress model Ekya's micro-profiler uses,
 *     acc(e) = 1 - 1/(b0 * e + b1) - b2,      b0, b1 >= 0,
 * with accuracy as a fraction (0..1) and e in epochs. 1 - b2 is the asymptote.
 *
 * Fit: for a fixed asymptote A = 1 - b2 above every observed accuracy,
 * 1/(A - acc) = b0 * e + b1 is linear in e; a weighted least squares with weights
 * (A - acc)^4 (the delta-method weights that make residuals count as in accuracy space)
 * and the non-negativity constraints (a 2-variable NNLS: clamp the violating one to 0
 * and refit the other) gives b0, b1. A is chosen by minimising the squared error in
 * accuracy space over a log-spaced grid of gaps A - max(acc), refined by golden-section
 * search. */
#ifndef EKYA_CURVEFIT_H
#define EKYA_CURVEFIT_H

#include <stddef.h>

typedef struct {
    double b0, b1, b2;
    double sse; /* sum of squared accuracy residuals at the fit */
} ekya_curve;

/* Fits n >= 2 points (e[i] >= 0, acc[i] in [0,1]). Returns 0, or -1 with a one-line
 * err (too few points, values out of range). */
int ekya_curve_fit(const double *e, const double *acc, int n, ekya_curve *out, char *err,
                   size_t errlen);

/* acc(e) for the fitted curve; -inf guarded: returns 0 when b0*e + b1 is not positive. */
double ekya_curve_eval(const ekya_curve *c, double e);

#endif
