/* micro.c: the hotel-reservation latency model. See cilantro/micro.h and
 * docs/cilantro_micro.md (the formulas, the call paths and the calibration). */
#include "cilantro/micro.h"

#include <math.h>
#include <string.h>

enum {
    FRONTEND, SEARCH, GEO, RATE, PROFILE, RECOMMEND, USER, RESERVE,
    MC_RATE, MC_PROFILE, MC_RESERVE,
    DB_GEO, DB_RATE, DB_PROFILE, DB_RECOMMEND, DB_USER, DB_RESERVE,
    CONSUL, JAEGER
};

static const char *const NAMES[CIL_MICRO_NSVC] = {
    "frontend", "search", "geo", "rate", "profile", "recommendation", "user",
    "reservation", "memcached-rate", "memcached-profile", "memcached-reserve",
    "mongodb-geo", "mongodb-rate", "mongodb-profile", "mongodb-recommendation",
    "mongodb-user", "mongodb-reservation", "consul", "jaeger",
};

/* Mean CPU time per visit, in units of TIME_UNIT: app logic 3-4.5, memcached 1.5, a
 * MongoDB query 7.5-9; consul (service lookup) and jaeger (span collection) are cheap.
 * TIME_UNIT is the calibration knob for the floor (~110 ms at good allocations). */
#define TIME_UNIT 1.11e-3
static const double SVC_UNITS[CIL_MICRO_NSVC] = {
    4.5, 3.0, 4.5, 4.5, 4.5, 4.5, 3.0, 4.5,
    1.5, 1.5, 1.5,
    7.5, 9.0, 9.0, 7.5, 7.5, 9.0,
    0.75, 0.75,
};
#define SVC_S(j) (SVC_UNITS[j] * TIME_UNIT)

/* Memcached miss rate: the fraction of cache lookups that go on to MongoDB. */
#define MISS 0.3

#define NTYPES 4
/* DeathStarBench's mixed workload: search 60%, recommend 39%, login 0.5%, reserve 0.5%. */
static const double MIX[NTYPES] = {0.60, 0.39, 0.005, 0.005};

/* Visits per request of each type to each service; all calls are sequential, as in the
 * Go handlers (search: nearby hotels via geo then rates, availability, profiles). */
static void visits(int type, double v[CIL_MICRO_NSVC])
{
    memset(v, 0, CIL_MICRO_NSVC * sizeof *v);
    v[FRONTEND] = v[CONSUL] = v[JAEGER] = 1;
    switch (type) {
    case 0: /* search */
        v[SEARCH] = v[GEO] = v[DB_GEO] = v[RATE] = v[MC_RATE] = 1;
        v[DB_RATE] = MISS;
        v[RESERVE] = v[MC_RESERVE] = 1;
        v[DB_RESERVE] = MISS;
        v[PROFILE] = v[MC_PROFILE] = 1;
        v[DB_PROFILE] = MISS;
        break;
    case 1: /* recommend */
        v[RECOMMEND] = v[DB_RECOMMEND] = 1;
        v[PROFILE] = v[MC_PROFILE] = 1;
        v[DB_PROFILE] = MISS;
        break;
    case 2: /* login */
        v[USER] = v[DB_USER] = 1;
        break;
    default: /* reserve: log in, then write the reservation */
        v[USER] = v[DB_USER] = 1;
        v[RESERVE] = v[MC_RESERVE] = v[DB_RESERVE] = 1;
        break;
    }
}

/* How long an overloaded queue builds its backlog before it is measured (about one
 * measurement window; see waiting()). */
#define BACKLOG_WINDOW_S 120.0

/* Found with the calibration in docs/cilantro_micro.md: 8 CPUs each give ~3 s here. */
#define NOMINAL_LOAD 1611.0

const char *cil_micro_service_name(size_t j) { return j < CIL_MICRO_NSVC ? NAMES[j] : NULL; }

double cil_micro_nominal_load(void) { return NOMINAL_LOAD; }

static const double LN100 = 4.60517018598809136804; /* ln(1 / 0.01) */

