/* curvefit.c: least-squares fit of the Optimus curve (method in ekya/curvefit.h). */
#include "ekya/curvefit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#define GRID 120
#define GOLDEN_ITERS 60

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

double ekya_curve_eval(const ekya_curve *c, double e)
{
    double d = c->b0 * e + c->b1;
    if (!(d > 0))
        return 0.0;
    return 1.0 - 1.0 / d - c->b2;
}

/* For asymptote A: weighted NNLS of y = 1/(A - acc) on e; fills c and returns SSE in
 * accuracy space (HUGE_VAL when the line cannot describe the points). */
static double fit_at(double A, const double *e, const double *acc, int n, ekya_curve *c)
{
    double sw = 0, se = 0, sy = 0, see = 0, sey = 0;
    for (int i = 0; i < n; i++) {
        double gap = A - acc[i], y = 1.0 / gap, w = gap * gap * gap * gap;
        sw += w;
        se += w * e[i];
        sy += w * y;
        see += w * e[i] * e[i];
        sey += w * e[i] * y;
    }
    double det = sw * see - se * se, b0, b1;
    if (fabs(det) > 1e-300 * (sw * see + 1e-300)) {
        b0 = (sw * sey - se * sy) / det;
        b1 = (see * sy - se * sey) / det;
    } else { /* all points at one epoch: no slope information */
        b0 = -1;
        b1 = 0;
    }
    if (b0 < 0) { /* slope clamped: best constant */
        b0 = 0;
        b1 = sy / sw;
    } else if (b1 < 0) { /* intercept clamped: best line through the origin */
        b1 = 0;
        b0 = see > 0 ? sey / see : 0;
    }
    c->b0 = b0;
    c->b1 = b1;
    c->b2 = 1.0 - A;
    double sse = 0;
    for (int i = 0; i < n; i++) {
        double d = b0 * e[i] + b1;
        if (!(d > 0))
            return HUGE_VAL;
        double r = acc[i] - (A - 1.0 / d);
        sse += r * r;
    }
    c->sse = sse;
    return sse;
}

int ekya_curve_fit(const double *e, const double *acc, int n, ekya_curve *out, char *err,
                   size_t errlen)
{
    if (n < 2)
        return fail(err, errlen, "curvefit: need at least 2 points, got %d", n);
    double amax = 0;
    for (int i = 0; i < n; i++) {
        if (!(e[i] >= 0) || !(acc[i] >= 0 && acc[i] <= 1))
            return fail(err, errlen, "curvefit: point %d (e=%g, acc=%g) out of range", i, e[i], acc[i]);
        amax = acc[i] > amax ? acc[i] : amax;
    }
    /* Gap g = A - amax, searched in log space from 1e-5 to the gap leaving b2 >= 0
     * (at least 1e-3 so a perfect score still has room). */
    double lo = log(1e-5), hi = log(fmax(1.0 - amax, 1e-3));
    if (hi <= lo)
        hi = lo + 1e-6;
    ekya_curve best = {0, 0, 0, HUGE_VAL}, c;
    int best_i = 0;
    for (int i = 0; i < GRID; i++) {
        double s = fit_at(amax + exp(lo + (hi - lo) * i / (GRID - 1)), e, acc, n, &c);
        if (s < best.sse) {
            best = c;
            best_i = i;
        }
    }
    /* Golden-section refinement between the grid neighbours of the best point. */
    double a = lo + (hi - lo) * (best_i > 0 ? best_i - 1 : 0) / (GRID - 1);
    double b = lo + (hi - lo) * (best_i < GRID - 1 ? best_i + 1 : GRID - 1) / (GRID - 1);
    const double phi = 0.6180339887498949;
    for (int it = 0; it < GOLDEN_ITERS; it++) {
        double x1 = b - phi * (b - a), x2 = a + phi * (b - a);
        ekya_curve c1, c2;
        double s1 = fit_at(amax + exp(x1), e, acc, n, &c1);
        double s2 = fit_at(amax + exp(x2), e, acc, n, &c2);
        if (s1 < best.sse)
            best = c1;
        if (s2 < best.sse)
            best = c2;
        if (s1 < s2)
            b = x2;
        else
            a = x1;
    }
    if (!(best.sse < HUGE_VAL))
        return fail(err, errlen, "curvefit: no curve fits the %d points", n);
    *out = best;
    return 0;
}
