// mlp_cuda.cu: the MLP's minibatch forward/backward on a GPU. One thread per output
// element, device buffers allocated per call: this backend exists to show the same
// training runs on a device and matches the CPU within EKYA_CUDA_TOLERANCE, not to be
// fast for a 784x128 model. The softmax and the bias sums stay on the host (ten
// numbers per sample), reusing exactly the CPU's formulas.
extern "C" {
#include "ekya/mlp.h"
}

#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TPB 128

__global__ void k_hidden(const float *x, const float *w1, const float *b1, float *h, int n,
                         int in, int H)
{
    int b = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n || j >= H)
        return;
    float s = b1[j];
    for (int i = 0; i < in; i++)
        s += x[(size_t)b * in + i] * w1[(size_t)i * H + j];
    h[(size_t)b * H + j] = s > 0.0f ? s : 0.0f;
}

__global__ void k_logits(const float *h, const float *w2, const float *b2, float *l, int n,
                         int H)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n * EKYA_CLASSES)
        return;
    int b = t / EKYA_CLASSES, k = t % EKYA_CLASSES;
    float s = b2[k];
    for (int j = 0; j < H; j++)
        s += h[(size_t)b * H + j] * w2[(size_t)j * EKYA_CLASSES + k];
    l[t] = s;
}

__global__ void k_grad_w2(const float *h, const float *dlog, float *gw2, int n, int H)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= H * EKYA_CLASSES)
        return;
    int j = t / EKYA_CLASSES, k = t % EKYA_CLASSES;
    float s = 0.0f;
    for (int b = 0; b < n; b++)
        s += h[(size_t)b * H + j] * dlog[(size_t)b * EKYA_CLASSES + k];
    gw2[t] = s;
}

__global__ void k_dh(const float *h, const float *w2, const float *dlog, float *dh, int n, int H)
{
    int b = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n || j >= H)
        return;
    float s = 0.0f;
    if (h[(size_t)b * H + j] > 0.0f)
        for (int k = 0; k < EKYA_CLASSES; k++)
            s += w2[(size_t)j * EKYA_CLASSES + k] * dlog[(size_t)b * EKYA_CLASSES + k];
    dh[(size_t)b * H + j] = s;
}

__global__ void k_grad_w1(const float *x, const float *dh, float *gw1, int n, int in, int H)
{
    int i = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= in || j >= H)
        return;
    float s = 0.0f;
    for (int b = 0; b < n; b++)
        s += x[(size_t)b * in + i] * dh[(size_t)b * H + j];
    gw1[(size_t)i * H + j] = s;
}

extern "C" int ekya_cuda_available(void)
{
    static int cached = -1;
    if (cached < 0) {
        int count = 0;
        cached = cudaGetDeviceCount(&count) == cudaSuccess && count > 0 ? 1 : 0;
    }
    return cached;
}

// Device copies of a model and one batch; every pointer is freed by dev_free.
struct dev_batch {
    float *x, *w1, *b1, *w2, *b2, *h, *l, *dlog, *dh, *gw1, *gw2;
};

static void dev_free(dev_batch *d)
{
    float **p = (float **)d;
    for (size_t i = 0; i < sizeof *d / sizeof(float *); i++)
        if (p[i])
            cudaFree(p[i]);
    memset(d, 0, sizeof *d);
}

