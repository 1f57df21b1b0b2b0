/* alloc.c: Cilantro's allocators (water-filling, NJC, EW, SW). See cilantro/alloc.h. */
#include "cilantro/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_JOBS ((size_t)1 << 20)
#define WORST (-1e300)

/* ---- utilities ---- */

double cil_utility(cil_util_kind kind, double p, double slo)
{
    if (!isfinite(p) || !isfinite(slo) || slo <= 0)
        return NAN;
    double v = p <= 0 ? 0 : p / slo;
    if (v > 1)
        v = 1;
    switch (kind) {
    case CIL_UTIL_LINEAR:
        return v;
    case CIL_UTIL_QUADRATIC:
        return v * v;
    case CIL_UTIL_SQRT:
        return sqrt(v);
    }
    return NAN;
}

int cil_util_kind_parse(const char *name, cil_util_kind *kind)
{
    if (!name || !kind)
        return -1;
    if (strcmp(name, "linear") == 0)
        *kind = CIL_UTIL_LINEAR;
    else if (strcmp(name, "quadratic") == 0)
        *kind = CIL_UTIL_QUADRATIC;
    else if (strcmp(name, "sqrt") == 0)
        *kind = CIL_UTIL_SQRT;
    else
        return -1;
    return 0;
}

/* ---- water-filling ---- */

typedef struct {
    double key;
    size_t idx;
} keyed;

