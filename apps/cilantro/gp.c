/* gp.c: Gaussian-process regression with a Matérn 5/2 kernel. See cilantro/gp.h. */
#include "cilantro/gp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cil_gp {
    size_t dim, cap;
    size_t n;      /* points held */
    size_t next;   /* ring slot the next point goes to (oldest when full) */
    double *x;     /* cap * dim */
    double *y;     /* cap, raw targets */
    double ls, sf2, sn2;
    /* fit (valid when fitted): */
    int fitted;
    double ymean, ystd;
    double *L;     /* n x n Cholesky factor of K + sn2 I (row-major, stride n) */
    double *alpha; /* (K + sn2 I)^-1 (y - ymean) / ystd */
    double lml;
    double *kx;    /* scratch: k(x, X), cap */
};

static const double SQRT5 = 2.23606797749978969641;

double cil_matern52(double r, double ls, double sf2)
{
    if (!isfinite(r) || !isfinite(ls) || !isfinite(sf2) || r < 0 || ls <= 0 || sf2 < 0)
        return NAN;
    double u = SQRT5 * r / ls;
    return sf2 * (1.0 + u + u * u / 3.0) * exp(-u);
}

int cil_cholesky(size_t n, double *a)
{
    if (!a)
        return -1;
    for (size_t j = 0; j < n; j++) {
        double d = a[j * n + j];
        for (size_t k = 0; k < j; k++)
            d -= a[j * n + k] * a[j * n + k];
        if (!(d > 0) || !isfinite(d))
            return -1;
        double ljj = sqrt(d);
        a[j * n + j] = ljj;
        for (size_t i = j + 1; i < n; i++) {
            double s = a[i * n + j];
            for (size_t k = 0; k < j; k++)
                s -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = s / ljj;
        }
        for (size_t k = j + 1; k < n; k++)
            a[j * n + k] = 0.0;
    }
    return 0;
}

void cil_chol_forward(size_t n, const double *L, double *b)
{
    for (size_t i = 0; i < n; i++) {
        double s = b[i];
        for (size_t k = 0; k < i; k++)
            s -= L[i * n + k] * b[k];
        b[i] = s / L[i * n + i];
    }
}

void cil_chol_solve(size_t n, const double *L, double *b)
{
    cil_chol_forward(n, L, b);
    for (size_t i = n; i-- > 0;) {
        double s = b[i];
        for (size_t k = i + 1; k < n; k++)
            s -= L[k * n + i] * b[k];
        b[i] = s / L[i * n + i];
    }
}

cil_gp *cil_gp_new(size_t dim, size_t cap, char *err, size_t errlen)
{
    if (dim == 0 || cap < 2 || cap > 100000) {
        if (err && errlen)
            snprintf(err, errlen, "gp: need dim >= 1 and 2 <= cap <= 100000 (got %zu, %zu)",
                     dim, cap);
        return NULL;
    }
    cil_gp *gp = calloc(1, sizeof *gp);
    if (gp) {
        gp->x = malloc(cap * dim * sizeof *gp->x);
        gp->y = malloc(cap * sizeof *gp->y);
        gp->L = malloc(cap * cap * sizeof *gp->L);
        gp->alpha = malloc(cap * sizeof *gp->alpha);
        gp->kx = malloc(cap * sizeof *gp->kx);
    }
    if (!gp || !gp->x || !gp->y || !gp->L || !gp->alpha || !gp->kx) {
        cil_gp_free(gp);
        if (err && errlen)
            snprintf(err, errlen, "gp: out of memory");
        return NULL;
    }
    gp->dim = dim;
    gp->cap = cap;
    gp->ls = 1.0;
    gp->sf2 = 1.0;
    gp->sn2 = 0.05;
    return gp;
}

void cil_gp_free(cil_gp *gp)
{
    if (!gp)
        return;
    free(gp->x);
    free(gp->y);
    free(gp->L);
    free(gp->alpha);
    free(gp->kx);
    free(gp);
}

int cil_gp_add(cil_gp *gp, const double *x, double y)
{
    if (!gp || !x || !isfinite(y))
        return -1;
    for (size_t d = 0; d < gp->dim; d++)
        if (!isfinite(x[d]))
            return -1;
    memcpy(gp->x + gp->next * gp->dim, x, gp->dim * sizeof *x);
    gp->y[gp->next] = y;
    gp->next = (gp->next + 1) % gp->cap;
    if (gp->n < gp->cap)
        gp->n++;
    gp->fitted = 0;
    return 0;
}

size_t cil_gp_size(const cil_gp *gp) { return gp ? gp->n : 0; }

int cil_gp_set_hyper(cil_gp *gp, double ls, double sf2, double sn2)
{
    if (!gp || !(ls > 0) || !(sf2 > 0) || !(sn2 > 0) || !isfinite(ls) || !isfinite(sf2) ||
        !isfinite(sn2))
        return -1;
    gp->ls = ls;
    gp->sf2 = sf2;
    gp->sn2 = sn2;
    gp->fitted = 0;
    return 0;
}

