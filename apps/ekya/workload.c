/* workload.c: data loading and base-model pretraining for a session. */
#include "ekya/workload.h"

#include "ekya/retrain.h"
#include "ekya/rng.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void ekya_workload_opts_default(ekya_workload_opts *o, uint64_t seed)
{
    o->seed = seed;
    o->images_per_window = 1000;
    o->pretrain_streams = 8;
    o->pretrain_windows = 2;
    o->pretrain_epochs = 5;
    o->data_dir = NULL;
}

const ekya_mlp *ekya_workload_base(const ekya_workload *wl, int hidden)
{
    for (int i = 0; i < wl->n_widths; i++)
        if (wl->base[i].hidden == hidden)
            return &wl->base[i];
    return NULL;
}

static int pretrain_width(ekya_workload *wl, const ekya_workload_opts *o, int hidden,
                          char *err, size_t errlen)
{
    ekya_mlp *m = &wl->base[wl->n_widths];
    if (ekya_mlp_init(m, 28, hidden, ekya_seed_mix(o->seed, (uint64_t)hidden, 0, 0xba5e), err,
                      errlen) != 0)
        return -1;
    wl->n_widths++;
    double s = ekya_pretrain(m, &wl->heldout, &wl->stream, o->pretrain_streams,
                             o->pretrain_windows, o->pretrain_epochs,
                             ekya_seed_mix(o->seed, (uint64_t)hidden, 1, 0xba5e), err, errlen);
    if (s < 0)
        return -1;
    wl->pretrain_seconds += s;
    return 0;
}

int ekya_workload_open(ekya_workload *wl, const ekya_workload_opts *o, const int *widths,
                       int n, char *err, size_t errlen)
{
    memset(wl, 0, sizeof *wl);
    ekya_stream_opts_default(&wl->stream, o->seed);
    wl->stream.images_per_window = o->images_per_window;
    if (o->pretrain_streams < 1 || o->pretrain_windows < 1 || o->pretrain_epochs < 1)
        return fail(err, errlen, "workload: pretraining streams/windows/epochs must be >= 1");
    if (ekya_dataset_load(o->data_dir, "train", &wl->train, err, errlen) != 0 ||
        ekya_dataset_load(o->data_dir, "t10k", &wl->t10k, err, errlen) != 0 ||
        ekya_pool_init(&wl->live, &wl->train, err, errlen) != 0 ||
        ekya_pool_init(&wl->heldout, &wl->t10k, err, errlen) != 0) {
        ekya_workload_close(wl);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (ekya_workload_base(wl, widths[i]))
            continue;
        if (wl->n_widths == EKYA_MAX_WIDTHS) {
            ekya_workload_close(wl);
            return fail(err, errlen, "workload: more than %d distinct widths", EKYA_MAX_WIDTHS);
        }
        if (pretrain_width(wl, o, widths[i], err, errlen) != 0) {
            ekya_workload_close(wl);
            return -1;
        }
    }
    return 0;
}

void ekya_workload_close(ekya_workload *wl)
{
    if (!wl)
        return;
    for (int i = 0; i < wl->n_widths; i++)
        ekya_mlp_free(&wl->base[i]);
    ekya_pool_free(&wl->live);
    ekya_pool_free(&wl->heldout);
    ekya_dataset_free(&wl->train);
    ekya_dataset_free(&wl->t10k);
    memset(wl, 0, sizeof *wl);
}
