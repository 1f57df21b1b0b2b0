/* gpu_slots.c: see gpu_slots.h. */
#include "gpu_slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qty.h"
#include "xalloc.h"

struct gpu_slots {
    int n;
    int64_t free[GPU_SLOTS_MAX];   /* fixed point room left on each instance */
};

gpu_slots *gpu_slots_new(int n)
{
    gpu_slots *g = esc_xcalloc(1, sizeof *g);
    g->n = n < 0 ? 0 : n > GPU_SLOTS_MAX ? GPU_SLOTS_MAX : n;
    for (int i = 0; i < g->n; i++)
        g->free[i] = ESC_QTY_SCALE;
    return g;
}

void gpu_slots_free(gpu_slots *g)
{
    free(g);
}

/* The instance with the least room that still fits q, not already in the grant. */
static int best_fit(const gpu_slots *g, int64_t q, const gpu_grant *skip)
{
    int best = -1;
    for (int i = 0; i < g->n; i++) {
        bool taken = false;
        for (int k = 0; k < skip->n; k++)
            taken |= skip->ids[k] == i;
        if (!taken && g->free[i] >= q && (best < 0 || g->free[i] < g->free[best]))
            best = i;
    }
    return best;
}

/* Plans a grant without taking it: floor(q) whole instances, then the fraction. */
static bool plan(const gpu_slots *g, int64_t q, gpu_grant *out)
{
    memset(out, 0, sizeof *out);
    if (q <= 0)
        return true;
    int whole = (int)(q / ESC_QTY_SCALE);
    int64_t frac = q % ESC_QTY_SCALE;
    for (int i = 0; i < g->n && out->n < whole; i++)
        if (g->free[i] == ESC_QTY_SCALE) {
            out->ids[out->n] = i;
            out->take[out->n++] = ESC_QTY_SCALE;
        }
    if (out->n < whole)
        return false;
    if (frac == 0)
        return true;
    int best = best_fit(g, frac, out);
    if (best < 0)
        return false;
    out->ids[out->n] = best;
    out->take[out->n++] = frac;
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
        g->free[out->ids[i]] -= out->take[i];
    return true;
}

void gpu_slots_release(gpu_slots *g, const gpu_grant *grant)
{
    for (int i = 0; i < grant->n; i++) {
        int id = grant->ids[i];
        if (id >= 0 && id < g->n) {
            g->free[id] += grant->take[i];
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

int gpu_grant_mps_percentage(const gpu_grant *grant)
{
    if (grant->n != 1 || grant->take[0] >= ESC_QTY_SCALE)
        return 0;
    int64_t pct = grant->take[0] * 100 / ESC_QTY_SCALE;
    return pct < 1 ? 1 : (int)pct;
}

bool gpu_mps_running(void)
{
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char path[4200];
    snprintf(path, sizeof path, "%s/control", dir && *dir ? dir : "/tmp/nvidia-mps");
    struct stat st;
    return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}