void cil_gp_get_hyper(const cil_gp *gp, double *ls, double *sf2, double *sn2)
{
    if (ls)
        *ls = gp->ls;
    if (sf2)
        *sf2 = gp->sf2;
    if (sn2)
        *sn2 = gp->sn2;
}

static double dist(size_t dim, const double *a, const double *b)
{
    double s = 0;
    for (size_t d = 0; d < dim; d++) {
        double t = a[d] - b[d];
        s += t * t;
    }
    return sqrt(s);
}

/* Mean and sd of the raw targets; the sd falls back to 1 when the targets are (nearly)
 * constant, so standardizing never divides by zero. */
static void standardize(cil_gp *gp)
{
    double m = 0, v = 0;
    for (size_t i = 0; i < gp->n; i++)
        m += gp->y[i];
    m = gp->n ? m / (double)gp->n : 0.0;
    for (size_t i = 0; i < gp->n; i++)
        v += (gp->y[i] - m) * (gp->y[i] - m);
    double sd = gp->n > 1 ? sqrt(v / (double)(gp->n - 1)) : 0.0;
    gp->ymean = m;
    gp->ystd = sd > 1e-9 ? sd : 1.0;
}

/* Builds K + (sn2 + jitter) I into gp->L and factorizes it. */
static int factor(cil_gp *gp, double jitter)
{
    size_t n = gp->n;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j <= i; j++) {
            double r = dist(gp->dim, gp->x + i * gp->dim, gp->x + j * gp->dim);
            gp->L[i * n + j] = cil_matern52(r, gp->ls, gp->sf2);
        }
        gp->L[i * n + i] += gp->sn2 + jitter;
    }
    return cil_cholesky(n, gp->L);
}

int cil_gp_fit(cil_gp *gp)
{
    if (!gp)
        return -1;
    standardize(gp);
    size_t n = gp->n;
    int ok = -1;
    /* Near-duplicate inputs with a small noise term can make K numerically singular;
     * a little extra diagonal is the standard remedy. */
    for (double jit = 0.0; jit <= 1e-2; jit = jit == 0.0 ? 1e-8 : jit * 10) {
        if (factor(gp, jit) == 0) {
            ok = 0;
            break;
        }
    }
    if (ok != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        gp->alpha[i] = (gp->y[i] - gp->ymean) / gp->ystd;
    /* lml = -1/2 y^T alpha - sum log L_ii - n/2 log 2 pi, with y standardized. */
    double quad = 0, logdet = 0;
    for (size_t i = 0; i < n; i++)
        gp->kx[i] = gp->alpha[i];
    cil_chol_solve(n, gp->L, gp->alpha);
    for (size_t i = 0; i < n; i++) {
        quad += gp->kx[i] * gp->alpha[i];
        logdet += log(gp->L[i * n + i]);
    }
    gp->lml = -0.5 * quad - logdet - 0.5 * (double)n * log(2 * M_PI);
    gp->fitted = 1;
    return 0;
}

int cil_gp_fit_ml(cil_gp *gp, const double *lss, size_t nls, const double *sn2s, size_t nsn,
                  double *lml_out)
{
    if (!gp || !lss || !sn2s || nls == 0 || nsn == 0)
        return -1;
    if (gp->n >= 3) {
        double best = -INFINITY, bls = gp->ls, bsn = gp->sn2;
        for (size_t a = 0; a < nls; a++)
            for (size_t b = 0; b < nsn; b++) {
                if (cil_gp_set_hyper(gp, lss[a], 1.0, sn2s[b]) != 0)
                    return -1;
                if (cil_gp_fit(gp) == 0 && gp->lml > best) {
                    best = gp->lml;
                    bls = lss[a];
                    bsn = sn2s[b];
                }
            }
        cil_gp_set_hyper(gp, bls, 1.0, bsn);
    }
    if (cil_gp_fit(gp) != 0)
        return -1;
    if (lml_out)
        *lml_out = gp->lml;
    return 0;
}

double cil_gp_lml(const cil_gp *gp) { return gp && gp->fitted ? gp->lml : NAN; }

int cil_gp_predict(cil_gp *gp, const double *x, double *mean, double *sd)
{
    if (!gp || !x || !mean || !sd || !gp->fitted)
        return -1;
    size_t n = gp->n;
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        gp->kx[i] = cil_matern52(dist(gp->dim, x, gp->x + i * gp->dim), gp->ls, gp->sf2);
        m += gp->kx[i] * gp->alpha[i];
    }
    /* var = k(x,x) - |L^-1 k|^2, clamped at 0 against rounding. */
    cil_chol_forward(n, gp->L, gp->kx);
    double v = gp->sf2;
    for (size_t i = 0; i < n; i++)
        v -= gp->kx[i] * gp->kx[i];
    *mean = gp->ymean + gp->ystd * m;
    *sd = gp->ystd * sqrt(v > 0 ? v : 0);
    return 0;
}
