/* tasks.c: the task library of a live Cilantro tenant (libcilantro_live.so), loaded by
 * escher-worker; it links no escher library (the worker provides the SDK), only Ekya's
 * MLP (ekya_workload, static), so the library alone is the tenants' job package.
 *
 *   cil_work  (arg: decimal microseconds): burns exactly that much CPU time of its own
 *             thread doing floating-point arithmetic, the request of an slo tenant. CPU
 *             time, not wall time: under a CPU quota of q CPUs a request of W us takes
 *             about W/q us of wall time, which is what the tenant's latency measures.
 *   cil_train_load (args: "hidden batch seed", a shard, shard.h): makes the actor a
 *             trainer: Ekya's MLP (28x28 inputs, `hidden` ReLU units, 10 classes,
 *             He-initialised from seed) and SGD with momentum over the shard's images.
 *   cil_train_step: one mini-batch of that training (forward, backward, update) on the
 *             calling thread; returns "<samples> <mean loss> <CPU us of the step>".
 *   cil_where: "<node id> <pid>", for the tenant to match actors to nodes and for tests
 *             to read the worker's CPU time in /proc.
 *
 * A throughput tenant's actors run one call at a time (max_concurrency 1), so the
 * trainer's static state needs no lock; a worker hosts one actor, so one trainer.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <escher/task.h>

#include "ekya/mlp.h"
#include "shard.h"

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

ESC_TASK(cil_work)
{
    (void)ctx;
    char num[32] = {0};
    memcpy(num, arg, len < sizeof num - 1 ? len : sizeof num - 1);
    double us = strtod(num, NULL);
    double end = thread_cpu_us() + (us > 0 ? us : 0);
    volatile double x = 1.0; /* volatile: the work is not optimized away */
    while (thread_cpu_us() < end)
        for (int i = 0; i < 2000; i++)
            x = x * 1.0000001 + 1e-9;
    return esc_buf_printf(ret, "%.0f", us);
}

/* The actor's training: the model, its trainer and the images it borrows. */
static struct {
    ekya_mlp m;
    ekya_trainer *t;
    float *x;
    uint8_t *y;
} trn;

static void trn_reset(void)
{
    ekya_trainer_free(trn.t);
    ekya_mlp_free(&trn.m);
    free(trn.x);
    free(trn.y);
    memset(&trn, 0, sizeof trn);
}

/* The shard's n images as floats in [0, 1] (the MLP's input) and its labels. */
static int trn_data(const uint8_t *shard, uint32_t n)
{
    trn.x = malloc(sizeof(float) * (size_t)n * CIL_SHARD_PIXELS);
    trn.y = malloc(n);
    if (!trn.x || !trn.y)
        return -1;
    memcpy(trn.y, shard + CIL_SHARD_HEADER, n);
    const uint8_t *px = shard + CIL_SHARD_HEADER + n;
    for (size_t i = 0; i < (size_t)n * CIL_SHARD_PIXELS; i++)
        trn.x[i] = (float)px[i] / 255.0f;
    return 0;
}

static int trn_fail(int rc, const char *why)
{
    fprintf(stderr, "cil_train_load: %s\n", why);
    trn_reset();
    return rc;
}

ESC_TASK(cil_train_load)
{
    (void)arg;
    (void)len;
    (void)ret;
    trn_reset();
    size_t plen = 0, slen = 0;
    const char *p = esc_task_arg_at(ctx, 0, &plen);
    const uint8_t *shard = esc_task_arg_at(ctx, 1, &slen);
    char txt[64] = {0}, err[256];
    int hidden, batch;
    unsigned long long seed;
    uint32_t n = cil_shard_count(shard, slen);
    if (!p || plen >= sizeof txt || n == 0)
        return trn_fail(2, "needs \"hidden batch seed\" and a shard");
    memcpy(txt, p, plen);
    if (sscanf(txt, "%d %d %llu", &hidden, &batch, &seed) != 3)
        return trn_fail(2, "bad \"hidden batch seed\"");
    if (ekya_mlp_init(&trn.m, CIL_SHARD_SIDE, hidden, seed, err, sizeof err) != 0)
        return trn_fail(2, err);
    if (trn_data(shard, n) != 0)
        return trn_fail(3, "out of memory");
    ekya_train_opts o;
    ekya_train_opts_default(&o);
    o.batch = batch;
    o.seed = seed;
    o.backend = EKYA_BACKEND_CPU; /* the CPU quota is what the policy allocates */
    trn.t = ekya_trainer_new(&trn.m, trn.x, trn.y, (int)n, &o, err, sizeof err);
    return trn.t ? 0 : trn_fail(2, err);
}

ESC_TASK(cil_train_step)
{
    (void)ctx;
    (void)arg;
    (void)len;
    if (!trn.t)
        return 2;
    double c0 = thread_cpu_us(), loss;
    int k;
    if (ekya_trainer_step(trn.t, &loss, &k) != 0)
        return 3;
    return esc_buf_printf(ret, "%d %.6g %.0f", k, loss, thread_cpu_us() - c0);
}

ESC_TASK(cil_where)
{
    (void)ctx;
    (void)arg;
    (void)len;
    const char *node = getenv("ESCHER_NODE_ID");
    return esc_buf_printf(ret, "%s %ld", node ? node : "", (long)getpid());
}