/* Erlang C: probability that an arrival waits in an M/M/c queue with offered load
 * a = lambda * s < c, via the stable Erlang B recursion. */
static double erlang_c(long c, double a)
{
    double b = 1.0;
    for (long k = 1; k <= c; k++)
        b = a * b / ((double)k + a * b);
    double rho = a / (double)c;
    return b / (1.0 - rho * (1.0 - b));
}

/* Mean and P99 of one service's waiting time with c CPUs at arrival rate lam, each
 * the smaller of two estimates:
 *  - steady state M/M/c: P(W > t) = C e^{-(c mu - lam) t}, so the mean is
 *    C / (c mu - lam) and the P99 ln(100 C) / (c mu - lam) when C > 0.01 (else 0);
 *    infinite for rho >= 1;
 *  - a queue that starts empty at the round's start and runs for a window T (the
 *    round): the backlog drifts at lam - c mu and spreads like sqrt(2 lam t) (heavy
 *    traffic: reflected Brownian motion), so P99 ~ (max(0, lam - c mu) T
 *    + z99 sqrt(2 lam T)) / (c mu), with the mean half of it (a backlog growing
 *    linearly).
 * The second keeps an overloaded queue finite and smooth in rho (about T seconds of
 * waiting per unit of overload) where the first would jump to infinity. */
static void waiting(long c, double s, double lam, double *wmean, double *w99)
{
    const double T = BACKLOG_WINDOW_S, Z99 = 2.32634787404084110089;
    double cmu = (double)c / s, a = lam * s;
    double t99 = (fmax(0.0, lam - cmu) * T + Z99 * sqrt(2.0 * lam * T)) / cmu;
    double tmean = 0.5 * t99;
    if (lam <= 0) {
        *wmean = *w99 = 0;
        return;
    }
    if (a < (double)c) {
        double cw = erlang_c(c, a), gap = cmu - lam;
        double s99 = cw > 0.01 ? log(100.0 * cw) / gap : 0.0;
        *wmean = fmin(cw / gap, tmean);
        *w99 = fmin(s99, t99);
    } else {
        *wmean = tmean;
        *w99 = t99;
    }
}

/* Mean and P99 of one service's latency (sojourn): the waiting above plus the
 * exponential service time (mean s, P99 s ln 100; adding P99s bounds the sum's P99
 * from above). Both capped at CIL_MICRO_CAP_S. */
static void service_latency(long c, double s, double lam, double *mean, double *p99)
{
    double wm, w99;
    waiting(c, s, lam, &wm, &w99);
    *mean = fmin(CIL_MICRO_CAP_S, s + wm);
    *p99 = fmin(CIL_MICRO_CAP_S, s * LN100 + w99);
}

/* P99 of the request mix from per-type P99s: each type's latency tail is taken as
 * exponential through its own P99 (P(T_k > x) = 0.01^(x / p_k)) and the mixture's
 * 0.01 quantile found by bisection on [0, max p_k]. */
static double mix_p99(const double p[NTYPES])
{
    double lo = 0, hi = 0;
    for (int k = 0; k < NTYPES; k++)
        hi = fmax(hi, p[k]);
    for (int it = 0; it < 60; it++) {
        double x = 0.5 * (lo + hi), tail = 0;
        for (int k = 0; k < NTYPES; k++)
            tail += MIX[k] * exp(-LN100 * x / p[k]);
        if (tail > 0.01)
            lo = x;
        else
            hi = x;
    }
    return hi;
}

