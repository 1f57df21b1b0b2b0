/* policy.c: every allocation policy behind one object (cilantro/policy.h): the learners
 * and load forecasters of the Cilantro policies, the oracles' tables of true utilities,
 * the baselines. See docs/cilantro.md, "Policy object". */
#include "cilantro/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cilantro/baselines.h"
#include "cilantro/common.h"
#include "cilantro/forecast.h"
#include "cilantro/ibtree.h"

static const char *const policy_names[CIL_POL_COUNT] = {
    "resource-fair", "cilantro-njc", "cilantro-sw", "cilantro-ew",
    "oracle-njc",    "oracle-sw",    "oracle-ew",    "evoalg-sw",
    "evoalg-ew",     "greedy-ew",    "ernest",       "quasar",
    "minerva",       "parties",      "miad",
};

const char *cil_policy_name(cil_policy_kind k)
{
    if ((int)k < 0 || k >= CIL_POL_COUNT)
        return NULL;
    return policy_names[k];
}

int cil_policy_parse(const char *name, cil_policy_kind *k)
{
    if (!name || !k)
        return -1;
    for (int i = 0; i < CIL_POL_COUNT; i++)
        if (strcmp(name, policy_names[i]) == 0) {
            *k = (cil_policy_kind)i;
            return 0;
        }
    return -1;
}

void cil_policy_opts_default(cil_policy_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->unit = 1;
    o->seed = 1;
    o->skip_points = 5;
    cil_njc_params_default(&o->njc);
    cil_sw_params_default(&o->sw);
    o->ew_max_moves = 0;
    o->c_beta = 1e-3;
    o->c_tau = 1e-5;
    o->delta = 0.001;
    o->max_depth = 12;
    o->plan_span_s = 0;
}

/* Nominal load of a job: the constant, or scale times the trace's mean. */
static double nominal_load(const cil_job *j)
{
    if (!j->trace)
        return j->load;
    double s = 0;
    for (size_t i = 0; i < j->trace->n; i++)
        s += j->trace->data[i];
    double m = s / (double)j->trace->n * j->load;
    return m > 0 ? m : j->load;
}

int cil_policy_learner_domain(const cil_env *env, size_t j, double *lo, double *hi,
                              double *lip, double *p_hi)
{
    if (!env || j >= env->njobs || !lo || !hi || !lip || !p_hi)
        return -1;
    const cil_job *job = &env->jobs[j];
    *lo = 0;
    *p_hi = 1;
    switch (job->curve) {
    case CIL_CURVE_PROFILE: {
        const cil_profile *pr = job->profile;
        double emax = 0;
        for (size_t i = 0; i < pr->n; i++)
            if (pr->ests[i] > emax)
                emax = pr->ests[i];
        if (job->throughput && 1.2 * emax > 1)
            *p_hi = 1.2 * emax;
        double h = pr->grid[pr->n - 1];
        *hi = isfinite(pr->int_ub) && pr->int_ub > 0 ? pr->int_ub : (h > 0 ? h : 1);
        *lip = isfinite(pr->lip_const) && pr->lip_const > 0 ? pr->lip_const
                                                               : 4 * *p_hi / *hi;
        break;
    }
    case CIL_CURVE_LINEAR: {
        double ln = nominal_load(job);
        *hi = 2 * job->demand / ln;
        *lip = ln / job->demand;
        break;
    }
    default: /* sigmoid: slope at most 1/4; p > 0.9996 at x = offset + 8 */
        *hi = (job->offset > 0 ? job->offset : 0) + 8;
        *lip = 0.25;
        break;
    }
    return 0;
}

typedef struct {
    long R;
    double *table; /* n * (R + 1) utilities */
    double *mid;   /* the same at the learners' midpoints (Cilantro-EW's tie break) */
} util_table;

static double table_util(void *ctx, size_t j, long a)
{
    const util_table *t = ctx;
    return t->table[j * (size_t)(t->R + 1) + (size_t)a];
}

