/* decision.c: building, freeing and printing scheduling decisions (ekya/decision.h). */
#include "ekya/decision.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int ekya_window_add_step(ekya_window_decision *d, ekya_step_kind kind, double time,
                         int completed_stream, int nstreams, const ekya_stream_alloc *alloc)
{
    if (d->nsteps == d->cap) {
        int cap = d->cap ? 2 * d->cap : 4;
        ekya_step *s = realloc(d->steps, (size_t)cap * sizeof *s);
        if (!s)
            return -1;
        d->steps = s;
        d->cap = cap;
    }
    ekya_stream_alloc *copy = malloc((size_t)nstreams * sizeof *copy);
    if (!copy)
        return -1;
    memcpy(copy, alloc, (size_t)nstreams * sizeof *copy);
    d->steps[d->nsteps++] = (ekya_step){kind, time, completed_stream, nstreams, copy};
    return 0;
}

void ekya_window_decision_free(ekya_window_decision *d)
{
    for (int i = 0; i < d->nsteps; i++)
        free(d->steps[i].alloc);
    free(d->steps);
    memset(d, 0, sizeof *d);
}

double ekya_alloc_total(int nstreams, const ekya_stream_alloc *alloc)
{
    double t = 0;
    for (int s = 0; s < nstreams; s++)
        t += alloc[s].retrain_share + alloc[s].infer_share;
    return t;
}

static json_t *stream_json(const ekya_profiles *p, int s, const ekya_stream_alloc *a)
{
    json_t *retrain = json_null();
    if (a->retrain_cfg != EKYA_NO_RETRAIN)
        retrain = json_pack("{s:s, s:i}", "config", p->configs[a->retrain_cfg].name, "epochs",
                            p->configs[a->retrain_cfg].epochs);
    return json_pack("{s:s, s:o, s:f, s:f, s:f}", "stream", p->streams[s], "retrain", retrain,
                     "retrain_gpus", a->retrain_share, "infer_gpus", a->infer_share,
                     "subsampling", a->infer_subsampling);
}

static json_t *step_json(const ekya_profiles *p, const ekya_window_decision *d,
                         const ekya_step *st)
{
    json_t *streams = json_array();
    for (int s = 0; s < st->nstreams; s++)
        json_array_append_new(streams, stream_json(p, s, &st->alloc[s]));
    json_t *done = st->completed_stream >= 0 ? json_string(p->streams[st->completed_stream])
                                             : json_null();
    return json_pack("{s:i, s:i, s:f, s:s, s:o, s:o}", "window", d->window, "window_id",
                     p->window_ids[d->window], "time", st->time, "reason",
                     st->kind == EKYA_STEP_START ? "start" : "completion", "completed", done,
                     "streams", streams);
}

int ekya_window_decision_write_json(FILE *f, const ekya_profiles *p,
                                    const ekya_window_decision *d)
{
    for (int i = 0; i < d->nsteps; i++) {
        json_t *o = step_json(p, d, &d->steps[i]);
        if (!o)
            return -1;
        /* 10 digits: shares built from delta steps print as 0.9, not 0.90000000000000002 */
        int rc = json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        json_decref(o);
        if (rc != 0 || fputc('\n', f) == EOF)
            return -1;
    }
    return 0;
}
