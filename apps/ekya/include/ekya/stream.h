/* ekya/stream.h: video-like streams cut into retraining windows, drawn from a pool of
 * Fashion-MNIST images. Each window's class mix follows a Dirichlet random walk over the
 * ten classes (classes vanish and return), and its appearance (brightness, contrast,
 * noise, pixel shift) drifts from stream-specific starting points. Frames come in runs
 * of one class (an object stays in view for a few frames), which is what makes frame
 * subsampling cost accuracy. Everything is a pure function of (seed, stream, window).
 *
 * Pools: live streams draw from the train split; the held-out streams used to pretrain
 * base models draw from the t10k split (stream ids from EKYA_HELDOUT_STREAM_BASE), so no
 * image is shared between pretraining and the windows the profiles measure. */
#ifndef EKYA_STREAM_H
#define EKYA_STREAM_H

#include "ekya/idx.h"

#include <stddef.h>
#include <stdint.h>

#define EKYA_HELDOUT_STREAM_BASE 1000000

/* A data set indexed by class; borrows the data set (which must outlive the pool). */
typedef struct {
    const ekya_dataset *data;
    uint32_t *by_class[EKYA_NUM_CLASSES]; /* owned index lists */
    uint32_t class_count[EKYA_NUM_CLASSES];
} ekya_pool;

/* Window-level appearance: pixel' = clamp((pixel - 0.5) * contrast + 0.5 + brightness
 * + N(0, noise)), after shifting the image by (shift_x, shift_y) with zero fill. */
typedef struct {
    double brightness, contrast, noise;
    int shift_x, shift_y;
} ekya_appearance;

typedef struct {
    uint64_t seed;
    int images_per_window;   /* frames per window (>= 20) */
    double train_frac;       /* share of frames labelled for retraining; rest is test */
    double mix_concentration; /* Dirichlet concentration around the walk's mean */
    double walk_sigma;       /* std-dev of each window's step of the class log-weights */
    double p_vanish, p_return; /* per-window chance a class disappears / comes back */
    double mean_run;         /* mean frames per run of one class */
    double appearance_rate;  /* multiplies the per-window appearance drift steps */
} ekya_stream_opts;

/* One window: frames in stream order plus a seeded train/test split of them. */
typedef struct {
    int stream, window;
    int n, n_train, n_test;
    float *x;       /* n * EKYA_PIXELS, values in [0,1], stream order; owned */
    uint8_t *y;     /* n labels; owned */
    float *train_x; /* n_train frames; owned */
    uint8_t *train_y;
    float *test_x;  /* n_test frames; owned */
    uint8_t *test_y;
    double class_mix[EKYA_NUM_CLASSES];
    ekya_appearance app;
} ekya_window;

/* Builds per-class index lists. Returns 0, or -1 with err (a class with no image). */
int ekya_pool_init(ekya_pool *p, const ekya_dataset *d, char *err, size_t errlen);
void ekya_pool_free(ekya_pool *p);

/* Defaults: 1000 frames, 70% train, concentration 20, walk 0.6, vanish 0.15, return 0.35,
 * runs of 4 frames on average, appearance rate 1. */
void ekya_stream_opts_default(ekya_stream_opts *o, uint64_t seed);

/* The class mix and appearance of (stream, window) without drawing any image.
 * Returns 0, or -1 on stream/window < 0 or bad options (err says which). */
int ekya_stream_state(const ekya_stream_opts *o, int stream, int window,
                      double mix[EKYA_NUM_CLASSES], ekya_appearance *app, char *err,
                      size_t errlen);

/* Draws window `window` of stream `stream`. Returns 0 and fills *w (caller frees with
 * ekya_window_free), or -1 with a one-line err. */
int ekya_window_make(const ekya_pool *pool, const ekya_stream_opts *o, int stream,
                     int window, ekya_window *w, char *err, size_t errlen);
void ekya_window_free(ekya_window *w);

/* The positions in stream order (ascending, into w->x) of w's n_test test frames: the
 * frames no retraining of the window sees, in the order a camera shows them. w must come
 * from ekya_window_make with o. pos has room for w->n_test. Returns 0, or -1 (memory). */
int ekya_window_test_positions(const ekya_stream_opts *o, const ekya_window *w, int *pos);

/* Those test frames in stream order: *x (n_test * EKYA_PIXELS floats) and *y (n_test
 * labels), malloc'd for the caller. Returns 0, or -1 (memory; both NULL). */
int ekya_window_test_sequence(const ekya_stream_opts *o, const ekya_window *w, float **x,
                              uint8_t **y);

/* Pretraining data: all frames of windows 0..windows-1 of held-out streams
 * EKYA_HELDOUT_STREAM_BASE + 0..streams-1 drawn from `pool` (the t10k pool).
 * Returns 0 with *x (n*EKYA_PIXELS floats) and *y (n labels) malloc'd for the caller,
 * or -1 with err. */
int ekya_stream_heldout(const ekya_pool *pool, const ekya_stream_opts *o, int streams,
                        int windows, float **x, uint8_t **y, int *n, char *err,
                        size_t errlen);

#endif
