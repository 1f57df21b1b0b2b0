/* baselines.c: the cluster-sharing baselines that act on observed feedback alone:
 * EvoAlg (SW, EW), Greedy-EW, Minerva, PARTIES and MIAD; Ernest and Quasar fit models
 * in bl_models.c. See cilantro/baselines.h and docs/cilantro.md ("Baselines"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bl_internal.h"

#define PARTIES_UP 20.0   /* CPUs added on an SLO violation */
#define PARTIES_DOWN 5.0  /* CPUs removed with slack */
#define MIAD_FACTOR 2.0   /* demand multiplier on a violation */
#define MIAD_DOWN 1.0     /* CPUs removed otherwise */
#define MODEL_EXPLORE_ROUNDS 10 /* Ernest: random allocations before trusting its fit */
#define QUASAR_EXPLORE_ROUNDS 2

int bl_fair(cil_baseline *b, long *alloc)
{
    for (size_t j = 0; j < b->n; j++)
        b->scratch[j] = b->env->jobs[j].weight;
    return cil_resource_fair(b->n, b->R, b->scratch, alloc);
}

double bl_plan_load(const cil_baseline *b, const double *forecast, size_t j)
{
    if (forecast && isfinite(forecast[j]) && forecast[j] > 0)
        return forecast[j];
    return b->last_load[j];
}

void cil_baseline_free(cil_baseline *b)
{
    if (!b)
        return;
    bl_models_free(b);
    free(b->last_alloc);
    free(b->last_load);
    free(b->util);
    free(b->reward);
    free(b->demand);
    free(b->scratch);
    free(b->next);
    free(b->arch);
    free(b);
}

cil_baseline *cil_baseline_create(cil_baseline_kind kind, const cil_env *env, uint64_t seed)
{
    if ((int)kind < 0 || kind >= CIL_BL_COUNT || !env || env->njobs == 0 || env->cpus <= 0)
        return NULL;
    cil_baseline *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    size_t n = env->njobs;
    b->kind = kind;
    b->env = env;
    b->n = n;
    b->R = env->cpus;
    cil_rng_seed(&b->rng, seed);
    int ok = (b->last_alloc = calloc(n, sizeof(long))) && (b->last_load = calloc(n, sizeof(double))) &&
             (b->util = calloc(n, sizeof(double))) && (b->reward = calloc(n, sizeof(double))) &&
             (b->demand = calloc(n, sizeof(double))) && (b->scratch = calloc(n, sizeof(double))) &&
             (b->next = calloc(n, sizeof(long))) &&
             (b->arch = calloc(BL_ARCHIVE * n, sizeof(long))) && bl_models_init(b) == 0;
    if (!ok) {
        cil_baseline_free(b);
        return NULL;
    }
    /* PARTIES starts every job at its equal share; MIAD at twice that, so that each
     * job is guaranteed its equal share by the water-filling. */
    double wsum = 0;
    for (size_t j = 0; j < n; j++)
        wsum += env->jobs[j].weight;
    for (size_t j = 0; j < n; j++) {
        double e = (double)b->R * env->jobs[j].weight / wsum;
        b->demand[j] = kind == CIL_BL_MIAD ? 2 * e : e;
        b->util[j] = b->reward[j] = NAN;
    }
    return b;
}

/* Observed welfare of the last round: weighted mean (SW) or minimum (EW) of the
 * observed utilities; NAN when some job had no report (the round cannot be scored). */
static double observed_welfare(const cil_baseline *b, int egalitarian)
{
    double s = 0, ws = 0, mn = INFINITY;
    for (size_t j = 0; j < b->n; j++) {
        double u = b->util[j], w = b->env->jobs[j].weight;
        if (!isfinite(u))
            return NAN;
        s += w * u;
        ws += w;
        if (u < mn)
            mn = u;
    }
    return egalitarian ? mn : s / ws;
}

static void archive_add(cil_baseline *b, double score)
{
    memcpy(b->arch + b->arch_head * b->n, b->last_alloc, b->n * sizeof(long));
    b->arch_score[b->arch_head] = score;
    b->arch_head = (b->arch_head + 1) % BL_ARCHIVE;
    if (b->arch_len < BL_ARCHIVE)
        b->arch_len++;
}

/* A job's demand after one PARTIES / MIAD step on its observed reward. */
static double feedback_step(const cil_baseline *b, size_t j)
{
    double d = b->demand[j], r = b->reward[j];
    if (!isfinite(r))
        return d;
    int violated = r < b->env->jobs[j].slo;
    if (b->kind == CIL_BL_PARTIES)
        d = violated ? d + PARTIES_UP : d - PARTIES_DOWN;
    else
        d = violated ? d * MIAD_FACTOR : d - MIAD_DOWN;
    if (d < 1)
        d = 1;
    return d > (double)b->R ? (double)b->R : d;
}

int cil_baseline_observe(cil_baseline *b, const long *alloc, const double *load,
                         const double *reward, const int *has)
{
    if (!b || !alloc || !load || !reward || !has)
        return -1;
    for (size_t j = 0; j < b->n; j++) {
        b->last_alloc[j] = alloc[j];
        b->util[j] = b->reward[j] = NAN;
        if (!has[j] || !isfinite(reward[j]) || !isfinite(load[j]))
            continue;
        b->reward[j] = reward[j];
        b->util[j] = cil_job_utility(&b->env->jobs[j], reward[j]);
        if (load[j] > 0)
            b->last_load[j] = load[j];
        if (b->kind == CIL_BL_ERNEST)
            bl_ernest_observe(b, j, alloc[j], load[j], reward[j]);
        else if (b->kind == CIL_BL_QUASAR)
            bl_quasar_observe(b, j, alloc[j], load[j], reward[j]);
    }
    if (b->kind == CIL_BL_EVOALG_SW || b->kind == CIL_BL_EVOALG_EW) {
        double w = observed_welfare(b, b->kind == CIL_BL_EVOALG_EW);
        if (isfinite(w))
            archive_add(b, w);
    }
    if (b->kind == CIL_BL_PARTIES || b->kind == CIL_BL_MIAD)
        for (size_t j = 0; j < b->n; j++)
            b->demand[j] = feedback_step(b, j);
    b->rounds++;
    return 0;
}

