/* mlp_cuda_stub.c: the CUDA entry points when the library is built without nvcc, so
 * callers need no #ifdef: the GPU is simply never available. */
#include "ekya/mlp.h"

int ekya_cuda_available(void) { return 0; }

int ekya_mlp_batch_grad_cuda(const ekya_mlp *m, const float *xin, const uint8_t *y, int n,
                             int train_all, ekya_mlp_grads *g, double *loss)
{
    (void)m, (void)xin, (void)y, (void)n, (void)train_all, (void)g, (void)loss;
    return -1;
}

int ekya_mlp_forward_cuda(const ekya_mlp *m, const float *xin, int n, float *logits)
{
    (void)m, (void)xin, (void)n, (void)logits;
    return -1;
}
