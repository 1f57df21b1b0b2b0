/* common.c: confidence radius beta_t, monotone envelope and recommendation over
 * piecewise-constant bounds, shared by the IBTree and binning estimators. */
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

int cil_pieces_recommend(size_t n, const double *edges, const double *lower,
                         const double *upper, double goal, cil_rec_mode mode, double *x)
{
    if (n == 0 || edges == NULL || lower == NULL || upper == NULL || x == NULL ||
        !isfinite(goal))
        return -1;
    if (mode != CIL_REC_MID && mode != CIL_REC_UPPER && mode != CIL_REC_LOWER)
        return -1;
    for (size_t i = 0; i < n; i++) {
        double v = mode == CIL_REC_LOWER ? lower[i]
                 : mode == CIL_REC_UPPER ? upper[i]
                 : 0.5 * (lower[i] + upper[i]);
        if (v >= goal) {
            *x = edges[i];
            return 0;
        }
    }
    *x = edges[n];
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