static int cmp_key_asc(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->key < b->key)
        return -1;
    if (a->key > b->key)
        return 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_key_desc(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (a->key > b->key)
        return -1;
    if (a->key < b->key)
        return 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int ok_weight(size_t n, const double *w)
{
    if (!w)
        return 1;
    for (size_t j = 0; j < n; j++)
        if (!isfinite(w[j]) || w[j] <= 0)
            return 0;
    return 1;
}

/* A demand in whole CPUs: a job that needs 6.5 CPUs' worth meets it only with 7, and
 * rounding it down would cut it below its demand before any sharing. The tolerance
 * absorbs rounding error in demands computed as x * load. */
static double whole_cpus(double d)
{
    return ceil(d - 1e-9 * (d > 1 ? d : 1));
}

int cil_waterfill(size_t n, long R, const double *demand_in, const double *weight, long *alloc)
{
    if (n == 0 || n > MAX_JOBS || R < 0 || !demand_in || !alloc || !ok_weight(n, weight))
        return -1;
    for (size_t j = 0; j < n; j++)
        if (!isfinite(demand_in[j]) || demand_in[j] < 0)
            return -1;
    double *demand = malloc(n * sizeof *demand);
    double *x = malloc(n * sizeof *x);
    keyed *k = malloc(n * sizeof *k);
    if (!demand || !x || !k) {
        free(demand);
        free(x);
        free(k);
        return -1;
    }
    double dsum = 0;
    for (size_t j = 0; j < n; j++) {
        demand[j] = whole_cpus(demand_in[j]);
        dsum += demand[j];
    }
    if (dsum <= (double)R) {
        memcpy(x, demand, n * sizeof *x);
    } else {
        double wrem = 0;
        for (size_t j = 0; j < n; j++) {
            double w = weight ? weight[j] : 1.0;
            k[j].key = demand[j] / w;
            k[j].idx = j;
            wrem += w;
        }
        qsort(k, n, sizeof *k, cmp_key_asc);
        double rrem = (double)R;
        size_t i = 0;
        for (; i < n; i++) {
            size_t j = k[i].idx;
            double w = weight ? weight[j] : 1.0;
            if (k[i].key * wrem <= rrem) { /* d_j / w_j <= level rrem / wrem */
                x[j] = demand[j];
                rrem -= demand[j];
                wrem -= w;
                if (rrem < 0)
                    rrem = 0;
            } else {
                break;
            }
        }
        double level = wrem > 0 ? rrem / wrem : 0;
        for (; i < n; i++) {
            size_t j = k[i].idx;
            x[j] = (weight ? weight[j] : 1.0) * level;
        }
    }
    /* integer rounding: floors, then one unit each by largest fractional part */
    double xsum = 0;
    long fsum = 0;
    for (size_t j = 0; j < n; j++) {
        double f = floor(x[j]);
        if (f > (double)R)
            f = (double)R;
        xsum += x[j];
        fsum += (long)f;
        k[j].key = x[j] - f;
        k[j].idx = j;
        x[j] = f;
    }
    double tgt = floor(xsum + 1e-9);
    long target = tgt > (double)R ? R : (long)tgt;
    long left = target - fsum;
    qsort(k, n, sizeof *k, cmp_key_desc);
    for (size_t i = 0; i < n; i++)
        alloc[i] = (long)x[i];
    for (size_t i = 0; i < n && left > 0; i++) {
        if (k[i].key <= 1e-12)
            break;
        alloc[k[i].idx]++;
        left--;
    }
    free(demand);
    free(x);
    free(k);
    return 0;
}

int cil_resource_fair(size_t n, long R, const double *weight, long *alloc)
{
    if (n == 0 || n > MAX_JOBS)
        return -1;
    double *d = malloc(n * sizeof *d);
    if (!d)
        return -1;
    for (size_t j = 0; j < n; j++)
        d[j] = (double)R + 1.0;
    int rc = cil_waterfill(n, R, d, weight, alloc);
    free(d);
    return rc;
}

/* ---- NJC ---- */

void cil_njc_params_default(cil_njc_params *p)
{
    if (p) {
        p->beta = 0.7;
        p->change_bound = -1;
    }
}

void cil_njc_params_variant(cil_njc_params *p)
{
    if (p) {
        p->beta = 0.75;
        p->change_bound = 10;
    }
}

double cil_njc_demand(double rec_mid, double rec_upper, double load_upper, double beta)
{
    if (!isfinite(rec_mid) || !isfinite(rec_upper) || !isfinite(load_upper) ||
        !isfinite(beta) || rec_mid < 0 || rec_upper < 0 || load_upper < 0 || beta < 0 ||
        beta > 1)
        return NAN;
    return ((1.0 - beta) * rec_mid + beta * rec_upper) * load_upper;
}

int cil_alloc_njc(size_t n, long R, const double *rec_mid, const double *rec_upper,
                  const double *load_upper, const double *weight, const cil_njc_params *p,
                  const long *prev, long *alloc, double *demand_out)
{
    if (n == 0 || n > MAX_JOBS || R < 0 || !rec_mid || !rec_upper || !load_upper || !p ||
        !alloc || !ok_weight(n, weight))
        return -1;
    long B = p->change_bound;
    int bounded = B >= 0 && prev;
    if (bounded) {
        long ps = 0;
        for (size_t j = 0; j < n; j++) {
            if (prev[j] < 0 || prev[j] > R)
                return -1;
            ps += prev[j];
        }
        if (ps > R)
            return -1;
    }
    double *d = malloc(n * sizeof *d);
    long *a = malloc(n * sizeof *a);
    if (!d || !a) {
        free(d);
        free(a);
        return -1;
    }
    int rc = -1;
    for (size_t j = 0; j < n; j++) {
        d[j] = cil_njc_demand(rec_mid[j], rec_upper[j], load_upper[j], p->beta);
        if (isnan(d[j]))
            goto out;
    }
    if (cil_waterfill(n, R, d, weight, a) != 0)
        goto out;
    if (bounded) {
        long sum = 0;
        for (size_t j = 0; j < n; j++) {
            long lo = prev[j] > B ? prev[j] - B : 0, hi = prev[j] + B;
            if (a[j] < lo)
                a[j] = lo;
            if (a[j] > hi)
                a[j] = hi;
            sum += a[j];
        }
        while (sum > R) { /* take from the best-off job above its lower bound */
            size_t best = n;
            double bk = 0;
            for (size_t j = 0; j < n; j++) {
                long lo = prev[j] > B ? prev[j] - B : 0;
                double key = (double)a[j] / (weight ? weight[j] : 1.0);
                if (a[j] > lo && (best == n || key > bk)) {
                    best = j;
                    bk = key;
                }
            }
            if (best == n)
                goto out; /* cannot happen: sum of lower bounds <= sum prev <= R */
            a[best]--;
            sum--;
        }
        while (sum < R) { /* give to the worst-off job with room and unmet demand */
            size_t best = n;
            double bk = 0;
            for (size_t j = 0; j < n; j++) {
                double cap = ceil(d[j]);
                double hi = (double)(prev[j] + B);
                if (hi < cap)
                    cap = hi;
                double key = (double)a[j] / (weight ? weight[j] : 1.0);
                if ((double)a[j] < cap && (best == n || key < bk)) {
                    best = j;
                    bk = key;
                }
            }
            if (best == n)
                break;
            a[best]++;
            sum++;
        }
    }
    memcpy(alloc, a, n * sizeof *a);
    if (demand_out)
        memcpy(demand_out, d, n * sizeof *d);
    rc = 0;
out:
    free(d);
    free(a);
    return rc;
}

/* ---- welfare optimizers ---- */

static double call_util(cil_util_fn util, void *ctx, size_t j, long a)
{
    double u = util(ctx, j, a);
    return isfinite(u) ? u : WORST;
}

/* The fewest CPUs that give job j at least utility tau (R + 1 when none up to R does).
 * Utilities are meant to grow with CPUs: a binary search, checked, with a scan when
 * the curve is not monotone there. */
static long cpus_for(cil_util_fn util, void *ctx, size_t j, long R, double tau)
{
    long lo = 0, hi = R;
    if (call_util(util, ctx, j, R) < tau)
        return R + 1;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (call_util(util, ctx, j, mid) >= tau)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo == 0 || call_util(util, ctx, j, lo - 1) < tau)
        return lo;
    for (long a = 0; a < lo; a++)
        if (call_util(util, ctx, j, a) >= tau)
            return a;
    return lo;
}

