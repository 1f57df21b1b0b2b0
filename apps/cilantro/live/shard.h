/* shard.h: the training shard a throughput tenant (tenant.c) ships to its actors
 * (tasks.c, cil_train_load) as one escher object, so nodes need no data files:
 *
 *   "CILS", the image count n as 4 bytes little-endian, n labels (0..9), then n 28x28
 *   images of one byte per pixel, row-major, image after image.
 *
 * Bytes, not floats: a quarter of the size; the actor converts once. */
#ifndef CILANTRO_LIVE_SHARD_H
#define CILANTRO_LIVE_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define CIL_SHARD_TAG "CILS"
#define CIL_SHARD_HEADER 8
#define CIL_SHARD_SIDE 28
#define CIL_SHARD_PIXELS (CIL_SHARD_SIDE * CIL_SHARD_SIDE)

/* The size of a shard of n images. */
static inline size_t cil_shard_size(uint32_t n)
{
    return CIL_SHARD_HEADER + (size_t)n * (1 + CIL_SHARD_PIXELS);
}

static inline void cil_shard_put_count(uint8_t *p, uint32_t n)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(n >> (8 * i));
}

/* The image count of the shard at p (len bytes), or 0 when it is not a whole shard. */
static inline uint32_t cil_shard_count(const uint8_t *p, size_t len)
{
    if (!p || len < CIL_SHARD_HEADER || p[0] != 'C' || p[1] != 'I' || p[2] != 'L' || p[3] != 'S')
        return 0;
    uint32_t n = 0;
    for (int i = 0; i < 4; i++)
        n |= (uint32_t)p[4 + i] << (8 * i);
    return cil_shard_size(n) == len ? n : 0;
}

#endif