/* EvoAlg: mutate the best of the recently evaluated allocations. */
static int evoalg_next(cil_baseline *b, long *alloc)
{
    if (b->arch_len == 0)
        return bl_fair(b, alloc);
    size_t best = 0;
    for (size_t i = 1; i < b->arch_len; i++)
        if (b->arch_score[i] > b->arch_score[best])
            best = i;
    memcpy(alloc, b->arch + best * b->n, b->n * sizeof(long));
    cil_alloc_mutate(b->n, b->R, &b->rng, alloc);
    return 0;
}

static int cmp_util_asc(const void *pa, const void *pb, void *ctx);

/* Greedy-EW: sort the jobs with feedback by observed utility; the i-th worst-off takes
 * one CPU from the i-th best-off, for i below half their number. */
static int greedy_next(cil_baseline *b, long *alloc)
{
    if (b->rounds == 0)
        return bl_fair(b, alloc);
    memcpy(alloc, b->last_alloc, b->n * sizeof(long));
    size_t m = 0;
    size_t *idx = malloc(b->n * sizeof *idx);
    if (!idx)
        return -1;
    for (size_t j = 0; j < b->n; j++)
        if (isfinite(b->util[j]))
            idx[m++] = j;
    /* insertion sort by utility (n is small; stable, so ties keep job order) */
    for (size_t i = 1; i < m; i++)
        for (size_t k = i; k > 0 && cmp_util_asc(&idx[k - 1], &idx[k], b) > 0; k--) {
            size_t t = idx[k];
            idx[k] = idx[k - 1];
            idx[k - 1] = t;
        }
    for (size_t i = 0; i < m / 2; i++) {
        size_t poor = idx[i], rich = idx[m - 1 - i];
        if (alloc[rich] > 0) {
            alloc[rich]--;
            alloc[poor]++;
        }
    }
    free(idx);
    return 0;
}

static int cmp_util_asc(const void *pa, const void *pb, void *ctx)
{
    const cil_baseline *b = ctx;
    double ua = b->util[*(const size_t *)pa], ub = b->util[*(const size_t *)pb];
    return (ua > ub) - (ua < ub);
}

/* Minerva's estimate of how well job j does: its normalized performance
 * min(1, reward / SLO) over the last round (1 before any report). Minerva equalizes
 * this quantity, not the tenant's utility g(.): the authors' implementation
 * (cilantro/policies/minerva.py) divides the forecast reward, capped at the SLO, by the
 * SLO and ignores the utility's shape, as Minerva itself is utility-agnostic. */
static double minerva_norm_perf(const cil_baseline *b, size_t j)
{
    double r = b->reward[j], slo = b->env->jobs[j].slo;
    if (!isfinite(r))
        return 1.0;
    double v = r / slo;
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* Minerva: weights proportional to entitlement * current share / forecast normalized
 * performance (the last round's, see minerva_norm_perf), so that jobs below the others
 * grow; a floor of one CPU's worth of weight each keeps every job running. */
static int minerva_next(cil_baseline *b, long *alloc)
{
    if (b->rounds == 0)
        return bl_fair(b, alloc);
    double ws = 0;
    for (size_t j = 0; j < b->n; j++) {
        double w = b->env->jobs[j].weight * ((double)b->last_alloc[j] + 1e-4) /
                   (minerva_norm_perf(b, j) + 1e-4);
        b->scratch[j] = w;
        ws += w;
    }
    double floor_share = 1.0 / (double)b->R, rest = 1.0 - floor_share * (double)b->n;
    if (rest < 0)
        rest = 0;
    for (size_t j = 0; j < b->n; j++)
        b->scratch[j] = floor_share + rest * b->scratch[j] / ws;
    return cil_resource_fair(b->n, b->R, b->scratch, alloc);
}

static int waterfill_demands(cil_baseline *b, long *alloc)
{
    for (size_t j = 0; j < b->n; j++)
        b->scratch[j] = b->env->jobs[j].weight;
    return cil_waterfill(b->n, b->R, b->demand, b->scratch, alloc);
}

int cil_baseline_allocate(cil_baseline *b, const double *load_forecast, long *alloc)
{
    if (!b || !alloc)
        return -1;
    switch (b->kind) {
    case CIL_BL_EVOALG_SW:
    case CIL_BL_EVOALG_EW:
        return evoalg_next(b, alloc);
    case CIL_BL_GREEDY_EW:
        return greedy_next(b, alloc);
    case CIL_BL_MINERVA:
        return minerva_next(b, alloc);
    case CIL_BL_PARTIES:
    case CIL_BL_MIAD:
        return waterfill_demands(b, alloc);
    case CIL_BL_ERNEST:
    case CIL_BL_QUASAR: {
        size_t explore = b->kind == CIL_BL_ERNEST ? MODEL_EXPLORE_ROUNDS : QUASAR_EXPLORE_ROUNDS;
        if (b->rounds < explore)
            return cil_alloc_random(b->n, b->R, &b->rng, alloc);
        int rc = b->kind == CIL_BL_ERNEST ? bl_ernest_demands(b, load_forecast)
                                          : bl_quasar_demands(b, load_forecast);
        return rc == 0 ? waterfill_demands(b, alloc) : -1;
    }
    default:
        return -1;
    }
}
