/* forecast.c: ARIMA(1,1,1) / ARMA(1,1) fitted by conditional least squares on a
 * grid, with a mean +- k sd fallback and an oracle mode. */
#include "cilantro/forecast.h"

#include <math.h>
#include <stdlib.h>

#define GRID_STEP 0.05
#define GRID_HALF 19 /* phi, theta in {-0.95, -0.90, ..., 0.95} */

struct cil_forecaster {
    cil_forecast_params par;
    double *ring;
    size_t head, n; /* oldest at head */
    int told;
    double told_value;
};

void cil_forecast_params_default(cil_forecast_params *p)
{
    if (p == NULL)
        return;
    p->mode = CIL_FC_ARIMA;
    p->window = 64;
    p->min_fit = 10;
    p->difference = 1;
    p->z = 1.2816;
    p->fallback_k = 1.8;
}

cil_forecaster *cil_forecaster_create(const cil_forecast_params *p)
{
    if (p == NULL ||
        (p->mode != CIL_FC_ARIMA && p->mode != CIL_FC_MEAN && p->mode != CIL_FC_ORACLE) ||
        p->window < 2 || p->window > 100000 || p->min_fit < 8 || p->min_fit > p->window ||
        (p->difference != 0 && p->difference != 1) ||
        !isfinite(p->z) || p->z < 0 || !isfinite(p->fallback_k) || p->fallback_k < 0)
        return NULL;
    cil_forecaster *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    f->ring = calloc(p->window, sizeof(double));
    if (f->ring == NULL) {
        free(f);
        return NULL;
    }
    f->par = *p;
    return f;
}

void cil_forecaster_free(cil_forecaster *f)
{
    if (f == NULL)
        return;
    free(f->ring);
    free(f);
}

int cil_forecaster_observe(cil_forecaster *f, double y)
{
    if (f == NULL || !isfinite(y))
        return -1;
    size_t w = f->par.window;
    if (f->n < w) {
        f->ring[(f->head + f->n) % w] = y;
        f->n++;
    } else {
        f->ring[f->head] = y;
        f->head = (f->head + 1) % w;
    }
    f->told = 0;
    return 0;
}

int cil_forecaster_tell_next(cil_forecaster *f, double y)
{
    if (f == NULL || !isfinite(y) || f->par.mode != CIL_FC_ORACLE)
        return -1;
    f->told = 1;
    f->told_value = y;
    return 0;
}

size_t cil_forecaster_size(const cil_forecaster *f) { return f ? f->n : 0; }

static double at(const cil_forecaster *f, size_t i)
{
    return f->ring[(f->head + i) % f->par.window];
}

static void fallback(const cil_forecaster *f, cil_forecast *out)
{
    double mean = 0, ss = 0;
    for (size_t i = 0; i < f->n; i++)
        mean += at(f, i);
    mean /= (double)f->n;
    for (size_t i = 0; i < f->n; i++) {
        double d = at(f, i) - mean;
        ss += d * d;
    }
    double sd = f->n > 1 ? sqrt(ss / (double)(f->n - 1)) : 0.0;
    out->value = mean;
    out->lower = mean - f->par.fallback_k * sd;
    out->upper = mean + f->par.fallback_k * sd;
    out->method = CIL_FC_MEAN;
    out->phi = out->theta = out->c = 0;
}

/* Conditional sum of squares of s[0..m-1] under s_t = c + phi s_{t-1} + e_t +
 * theta e_{t-1}, with e_0 = 0, summed over t = 1..m-1; the last residual goes to
 * *elast. The sum only grows, so once it exceeds bound (the best fit so far) the rest
 * cannot matter: it returns INFINITY early. The grid's answer is unchanged; most of
 * the grid is rejected after a few terms, which keeps a round's 20 forecasts well
 * under a millisecond. */
static double css(const double *s, size_t m, double c, double phi, double theta, double bound,
                  double *elast)
{
    double e = 0, sse = 0;
    for (size_t t = 1; t < m; t++) {
        e = s[t] - c - phi * s[t - 1] - theta * e;
        sse += e * e;
        if (sse > bound)
            return INFINITY;
    }
    *elast = e;
    return sse;
}

/* 0 with *out filled, -1 when the fit is not usable. */
static int fit_arma(const cil_forecaster *f, cil_forecast *out)
{
    size_t d = (size_t)f->par.difference;
    size_t m = f->n - d; /* length of the modelled series */
    double *s = malloc(m * sizeof(double));
    if (s == NULL)
        return -1;
    double mean = 0;
    for (size_t t = 0; t < m; t++) {
        s[t] = d ? at(f, t + 1) - at(f, t) : at(f, t);
        mean += s[t];
    }
    mean /= (double)m;
    double best = INFINITY, bphi = 0, btheta = 0, bc = 0, be = 0;
    for (int i = -GRID_HALF; i <= GRID_HALF; i++) {
        double phi = GRID_STEP * i;
        double c = mean * (1 - phi); /* the process mean is the sample mean */
        for (int j = -GRID_HALF; j <= GRID_HALF; j++) {
            double theta = GRID_STEP * j, e = 0;
            double sse = css(s, m, c, phi, theta, best, &e);
            if (sse < best) {
                best = sse;
                bphi = phi;
                btheta = theta;
                bc = c;
                be = e;
            }
        }
    }
    double last = s[m - 1];
    free(s);
    /* m - 1 residuals, 3 fitted parameters */
    double sd = sqrt(best / (double)(m - 1 - 3));
    double step = bc + bphi * last + btheta * be;
    double value = d ? at(f, f->n - 1) + step : step;
    if (!isfinite(sd) || !isfinite(value))
        return -1;
    out->value = value;
    out->lower = value - f->par.z * sd;
    out->upper = value + f->par.z * sd;
    out->method = CIL_FC_ARIMA;
    out->phi = bphi;
    out->theta = btheta;
    out->c = bc;
    return 0;
}

int cil_forecaster_predict(const cil_forecaster *f, cil_forecast *out)
{
    if (f == NULL || out == NULL)
        return -1;
    if (f->par.mode == CIL_FC_ORACLE && f->told) {
        out->value = out->lower = out->upper = f->told_value;
        out->method = CIL_FC_ORACLE;
        out->phi = out->theta = out->c = 0;
        return 0;
    }
    if (f->n == 0)
        return -1;
    if (f->par.mode != CIL_FC_MEAN && f->n >= f->par.min_fit && fit_arma(f, out) == 0)
        return 0;
    fallback(f, out);
    return 0;
}
