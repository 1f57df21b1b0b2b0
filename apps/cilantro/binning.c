/* binning.c: fixed-bin estimator with the IBTree's interval and monotone bounds. */
#include "cilantro/binning.h"

#include <math.h>
#include <stdlib.h>

struct cil_binning {
    cil_binning_params par;
    uint64_t n;
    uint64_t *cnt;
    double *s, *swp;
    /* cache, valid when !dirty */
    int dirty;
    double *edges, *lower, *upper;
    size_t *anchor;
};

void cil_binning_params_default(cil_binning_params *p, double lo, double hi, size_t nbins,
                                double lipschitz)
{
    if (p == NULL)
        return;
    p->lo = lo;
    p->hi = hi;
    p->nbins = nbins;
    p->lipschitz = lipschitz;
    p->c_beta = 1e-3;
    p->delta = 0.001;
    p->p_lo = 0.0;
    p->p_hi = 1.0;
}

static int params_ok(const cil_binning_params *p)
{
    return p != NULL && isfinite(p->lo) && isfinite(p->hi) && p->lo < p->hi &&
           p->nbins >= 1 && p->nbins <= CIL_BINNING_MAX_BINS &&
           isfinite(p->lipschitz) && p->lipschitz >= 0 &&
           isfinite(p->c_beta) && p->c_beta >= 0 &&
           isfinite(p->delta) && p->delta > 0 && p->delta < 1 &&
           isfinite(p->p_lo) && isfinite(p->p_hi) && p->p_lo < p->p_hi;
}

cil_binning *cil_binning_create(const cil_binning_params *params)
{
    if (!params_ok(params))
        return NULL;
    cil_binning *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    size_t n = params->nbins;
    b->par = *params;
    b->cnt = calloc(n, sizeof(*b->cnt));
    b->s = calloc(n, sizeof(double));
    b->swp = calloc(n, sizeof(double));
    b->edges = calloc(n + 1, sizeof(double));
    b->lower = calloc(n, sizeof(double));
    b->upper = calloc(n, sizeof(double));
    b->anchor = calloc(n, sizeof(size_t));
    if (!b->cnt || !b->s || !b->swp || !b->edges || !b->lower || !b->upper || !b->anchor) {
        cil_binning_free(b);
        return NULL;
    }
    double wd = (params->hi - params->lo) / (double)n;
    for (size_t i = 0; i < n; i++)
        b->edges[i] = params->lo + wd * (double)i;
    b->edges[n] = params->hi;
    b->dirty = 1;
    return b;
}

void cil_binning_free(cil_binning *b)
{
    if (b == NULL)
        return;
    free(b->cnt);
    free(b->s);
    free(b->swp);
    free(b->edges);
    free(b->lower);
    free(b->upper);
    free(b->anchor);
    free(b);
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static size_t bin_of(const cil_binning *b, double x)
{
    double f = (x - b->par.lo) / (b->par.hi - b->par.lo) * (double)b->par.nbins;
    if (!(f >= 0))
        return 0;
    size_t i = (size_t)f;
    return i >= b->par.nbins ? b->par.nbins - 1 : i;
}

int cil_binning_add(cil_binning *b, double x, double p, double sigma)
{
    if (b == NULL || !isfinite(x) || !isfinite(p) || !isfinite(sigma) || sigma <= 0)
        return -1;
    double w = 1.0 / (sigma * sigma);
    if (!isfinite(w))
        return -1;
    size_t i = bin_of(b, clampd(x, b->par.lo, b->par.hi));
    b->cnt[i]++;
    b->s[i] += w;
    b->swp[i] += w * p;
    b->n++;
    b->dirty = 1;
    return 0;
}

static void refresh(cil_binning *b)
{
    if (!b->dirty)
        return;
    double beta = cil_beta(b->par.c_beta, b->par.delta, b->n);
    for (size_t i = 0; i < b->par.nbins; i++) {
        if (b->cnt[i] == 0 || b->s[i] <= 0) {
            b->lower[i] = b->par.p_lo;
            b->upper[i] = b->par.p_hi;
            continue;
        }
        double m = b->swp[i] / b->s[i];
        double u = b->par.lipschitz * (b->edges[i + 1] - b->edges[i]) + beta / sqrt(b->s[i]);
        b->lower[i] = clampd(m - u, b->par.p_lo, b->par.p_hi);
        b->upper[i] = clampd(m + u, b->par.p_lo, b->par.p_hi);
    }
    cil_monotone_envelope(b->par.nbins, b->lower, b->upper);
    cil_pieces_anchor(b->par.nbins, b->edges, b->upper, b->par.lipschitz, b->anchor);
    b->dirty = 0;
}

/* The refreshed bins as a curve, with the Lipschitz cap (none when L = 0). */
static cil_pieces pieces(const cil_binning *b)
{
    cil_pieces c = {b->par.nbins, b->edges, b->lower, b->upper, b->anchor, b->par.lipschitz};
    return c;
}

int cil_binning_estimate(cil_binning *b, double x, cil_estimate *out)
{
    if (b == NULL || out == NULL || !isfinite(x))
        return -1;
    refresh(b);
    size_t i = bin_of(b, clampd(x, b->par.lo, b->par.hi));
    cil_pieces c = pieces(b);
    cil_pieces_at(&c, i, clampd(x, b->par.lo, b->par.hi), out);
    out->wmean = b->cnt[i] > 0 && b->s[i] > 0 ? b->swp[i] / b->s[i] : NAN;
    return 0;
}

int cil_binning_recommend(cil_binning *b, double goal, cil_rec_mode mode, double *x)
{
    if (b == NULL)
        return -1;
    refresh(b);
    cil_pieces c = pieces(b);
    return cil_pieces_recommend(&c, goal, mode, x);
}

uint64_t cil_binning_num_points(const cil_binning *b) { return b ? b->n : 0; }