double cil_micro_p99(const long *alloc, double load)
{
    if (!alloc || !isfinite(load) || load <= 0)
        return NAN;
    double mean[CIL_MICRO_NSVC], excess[CIL_MICRO_NSVC], v[CIL_MICRO_NSVC];
    double rate[CIL_MICRO_NSVC] = {0};
    for (int k = 0; k < NTYPES; k++) {
        visits(k, v);
        for (size_t j = 0; j < CIL_MICRO_NSVC; j++)
            rate[j] += load * MIX[k] * v[j];
    }
    for (size_t j = 0; j < CIL_MICRO_NSVC; j++) {
        if (alloc[j] < 1)
            return NAN;
        double q;
        service_latency(alloc[j], SVC_S(j), rate[j], &mean[j], &q);
        excess[j] = fmax(0.0, q - mean[j]);
    }
    /* Along a path the means add (weighted by visits) and the excesses over the mean
     * (the tails) add in quadrature, as independent variations do, so a single
     * congested service dominates with its whole P99. A service visited with
     * probability v < 1 (a cache miss) adds v * excess, not sqrt(v) * excess: that
     * keeps the P99 non-increasing in every service's CPUs (see the doc). */
    double p[NTYPES];
    for (int k = 0; k < NTYPES; k++) {
        visits(k, v);
        double m = 0, e2 = 0;
        for (size_t j = 0; j < CIL_MICRO_NSVC; j++) {
            m += v[j] * mean[j];
            e2 += (v[j] * excess[j]) * (v[j] * excess[j]);
        }
        p[k] = m + sqrt(e2);
    }
    return mix_p99(p);
}

double cil_micro_load_at(double t_s)
{
    /* +-3% around the nominal with a 4-hour period, starting at the nominal: a
     * compressed diurnal swing over a 6-hour experiment. */
    return NOMINAL_LOAD * (1.0 + 0.03 * sin(2.0 * M_PI * t_s / (4.0 * 3600.0)));
}

/* Utilization lam * s / c of service j at load. */
static double utilization(size_t j, long c, double load)
{
    double v[CIL_MICRO_NSVC], lam = 0;
    for (int k = 0; k < NTYPES; k++) {
        visits(k, v);
        lam += load * MIX[k] * v[j];
    }
    return lam * SVC_S(j) / (double)c;
}

/* Greedy phase 1: the capped P99 is flat while any queue is saturated, so first give
 * CPUs to the busiest service until every utilization is below 0.9 (or CPUs run out). */
static long unsaturate(double load, long left, long *alloc)
{
    while (left > 0) {
        size_t worst = 0;
        double u = -1;
        for (size_t j = 0; j < CIL_MICRO_NSVC; j++) {
            double uj = utilization(j, alloc[j], load);
            if (uj > u) {
                u = uj;
                worst = j;
            }
        }
        if (u < 0.9)
            break;
        alloc[worst]++;
        left--;
    }
    return left;
}

/* Moves single CPUs between pairs of services while that lowers the P99. */
static void polish(double load, long *alloc)
{
    double best = cil_micro_p99(alloc, load);
    for (int pass = 0; pass < 200; pass++) {
        int moved = 0;
        for (size_t i = 0; i < CIL_MICRO_NSVC; i++)
            for (size_t j = 0; j < CIL_MICRO_NSVC; j++) {
                if (i == j || alloc[i] <= CIL_MICRO_MIN)
                    continue;
                alloc[i]--;
                alloc[j]++;
                double p = cil_micro_p99(alloc, load);
                if (p < best - 1e-12) {
                    best = p;
                    moved = 1;
                } else {
                    alloc[i]++;
                    alloc[j]--;
                }
            }
        if (!moved)
            break;
    }
}

int cil_micro_tuned(double load, long R, long *alloc)
{
    if (!alloc || !isfinite(load) || load <= 0 || R < CIL_MICRO_NSVC * CIL_MICRO_MIN)
        return -1;
    for (size_t j = 0; j < CIL_MICRO_NSVC; j++)
        alloc[j] = CIL_MICRO_MIN;
    long left = unsaturate(load, R - CIL_MICRO_NSVC * CIL_MICRO_MIN, alloc);
    for (; left > 0; left--) {
        size_t bj = 0;
        double best = INFINITY;
        for (size_t j = 0; j < CIL_MICRO_NSVC; j++) {
            alloc[j]++;
            double p = cil_micro_p99(alloc, load);
            alloc[j]--;
            if (p < best) {
                best = p;
                bj = j;
            }
        }
        alloc[bj]++;
    }
    polish(load, alloc);
    return 0;
}