/* Adds extra CPUs to a in proportion to a (equally when a is all zero), by largest
 * remainder, ties to the lower index. When every job is level, spare CPUs spread like
 * this keep each job's headroom alike, where handing them to one job would idle them;
 * under optimistic (upper-bound) utilities that headroom is also where the learners
 * explore. */
static void spread_proportionally(size_t n, long extra, long *a)
{
    long total = 0, given = 0;
    for (size_t j = 0; j < n; j++)
        total += a[j];
    for (size_t j = 0; j < n && extra > 0; j++) {
        long add = total > 0 ? (long)((double)extra * (double)a[j] / (double)total)
                             : extra / (long)n;
        a[j] += add;
        given += add;
    }
    for (size_t j = 0; given < extra; j = (j + 1) % n, given++)
        a[j]++;
}

/* The water level: the highest utility tau every job can reach at once within R CPUs,
 * found by bisection on tau, and the allocation that reaches it (the rest of R, if any,
 * to the worst-off jobs one CPU at a time). A hill climb that starts at the equal split
 * stalls on flat stretches of measured curves; this start does not. 0, or -1. */
static int water_level(size_t n, long R, cil_util_fn util, void *ctx, long *a)
{
    double lo = WORST, hi = 0;
    long *need = malloc(n * sizeof *need);
    if (!need)
        return -1;
    for (size_t j = 0; j < n; j++) {
        double top = call_util(util, ctx, j, R);
        hi = j == 0 || top > hi ? top : hi;
        double bottom = call_util(util, ctx, j, 0);
        lo = j == 0 || bottom < lo ? bottom : lo;
    }
    for (size_t j = 0; j < n; j++)
        a[j] = 0;
    for (int it = 0; it < 50 && hi > lo; it++) {
        double tau = lo + (hi - lo) / 2;
        long sum = 0;
        for (size_t j = 0; j < n && sum <= R; j++)
            sum += need[j] = cpus_for(util, ctx, j, R, tau);
        if (sum <= R) {
            lo = tau;
            memcpy(a, need, n * sizeof *a);
        } else {
            hi = tau;
        }
    }
    long used = 0;
    for (size_t j = 0; j < n; j++)
        used += a[j];
    for (; used < R; used++) {
        size_t worst = 0, best = 0;
        for (size_t j = 1; j < n; j++) {
            if (call_util(util, ctx, j, a[j]) < call_util(util, ctx, worst, a[worst]))
                worst = j;
            if (call_util(util, ctx, j, a[j]) > call_util(util, ctx, best, a[best]))
                best = j;
        }
        if (call_util(util, ctx, worst, a[worst]) >= call_util(util, ctx, best, a[best]))
            break; /* everyone level (typically all saturated) */
        a[worst]++;
    }
    spread_proportionally(n, R - used, a);
    free(need);
    return 0;
}

/* Minimum utility of an allocation. */
static double min_util(size_t n, const long *a, cil_util_fn util, void *ctx)
{
    double m = 0;
    for (size_t j = 0; j < n; j++) {
        double u = call_util(util, ctx, j, a[j]);
        m = j == 0 || u < m ? u : m;
    }
    return m;
}

/* One curve's values around the climb's current point a: at[j] = f(j, a_j), up[j] =
 * f(j, a_j + s), down[j] = f(j, a_j - s) (WORST off the range), the sum of at[] and
 * the indices of its three smallest entries (a move changes two jobs, so the third
 * smallest is the minimum of the rest in the worst case). */
typedef struct {
    cil_util_fn f;
    double *at, *up, *down;
    double sum;
    size_t low[3];
} climb_curve;

static int curve_init(climb_curve *c, cil_util_fn f, size_t n)
{
    c->f = f;
    c->at = malloc(n * sizeof *c->at);
    c->up = malloc(n * sizeof *c->up);
    c->down = malloc(n * sizeof *c->down);
    return c->at && c->up && c->down ? 0 : -1;
}