static int dev_put(float **dst, const float *src, size_t count)
{
    if (cudaMalloc((void **)dst, count * sizeof(float)) != cudaSuccess)
        return -1;
    return src && cudaMemcpy(*dst, src, count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess
               ? -1
               : 0;
}

// Uploads the model and inputs and runs the forward pass; logits land in d->l.
static int dev_forward(dev_batch *d, const ekya_mlp *m, const float *xin, int n)
{
    size_t H = (size_t)m->hidden, in = (size_t)m->in;
    if (dev_put(&d->x, xin, (size_t)n * in) || dev_put(&d->w1, m->w1, in * H) ||
        dev_put(&d->b1, m->b1, H) || dev_put(&d->w2, m->w2, H * EKYA_CLASSES) ||
        dev_put(&d->b2, m->b2, EKYA_CLASSES) || dev_put(&d->h, NULL, (size_t)n * H) ||
        dev_put(&d->l, NULL, (size_t)n * EKYA_CLASSES))
        return -1;
    dim3 gh((unsigned)((H + TPB - 1) / TPB), (unsigned)n);
    k_hidden<<<gh, TPB>>>(d->x, d->w1, d->b1, d->h, n, (int)in, (int)H);
    int nl = n * EKYA_CLASSES;
    k_logits<<<(nl + TPB - 1) / TPB, TPB>>>(d->h, d->w2, d->b2, d->l, n, (int)H);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int ekya_mlp_forward_cuda(const ekya_mlp *m, const float *xin, int n, float *logits)
{
    if (!ekya_cuda_available() || n <= 0)
        return -1;
    dev_batch d;
    memset(&d, 0, sizeof d);
    int rc = dev_forward(&d, m, xin, n);
    if (rc == 0 && cudaMemcpy(logits, d.l, sizeof(float) * (size_t)n * EKYA_CLASSES,
                              cudaMemcpyDeviceToHost) != cudaSuccess)
        rc = -1;
    dev_free(&d);
    return rc;
}

// Same formula as the CPU's softmax_xent: logits become dL/dlogits / n; returns the sum.
static double host_softmax_xent(float *l, const uint8_t *y, int n)
{
    double loss = 0;
    for (int b = 0; b < n; b++) {
        float *r = l + (size_t)b * EKYA_CLASSES;
        float mx = r[0];
        for (int k = 1; k < EKYA_CLASSES; k++)
            mx = r[k] > mx ? r[k] : mx;
        double z = 0;
        for (int k = 0; k < EKYA_CLASSES; k++)
            z += exp((double)(r[k] - mx));
        loss += log(z) - (double)(r[y[b]] - mx);
        for (int k = 0; k < EKYA_CLASSES; k++)
            r[k] = (float)((exp((double)(r[k] - mx)) / z - (k == y[b] ? 1.0 : 0.0)) / n);
    }
    return loss;
}

// Backward from host-side dlog; fills g (and the host-side bias sums).
static int dev_backward(dev_batch *d, const ekya_mlp *m, const float *dlog, int n,
                        int train_all, ekya_mlp_grads *g)
{
    size_t H = (size_t)m->hidden, in = (size_t)m->in;
    if (dev_put(&d->dlog, dlog, (size_t)n * EKYA_CLASSES) || dev_put(&d->gw2, NULL, H * EKYA_CLASSES))
        return -1;
    k_grad_w2<<<(unsigned)((H * EKYA_CLASSES + TPB - 1) / TPB), TPB>>>(d->h, d->dlog, d->gw2, n, (int)H);
    if (cudaMemcpy(g->w2, d->gw2, sizeof(float) * H * EKYA_CLASSES, cudaMemcpyDeviceToHost) != cudaSuccess)
        return -1;
    memset(g->b2, 0, sizeof(float) * EKYA_CLASSES);
    for (int b = 0; b < n; b++)
        for (int k = 0; k < EKYA_CLASSES; k++)
            g->b2[k] += dlog[(size_t)b * EKYA_CLASSES + k];
    if (!train_all)
        return 0;
    if (dev_put(&d->dh, NULL, (size_t)n * H) || dev_put(&d->gw1, NULL, in * H))
        return -1;
    dim3 gd((unsigned)((H + TPB - 1) / TPB), (unsigned)n);
    k_dh<<<gd, TPB>>>(d->h, d->w2, d->dlog, d->dh, n, (int)H);
    dim3 gw((unsigned)((H + TPB - 1) / TPB), (unsigned)in);
    k_grad_w1<<<gw, TPB>>>(d->x, d->dh, d->gw1, n, (int)in, (int)H);
    float *dh = (float *)malloc(sizeof(float) * (size_t)n * H);
    int rc = dh && cudaMemcpy(g->w1, d->gw1, sizeof(float) * in * H, cudaMemcpyDeviceToHost) == cudaSuccess &&
                     cudaMemcpy(dh, d->dh, sizeof(float) * (size_t)n * H, cudaMemcpyDeviceToHost) == cudaSuccess
                 ? 0
                 : -1;
    if (rc == 0) {
        memset(g->b1, 0, sizeof(float) * H);
        for (int b = 0; b < n; b++)
            for (size_t j = 0; j < H; j++)
                g->b1[j] += dh[(size_t)b * H + j];
    }
    free(dh);
    return rc;
}

extern "C" int ekya_mlp_batch_grad_cuda(const ekya_mlp *m, const float *xin, const uint8_t *y,
                                        int n, int train_all, ekya_mlp_grads *g, double *loss)
{
    if (!ekya_cuda_available() || n <= 0)
        return -1;
    dev_batch d;
    memset(&d, 0, sizeof d);
    float *dlog = (float *)malloc(sizeof(float) * (size_t)n * EKYA_CLASSES);
    int rc = dlog ? dev_forward(&d, m, xin, n) : -1;
    if (rc == 0 && cudaMemcpy(dlog, d.l, sizeof(float) * (size_t)n * EKYA_CLASSES,
                              cudaMemcpyDeviceToHost) != cudaSuccess)
        rc = -1;
    if (rc == 0) {
        double l = host_softmax_xent(dlog, y, n) / n;
        rc = dev_backward(&d, m, dlog, n, train_all, g);
        if (rc == 0 && loss)
            *loss = l;
    }
    free(dlog);
    dev_free(&d);
    return rc;
}
