/* ekya/workload.h: one session of the real workload: both Fashion-MNIST splits, the
 * live pool (train split) and held-out pool (t10k), the stream options, and one
 * pretrained base model per hidden width. This is what a caller needs to "retrain
 * stream s in window w with configuration c under share r" for real:
 *
 *     ekya_workload wl;  ekya_workload_open(&wl, &opts, widths, n, err, len);
 *     ekya_window win;   ekya_window_make(&wl.live, &wl.stream, s, w, &win, err, len);
 *     ekya_retrain_once(ekya_workload_base(&wl, c.hidden), &win, &c, epochs, r, 0.8,
 *                       seed, &res, &secs, &next_model, err, len);
 */
#ifndef EKYA_WORKLOAD_H
#define EKYA_WORKLOAD_H

#include "ekya/mlp.h"
#include "ekya/stream.h"

#include <stddef.h>
#include <stdint.h>

#define EKYA_MAX_WIDTHS 4

typedef struct {
    uint64_t seed;
    int images_per_window; /* frames per window (1000) */
    int pretrain_streams;  /* held-out streams (8) */
    int pretrain_windows;  /* windows of each (2) */
    int pretrain_epochs;   /* epochs (5) */
    const char *data_dir;  /* NULL: ekya_data_dir() */
} ekya_workload_opts;

typedef struct {
    ekya_dataset train, t10k;
    ekya_pool live, heldout;
    ekya_stream_opts stream;
    int n_widths;
    ekya_mlp base[EKYA_MAX_WIDTHS]; /* res 28, pretrained */
    double pretrain_seconds;        /* CPU-seconds, all widths */
} ekya_workload;

void ekya_workload_opts_default(ekya_workload_opts *o, uint64_t seed);

/* Loads the data and pretrains a base model for each distinct width in
 * widths[0..n) (at most EKYA_MAX_WIDTHS distinct). Returns 0 (close with
 * ekya_workload_close) or -1 with a one-line err. */
int ekya_workload_open(ekya_workload *wl, const ekya_workload_opts *o, const int *widths,
                       int n, char *err, size_t errlen);
void ekya_workload_close(ekya_workload *wl);

/* The pretrained model of width `hidden`, or NULL. Borrowed from wl. */
const ekya_mlp *ekya_workload_base(const ekya_workload *wl, int hidden);

#endif