static void curve_free(climb_curve *c)
{
    free(c->at);
    free(c->up);
    free(c->down);
}

/* Evaluates the curve around a for step s. */
static void curve_look(climb_curve *c, void *ctx, size_t n, long R, const long *a, long s)
{
    c->sum = 0;
    for (int q = 0; q < 3; q++)
        c->low[q] = n;
    for (size_t j = 0; j < n; j++) {
        c->at[j] = call_util(c->f, ctx, j, a[j]);
        c->up[j] = a[j] + s <= R ? call_util(c->f, ctx, j, a[j] + s) : WORST;
        c->down[j] = a[j] >= s ? call_util(c->f, ctx, j, a[j] - s) : WORST;
        c->sum += c->at[j];
        for (int q = 0; q < 3; q++) {
            if (c->low[q] == n || c->at[j] < c->at[c->low[q]]) {
                for (int r = 2; r > q; r--)
                    c->low[r] = c->low[r - 1];
                c->low[q] = j;
                break;
            }
        }
    }
}

/* The curve's minimum over jobs after s CPUs move from k to j. */
static double curve_min_after(const climb_curve *c, size_t n, size_t k, size_t j)
{
    double m = c->down[k] < c->up[j] ? c->down[k] : c->up[j];
    for (int q = 0; q < 3; q++) {
        size_t i = c->low[q];
        if (i != n && i != j && i != k) {
            if (c->at[i] < m)
                m = c->at[i];
            break;
        }
    }
    return m;
}

/* The climb's order on candidate points: minimum utility, then the tie curve's
 * minimum (when there is one), then the sum of utilities. */
typedef struct {
    double min, tie_min, sum;
} climb_score;

static int score_better(climb_score x, climb_score y)
{
    if (x.min != y.min)
        return x.min > y.min;
    if (x.tie_min != y.tie_min)
        return x.tie_min > y.tie_min;
    return x.sum > y.sum;
}

/* The start: the water level when it beats the equal split (it always ties or beats
 * it for monotone utilities; the check keeps the equal split otherwise). */
static int ew_start(size_t n, long R, cil_util_fn util, void *ctx, long *a)
{
    if (cil_resource_fair(n, R, NULL, a) != 0)
        return -1;
    long *level = malloc(n * sizeof *level);
    if (!level)
        return -1;
    if (water_level(n, R, util, ctx, level) == 0 &&
        min_util(n, level, util, ctx) > min_util(n, a, util, ctx))
        memcpy(a, level, n * sizeof *a);
    free(level);
    return 0;
}

int cil_alloc_ew(size_t n, long R, cil_util_fn util, cil_util_fn tie, void *ctx,
                 size_t max_moves, long *alloc)
{
    if (n == 0 || n > MAX_JOBS || R < 0 || !util || !alloc)
        return -1;
    if (max_moves == 0)
        max_moves = 100000;
    long *a = malloc(n * sizeof *a);
    climb_curve cu = {0}, ct = {0};
    int rc = -1;
    if (!a || curve_init(&cu, util, n) != 0 || (tie && curve_init(&ct, tie, n) != 0) ||
        ew_start(n, R, util, ctx, a) != 0)
        goto out;
    long s = R / (4 * (long)n);
    if (s < 1)
        s = 1;
    size_t moves = 0;
    while (n > 1 && R > 0 && moves < max_moves) {
        curve_look(&cu, ctx, n, R, a, s);
        if (tie)
            curve_look(&ct, ctx, n, R, a, s);
        climb_score best = {cu.at[cu.low[0]], tie ? ct.at[ct.low[0]] : 0, cu.sum};
        size_t bk = n, bj = n;
        for (size_t k = 0; k < n; k++) {
            if (a[k] < s)
                continue;
            for (size_t j = 0; j < n; j++) {
                if (j == k)
                    continue;
                climb_score c = {curve_min_after(&cu, n, k, j),
                                 tie ? curve_min_after(&ct, n, k, j) : 0,
                                 cu.sum - cu.at[k] - cu.at[j] + cu.down[k] + cu.up[j]};
                if (score_better(c, best)) {
                    best = c;
                    bk = k;
                    bj = j;
                }
            }
        }
        if (bk == n) {
            if (s == 1)
                break;
            s /= 2;
            continue;
        }
        a[bk] -= s;
        a[bj] += s;
        moves++;
    }
    memcpy(alloc, a, n * sizeof *a);
    rc = 0;
out:
    free(a);
    curve_free(&cu);
    curve_free(&ct);
    return rc;
}

