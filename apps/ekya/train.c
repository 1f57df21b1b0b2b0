/* train.c: minibatch SGD with momentum over a seeded subset of a window's frames.
 * Separate from mlp.c because it owns the training policy (subset, shuffles, which
 * layers move, backend choice) while mlp.c owns the arithmetic. */
#include "ekya/mlp.h"

#include "ekya/idx.h"
#include "ekya/rng.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

static int check_opts(const ekya_mlp *m, int n, const ekya_train_opts *o, char *err,
                      size_t errlen)
{
    if (!m || !m->w1)
        return fail(err, errlen, "train: no model");
    if (n <= 0)
        return fail(err, errlen, "train: no training samples");
    if (o->epochs < 1 || o->epochs > 100000)
        return fail(err, errlen, "train: epochs %d outside 1..100000", o->epochs);
    if (o->batch < 1 || o->batch > 65536)
        return fail(err, errlen, "train: batch %d outside 1..65536", o->batch);
    if (!(o->data_frac > 0.0 && o->data_frac <= 1.0))
        return fail(err, errlen, "train: data fraction %g outside (0, 1]", o->data_frac);
    if (!(o->lr > 0.0f) || !(o->momentum >= 0.0f && o->momentum < 1.0f))
        return fail(err, errlen, "train: lr %g / momentum %g out of range", (double)o->lr,
                    (double)o->momentum);
    if (o->backend == EKYA_BACKEND_CUDA && !ekya_cuda_available())
        return fail(err, errlen, "train: CUDA backend requested but no GPU/CUDA build");
    return 0;
}

static void shuffle(int *a, int n, ekya_rng *r)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)ekya_rng_below(r, (uint32_t)i + 1), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* v = mu * v - lr * g; w += v, over n floats. */
static void momentum_step(float *w, float *v, const float *g, size_t n, float lr, float mu)
{
    for (size_t i = 0; i < n; i++) {
        v[i] = mu * v[i] - lr * g[i];
        w[i] += v[i];
    }
}

/* Scratch for one training run. */
typedef struct {
    int nsub, width; /* samples; floats per sample in feat (inputs, or hidden units) */
    float *feat;     /* nsub * width: downscaled inputs, or frozen hidden activations */
    uint8_t *lab;
    int *order;
    float *xb;
    uint8_t *yb;
    ekya_mlp_grads g, v;
} run_state;

static void run_free(run_state *s)
{
    free(s->feat);
    free(s->lab);
    free(s->order);
    free(s->xb);
    free(s->yb);
    ekya_grads_free(&s->g);
    ekya_grads_free(&s->v);
}

/* Picks the seeded subset and precomputes what every epoch reuses. */
static int run_init(run_state *s, const ekya_mlp *m, const float *x, const uint8_t *y, int n,
                    const ekya_train_opts *o)
{
    memset(s, 0, sizeof *s);
    s->nsub = (int)ceil(o->data_frac * n - 1e-9);
    s->nsub = s->nsub < 1 ? 1 : s->nsub;
    s->width = o->train_all ? m->in : m->hidden;
    int *perm = malloc(sizeof(int) * (size_t)n);
    float *tmp = malloc(sizeof(float) * (size_t)m->in);
    s->feat = malloc(sizeof(float) * (size_t)s->nsub * s->width);
    s->lab = malloc((size_t)s->nsub);
    s->order = malloc(sizeof(int) * (size_t)s->nsub);
    s->xb = malloc(sizeof(float) * (size_t)o->batch * s->width);
    s->yb = malloc((size_t)o->batch);
    int ok = perm && tmp && s->feat && s->lab && s->order && s->xb && s->yb &&
             ekya_grads_alloc(&s->g, m) == 0 && ekya_grads_alloc(&s->v, m) == 0;
    if (ok) {
        for (int i = 0; i < n; i++)
            perm[i] = i;
        ekya_rng r;
        ekya_rng_seed(&r, ekya_seed_mix(o->seed, 0x5eed, 0, 0));
        shuffle(perm, n, &r);
        for (int i = 0; i < s->nsub; i++) {
            const float *src = x + (size_t)perm[i] * EKYA_PIXELS;
            float *dst = s->feat + (size_t)i * s->width;
            s->lab[i] = y[perm[i]];
            s->order[i] = i;
            if (o->train_all) {
                ekya_downscale(src, 1, m->res, dst);
            } else { /* frozen first layer: its activations never change */
                float logits[EKYA_CLASSES];
                ekya_downscale(src, 1, m->res, tmp);
                ekya_mlp_forward(m, tmp, 1, logits, dst);
            }
        }
    }
    free(perm);
    free(tmp);
    if (!ok)
        run_free(s);
    return ok ? 0 : -1;
}

/* One mini-batch from position `at` of the epoch's order: its gradients and the
 * momentum update. *loss gets the batch's mean loss. Returns the batch's size (smaller
 * at the epoch's end), or -1 (out of memory, CUDA error). */
