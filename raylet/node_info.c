/* node_info.c: the node's physical resources and labels, from flags and detection.
 *
 * Physical names follow Ray: CPU, GPU (only when there is one), memory and
 * object_store_memory in bytes, and "node:<node_ip>" with capacity 1; then the static
 * custom resources of --resources. Labels are --labels, plus gpu_memory_bytes (the
 * smallest visible device) when GPUs were detected. */
#include "node_info.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qty.h"
#include "xalloc.h"

static int64_t bytes_qty(uint64_t bytes)
{
    const uint64_t max = (uint64_t)(ESC_QTY_MAX / ESC_QTY_SCALE);
    return (int64_t)(bytes > max ? max : bytes) * ESC_QTY_SCALE;
}

static void add_amount(node_info *n, const char *name, int64_t qty, bool unbounded)
{
    n->physical = esc_xrealloc(n->physical, (n->nphysical + 1) * sizeof *n->physical);
    n->physical[n->nphysical++] = (raylet_amount){esc_xstrdup(name), qty, unbounded};
}

static void add_label(node_info *n, const char *key, const char *value)
{
    n->labels = esc_xrealloc(n->labels, (n->nlabels + 1) * sizeof *n->labels);
    n->labels[n->nlabels++] = (raylet_label){esc_xstrdup(key), esc_xstrdup(value)};
}

void node_info_build(node_info *n, const raylet_config *cfg, const node_detected *d)
{
    memset(n, 0, sizeof *n);
    int64_t cpus = cfg->has_num_cpus ? cfg->num_cpus : d->cpus * ESC_QTY_SCALE;
    int64_t gpus = cfg->has_num_gpus ? cfg->num_gpus : (int64_t)d->gpus * ESC_QTY_SCALE;
    uint64_t mem = cfg->has_memory ? cfg->memory : d->memory;
    uint64_t store = cfg->has_object_store_memory ? cfg->object_store_memory : mem / 10 * 3;

    add_amount(n, "CPU", cpus, false);
    if (gpus > 0)
        add_amount(n, "GPU", gpus, false);
    add_amount(n, "memory", bytes_qty(mem), false);
    add_amount(n, "object_store_memory", bytes_qty(store), false);
    char node_res[300];
    snprintf(node_res, sizeof node_res, "node:%s", cfg->node_ip);
    add_amount(n, node_res, ESC_QTY_SCALE, false);
    for (size_t i = 0; i < cfg->nresources; i++)
        add_amount(n, cfg->resources[i].name, cfg->resources[i].qty,
                   cfg->resources[i].unbounded);

    bool user_gpu_label = false;
    for (size_t i = 0; i < cfg->nlabels; i++) {
        add_label(n, cfg->labels[i].key, cfg->labels[i].value);
        user_gpu_label |= !strcmp(cfg->labels[i].key, "gpu_memory_bytes");
    }
    if (!user_gpu_label && d->gpus > 0 && d->gpu_memory > 0) {
        char v[32];
        snprintf(v, sizeof v, "%" PRIu64, d->gpu_memory);
        add_label(n, "gpu_memory_bytes", v);
    }
    if (gethostname(n->hostname, sizeof n->hostname - 1) != 0)
        strcpy(n->hostname, "unknown");
}

void node_info_free(node_info *n)
{
    for (size_t i = 0; i < n->nphysical; i++)
        free(n->physical[i].name);
    free(n->physical);
    for (size_t i = 0; i < n->nlabels; i++) {
        free(n->labels[i].key);
        free(n->labels[i].value);
    }
    free(n->labels);
    memset(n, 0, sizeof *n);
}