static double table_mid_util(void *ctx, size_t j, long a)
{
    const util_table *t = ctx;
    return t->mid[j * (size_t)(t->R + 1) + (size_t)a];
}

struct cil_policy {
    cil_policy_kind kind;
    const cil_env *env;
    cil_policy_opts o;
    size_t n;
    long R;                 /* units shared: floor(cpus / unit) */
    size_t round;           /* rounds decided so far */
    cil_ibtree **tree;      /* Cilantro policies: one learner per job */
    cil_forecaster **fc;    /* one load forecaster per job */
    cil_forecast *fcst;     /* this round's load forecasts */
    int *fc_ok;             /* fcst[j] is usable */
    double *rep_load_sum;   /* loads reported since the last round */
    size_t *rep_count;
    size_t *seen;           /* points offered to each learner, skipped ones included */
    double *obs_sum, *obs_load; /* baselines: this round's usable rewards and their loads */
    size_t *obs_count;
    int *obs_has;
    cil_baseline *bl;       /* the baseline, when one runs */
    long *alloc, *prev;     /* this and last round's allocation, in units */
    double *demand, *weight, *rec_mid, *rec_up, *load;
    util_table tab;
    cil_policy_stats st;
};

static int is_baseline(cil_policy_kind k) { return k >= CIL_POL_EVOALG_SW && k < CIL_POL_COUNT; }

static int is_learned(cil_policy_kind k)
{
    return k == CIL_POL_CILANTRO_NJC || k == CIL_POL_CILANTRO_SW || k == CIL_POL_CILANTRO_EW;
}

static int uses_table(cil_policy_kind k)
{
    return k == CIL_POL_CILANTRO_SW || k == CIL_POL_CILANTRO_EW || k == CIL_POL_ORACLE_SW ||
           k == CIL_POL_ORACLE_EW;
}

void cil_policy_free(cil_policy *p)
{
    if (!p)
        return;
    for (size_t j = 0; p->tree && j < p->n; j++)
        cil_ibtree_free(p->tree[j]);
    for (size_t j = 0; p->fc && j < p->n; j++)
        cil_forecaster_free(p->fc[j]);
    free(p->tree);
    free(p->fc);
    free(p->fcst);
    free(p->fc_ok);
    free(p->rep_load_sum);
    free(p->rep_count);
    free(p->seen);
    free(p->obs_sum);
    free(p->obs_load);
    free(p->obs_count);
    free(p->obs_has);
    cil_baseline_free(p->bl);
    free(p->alloc);
    free(p->prev);
    free(p->demand);
    free(p->weight);
    free(p->rec_mid);
    free(p->rec_up);
    free(p->load);
    free(p->tab.table);
    free(p->tab.mid);
    free(p);
}

