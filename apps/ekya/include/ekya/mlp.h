/* ekya/mlp.h: the compact model that Ekya retrains: a two-layer perceptron
 * (res*res inputs -> hidden ReLU units -> 10 logits) trained with softmax
 * cross-entropy and minibatch SGD with momentum, in float32.
 *
 * Input resolution: callers always pass 28x28 frames (EKYA_PIXELS floats in [0,1]);
 * a model built for res 14 or 7 averages 2x2 or 4x4 blocks first, so its first layer
 * (and the inference cost) shrinks by 4x or 16x.
 *
 * Backends: the CPU path is always there. When the library was built with nvcc
 * (EKYA_HAVE_CUDA) and a GPU is present at run time, EKYA_BACKEND_AUTO computes the
 * minibatch gradients on the GPU (mlp_cuda.cu); results match the CPU within
 * EKYA_CUDA_TOLERANCE (reduction order differs). */
#ifndef EKYA_MLP_H
#define EKYA_MLP_H

#include <stddef.h>
#include <stdint.h>

#define EKYA_CLASSES 10
#define EKYA_CUDA_TOLERANCE 1e-4f /* max |cpu - gpu| on logits and gradients, relative to max(1, |cpu|) */

typedef struct {
    int res;    /* input side: 28, 14 or 7 */
    int in;     /* res * res */
    int hidden; /* hidden units */
    float *w1;  /* in x hidden (row i: input i's weights), owned */
    float *b1;  /* hidden */
    float *w2;  /* hidden x 10 */
    float *b2;  /* 10 */
} ekya_mlp;

/* Gradients (or momentum buffers) shaped like a model. */
typedef struct {
    float *w1, *b1, *w2, *b2;
} ekya_mlp_grads;

typedef enum { EKYA_BACKEND_AUTO = 0, EKYA_BACKEND_CPU = 1, EKYA_BACKEND_CUDA = 2 } ekya_backend;

/* Called after each epoch (1-based) with the model as trained so far and the epoch's
 * mean training loss. Return nonzero to stop training early. */
typedef int (*ekya_epoch_cb)(void *ctx, int epoch, const ekya_mlp *m, double loss);

typedef struct {
    int epochs;       /* >= 1 */
    int batch;        /* >= 1 */
    float lr;         /* SGD step size (default 0.05) */
    float momentum;   /* 0..<1 (default 0.9) */
    int train_all;    /* 1: both layers; 0: only the last layer (first layer frozen) */
    double data_frac; /* (0,1]: share of the given samples used, a seeded subset */
    uint64_t seed;    /* subset choice and per-epoch shuffles */
    ekya_backend backend;
    ekya_epoch_cb on_epoch; /* optional */
    void *ctx;
} ekya_train_opts;

/* Fills defaults: 5 epochs, batch 32, lr 0.05, momentum 0.9, all layers, all data,
 * seed 1, AUTO backend, no callback. */
void ekya_train_opts_default(ekya_train_opts *o);

/* Allocates a model for resolution res (28, 14 or 7) with `hidden` units (1..4096),
 * He-initialised from seed. Returns 0 (free with ekya_mlp_free) or -1 with err. */
int ekya_mlp_init(ekya_mlp *m, int res, int hidden, uint64_t seed, char *err, size_t errlen);
void ekya_mlp_free(ekya_mlp *m);

/* Deep copy into *dst (allocated here; free with ekya_mlp_free). Returns 0 or -1 (OOM). */
int ekya_mlp_copy(ekya_mlp *dst, const ekya_mlp *src);

/* Copies src's weights into an already allocated dst of the same shape. */
void ekya_mlp_assign(ekya_mlp *dst, const ekya_mlp *src);

/* Averages n 28x28 frames down to res x res into out (n*res*res floats, caller's). */
void ekya_downscale(const float *x, int n, int res, float *out);

/* Logits for n inputs already at the model's resolution (n*in floats) into
 * logits (n*10, caller's); CPU. hidden_out, if not NULL, gets the n*hidden ReLU
 * activations. */
void ekya_mlp_forward(const ekya_mlp *m, const float *xin, int n, float *logits,
                      float *hidden_out);

