/* gpu_slots.c: see gpu_slots.h. */
#include "gpu_slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qty.h"

struct gpu_slots {
    int n;
    int64_t free[GPU_SLOTS_MAX];   /* fixed point room left on each instance */
};

gpu_slots *gpu_slots_new(int n)
{
    gpu_slots *g = calloc(1, sizeof *g);
    g->n = n < 0 ? 0 : n > GPU_SLOTS_MAX ? GPU_SLOTS_MAX : n;
    for (int i = 0; i < g->n; i++)
        g->free[i] = ESC_QTY_SCALE;
    return g;
}

void gpu_slots_free(gpu_slots *g)
{
    free(g);
}

/* Plans a grant without taking it. */
static bool plan(const gpu_slots *g, int64_t q, gpu_grant *out)
{
    memset(out, 0, sizeof *out);
    if (q <= 0)
        return true;
    if (q >= ESC_QTY_SCALE) {
        if (q % ESC_QTY_SCALE != 0)
            return false; /* 1.5 GPUs has no instance assignment */
        int want = (int)(q / ESC_QTY_SCALE);
        for (int i = 0; i < g->n && out->n < want; i++)
            if (g->free[i] == ESC_QTY_SCALE)
                out->ids[out->n++] = i;
        out->share = ESC_QTY_SCALE;
        return out->n == want;
    }
    int best = -1;
    for (int i = 0; i < g->n; i++)
        if (g->free[i] >= q && (best < 0 || g->free[i] < g->free[best]))
            best = i;
    if (best < 0)
        return false;
    out->ids[0] = best;
    out->n = 1;
    out->share = q;
    return true;
}

bool gpu_slots_fit(const gpu_slots *g, int64_t q)
{
    gpu_grant tmp;
    return plan(g, q, &tmp);
}

bool gpu_slots_acquire(gpu_slots *g, int64_t q, gpu_grant *out)
{
    if (!plan(g, q, out))
        return false;
    for (int i = 0; i < out->n; i++)
        g->free[out->ids[i]] -= out->share;
    return true;
}

void gpu_slots_release(gpu_slots *g, const gpu_grant *grant)
{
    for (int i = 0; i < grant->n; i++) {
        int id = grant->ids[i];
        if (id >= 0 && id < g->n) {
            g->free[id] += grant->share;
            if (g->free[id] > ESC_QTY_SCALE)
                g->free[id] = ESC_QTY_SCALE;
        }
    }
}

void gpu_grant_format(const gpu_grant *grant, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < grant->n && off < len; i++) {
        int k = snprintf(buf + off, len - off, "%s%d", i ? "," : "", grant->ids[i]);
        if (k < 0)
            break;
        off += (size_t)k;
    }
}
