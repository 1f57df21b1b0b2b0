/* sim.c: the simulator executor (ekya/sim.h). Time moves from event to event
 * (retraining completions, the window end); the accuracy samples (every second, or
 * every prm->sample seconds) that fall between two events are summed on the way. */
#include "ekya/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Completions this close to the window end count as finishing at the end. */
#define EKYA_SIM_EPS 1e-9

typedef struct {
    const ekya_profiles *p;
    const ekya_infer_profile *inf;
    const ekya_params *prm;
    const ekya_sim_hooks *hooks; /* never NULL (an empty set when none) */
    ekya_sim_result *res;
    int w, nsamples, next_sample;
    double len, now, interval; /* interval: seconds between samples */
    double *model_acc, *progress, *share, *mult, *acc_sum, *carried;
    int *cfg, *completed, *carry;
} sim_ctx;

static int sim_start(void *vctx, int w, double len, char *err, size_t errlen)
{
    sim_ctx *c = vctx;
    if (c->hooks->window_begins && c->hooks->window_begins(c->hooks->ctx, w, err, errlen) != 0)
        return -1;
    c->w = w;
    c->len = len;
    c->now = 0;
    c->next_sample = 0;
    c->interval = ekya_params_sample(c->prm);
    c->nsamples = ekya_samples_per_window(len, c->interval);
    for (int s = 0; s < c->p->nstreams; s++) {
        /* A model retrained in the previous window starts this one where it ended. */
        c->model_acc[s] = c->carry[s] ? c->carried[s] : c->p->start_acc[s * c->p->nwindows + w];
        c->cfg[s] = EKYA_NO_RETRAIN;
        c->progress[s] = c->share[s] = c->mult[s] = c->acc_sum[s] = 0;
        c->completed[s] = 0;
    }
    return 0;
}

static int sim_observe(void *vctx, double *model_acc, int *training_cfg, double *progress,
                       int *completed)
{
    sim_ctx *c = vctx;
    size_t n = (size_t)c->p->nstreams;
    memcpy(model_acc, c->model_acc, n * sizeof *model_acc);
    memcpy(training_cfg, c->cfg, n * sizeof *training_cfg);
    memcpy(progress, c->progress, n * sizeof *progress);
    memcpy(completed, c->completed, n * sizeof *completed);
    return 0;
}

static int sim_apply(void *vctx, const ekya_step *step, char *err, size_t errlen)
{
    sim_ctx *c = vctx;
    for (int s = 0; s < c->p->nstreams; s++) {
        const ekya_stream_alloc *a = &step->alloc[s];
        if (a->retrain_cfg != c->cfg[s]) {
            c->progress[s] = 0; /* a different configuration starts from scratch */
            if (a->retrain_cfg != EKYA_NO_RETRAIN && c->hooks->retrain_begins &&
                c->hooks->retrain_begins(c->hooks->ctx, s, c->w, a->retrain_cfg, err,
                                         errlen) != 0)
                return -1;
        }
        c->cfg[s] = a->retrain_cfg;
        c->share[s] = a->retrain_cfg == EKYA_NO_RETRAIN ? 0 : a->retrain_share;
        c->mult[s] = ekya_infer_multiplier(c->inf, a->infer_share, c->prm->rmax);
    }
    return 0;
}

/* Seconds from now until stream s's retraining completes (INFINITY: never). */
static double remaining(const sim_ctx *c, int s)
{
    if (c->cfg[s] == EKYA_NO_RETRAIN || c->completed[s])
        return INFINITY;
    double need = ekya_profiles_cell(c->p, s, c->w, c->cfg[s])->gpu_seconds - c->progress[s];
    if (need <= 0)
        return 0;
    return c->share[s] > 0 ? need / c->share[s] : INFINITY;
}

/* Adds the samples at times k * interval in [now, until) with the current state. */
static void sample_until(sim_ctx *c, double until)
{
    while (c->next_sample < c->nsamples &&
           c->next_sample * c->interval < until - EKYA_SIM_EPS * c->interval) {
        for (int s = 0; s < c->p->nstreams; s++)
            c->acc_sum[s] += c->model_acc[s] * c->mult[s];
        c->next_sample++;
    }
}

static int complete(sim_ctx *c, int s, char *err, size_t errlen)
{
    if (c->hooks->retrain_completes &&
        c->hooks->retrain_completes(c->hooks->ctx, s, c->w, c->cfg[s], err, errlen) != 0)
        return -1;
    c->model_acc[s] = ekya_profiles_cell(c->p, s, c->w, c->cfg[s])->end_acc;
    c->completed[s] = 1;
    c->cfg[s] = EKYA_NO_RETRAIN;
    c->share[s] = 0;
    c->res->completions++;
    return 0;
}

