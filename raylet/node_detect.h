/* node_detect.h: what this machine has: CPUs, memory and CUDA GPUs (node_detect.c). */
#ifndef RAYLET_NODE_DETECT_H
#define RAYLET_NODE_DETECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t cpus;          /* whole CPUs usable by this process (affinity, cgroup quota) */
    uint64_t memory;       /* bytes: MemTotal, capped by a cgroup limit */
    int gpus;              /* CUDA devices visible through the runtime, 0 without one */
    uint64_t gpu_memory;   /* bytes of the smallest visible device, 0 when unknown */
} node_detected;

/* Detects CPUs and memory; GPUs too when probe_gpus (in a child process, so this one
 * never initializes CUDA). Never fails: what cannot be found is 0. */
void node_detect(node_detected *d, bool probe_gpus);

#endif
