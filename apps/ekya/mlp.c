/* mlp.c: the CPU model. Weights are laid out so that every inner loop is an axpy over
 * contiguous memory (w1 is inputs x hidden, w2 hidden x 10): the compiler vectorises
 * those without reassociating floating-point sums, which keeps results reproducible. */
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

static void axpy(float a, const float *restrict x, float *restrict y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

void ekya_train_opts_default(ekya_train_opts *o)
{
    memset(o, 0, sizeof *o);
    o->epochs = 5;
    o->batch = 32;
    o->lr = 0.05f;
    o->momentum = 0.9f;
    o->train_all = 1;
    o->data_frac = 1.0;
    o->seed = 1;
    o->backend = EKYA_BACKEND_AUTO;
}

int ekya_mlp_init(ekya_mlp *m, int res, int hidden, uint64_t seed, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (res != 28 && res != 14 && res != 7)
        return fail(err, errlen, "mlp: resolution %d is not 28, 14 or 7", res);
    if (hidden < 1 || hidden > 4096)
        return fail(err, errlen, "mlp: hidden width %d outside 1..4096", hidden);
    m->res = res;
    m->in = res * res;
    m->hidden = hidden;
    m->w1 = malloc(sizeof(float) * (size_t)m->in * (size_t)hidden);
    m->b1 = calloc((size_t)hidden, sizeof(float));
    m->w2 = malloc(sizeof(float) * (size_t)hidden * EKYA_CLASSES);
    m->b2 = calloc(EKYA_CLASSES, sizeof(float));
    if (!m->w1 || !m->b1 || !m->w2 || !m->b2) {
        ekya_mlp_free(m);
        return fail(err, errlen, "mlp: out of memory");
    }
    /* He initialisation: keeps ReLU activations at a stable scale for any width. */
    ekya_rng r;
    ekya_rng_seed(&r, seed);
    double s1 = sqrt(2.0 / m->in), s2 = sqrt(2.0 / hidden);
    for (size_t i = 0; i < (size_t)m->in * (size_t)hidden; i++)
        m->w1[i] = (float)(s1 * ekya_rng_normal(&r));
    for (size_t i = 0; i < (size_t)hidden * EKYA_CLASSES; i++)
        m->w2[i] = (float)(s2 * ekya_rng_normal(&r));
    return 0;
}

void ekya_mlp_free(ekya_mlp *m)
{
    if (!m)
        return;
    free(m->w1);
    free(m->b1);
    free(m->w2);
    free(m->b2);
    memset(m, 0, sizeof *m);
}

int ekya_mlp_copy(ekya_mlp *dst, const ekya_mlp *src)
{
    if (ekya_mlp_init(dst, src->res, src->hidden, 0, NULL, 0) != 0)
        return -1;
    ekya_mlp_assign(dst, src);
    return 0;
}

void ekya_mlp_assign(ekya_mlp *dst, const ekya_mlp *src)
{
    memcpy(dst->w1, src->w1, sizeof(float) * (size_t)src->in * (size_t)src->hidden);
    memcpy(dst->b1, src->b1, sizeof(float) * (size_t)src->hidden);
    memcpy(dst->w2, src->w2, sizeof(float) * (size_t)src->hidden * EKYA_CLASSES);
    memcpy(dst->b2, src->b2, sizeof(float) * EKYA_CLASSES);
}

void ekya_downscale(const float *x, int n, int res, float *out)
{
    int f = EKYA_SIDE / res;
    float inv = 1.0f / (float)(f * f);
    for (int b = 0; b < n; b++) {
        const float *src = x + (size_t)b * EKYA_PIXELS;
        float *dst = out + (size_t)b * res * res;
        for (int r = 0; r < res; r++)
            for (int c = 0; c < res; c++) {
                float s = 0;
                for (int dy = 0; dy < f; dy++)
                    for (int dx = 0; dx < f; dx++)
                        s += src[(r * f + dy) * EKYA_SIDE + c * f + dx];
                dst[r * res + c] = s * inv;
            }
    }
}

/* ReLU hidden activations of n inputs into h (n*hidden). */
static void hidden_forward(const ekya_mlp *m, const float *xin, int n, float *h)
{
    int H = m->hidden;
    for (int b = 0; b < n; b++) {
        float *hb = h + (size_t)b * H;
        const float *xb = xin + (size_t)b * m->in;
        memcpy(hb, m->b1, sizeof(float) * (size_t)H);
        for (int i = 0; i < m->in; i++)
            if (xb[i] != 0.0f) /* frames have many black pixels: skip their rows */
                axpy(xb[i], m->w1 + (size_t)i * H, hb, H);
        for (int j = 0; j < H; j++)
            hb[j] = hb[j] > 0.0f ? hb[j] : 0.0f;
    }
}

static void head_forward(const ekya_mlp *m, const float *h, int n, float *logits)
{
    int H = m->hidden;
    for (int b = 0; b < n; b++) {
        float *lb = logits + (size_t)b * EKYA_CLASSES;
        memcpy(lb, m->b2, sizeof(float) * EKYA_CLASSES);
        for (int j = 0; j < H; j++) {
            float hv = h[(size_t)b * H + j];
            if (hv != 0.0f)
                axpy(hv, m->w2 + (size_t)j * EKYA_CLASSES, lb, EKYA_CLASSES);
        }
    }
}

void ekya_mlp_forward(const ekya_mlp *m, const float *xin, int n, float *logits,
                      float *hidden_out)
{
    float *h = hidden_out ? hidden_out : malloc(sizeof(float) * (size_t)n * m->hidden);
    if (!h) { /* no memory for the scratch: go one input at a time */
        float one[4096];
        for (int b = 0; b < n; b++) {
            hidden_forward(m, xin + (size_t)b * m->in, 1, one);
            head_forward(m, one, 1, logits + (size_t)b * EKYA_CLASSES);
        }
        return;
    }
    hidden_forward(m, xin, n, h);
    head_forward(m, h, n, logits);
    if (!hidden_out)
        free(h);
}

/* Softmax cross-entropy: turns logits into dL/dlogits / n in place; returns summed loss. */
static double softmax_xent(float *logits, const uint8_t *y, int n)
{
    double loss = 0;
    for (int b = 0; b < n; b++) {
        float *l = logits + (size_t)b * EKYA_CLASSES;
        float mx = l[0];
        for (int k = 1; k < EKYA_CLASSES; k++)
            mx = l[k] > mx ? l[k] : mx;
        double z = 0;
        for (int k = 0; k < EKYA_CLASSES; k++)
            z += exp((double)(l[k] - mx));
        loss += log(z) - (double)(l[y[b]] - mx);
        for (int k = 0; k < EKYA_CLASSES; k++) {
            double p = exp((double)(l[k] - mx)) / z;
            l[k] = (float)((p - (k == y[b] ? 1.0 : 0.0)) / n);
        }
    }
    return loss;
}

/* Last-layer gradients from hidden activations h; dlog gets dL/dlogits. */
static double head_grad(const ekya_mlp *m, const float *h, const uint8_t *y, int n,
                        float *dlog, ekya_mlp_grads *g)
{
    int H = m->hidden;
    head_forward(m, h, n, dlog);
    double loss = softmax_xent(dlog, y, n);
    memset(g->w2, 0, sizeof(float) * (size_t)H * EKYA_CLASSES);
    memset(g->b2, 0, sizeof(float) * EKYA_CLASSES);
    for (int b = 0; b < n; b++) {
        const float *d = dlog + (size_t)b * EKYA_CLASSES;
        axpy(1.0f, d, g->b2, EKYA_CLASSES);
        for (int j = 0; j < H; j++) {
            float hv = h[(size_t)b * H + j];
            if (hv != 0.0f)
                axpy(hv, d, g->w2 + (size_t)j * EKYA_CLASSES, EKYA_CLASSES);
        }
    }
    return loss / n;
}

/* First-layer gradients, back through the ReLU from dlog. */
static void body_grad(const ekya_mlp *m, const float *xin, const float *h, const float *dlog,
                      int n, float *dh, ekya_mlp_grads *g)
{
    int H = m->hidden;
    for (int b = 0; b < n; b++)
        for (int j = 0; j < H; j++) {
            float s = 0;
            if (h[(size_t)b * H + j] > 0.0f)
                for (int k = 0; k < EKYA_CLASSES; k++)
                    s += m->w2[(size_t)j * EKYA_CLASSES + k] * dlog[(size_t)b * EKYA_CLASSES + k];
            dh[(size_t)b * H + j] = s;
        }
    memset(g->w1, 0, sizeof(float) * (size_t)m->in * H);
    memset(g->b1, 0, sizeof(float) * (size_t)H);
    for (int b = 0; b < n; b++) {
        const float *db = dh + (size_t)b * H, *xb = xin + (size_t)b * m->in;
        axpy(1.0f, db, g->b1, H);
        for (int i = 0; i < m->in; i++)
            if (xb[i] != 0.0f)
                axpy(xb[i], db, g->w1 + (size_t)i * H, H);
    }
}

int ekya_grads_alloc(ekya_mlp_grads *g, const ekya_mlp *m)
{
    g->w1 = calloc((size_t)m->in * (size_t)m->hidden, sizeof(float));
    g->b1 = calloc((size_t)m->hidden, sizeof(float));
    g->w2 = calloc((size_t)m->hidden * EKYA_CLASSES, sizeof(float));
    g->b2 = calloc(EKYA_CLASSES, sizeof(float));
    if (!g->w1 || !g->b1 || !g->w2 || !g->b2) {
        ekya_grads_free(g);
        return -1;
    }
    return 0;
}

void ekya_grads_free(ekya_mlp_grads *g)
{
    if (!g)
        return;
    free(g->w1);
    free(g->b1);
    free(g->w2);
    free(g->b2);
    memset(g, 0, sizeof *g);
}

int ekya_mlp_batch_grad(const ekya_mlp *m, const float *xin, const uint8_t *y, int n,
                        int train_all, ekya_mlp_grads *g, double *loss)
{
    size_t nh = (size_t)n * m->hidden;
    float *h = malloc(sizeof(float) * nh);
    float *dlog = malloc(sizeof(float) * (size_t)n * EKYA_CLASSES);
    float *dh = train_all ? malloc(sizeof(float) * nh) : NULL;
    int rc = -1;
    if (h && dlog && (dh || !train_all)) {
        hidden_forward(m, xin, n, h);
        double l = head_grad(m, h, y, n, dlog, g);
        if (train_all)
            body_grad(m, xin, h, dlog, n, dh, g);
        if (loss)
            *loss = l;
        rc = 0;
    }
    free(h);
    free(dlog);
    free(dh);
    return rc;
}

int ekya_mlp_head_grad(const ekya_mlp *m, const float *h, const uint8_t *y, int n,
                       ekya_mlp_grads *g, double *loss)
{
    float *dlog = malloc(sizeof(float) * (size_t)n * EKYA_CLASSES);
    if (!dlog)
        return -1;
    double l = head_grad(m, h, y, n, dlog, g);
    if (loss)
        *loss = l;
    free(dlog);
    return 0;
}

/* Frames are downscaled in chunks so evaluation of big sets needs little memory. */
#define EVAL_CHUNK 256

int ekya_mlp_predict(const ekya_mlp *m, const float *x, int n, uint8_t *pred)
{
    float *xin = malloc(sizeof(float) * EVAL_CHUNK * (size_t)m->in);
    float *logits = malloc(sizeof(float) * EVAL_CHUNK * EKYA_CLASSES);
    float *h = malloc(sizeof(float) * EVAL_CHUNK * (size_t)m->hidden);
    int rc = xin && logits && h ? 0 : -1;
    for (int at = 0; rc == 0 && at < n; at += EVAL_CHUNK) {
        int k = n - at < EVAL_CHUNK ? n - at : EVAL_CHUNK;
        ekya_downscale(x + (size_t)at * EKYA_PIXELS, k, m->res, xin);
        ekya_mlp_forward(m, xin, k, logits, h);
        for (int b = 0; b < k; b++) {
            const float *l = logits + (size_t)b * EKYA_CLASSES;
            int best = 0;
            for (int c = 1; c < EKYA_CLASSES; c++)
                best = l[c] > l[best] ? c : best;
            pred[at + b] = (uint8_t)best;
        }
    }
    free(xin);
    free(logits);
    free(h);
    return rc;
}

double ekya_mlp_accuracy(const ekya_mlp *m, const float *x, const uint8_t *y, int n)
{
    if (n <= 0)
        return 0.0;
    uint8_t *pred = malloc((size_t)n);
    if (!pred || ekya_mlp_predict(m, x, n, pred) != 0) {
        free(pred);
        return -1.0;
    }
    int ok = 0;
    for (int i = 0; i < n; i++)
        ok += pred[i] == y[i];
    free(pred);
    return (double)ok / n;
}

double ekya_mlp_loss(const ekya_mlp *m, const float *x, const uint8_t *y, int n)
{
    if (n <= 0)
        return 0.0;
    float *xin = malloc(sizeof(float) * EVAL_CHUNK * (size_t)m->in);
    float *logits = malloc(sizeof(float) * EVAL_CHUNK * EKYA_CLASSES);
    float *h = malloc(sizeof(float) * EVAL_CHUNK * (size_t)m->hidden);
    double sum = 0;
    int ok = xin && logits && h;
    for (int at = 0; ok && at < n; at += EVAL_CHUNK) {
        int k = n - at < EVAL_CHUNK ? n - at : EVAL_CHUNK;
        ekya_downscale(x + (size_t)at * EKYA_PIXELS, k, m->res, xin);
        ekya_mlp_forward(m, xin, k, logits, h);
        for (int b = 0; b < k; b++)
            sum += softmax_xent(logits + (size_t)b * EKYA_CLASSES, y + at + b, 1);
    }
    free(xin);
    free(logits);
    free(h);
    return ok ? sum / n : -1.0;
}