cil_policy *cil_policy_new(const char *name, const cil_env *env, const cil_policy_opts *opts,
                           char *err, size_t errlen)
{
    cil_policy_kind kind;
    if (!name || cil_policy_parse(name, &kind) != 0) {
        cil_errorf(err, errlen, "policy: unknown policy '%s'", name ? name : "(null)");
        return NULL;
    }
    if (!env || env->njobs == 0 || env->cpus <= 0) {
        cil_errorf(err, errlen, "policy %s: invalid arguments (no jobs or no CPUs)", name);
        return NULL;
    }
    cil_policy_opts o;
    if (opts)
        o = *opts;
    else
        cil_policy_opts_default(&o);
    double units = floor((double)env->cpus / o.unit);
    if (!(o.unit > 0) || !isfinite(o.unit) || !(units >= 1)) {
        cil_errorf(err, errlen, "policy %s: unit must be positive and at most the %d CPUs",
                   name, env->cpus);
        return NULL;
    }
    if (is_baseline(kind) && o.unit != 1) {
        cil_errorf(err, errlen, "policy %s: the baselines allocate whole CPUs (unit 1)", name);
        return NULL;
    }
    if (!(o.plan_span_s >= 0) || !isfinite(o.plan_span_s)) {
        cil_errorf(err, errlen, "policy %s: plan_span_s must be a number >= 0", name);
        return NULL;
    }
    cil_policy *p = calloc(1, sizeof *p);
    if (!p) {
        cil_errorf(err, errlen, "policy %s: out of memory", name);
        return NULL;
    }
    size_t n = env->njobs;
    long R = (long)units;
    p->kind = kind;
    p->env = env;
    p->o = o;
    p->n = n;
    p->R = R;
    p->tab.R = R;
    int ok = (p->tree = calloc(n, sizeof *p->tree)) && (p->fc = calloc(n, sizeof *p->fc)) &&
             (p->fcst = calloc(n, sizeof *p->fcst)) && (p->fc_ok = calloc(n, sizeof(int))) &&
             (p->rep_load_sum = calloc(n, sizeof(double))) &&
             (p->rep_count = calloc(n, sizeof(size_t))) && (p->seen = calloc(n, sizeof(size_t))) &&
             (p->obs_sum = calloc(n, sizeof(double))) && (p->obs_load = calloc(n, sizeof(double))) &&
             (p->obs_count = calloc(n, sizeof(size_t))) && (p->obs_has = calloc(n, sizeof(int))) &&
             (p->alloc = calloc(n, sizeof(long))) && (p->prev = calloc(n, sizeof(long))) &&
             (p->demand = calloc(n, sizeof(double))) && (p->weight = calloc(n, sizeof(double))) &&
             (p->rec_mid = calloc(n, sizeof(double))) && (p->rec_up = calloc(n, sizeof(double))) &&
             (p->load = calloc(n, sizeof(double))) &&
             (!is_baseline(kind) ||
              (p->bl = cil_baseline_create((cil_baseline_kind)(kind - CIL_POL_EVOALG_SW), env,
                                           o.seed ^ 0xB5AD4ECEDA1CE2A9ULL))) &&
             (!uses_table(kind) || (p->tab.table = calloc(n * (size_t)(R + 1), sizeof(double)))) &&
             (kind != CIL_POL_CILANTRO_EW ||
              (p->tab.mid = calloc(n * (size_t)(R + 1), sizeof(double))));
    if (!ok) {
        cil_policy_free(p);
        cil_errorf(err, errlen, "policy %s: out of memory", name);
        return NULL;
    }
    for (size_t j = 0; j < n; j++) {
        p->weight[j] = env->jobs[j].weight;
        cil_forecast_params fp;
        cil_forecast_params_default(&fp);
        p->fc[j] = cil_forecaster_create(&fp);
        double lo = 0, hi = 0, lip = 0, p_hi = 1;
        if (is_learned(kind)) {
            cil_ibtree_params ip;
            cil_policy_learner_domain(env, j, &lo, &hi, &lip, &p_hi);
            cil_ibtree_params_default(&ip, lo, hi, lip);
            ip.c_beta = o.c_beta;
            ip.c_tau = o.c_tau;
            ip.delta = o.delta;
            ip.max_depth = o.max_depth;
            ip.p_hi = p_hi;
            p->tree[j] = cil_ibtree_create(&ip);
        }
        if (!p->fc[j] || (is_learned(kind) && !p->tree[j])) {
            cil_errorf(err, errlen,
                       "policy %s: job '%s': cannot create its learner (domain [%g, %g], L %g)",
                       name, env->jobs[j].name, lo, hi, lip);
            cil_policy_free(p);
            return NULL;
        }
    }
    return p;
}

