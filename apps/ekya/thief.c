/* thief.c: the thief scheduler, Ekya (NSDI'22) Algorithm 1.
 *
 * Jobs are every stream's inference job and, for streams that may still retrain this
 * window, its retraining job. Shares are counted in whole units of delta so they stay
 * exact multiples of delta. Starting from the fair allocation, for every (thief,
 * victim) pair the thief takes delta, 2 delta, ... up to all of the victim's share from
 * a copy of the best allocation so far, PickConfigs scoring each; the best strict
 * improvement becomes the new best. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ekya/sched.h"

#define EKYA_THIEF_PASSES 3

typedef struct {
    int stream;
    int retrain; /* 0: inference job, 1: retraining job */
} job;

typedef struct {
    const ekya_sched_state *st;
    int only;
    int njobs;
    job *jobs;
    int *infer_job, *retrain_job; /* per stream: job index, -1 for none */
} thief_ctx;

/* PickConfigs for stream s under an allocation given in units. */
static double stream_value(const thief_ctx *t, const int *units, int s, ekya_stream_alloc *out)
{
    double d = t->st->delta;
    double r = t->retrain_job[s] >= 0 ? units[t->retrain_job[s]] * d : 0;
    double i = units[t->infer_job[s]] * d;
    ekya_stream_alloc tmp;
    return ekya_pick_stream(t->st, s, r, i, t->only, out ? out : &tmp);
}

static double sum(const double *v, int n)
{
    double a = 0;
    for (int i = 0; i < n; i++)
        a += v[i];
    return a;
}

/* Equal units per job; the remainder one unit each, inference jobs first (they come
 * first in the job list), so no GPU is left idle at the start. */
static void fair(const thief_ctx *t, int total, int *units)
{
    for (int j = 0; j < t->njobs; j++)
        units[j] = total / t->njobs + (j < total % t->njobs);
}

static int build_jobs(thief_ctx *t, int nstreams)
{
    t->jobs = malloc(2 * (size_t)nstreams * sizeof *t->jobs);
    t->infer_job = malloc((size_t)nstreams * sizeof(int));
    t->retrain_job = malloc((size_t)nstreams * sizeof(int));
    if (!t->jobs || !t->infer_job || !t->retrain_job)
        return -1;
    t->njobs = 0;
    for (int s = 0; s < nstreams; s++) {
        t->infer_job[s] = t->njobs;
        t->jobs[t->njobs++] = (job){s, 0};
    }
    for (int s = 0; s < nstreams; s++) {
        t->retrain_job[s] = -1;
        if (!t->st->completed[s]) {
            t->retrain_job[s] = t->njobs;
            t->jobs[t->njobs++] = (job){s, 1};
        }
    }
    return 0;
}

/* Moves 1, 2, ... units from victim to thief on a copy of best, evaluating every amount
 * up to all the victim holds, and keeps the best improvement. Scanning the whole range,
 * rather than stopping at the first step that does not improve, matters: taking a
 * stream's whole retraining share can pay (it frees the stream from a configuration
 * that no longer fits) where taking part of it does not. Returns 1 when best changed. */
static int steal(const thief_ctx *t, int thief, int victim, int *best, double *best_vals,
                 int *tmp, double *tmp_vals, int n)
{
    int sa = t->jobs[thief].stream, sb = t->jobs[victim].stream;
    memcpy(tmp, best, (size_t)t->njobs * sizeof *tmp);
    memcpy(tmp_vals, best_vals, (size_t)n * sizeof *tmp_vals);
    double best_sum = sum(best_vals, n);
    int best_k = 0, avail = tmp[victim];
    for (int k = 1; k <= avail; k++) {
        tmp[victim]--;
        tmp[thief]++;
        tmp_vals[sa] = stream_value(t, tmp, sa, NULL);
        tmp_vals[sb] = stream_value(t, tmp, sb, NULL);
        double s = sum(tmp_vals, n);
        if (s > best_sum + 1e-12) {
            best_sum = s;
            best_k = k;
        }
    }
    if (best_k == 0)
        return 0;
    best[victim] -= best_k;
    best[thief] += best_k;
    best_vals[sa] = stream_value(t, best, sa, NULL);
    best_vals[sb] = stream_value(t, best, sb, NULL);
    return 1;
}

int ekya_thief_schedule(const ekya_sched_state *st, int only, ekya_stream_alloc *out)
{
    int n = st->prof->nstreams, rc = -1;
    thief_ctx t = {.st = st, .only = only};
    int total = (int)floor(st->gpus / st->delta + 1e-9);
    int *best = calloc(2 * (size_t)n, sizeof *best), *tmp = calloc(2 * (size_t)n, sizeof *tmp);
    double *bv = calloc((size_t)n, sizeof *bv), *tv = calloc((size_t)n, sizeof *tv);
    if (!best || !tmp || !bv || !tv || build_jobs(&t, n) != 0)
        goto out;
    fair(&t, total, best);
    for (int s = 0; s < n; s++)
        bv[s] = stream_value(&t, best, s, NULL);
    /* Sweeps over every (thief, victim) pair until one changes nothing, at most
     * EKYA_THIEF_PASSES times (the authors' implementation iterates 3 times). */
    for (int pass = 0; pass < EKYA_THIEF_PASSES; pass++) {
        int changed = 0;
        for (int a = 0; a < t.njobs; a++)
            for (int b = 0; b < t.njobs; b++)
                if (a != b)
                    changed |= steal(&t, a, b, best, bv, tmp, tv, n);
        if (!changed)
            break;
    }
    for (int s = 0; s < n; s++)
        stream_value(&t, best, s, &out[s]);
    rc = 0;
out:
    free(best);
    free(tmp);
    free(bv);
    free(tv);
    free(t.jobs);
    free(t.infer_job);
    free(t.retrain_job);
    return rc;
}
