/* metrics.c: the Cilantro evaluation metrics. See cilantro/metrics.h. */
#include "cilantro/metrics.h"

#include <math.h>
#include <string.h>

static int ok_weights(size_t n, const double *w, double *sum)
{
    double s = 0;
    for (size_t j = 0; j < n; j++) {
        double x = w ? w[j] : 1.0;
        if (!isfinite(x) || x <= 0)
            return 0;
        s += x;
    }
    *sum = s;
    return 1;
}

static int ok_unit(size_t n, const double *u)
{
    if (!u)
        return 0;
    for (size_t j = 0; j < n; j++)
        if (!isfinite(u[j]) || u[j] < 0 || u[j] > 1)
            return 0;
    return 1;
}

static int ok_nonneg(size_t n, const double *x)
{
    if (!x)
        return 0;
    for (size_t j = 0; j < n; j++)
        if (!isfinite(x[j]) || x[j] < 0)
            return 0;
    return 1;
}

double cil_social_welfare(size_t n, const double *util, const double *weight)
{
    double wsum;
    if (n == 0 || !ok_unit(n, util) || !ok_weights(n, weight, &wsum))
        return NAN;
    double s = 0;
    for (size_t j = 0; j < n; j++)
        s += (weight ? weight[j] : 1.0) * util[j];
    return s / wsum;
}

double cil_egalitarian_welfare(size_t n, const double *util)
{
    if (n == 0 || !ok_unit(n, util))
        return NAN;
    double m = util[0];
    for (size_t j = 1; j < n; j++)
        if (util[j] < m)
            m = util[j];
    return m;
}

double cil_njc_fairness(size_t n, double R, const double *alloc, const double *demand,
                        const double *weight)
{
    double wsum;
    if (n == 0 || !isfinite(R) || R <= 0 || !ok_nonneg(n, alloc) || !ok_nonneg(n, demand) ||
        !ok_weights(n, weight, &wsum))
        return NAN;
    double worst = 0;
    for (size_t j = 0; j < n; j++) {
        double e = R * (weight ? weight[j] : 1.0) / wsum;
        double need = demand[j] < e ? demand[j] : e;
        double v = (need - alloc[j]) / e;
        if (v > worst)
            worst = v;
    }
    return 1.0 - worst;
}

double cil_njc_fairness_utility(size_t n, const double *util, const double *util_share)
{
    if (n == 0 || !ok_unit(n, util) || !ok_unit(n, util_share))
        return NAN;
    double f = 1.0;
    for (size_t j = 0; j < n; j++) {
        if (util_share[j] <= 0)
            continue;
        double r = util[j] / util_share[j];
        if (r < f)
            f = r;
    }
    return f;
}

double cil_useful_usage(size_t n, double R, const double *alloc, const double *demand)
{
    if (n == 0 || !isfinite(R) || R <= 0 || !ok_nonneg(n, alloc) || !ok_nonneg(n, demand))
        return NAN;
    double s = 0;
    for (size_t j = 0; j < n; j++)
        s += alloc[j] < demand[j] ? alloc[j] : demand[j];
    return s / R;
}

int cil_metrics_compute(size_t n, double R, const double *alloc, const double *demand,
                        const double *util, const double *util_share, const double *weight,
                        cil_metrics *out)
{
    if (!out)
        return -1;
    cil_metrics m;
    m.social_welfare = cil_social_welfare(n, util, weight);
    m.egalitarian_welfare = cil_egalitarian_welfare(n, util);
    m.njc_fairness = cil_njc_fairness(n, R, alloc, demand, weight);
    m.njc_fairness_utility = cil_njc_fairness_utility(n, util, util_share);
    m.useful_usage = cil_useful_usage(n, R, alloc, demand);
    if (isnan(m.social_welfare) || isnan(m.egalitarian_welfare) || isnan(m.njc_fairness) ||
        isnan(m.njc_fairness_utility) || isnan(m.useful_usage))
        return -1;
    *out = m;
    return 0;
}

void cil_metrics_avg_init(cil_metrics_avg *avg)
{
    if (avg)
        memset(avg, 0, sizeof *avg);
}

int cil_metrics_avg_add(cil_metrics_avg *avg, const cil_metrics *m)
{
    if (!avg || !m || !isfinite(m->social_welfare) || !isfinite(m->egalitarian_welfare) ||
        !isfinite(m->njc_fairness) || !isfinite(m->njc_fairness_utility) ||
        !isfinite(m->useful_usage))
        return -1;
    avg->sum.social_welfare += m->social_welfare;
    avg->sum.egalitarian_welfare += m->egalitarian_welfare;
    avg->sum.njc_fairness += m->njc_fairness;
    avg->sum.njc_fairness_utility += m->njc_fairness_utility;
    avg->sum.useful_usage += m->useful_usage;
    avg->rounds++;
    return 0;
}

int cil_metrics_avg_mean(const cil_metrics_avg *avg, cil_metrics *out)
{
    if (!avg || !out || avg->rounds == 0)
        return -1;
    double k = (double)avg->rounds;
    out->social_welfare = avg->sum.social_welfare / k;
    out->egalitarian_welfare = avg->sum.egalitarian_welfare / k;
    out->njc_fairness = avg->sum.njc_fairness / k;
    out->njc_fairness_utility = avg->sum.njc_fairness_utility / k;
    out->useful_usage = avg->sum.useful_usage / k;
    return 0;
}
