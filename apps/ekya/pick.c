/* pick.c: PickConfigs (Ekya §4.2): given a stream's retraining and inference shares,
 * the configurations that maximise its estimated accuracy over the rest of the window. */
#include <math.h>

#include "ekya/sched.h"

/* Completion times are compared with the remaining window with this slack so a job
 * planned to end exactly at the window end is not rejected by rounding. */
#define EKYA_TIME_EPS 1e-9

double ekya_finish_time(const ekya_sched_state *st, int s, int c, double share)
{
    const ekya_cell *cell = ekya_profiles_cell(st->prof, s, st->window, c);
    if (!cell->present)
        return INFINITY;
    double need = cell->pred_gpu_seconds;
    if (st->training_cfg && st->training_cfg[s] == c)
        need -= st->progress[s];
    if (need <= 0)
        return 0;
    if (share <= 0)
        return INFINITY;
    return need / share;
}

/* Average of the model accuracy over the remaining window when retraining to `end`
 * completes `t` seconds from now: old model until then, the new one after. */
static double window_average(double acc, double end, double t, double rem)
{
    return (acc * t + end * (rem - t)) / rem;
}

double ekya_pick_stream(const ekya_sched_state *st, int s, double retrain_share,
                        double infer_share, int only, ekya_stream_alloc *out)
{
    double rem = st->length - st->elapsed;
    double mult = ekya_infer_multiplier(st->infer, infer_share, st->rmax);
    double best = st->model_acc[s];
    int best_c = EKYA_NO_RETRAIN;
    if (!st->completed[s] && rem > EKYA_TIME_EPS) {
        for (int c = 0; c < st->prof->nconfigs; c++) {
            if (only != EKYA_ANY_CONFIG && c != only)
                continue;
            double t = ekya_finish_time(st, s, c, retrain_share);
            if (t > rem + EKYA_TIME_EPS)
                continue; /* cannot finish in this window: never chosen */
            const ekya_cell *cell = ekya_profiles_cell(st->prof, s, st->window, c);
            double est = window_average(st->model_acc[s], cell->pred_end_acc, fmin(t, rem), rem);
            if (est > best + 1e-12) {
                best = est;
                best_c = c;
            }
        }
    }
    out->retrain_cfg = best_c;
    out->retrain_share = retrain_share;
    out->infer_share = infer_share;
    out->infer_subsampling = ekya_infer_subsampling(st->infer, infer_share, st->rmax);
    return best * mult;
}
