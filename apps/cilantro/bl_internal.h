/* bl_internal.h: the state the baselines (cilantro/baselines.h) share between
 * baselines.c (feedback rules and searches) and bl_models.c (Ernest and Quasar). */
#ifndef CILANTRO_BL_INTERNAL_H
#define CILANTRO_BL_INTERNAL_H

#include "cilantro/alloc.h"
#include "cilantro/baselines.h"

#define BL_ARCHIVE 20   /* EvoAlg: evaluated allocations kept (the most recent) */
#define BL_QBINS 50     /* Quasar: allocation-per-unit-load bins per workload type */

struct cil_baseline {
    cil_baseline_kind kind;
    const cil_env *env;
    size_t n;
    long R;
    cil_rng rng;
    size_t rounds;        /* feedback rounds observed */
    long *last_alloc;     /* the allocation of the last observed round */
    double *last_load;    /* last known mean load per job (0 before any) */
    double *util;         /* observed utility of the last round (NAN: no report) */
    double *reward;       /* observed reward of the last round (NAN: no report) */
    double *demand;       /* PARTIES, MIAD: current demands (CPUs) */
    double *scratch;      /* n doubles */
    long *next;           /* n: working allocation */
    /* EvoAlg: ring of the last BL_ARCHIVE evaluated allocations and their welfare. */
    long *arch;
    double arch_score[BL_ARCHIVE];
    size_t arch_len, arch_head;
    /* Ernest: per job, the normal equations (4x4 + 4) of its time model. */
    double *gram, *rhs;
    size_t *npts;
    double *xhi;          /* per job: the allocation-per-unit-load domain's top */
    /* Quasar: jobs grouped into workload types; per type BL_QBINS reward cells. */
    size_t ntypes;
    size_t *type_of;
    double *qsum, *qcnt;
};

/* The equal (weighted) split of all CPUs. 0, or -1. */
int bl_fair(cil_baseline *b, long *alloc);
/* Load to plan for job j: the forecast when usable, else the last observed mean load,
 * else 0 (unknown). */
double bl_plan_load(const cil_baseline *b, const double *forecast, size_t j);

int bl_models_init(cil_baseline *b);
void bl_models_free(cil_baseline *b);
/* Ernest / Quasar: record one round's feedback point for job j (allocation a, mean
 * load, mean reward). */
void bl_ernest_observe(cil_baseline *b, size_t j, long a, double load, double reward);
void bl_quasar_observe(cil_baseline *b, size_t j, long a, double load, double reward);
/* Ernest / Quasar: each job's demand (CPUs) at its SLO for the planned load into
 * b->demand. 0, or -1 on no memory. */
int bl_ernest_demands(cil_baseline *b, const double *forecast);
int bl_quasar_demands(cil_baseline *b, const double *forecast);

#endif
