/* synth.c: synthetic retraining profiles (ekya/synth.h). */
#include "ekya/synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: small, seedable, good enough to spread profile values. */
static double next_uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

static int name_things(ekya_profiles *p)
{
    static const int epochs[3] = {5, 15, 30};
    char buf[32];
    for (int s = 0; s < p->nstreams; s++) {
        snprintf(buf, sizeof buf, "s%d", s);
        if (!(p->streams[s] = strdup(buf)))
            return -1;
    }
    for (int c = 0; c < p->nconfigs; c++) {
        snprintf(buf, sizeof buf, "hp%d", c / 3);
        p->configs[c].epochs = epochs[c % 3];
        if (!(p->configs[c].name = strdup(buf)))
            return -1;
    }
    return 0;
}

int ekya_profiles_synth(ekya_profiles *out, int nstreams, int nwindows, int nconfigs,
                        uint64_t seed)
{
    if (nstreams < 1 || nwindows < 1 || nconfigs < 1 ||
        ekya_profiles_alloc(out, nstreams, nwindows, nconfigs) != 0)
        return -1;
    if (name_things(out) != 0) {
        ekya_profiles_free(out);
        return -1;
    }
    uint64_t st = seed;
    for (int s = 0; s < nstreams; s++)
        for (int w = 0; w < nwindows; w++) {
            double start = 0.30 + 0.50 * next_uniform(&st);
            double drift = next_uniform(&st); /* how much retraining helps this window */
            out->start_acc[s * nwindows + w] = start;
            for (int c = 0; c < nconfigs; c++) {
                double ep = out->configs[c].epochs;
                double hp_cost = 1.0 + 1.5 * next_uniform(&st); /* per-epoch GPU-seconds */
                double room = 0.97 - start;
                double gain = room * drift * (1 - exp(-ep / 12.0)) * (0.6 + 0.4 * next_uniform(&st));
                double gpu = fmax(10, hp_cost * ep * (2 + 4 * next_uniform(&st)));
                ekya_cell *cell = (ekya_cell *)ekya_profiles_cell(out, s, w, c);
                *cell = (ekya_cell){1, start + gain, gpu, start + gain, gpu};
            }
        }
    return 0;
}

int ekya_profiles_write_csv(FILE *f, const ekya_profiles *p)
{
    fprintf(f, "stream,window,config,epochs,start_pct,end_pct,gpu_seconds%s\n",
            p->has_pred ? ",pred_end_pct,pred_gpu_seconds" : "");
    for (int s = 0; s < p->nstreams; s++)
        for (int w = 0; w < p->nwindows; w++)
            for (int c = 0; c < p->nconfigs; c++) {
                const ekya_cell *cell = ekya_profiles_cell(p, s, w, c);
                if (!cell->present)
                    continue;
                fprintf(f, "%s,%d,%s,%d,%.4f,%.4f,%.3f", p->streams[s], p->window_ids[w],
                        p->configs[c].name, p->configs[c].epochs,
                        100 * p->start_acc[s * p->nwindows + w], 100 * cell->end_acc,
                        cell->gpu_seconds);
                if (p->has_pred)
                    fprintf(f, ",%.4f,%.3f", 100 * cell->pred_end_acc, cell->pred_gpu_seconds);
                fputc('\n', f);
            }
    return ferror(f) ? -1 : 0;
}
