/* drive.c: the scheduling loop between a scheduler and an executor (ekya/drive.h). */
#include "ekya/drive.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Rejects allocations no executor could carry out. */
static int check(const ekya_profiles *p, double gpus, const ekya_sched_state *st,
                 const ekya_stream_alloc *a, char *err, size_t errlen)
{
    for (int s = 0; s < p->nstreams; s++) {
        if (a[s].retrain_share < 0 || a[s].infer_share < 0) {
            snprintf(err, errlen, "scheduler gave stream '%s' a negative share", p->streams[s]);
            return -1;
        }
        int c = a[s].retrain_cfg;
        if (c != EKYA_NO_RETRAIN && (c < 0 || c >= p->nconfigs || st->completed[s])) {
            snprintf(err, errlen, "scheduler gave stream '%s' an invalid retraining "
                     "(configuration %d, completed %d)", p->streams[s], c, st->completed[s]);
            return -1;
        }
    }
    double total = ekya_alloc_total(p->nstreams, a);
    if (total > gpus + 1e-6) {
        snprintf(err, errlen, "scheduler allocated %.6g GPUs of %.6g", total, gpus);
        return -1;
    }
    return 0;
}

typedef struct {
    double *model_acc, *progress;
    int *training_cfg, *completed;
    ekya_stream_alloc *alloc;
} drive_bufs;

static void bufs_free(drive_bufs *b)
{
    free(b->model_acc);
    free(b->progress);
    free(b->training_cfg);
    free(b->completed);
    free(b->alloc);
}

static int bufs_alloc(drive_bufs *b, int n)
{
    b->model_acc = calloc((size_t)n, sizeof *b->model_acc);
    b->progress = calloc((size_t)n, sizeof *b->progress);
    b->training_cfg = calloc((size_t)n, sizeof *b->training_cfg);
    b->completed = calloc((size_t)n, sizeof *b->completed);
    b->alloc = calloc((size_t)n, sizeof *b->alloc);
    return b->model_acc && b->progress && b->training_cfg && b->completed && b->alloc ? 0 : -1;
}

/* One scheduler call, timed, checked and recorded as a step of d. */
static int decide(const ekya_scheduler *sched, ekya_sched_state *st, const ekya_executor *ex,
                  drive_bufs *b, ekya_window_decision *d, ekya_step_kind kind, int done,
                  ekya_sched_stats *stats, char *err, size_t errlen)
{
    ex->observe(ex->ctx, b->model_acc, b->training_cfg, b->progress, b->completed);
    double t0 = now_seconds();
    int rc = sched->schedule(sched->ctx, st, b->alloc, err, errlen);
    double dt = now_seconds() - t0;
    stats->total_seconds += dt;
    stats->calls++;
    if (dt > stats->max_seconds)
        stats->max_seconds = dt;
    if (rc != 0 || check(st->prof, st->gpus, st, b->alloc, err, errlen) != 0)
        return -1;
    int n = st->prof->nstreams;
    if (ekya_window_add_step(d, kind, st->elapsed, done, n, b->alloc) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return ex->apply(ex->ctx, &d->steps[d->nsteps - 1], err, errlen);
}

static int run_window(const ekya_scheduler *sched, ekya_sched_state *st, const ekya_executor *ex,
                      drive_bufs *b, ekya_window_decision *d, ekya_sched_stats *stats,
                      char *err, size_t errlen)
{
    d->window = st->window;
    d->length = st->length;
    if (ex->start_window(ex->ctx, st->window, st->length, err, errlen) != 0)
        return -1;
    st->elapsed = 0;
    ekya_step_kind kind = EKYA_STEP_START;
    int done = -1;
    for (;;) {
        if (decide(sched, st, ex, b, d, kind, done, stats, err, errlen) != 0)
            return -1;
        double now;
        if (ex->advance(ex->ctx, &now, &done, err, errlen) != 0)
            return -1;
        if (done < 0)
            break;
        st->elapsed = now;
        kind = EKYA_STEP_COMPLETION;
    }
    return ex->end_window(ex->ctx, err, errlen);
}

double ekya_params_delta(const ekya_params *prm)
{
    return prm->delta_per_gpu ? prm->delta * prm->gpus : prm->delta;
}

double ekya_params_sample(const ekya_params *prm)
{
    return prm->sample == 0 ? 1.0 : prm->sample;
}

int ekya_samples_per_window(double length, double interval)
{
    return (int)ceil(length / interval - 1e-6);
}

/* The bounds that keep unit counts and per-second samples within int range. */
static int check_params(const ekya_params *prm, char *err, size_t errlen)
{
    double delta = ekya_params_delta(prm), sample = ekya_params_sample(prm);
    if (!(prm->gpus > 0 && delta > 0 && prm->rmax > 0 && prm->length > 0 && sample > 0) ||
        prm->gpus / delta > 1e6 || prm->length / sample > 1e7) {
        snprintf(err, errlen, "need 0 < gpus/delta <= 1e6 and 0 < window/sample <= 1e7 "
                 "(gpus %g, delta %g, window %g, sample %g)", prm->gpus, delta, prm->length,
                 sample);
        return -1;
    }
    return 0;
}

/* One window w of p through sched and ex, its steps recorded in d. */
static int drive_one(const ekya_profiles *p, const ekya_infer_profile *inf,
                     const ekya_params *prm, const ekya_scheduler *sched,
                     const ekya_executor *ex, int w, drive_bufs *b, ekya_window_decision *d,
                     ekya_sched_stats *stats, char *err, size_t errlen)
{
    ekya_sched_state st = {p,          inf,       w,           prm->length,      0,
                           prm->gpus,  ekya_params_delta(prm), prm->rmax, b->model_acc,
                           b->training_cfg, b->progress, b->completed};
    return run_window(sched, &st, ex, b, d, stats, err, errlen);
}

int ekya_drive_window(const ekya_profiles *p, const ekya_infer_profile *inf,
                      const ekya_params *prm, const ekya_scheduler *sched,
                      const ekya_executor *ex, int w, ekya_window_decision *d,
                      ekya_sched_stats *stats, char *err, size_t errlen)
{
    if (check_params(prm, err, errlen) != 0)
        return -1;
    drive_bufs b = {0};
    int rc = -1;
    if (bufs_alloc(&b, p->nstreams) != 0)
        snprintf(err, errlen, "out of memory");
    else
        rc = drive_one(p, inf, prm, sched, ex, w, &b, d, stats, err, errlen);
    bufs_free(&b);
    return rc;
}

int ekya_drive(const ekya_profiles *p, const ekya_infer_profile *inf, const ekya_params *prm,
               const ekya_scheduler *sched, const ekya_executor *ex, FILE *decisions,
               ekya_window_decision *log, ekya_sched_stats *stats, char *err, size_t errlen)
{
    memset(stats, 0, sizeof *stats);
    if (check_params(prm, err, errlen) != 0)
        return -1;
    drive_bufs b = {0};
    int rc = -1;
    if (bufs_alloc(&b, p->nstreams) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int w = 0; w < p->nwindows; w++) {
        ekya_window_decision local = {0}, *d = log ? &log[w] : &local;
        int wrc = drive_one(p, inf, prm, sched, ex, w, &b, d, stats, err, errlen);
        if (wrc == 0 && decisions && ekya_window_decision_write_json(decisions, p, d) != 0) {
            snprintf(err, errlen, "cannot write decisions");
            wrc = -1;
        }
        ekya_window_decision_free(&local);
        if (wrc != 0)
            goto out;
    }
    rc = 0;
out:
    bufs_free(&b);
    return rc;
}