static int sim_advance(void *vctx, double *now, int *stream, char *err, size_t errlen)
{
    sim_ctx *c = vctx;
    int first = -1;
    double dt = c->len - c->now;
    for (int s = 0; s < c->p->nstreams; s++) {
        double r = remaining(c, s);
        if (r < dt) {
            dt = r;
            first = s;
        }
    }
    double until = c->now + dt;
    sample_until(c, until);
    for (int s = 0; s < c->p->nstreams; s++)
        if (c->cfg[s] != EKYA_NO_RETRAIN)
            c->progress[s] += c->share[s] * dt;
    c->now = until;
    if (first >= 0 && until < c->len - EKYA_SIM_EPS) {
        if (complete(c, first, err, errlen) != 0)
            return -1;
        *stream = first;
    } else {
        /* the window is over; jobs finishing exactly now still deliver their model */
        for (int s = 0; s < c->p->nstreams; s++)
            if (remaining(c, s) <= EKYA_SIM_EPS && complete(c, s, err, errlen) != 0)
                return -1;
        *stream = -1;
    }
    *now = c->now;
    return 0;
}

static int sim_end(void *vctx, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    sim_ctx *c = vctx;
    sample_until(c, c->len + 1);
    ekya_sim_result *r = c->res;
    for (int s = 0; s < c->p->nstreams; s++) {
        r->acc[s * r->nwindows + c->w] = c->nsamples ? c->acc_sum[s] / c->nsamples : 0;
        c->carry[s] = !c->prm->no_carry && c->completed[s];
        c->carried[s] = c->model_acc[s];
    }
    return 0;
}

static void summarize(ekya_sim_result *r)
{
    double all = 0;
    for (int w = 0; w < r->nwindows; w++) {
        double m = 0;
        for (int s = 0; s < r->nstreams; s++)
            m += r->acc[s * r->nwindows + w];
        r->window_mean[w] = m / r->nstreams;
        all += r->window_mean[w];
    }
    for (int s = 0; s < r->nstreams; s++) {
        double m = 0;
        for (int w = 0; w < r->nwindows; w++)
            m += r->acc[s * r->nwindows + w];
        r->stream_mean[s] = m / r->nwindows;
    }
    r->mean = all / r->nwindows;
}

void ekya_sim_result_free(ekya_sim_result *res)
{
    free(res->acc);
    free(res->window_mean);
    free(res->stream_mean);
    memset(res, 0, sizeof *res);
}

static void ctx_free(sim_ctx *c)
{
    free(c->model_acc);
    free(c->progress);
    free(c->share);
    free(c->mult);
    free(c->acc_sum);
    free(c->carried);
    free(c->cfg);
    free(c->completed);
    free(c->carry);
}

static int ctx_alloc(sim_ctx *c, size_t n)
{
    c->model_acc = calloc(n, sizeof(double));
    c->progress = calloc(n, sizeof(double));
    c->share = calloc(n, sizeof(double));
    c->mult = calloc(n, sizeof(double));
    c->acc_sum = calloc(n, sizeof(double));
    c->carried = calloc(n, sizeof(double));
    c->cfg = calloc(n, sizeof(int));
    c->completed = calloc(n, sizeof(int));
    c->carry = calloc(n, sizeof(int));
    return c->model_acc && c->progress && c->share && c->mult && c->acc_sum && c->carried &&
                   c->cfg && c->completed && c->carry
               ? 0
               : -1;
}

int ekya_simulate(const ekya_profiles *p, const ekya_infer_profile *inf, const ekya_params *prm,
                  const ekya_scheduler *sched, FILE *decisions, ekya_window_decision *log,
                  ekya_sim_result *res, char *err, size_t errlen)
{
    return ekya_simulate_hooked(p, inf, prm, sched, NULL, decisions, log, res, err, errlen);
}

int ekya_simulate_hooked(const ekya_profiles *p, const ekya_infer_profile *inf,
                         const ekya_params *prm, const ekya_scheduler *sched,
                         const ekya_sim_hooks *hooks, FILE *decisions, ekya_window_decision *log,
                         ekya_sim_result *res, char *err, size_t errlen)
{
    static const ekya_sim_hooks none = {0};
    memset(res, 0, sizeof *res);
    res->nstreams = p->nstreams;
    res->nwindows = p->nwindows;
    res->acc = calloc((size_t)p->nstreams * (size_t)p->nwindows, sizeof *res->acc);
    res->window_mean = calloc((size_t)p->nwindows, sizeof *res->window_mean);
    res->stream_mean = calloc((size_t)p->nstreams, sizeof *res->stream_mean);
    sim_ctx c = {.p = p, .inf = inf, .prm = prm, .hooks = hooks ? hooks : &none, .res = res};
    int rc = -1;
    if (!res->acc || !res->window_mean || !res->stream_mean ||
        ctx_alloc(&c, (size_t)p->nstreams) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    ekya_executor ex = {&c, sim_start, sim_observe, sim_apply, sim_advance, sim_end};
    rc = ekya_drive(p, inf, prm, sched, &ex, decisions, log, &res->sched, err, errlen);
    if (rc == 0)
        summarize(res);
out:
    ctx_free(&c);
    if (rc != 0)
        ekya_sim_result_free(res);
    return rc;
}