int cil_policy_report(cil_policy *p, int job, double load, double alloc, double reward,
                      double sigma, double time_span)
{
    if (!p || job < 0 || (size_t)job >= p->n || !isfinite(load) || !isfinite(alloc) ||
        !(time_span >= 0))
        return -1;
    size_t j = (size_t)job;
    p->rep_load_sum[j] += load;
    p->rep_count[j]++;
    if (isnan(reward))
        return 0; /* not usable: the load alone counts */
    p->obs_sum[j] += reward;
    p->obs_load[j] += load;
    p->obs_count[j]++;
    if (!p->tree[j] || !(load > 0) || p->seen[j]++ < p->o.skip_points)
        return 0;
    if (cil_ibtree_add(p->tree[j], alloc / load, reward, sigma) != 0)
        return -1;
    p->st.points_fed++;
    return 0;
}

/* Smallest integer a in [0, R] units meeting the SLO at load; R when none does. */
static double true_demand(const cil_job *j, long R, double unit, double load)
{
    for (long a = 0; a <= R; a++)
        if (cil_job_perf(j, (double)a * unit, load) >= j->slo)
            return (double)a;
    return (double)R;
}

/* Fills the utility table: the oracles read the true curves at the round's load; the
 * Cilantro policies the learner's upper bound at x = a / (load forecast), and
 * Cilantro-EW also its midpoint (tab.mid). SW tables hold weighted utilities (the
 * welfare is weighted), EW tables plain ones. */
static int fill_table(cil_policy *p, const double *load)
{
    const cil_env *env = p->env;
    long R = p->R;
    double unit = p->o.unit;
    int weighted = p->kind == CIL_POL_ORACLE_SW || p->kind == CIL_POL_CILANTRO_SW;
    int mid = p->kind == CIL_POL_CILANTRO_EW;
    for (size_t j = 0; j < p->n; j++) {
        const cil_job *job = &env->jobs[j];
        size_t row = j * (size_t)(R + 1);
        for (long a = 0; a <= R; a++) {
            double perf;
            if (is_learned(p->kind)) {
                cil_estimate e;
                double x = load[j] > 0 ? (double)a * unit / load[j] : INFINITY;
                if (!isfinite(x))
                    x = 1e300;
                if (cil_ibtree_estimate(p->tree[j], x, &e) != 0)
                    return -1;
                perf = e.upper;
                if (mid)
                    p->tab.mid[row + (size_t)a] = cil_job_utility(job, e.mid);
            } else {
                perf = cil_job_perf(job, (double)a * unit, load[j]);
            }
            double u = cil_job_utility(job, perf);
            p->tab.table[row + (size_t)a] = weighted ? job->weight * u : u;
        }
    }
    return 0;
}

