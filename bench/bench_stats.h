/* bench_stats.h: the order statistics the benchmark programs report. */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stdlib.h>

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile p (0..100) of a sorted sample of n > 0 values. */
static inline double percentile(const double *sorted, int n, double p)
{
    int k = (int)(p / 100.0 * n + 0.999999) - 1;
    if (k < 0)
        k = 0;
    if (k >= n)
        k = n - 1;
    return sorted[k];
}

/* Sorts v in place and returns its nearest-rank percentile p. */
static inline double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return percentile(v, n, p);
}

#endif