static int batch_step(ekya_mlp *m, run_state *s, const ekya_train_opts *o, int at,
                      int use_cuda, double *loss)
{
    int k = s->nsub - at < o->batch ? s->nsub - at : o->batch;
    for (int b = 0; b < k; b++) {
        int idx = s->order[at + b];
        memcpy(s->xb + (size_t)b * s->width, s->feat + (size_t)idx * s->width,
               sizeof(float) * (size_t)s->width);
        s->yb[b] = s->lab[idx];
    }
    int rc = !o->train_all ? ekya_mlp_head_grad(m, s->xb, s->yb, k, &s->g, loss)
             : use_cuda    ? ekya_mlp_batch_grad_cuda(m, s->xb, s->yb, k, 1, &s->g, loss)
                           : ekya_mlp_batch_grad(m, s->xb, s->yb, k, 1, &s->g, loss);
    if (rc != 0)
        return -1;
    if (o->train_all) {
        momentum_step(m->w1, s->v.w1, s->g.w1, (size_t)m->in * m->hidden, o->lr, o->momentum);
        momentum_step(m->b1, s->v.b1, s->g.b1, (size_t)m->hidden, o->lr, o->momentum);
    }
    momentum_step(m->w2, s->v.w2, s->g.w2, (size_t)m->hidden * EKYA_CLASSES, o->lr, o->momentum);
    momentum_step(m->b2, s->v.b2, s->g.b2, EKYA_CLASSES, o->lr, o->momentum);
    return k;
}

struct ekya_trainer {
    ekya_mlp *m;
    ekya_train_opts o;
    run_state s;
    ekya_rng r;
    int use_cuda, epochs_done;
    int at; /* the next batch's position in the current epoch; 0: a new epoch */
};

ekya_trainer *ekya_trainer_new(ekya_mlp *m, const float *x, const uint8_t *y, int n,
                               const ekya_train_opts *o, char *err, size_t errlen)
{
    if (check_opts(m, n, o, err, errlen) != 0)
        return NULL;
    for (int i = 0; i < n; i++)
        if (y[i] >= EKYA_CLASSES) {
            fail(err, errlen, "train: label %u of sample %d is not below 10", y[i], i);
            return NULL;
        }
    ekya_trainer *t = calloc(1, sizeof *t);
    if (!t || run_init(&t->s, m, x, y, n, o) != 0) {
        free(t);
        fail(err, errlen, "train: out of memory");
        return NULL;
    }
    t->m = m;
    t->o = *o;
    t->use_cuda = o->backend != EKYA_BACKEND_CPU && ekya_cuda_available();
    ekya_rng_seed(&t->r, ekya_seed_mix(o->seed, 0x5eed, 1, 0));
    return t;
}

int ekya_trainer_step(ekya_trainer *t, double *loss, int *samples)
{
    if (t->at == 0)
        shuffle(t->s.order, t->s.nsub, &t->r);
    double l = 0;
    int k = batch_step(t->m, &t->s, &t->o, t->at, t->use_cuda, &l);
    if (k < 0)
        return -1;
    t->at += k;
    if (t->at >= t->s.nsub) {
        t->at = 0;
        t->epochs_done++;
    }
    if (loss)
        *loss = l;
    if (samples)
        *samples = k;
    return 0;
}

/* The batches left in the current epoch (all of them from an epoch's start); the loss
 * is their sample-weighted mean, as an epoch's loss has always been. */
int ekya_trainer_epoch(ekya_trainer *t, double *loss)
{
    double sum = 0;
    int n = 0;
    do {
        double l;
        int k;
        if (ekya_trainer_step(t, &l, &k) != 0)
            return -1;
        sum += l * k;
        n += k;
    } while (t->at != 0);
    if (loss)
        *loss = sum / n;
    return 0;
}

int ekya_trainer_samples(const ekya_trainer *t) { return t->s.nsub; }

void ekya_trainer_free(ekya_trainer *t)
{
    if (!t)
        return;
    run_free(&t->s);
    free(t);
}

int ekya_mlp_train(ekya_mlp *m, const float *x, const uint8_t *y, int n,
                   const ekya_train_opts *o, double *final_loss, char *err, size_t errlen)
{
    ekya_trainer *t = ekya_trainer_new(m, x, y, n, o, err, errlen);
    if (!t)
        return -1;
    int done = 0;
    double loss = 0;
    while (done < o->epochs) {
        if (ekya_trainer_epoch(t, &loss) != 0) {
            ekya_trainer_free(t);
            return fail(err, errlen, "train: gradient step failed (out of memory or CUDA error)");
        }
        done++;
        if (o->on_epoch && o->on_epoch(o->ctx, done, m, loss) != 0)
            break;
    }
    ekya_trainer_free(t);
    if (final_loss)
        *final_loss = loss;
    return done;
}
