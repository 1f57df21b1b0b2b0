/* gpu_slots.h: which GPU instances a task gets, so CUDA_VISIBLE_DEVICES names them.
 *
 * The accounting table knows how much "GPU" is held; this knows by whom. A request of
 * q GPUs (fixed point) takes whole free instances when q >= 1 (q must then be a whole
 * number), or a share of one instance when q < 1 (the instance with the least room that
 * still fits, so shares pack and whole instances stay free). A task is admitted only
 * when both the table and the instances fit: fragmentation (two half-free instances for
 * a request of one) makes it wait, never oversubscribe an instance.
 */
#ifndef RAYLET_GPU_SLOTS_H
#define RAYLET_GPU_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPU_SLOTS_MAX 64

typedef struct {
    int ids[GPU_SLOTS_MAX];
    int n;
    int64_t share;   /* fixed point taken from each listed instance */
} gpu_grant;

typedef struct gpu_slots gpu_slots;

/* n instances (0 is allowed: every request of q > 0 then never fits). */
gpu_slots *gpu_slots_new(int n);
void gpu_slots_free(gpu_slots *g);

/* True when a request of q could be granted now. */
bool gpu_slots_fit(const gpu_slots *g, int64_t q);

/* Grants q now; false (nothing taken) when it does not fit. q <= 0 grants nothing. */
bool gpu_slots_acquire(gpu_slots *g, int64_t q, gpu_grant *out);

/* Gives a grant back. */
void gpu_slots_release(gpu_slots *g, const gpu_grant *grant);

/* "0,2" for a grant, into buf (len bytes). */
void gpu_grant_format(const gpu_grant *grant, char *buf, size_t len);

#endif