/* Chooses this round's allocation (units) into p->alloc. 0, or -1 on failure. */
static int decide(cil_policy *p, double now)
{
    const cil_env *env = p->env;
    size_t n = p->n;
    long R = p->R;
    cil_policy_kind pol = p->kind;
    if (pol == CIL_POL_RESOURCE_FAIR)
        return cil_resource_fair(n, R, p->weight, p->alloc);
    double *load = p->load; /* the load each policy plans for */
    if (is_baseline(pol)) {
        /* baselines plan for the forecast value; unknown (NAN) before any load is seen */
        for (size_t j = 0; j < n; j++)
            load[j] = p->fc_ok[j] ? p->fcst[j].value : NAN;
        return cil_baseline_allocate(p->bl, load, p->alloc);
    }
    if (is_learned(pol)) {
        for (size_t j = 0; j < n; j++) {
            if (!p->fc_ok[j])
                return cil_resource_fair(n, R, p->weight, p->alloc); /* no load seen yet */
            load[j] = p->fcst[j].upper;
        }
    } else {
        for (size_t j = 0; j < n; j++)
            load[j] = cil_job_mean_load(&env->jobs[j], now, now + p->o.plan_span_s);
    }

    switch (pol) {
    case CIL_POL_ORACLE_NJC:
        for (size_t j = 0; j < n; j++)
            p->demand[j] = true_demand(&env->jobs[j], R, p->o.unit, load[j]);
        return cil_waterfill(n, R, p->demand, p->weight, p->alloc);
    case CIL_POL_CILANTRO_NJC:
        for (size_t j = 0; j < n; j++) {
            double goal = env->jobs[j].slo;
            if (cil_ibtree_recommend(p->tree[j], goal, CIL_REC_MID, &p->rec_mid[j]) < 0 ||
                cil_ibtree_recommend(p->tree[j], goal, CIL_REC_LOWER, &p->rec_up[j]) < 0)
                return -1;
            if (!(load[j] >= 0))
                load[j] = 0;
            load[j] /= p->o.unit; /* demands in units */
        }
        return cil_alloc_njc(n, R, p->rec_mid, p->rec_up, load, p->weight, &p->o.njc,
                             p->round > 0 ? p->prev : NULL, p->alloc, NULL);
    case CIL_POL_ORACLE_EW:
    case CIL_POL_CILANTRO_EW:
        if (fill_table(p, load) != 0)
            return -1;
        return cil_alloc_ew(n, R, table_util,
                            pol == CIL_POL_CILANTRO_EW ? table_mid_util : NULL, &p->tab,
                            p->o.ew_max_moves, p->alloc);
    case CIL_POL_ORACLE_SW:
    case CIL_POL_CILANTRO_SW: {
        if (fill_table(p, load) != 0)
            return -1;
        cil_sw_params sw = p->o.sw;
        sw.seed = p->o.sw.seed ^ (p->o.seed * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)p->round;
        return cil_alloc_sw(n, R, table_util, &p->tab, &sw, p->alloc);
    }
    default:
        return -1;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cil_policy_round(cil_policy *p, double now, double *alloc_out, char *err, size_t errlen)
{
    if (!p || !alloc_out || !isfinite(now)) {
        cil_errorf(err, errlen, "policy: invalid arguments");
        return -1;
    }
    size_t n = p->n;
    const char *name = cil_policy_name(p->kind);
    /* a baseline sees the last round's usable reports (their mean reward and load) */
    if (p->bl && p->round > 0) {
        for (size_t j = 0; j < n; j++) {
            size_t c = p->obs_count[j];
            p->obs_has[j] = c > 0;
            p->obs_sum[j] = c ? p->obs_sum[j] / (double)c : 0;
            p->obs_load[j] = c ? p->obs_load[j] / (double)c : 0;
        }
        if (cil_baseline_observe(p->bl, p->alloc, p->obs_load, p->obs_sum, p->obs_has) != 0) {
            cil_errorf(err, errlen, "policy %s: out of memory", name);
            return -1;
        }
    }
    memset(p->obs_sum, 0, n * sizeof *p->obs_sum);
    memset(p->obs_load, 0, n * sizeof *p->obs_load);
    memset(p->obs_count, 0, n * sizeof *p->obs_count);
    /* the forecasters see the mean load reported since the last round (timed apart: a
     * deployment forecasts when the loads arrive) */
    double t_fc = now_s();
    for (size_t j = 0; j < n; j++) {
        if (p->rep_count[j] > 0)
            cil_forecaster_observe(p->fc[j], p->rep_load_sum[j] / (double)p->rep_count[j]);
        p->fc_ok[j] = cil_forecaster_predict(p->fc[j], &p->fcst[j]) == 0;
        p->rep_load_sum[j] = 0;
        p->rep_count[j] = 0;
    }
    p->st.forecast_s = now_s() - t_fc;
    memcpy(p->prev, p->alloc, n * sizeof *p->alloc);
    double t0 = now_s();
    int rc = decide(p, now);
    p->st.decide_s = now_s() - t0;
    if (rc != 0) {
        cil_errorf(err, errlen, "policy %s: allocation failed in round %zu", name, p->round);
        return -1;
    }
    for (size_t j = 0; j < n; j++)
        alloc_out[j] = (double)p->alloc[j] * p->o.unit;
    p->round++;
    p->st.rounds = p->round;
    return 0;
}

void cil_policy_get_stats(const cil_policy *p, cil_policy_stats *st)
{
    if (p && st)
        *st = p->st;
}