/* Predicted classes for n 28x28 frames into pred (caller's). Returns 0 or -1 (OOM). */
int ekya_mlp_predict(const ekya_mlp *m, const float *x, int n, uint8_t *pred);

/* Share (0..1) of n 28x28 frames classified correctly; -1 on OOM, 0 when n == 0. */
double ekya_mlp_accuracy(const ekya_mlp *m, const float *x, const uint8_t *y, int n);

/* Mean cross-entropy loss of n 28x28 frames; -1 on OOM. */
double ekya_mlp_loss(const ekya_mlp *m, const float *x, const uint8_t *y, int n);

/* Allocates zeroed gradient-shaped buffers for m into *g. Returns 0 or -1 (OOM);
 * free with ekya_grads_free (safe on a zeroed struct). */
int ekya_grads_alloc(ekya_mlp_grads *g, const ekya_mlp *m);
void ekya_grads_free(ekya_mlp_grads *g);

/* CPU: mean gradients of the cross-entropy over n inputs at the model's resolution,
 * written into g (overwritten, not accumulated); the first layer's gradients only when
 * train_all. *loss gets the mean loss. Returns 0 or -1 (OOM). */
int ekya_mlp_batch_grad(const ekya_mlp *m, const float *xin, const uint8_t *y, int n,
                        int train_all, ekya_mlp_grads *g, double *loss);

/* Last-layer gradients (g->w2, g->b2 only) given n rows of hidden activations h
 * (n*hidden), as when the first layer is frozen. Returns 0 or -1 (OOM). */
int ekya_mlp_head_grad(const ekya_mlp *m, const float *h, const uint8_t *y, int n,
                       ekya_mlp_grads *g, double *loss);

/* 1 when the library has the CUDA backend and cudaGetDeviceCount() > 0, else 0. */
int ekya_cuda_available(void);

/* The GPU versions of ekya_mlp_batch_grad and ekya_mlp_forward, same contracts.
 * Return -1 when CUDA is unavailable or a CUDA call fails. */
int ekya_mlp_batch_grad_cuda(const ekya_mlp *m, const float *xin, const uint8_t *y, int n,
                             int train_all, ekya_mlp_grads *g, double *loss);
int ekya_mlp_forward_cuda(const ekya_mlp *m, const float *xin, int n, float *logits);

/* Trains m in place on n 28x28 frames (x: n*EKYA_PIXELS, y: labels < 10) as o says.
 * With train_all == 0 the frozen first layer's activations are computed once and only
 * the last layer is trained on them (the saving that makes last-layer configs cheap).
 * *final_loss (optional) gets the last epoch's mean loss. Returns the number of epochs
 * run, or -1 with a one-line err on bad options or OOM. */
int ekya_mlp_train(ekya_mlp *m, const float *x, const uint8_t *y, int n,
                   const ekya_train_opts *o, double *final_loss, char *err, size_t errlen);

/* A training run that advances one epoch at a time, so that several runs can be
 * interleaved (the micro-profiler prunes configurations between epochs). It trains *m
 * in place and borrows x and y; all three must outlive it. o->epochs is not used
 * except for validation and o->on_epoch is ignored. */
typedef struct ekya_trainer ekya_trainer;

/* Returns a new trainer (free with ekya_trainer_free), or NULL with a one-line err. */
ekya_trainer *ekya_trainer_new(ekya_mlp *m, const float *x, const uint8_t *y, int n,
                               const ekya_train_opts *o, char *err, size_t errlen);

/* Runs one epoch (what is left of the current one after ekya_trainer_step calls);
 * *loss (optional) gets its mean loss. Returns 0 or -1 (OOM/CUDA). */
int ekya_trainer_epoch(ekya_trainer *t, double *loss);

/* Runs one mini-batch, one SGD step (an epoch's first also shuffles its order): o->batch
 * samples, fewer at an epoch's end. *loss (optional) gets the batch's mean loss, *samples
 * (optional) its size. Returns 0 or -1 (OOM/CUDA). */
int ekya_trainer_step(ekya_trainer *t, double *loss, int *samples);

/* Samples one epoch passes over (the data-fraction subset). */
int ekya_trainer_samples(const ekya_trainer *t);

void ekya_trainer_free(ekya_trainer *t);

#endif