void cil_sw_params_default(cil_sw_params *p)
{
    if (p) {
        p->iterations = 4000;
        p->population = 16;
        p->seed = 1;
    }
}

/* uniform integer in [0, m), m >= 1: the library's one PRNG (env.h) */
static uint64_t sm_below(cil_rng *st, uint64_t m) { return cil_rng_next(st) % m; }

static double welfare(size_t n, const long *a, cil_util_fn util, void *ctx)
{
    double s = 0;
    for (size_t j = 0; j < n; j++)
        s += call_util(util, ctx, j, a[j]);
    return s;
}

/* A random split of all R CPUs: random weights, floors, the remainder at random. */
static void random_split(size_t n, long R, cil_rng *st, double *w, long *a)
{
    double ws = 0;
    for (size_t j = 0; j < n; j++) {
        w[j] = cil_rng_uniform(st) + 1e-9;
        ws += w[j];
    }
    long sum = 0;
    for (size_t j = 0; j < n; j++) {
        a[j] = (long)floor((double)R * w[j] / ws);
        if (a[j] > R - sum)
            a[j] = R - sum;
        sum += a[j];
    }
    while (sum < R) {
        a[sm_below(st, n)]++;
        sum++;
    }
}

int cil_alloc_random(size_t n, long R, cil_rng *st, long *alloc)
{
    if (n == 0 || R < 0 || !st || !alloc)
        return -1;
    double *w = malloc(n * sizeof *w);
    if (!w)
        return -1;
    random_split(n, R, st, w, alloc);
    free(w);
    return 0;
}

void cil_alloc_mutate(size_t n, long R, cil_rng *st, long *a)
{
    if (n < 2 || R <= 0 || !st || !a)
        return;
    long maxstep = R / (long)n;
    if (maxstep < 1)
        maxstep = 1;
    int nm = 1 + (int)sm_below(st, 3);
    for (int q = 0; q < nm; q++) {
        size_t k = sm_below(st, n);
        for (size_t t = 0; t < n && a[k] == 0; t++)
            k = (k + 1) % n;
        if (a[k] == 0)
            return;
        size_t j = sm_below(st, n - 1);
        if (j >= k)
            j++;
        long lim = a[k] < maxstep ? a[k] : maxstep;
        long amt = 1 + (long)sm_below(st, (uint64_t)lim);
        a[k] -= amt;
        a[j] += amt;
    }
}

int cil_alloc_sw(size_t n, long R, cil_util_fn util, void *ctx, const cil_sw_params *p,
                 long *alloc)
{
    if (n == 0 || n > MAX_JOBS || R < 0 || !util || !p || !alloc || p->population < 3 ||
        p->population > 4096)
        return -1;
    size_t P = p->population;
    long *pop = malloc(P * n * sizeof *pop);
    long *child = malloc(n * sizeof *child);
    double *fit = malloc(P * sizeof *fit);
    double *w = malloc(n * sizeof *w);
    int rc = -1;
    if (!pop || !child || !fit || !w)
        goto out;
    cil_rng st;
    cil_rng_seed(&st, p->seed);
    if (cil_alloc_ew(n, R, util, NULL, ctx, 0, pop) != 0 || cil_resource_fair(n, R, NULL, pop + n) != 0)
        goto out;
    for (size_t i = 2; i < P; i++)
        random_split(n, R, &st, w, pop + i * n);
    for (size_t i = 0; i < P; i++)
        fit[i] = welfare(n, pop + i * n, util, ctx);
    for (size_t it = 0; n > 1 && R > 0 && it < p->iterations; it++) {
        size_t i1 = sm_below(&st, P), i2 = sm_below(&st, P);
        size_t par = fit[i1] >= fit[i2] ? i1 : i2;
        memcpy(child, pop + par * n, n * sizeof *child);
        cil_alloc_mutate(n, R, &st, child);
        double f = welfare(n, child, util, ctx);
        size_t worst = 0;
        for (size_t i = 1; i < P; i++)
            if (fit[i] < fit[worst])
                worst = i;
        if (f > fit[worst]) {
            memcpy(pop + worst * n, child, n * sizeof *child);
            fit[worst] = f;
        }
    }
    size_t best = 0;
    for (size_t i = 1; i < P; i++)
        if (fit[i] > fit[best])
            best = i;
    memcpy(alloc, pop + best * n, n * sizeof *alloc);
    rc = 0;
out:
    free(pop);
    free(child);
    free(fit);
    free(w);
    return rc;
}
