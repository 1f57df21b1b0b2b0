/* gpu_slots.h: which GPU instances a task gets, so CUDA_VISIBLE_DEVICES names them.
 *
 * The accounting table knows how much "GPU" is held; this knows by whom. A request of
 * q GPUs (fixed point) takes floor(q) whole free instances, and for the fraction left
 * (all of q when q < 1) a share of one more instance: the one with the least room that
 * still fits, so shares pack and whole instances stay free (GPU=1.5 is one whole
 * instance and half of another). A task is admitted only when both the table and the
 * instances fit: fragmentation (two half-free instances for a request of one) makes it
 * wait, never oversubscribe an instance.
 */
#ifndef RAYLET_GPU_SLOTS_H
#define RAYLET_GPU_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPU_SLOTS_MAX 64

typedef struct {
    int ids[GPU_SLOTS_MAX];
    int64_t take[GPU_SLOTS_MAX]; /* fixed point taken from instance ids[i] */
    int n;
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

/* With an MPS control daemon running, a task holding a share of one instance (q < 1) is
 * limited to that share of its threads: the percentage for CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
 * (1-99), or 0 when the grant is not a single share (whole instances run unlimited). */
int gpu_grant_mps_percentage(const gpu_grant *grant);

/* True when an MPS control daemon is running: its control socket exists in
 * $CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps (NVIDIA's default). */
bool gpu_mps_running(void);

#endif
