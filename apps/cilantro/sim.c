/* sim.c: the discrete-event simulator loop. See cilantro/sim.h and docs/cilantro.md. */
#include "cilantro/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cilantro/common.h"
#include "cilantro/forecast.h"
#include "cilantro/ibtree.h"

static const char *const policy_names[CIL_POL_COUNT] = {
    "resource-fair", "cilantro-njc", "cilantro-sw", "cilantro-ew",
    "oracle-njc",    "oracle-sw",    "oracle-ew",    "evoalg-sw",
    "evoalg-ew",     "greedy-ew",    "ernest",       "quasar",
    "minerva",       "parties",      "miad",
};

const char *cil_policy_name(cil_policy p)
{
    if ((int)p < 0 || p >= CIL_POL_COUNT)
        return NULL;
    return policy_names[p];
}

int cil_policy_parse(const char *name, cil_policy *p)
{
    if (!name || !p)
        return -1;
    for (int i = 0; i < CIL_POL_COUNT; i++)
        if (strcmp(name, policy_names[i]) == 0) {
            *p = (cil_policy)i;
            return 0;
        }
    return -1;
}

void cil_sim_params_default(cil_sim_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->duration_s = 6 * 3600.0;
    p->seed = 1;
    p->skip_points = 5;
    cil_njc_params_default(&p->njc);
    cil_sw_params_default(&p->sw);
    p->ew_max_moves = 0;
    p->c_beta = 1e-3;
    p->c_tau = 1e-5;
    p->delta = 0.001;
    p->max_depth = 12;
}

void cil_sim_result_free(cil_sim_result *r)
{
    if (!r)
        return;
    free(r->job_util);
    free(r->job_alloc);
    free(r->series);
    free(r->alloc_s);
    free(r->forecast_s);
    r->forecast_s = NULL;
    r->job_util = r->job_alloc = NULL;
    r->series = NULL;
    r->alloc_s = NULL;
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

int cil_sim_learner_domain(const cil_env *env, size_t j, double *lo, double *hi,
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

/* Mean load over [t0, t1): samples at t0 and every later whole second before t1. */
static double mean_load(const cil_job *j, double t0, double t1)
{
    if (!j->trace)
        return j->load;
    double s = cil_job_load(j, t0);
    size_t n = 1;
    for (double t = floor(t0) + 1; t < t1; t += 1) {
        s += cil_job_load(j, t);
        n++;
    }
    return s / (double)n;
}

typedef struct {
    const cil_env *env;
    size_t n;
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

/* Smallest integer a in [0, R] meeting the SLO at load; R when none does. */
static double true_demand(const cil_job *j, long R, double load)
{
    for (long a = 0; a <= R; a++)
        if (cil_job_perf(j, (double)a, load) >= j->slo)
            return (double)a;
    return (double)R;
}

typedef struct {
    cil_ibtree **tree;
    cil_forecaster **fc;
    long *alloc, *prev;
    double *round_load;  /* true mean load of the current round */
    double *rep_load_sum; /* loads reported during the current round */
    size_t *rep_count;
    size_t *seen;        /* reports given to each learner, skipped ones included */
    double *demand, *util, *share, *weight, *rec_mid, *rec_up, *load_up;
    double *util_sum, *alloc_sum, *allocd;
    double *obs_sum, *obs_load; /* baselines: this round's kept rewards and their loads */
    size_t *obs_count;
    int *obs_has;
    cil_baseline *bl;           /* the baseline policy, when one runs */
    cil_forecast *fcst;         /* this round's load forecasts, made when loads arrive */
    int *fc_ok;                 /* fcst[j] is usable */
    util_table tab;
} sim_state;

static void state_free(sim_state *s, size_t n)
{
    if (s->tree)
        for (size_t j = 0; j < n; j++)
            cil_ibtree_free(s->tree[j]);
    if (s->fc)
        for (size_t j = 0; j < n; j++)
            cil_forecaster_free(s->fc[j]);
    free(s->tree);
    free(s->fc);
    free(s->alloc);
    free(s->prev);
    free(s->round_load);
    free(s->rep_load_sum);
    free(s->rep_count);
    free(s->seen);
    free(s->demand);
    free(s->util);
    free(s->share);
    free(s->weight);
    free(s->rec_mid);
    free(s->rec_up);
    free(s->load_up);
    free(s->util_sum);
    free(s->alloc_sum);
    free(s->allocd);
    free(s->obs_sum);
    free(s->obs_load);
    free(s->obs_count);
    free(s->obs_has);
    cil_baseline_free(s->bl);
    free(s->fcst);
    free(s->fc_ok);
    free(s->tab.table);
    free(s->tab.mid);
}

static int is_baseline(cil_policy p) { return p >= CIL_POL_EVOALG_SW && p < CIL_POL_COUNT; }

static int is_learned(cil_policy p)
{
    return p == CIL_POL_CILANTRO_NJC || p == CIL_POL_CILANTRO_SW || p == CIL_POL_CILANTRO_EW;
}

/* Fills the utility table: the oracles read the true curves at the round's load; the
 * Cilantro policies the learner's upper bound at x = a / (load forecast), and
 * Cilantro-EW also its midpoint (tab.mid). SW tables hold weighted utilities (the
 * welfare is weighted), EW tables plain ones. */
static int fill_table(sim_state *s, const cil_env *env, cil_policy pol, const double *load)
{
    size_t n = env->njobs;
    long R = env->cpus;
    int weighted = pol == CIL_POL_ORACLE_SW || pol == CIL_POL_CILANTRO_SW;
    int mid = pol == CIL_POL_CILANTRO_EW;
    for (size_t j = 0; j < n; j++) {
        const cil_job *job = &env->jobs[j];
        size_t row = j * (size_t)(R + 1);
        for (long a = 0; a <= R; a++) {
            double p;
            if (is_learned(pol)) {
                cil_estimate e;
                double x = load[j] > 0 ? (double)a / load[j] : INFINITY;
                if (!isfinite(x))
                    x = 1e300;
                if (cil_ibtree_estimate(s->tree[j], x, &e) != 0)
                    return -1;
                p = e.upper;
                if (mid)
                    s->tab.mid[row + (size_t)a] = cil_job_utility(job, e.mid);
            } else {
                p = cil_job_perf(job, (double)a, load[j]);
            }
            double u = cil_job_utility(job, p);
            s->tab.table[row + (size_t)a] = weighted ? job->weight * u : u;
        }
    }
    return 0;
}

/* Chooses this round's allocation into s->alloc. 0, or -1 on failure. */
static int allocate(sim_state *s, const cil_env *env, cil_policy pol, const cil_sim_params *prm,
                    size_t round)
{
    size_t n = env->njobs;
    long R = env->cpus;
    if (pol == CIL_POL_RESOURCE_FAIR)
        return cil_resource_fair(n, R, s->weight, s->alloc);
    if (is_baseline(pol)) {
        /* baselines plan for the forecast value; unknown (NAN) before any load is seen */
        for (size_t j = 0; j < n; j++) {
            s->load_up[j] = s->fc_ok[j] ? s->fcst[j].value : NAN;
        }
        return cil_baseline_allocate(s->bl, s->load_up, s->alloc);
    }

    double *load = s->load_up; /* the load each policy plans for */
    if (is_learned(pol)) {
        for (size_t j = 0; j < n; j++) {
            if (!s->fc_ok[j])
                return cil_resource_fair(n, R, s->weight, s->alloc); /* no load seen yet */
            load[j] = s->fcst[j].upper;
        }
    } else {
        memcpy(load, s->round_load, n * sizeof *load);
    }

    switch (pol) {
    case CIL_POL_ORACLE_NJC:
        for (size_t j = 0; j < n; j++)
            s->demand[j] = true_demand(&env->jobs[j], R, load[j]);
        return cil_waterfill(n, R, s->demand, s->weight, s->alloc);
    case CIL_POL_CILANTRO_NJC:
        for (size_t j = 0; j < n; j++) {
            double goal = env->jobs[j].slo;
            if (cil_ibtree_recommend(s->tree[j], goal, CIL_REC_MID, &s->rec_mid[j]) < 0 ||
                cil_ibtree_recommend(s->tree[j], goal, CIL_REC_LOWER, &s->rec_up[j]) < 0)
                return -1;
            if (!(load[j] >= 0))
                load[j] = 0;
        }
        return cil_alloc_njc(n, R, s->rec_mid, s->rec_up, load, s->weight, &prm->njc,
                             round > 0 ? s->prev : NULL, s->alloc, NULL);
    case CIL_POL_ORACLE_EW:
    case CIL_POL_CILANTRO_EW:
        if (fill_table(s, env, pol, load) != 0)
            return -1;
        return cil_alloc_ew(n, R, table_util,
                            pol == CIL_POL_CILANTRO_EW ? table_mid_util : NULL, &s->tab,
                            prm->ew_max_moves, s->alloc);
    case CIL_POL_ORACLE_SW:
    case CIL_POL_CILANTRO_SW: {
        if (fill_table(s, env, pol, load) != 0)
            return -1;
        cil_sw_params sw = prm->sw;
        sw.seed = prm->sw.seed ^ (prm->seed * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)round;
        return cil_alloc_sw(n, R, table_util, &s->tab, &sw, s->alloc);
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

/* Tolerance for comparing event times. */
static double teps(double t) { return 1e-9 * (fabs(t) > 1 ? fabs(t) : 1); }

int cil_sim_run(const cil_env *env, cil_policy pol, const cil_sim_params *params,
                cil_sim_result *out, char *err, size_t errlen)
{
    if (!env || !out || !cil_policy_name(pol) || env->njobs == 0 || env->cpus <= 0 ||
        !(env->round_s > 0) || !(env->report_s > 0)) {
        cil_errorf(err, errlen, "sim: invalid arguments");
        return -1;
    }
    cil_sim_params prm;
    if (params)
        prm = *params;
    else
        cil_sim_params_default(&prm);
    if (!(prm.duration_s > 0) || !isfinite(prm.duration_s)) {
        cil_errorf(err, errlen, "sim: duration_s must be a positive number");
        return -1;
    }
    size_t n = env->njobs;
    long R = env->cpus;
    double rs = env->round_s, ps = env->report_s;
    double fr = floor(prm.duration_s / rs + 1e-9);
    size_t rounds = fr < 1 ? 1 : (size_t)fr;
    double T = (double)rounds * rs;

    sim_state s;
    memset(&s, 0, sizeof s);
    int ok = (s.tree = calloc(n, sizeof *s.tree)) && (s.fc = calloc(n, sizeof *s.fc)) &&
             (s.alloc = calloc(n, sizeof *s.alloc)) && (s.prev = calloc(n, sizeof *s.prev)) &&
             (s.round_load = calloc(n, sizeof(double))) &&
             (s.rep_load_sum = calloc(n, sizeof(double))) &&
             (s.rep_count = calloc(n, sizeof(size_t))) && (s.seen = calloc(n, sizeof(size_t))) &&
             (s.demand = calloc(n, sizeof(double))) && (s.util = calloc(n, sizeof(double))) &&
             (s.share = calloc(n, sizeof(double))) && (s.weight = calloc(n, sizeof(double))) &&
             (s.rec_mid = calloc(n, sizeof(double))) && (s.rec_up = calloc(n, sizeof(double))) &&
             (s.load_up = calloc(n, sizeof(double))) &&
             (s.util_sum = calloc(n, sizeof(double))) &&
             (s.alloc_sum = calloc(n, sizeof(double))) &&
             (s.allocd = calloc(n, sizeof(double))) &&
             (s.obs_sum = calloc(n, sizeof(double))) && (s.obs_load = calloc(n, sizeof(double))) &&
             (s.obs_count = calloc(n, sizeof(size_t))) && (s.obs_has = calloc(n, sizeof(int))) &&
             (s.fcst = calloc(n, sizeof *s.fcst)) && (s.fc_ok = calloc(n, sizeof(int))) &&
             (!is_baseline(pol) ||
              (s.bl = cil_baseline_create((cil_baseline_kind)(pol - CIL_POL_EVOALG_SW), env,
                                          prm.seed ^ 0xB5AD4ECEDA1CE2A9ULL))) &&
             (s.tab.table = calloc(n * (size_t)(R + 1), sizeof(double))) &&
             (pol != CIL_POL_CILANTRO_EW ||
              (s.tab.mid = calloc(n * (size_t)(R + 1), sizeof(double))));
    if (!ok) {
        state_free(&s, n);
        cil_errorf(err, errlen, "sim: out of memory");
        return -1;
    }
    s.tab.env = env;
    s.tab.n = n;
    s.tab.R = R;
    double wsum = 0;
    for (size_t j = 0; j < n; j++) {
        s.weight[j] = env->jobs[j].weight;
        wsum += s.weight[j];
    }
    for (size_t j = 0; j < n; j++) {
        cil_ibtree_params ip;
        double lo, hi, lip, p_hi;
        cil_sim_learner_domain(env, j, &lo, &hi, &lip, &p_hi);
        cil_ibtree_params_default(&ip, lo, hi, lip);
        ip.c_beta = prm.c_beta;
        ip.c_tau = prm.c_tau;
        ip.delta = prm.delta;
        ip.max_depth = prm.max_depth;
        ip.p_hi = p_hi;
        cil_forecast_params fp;
        cil_forecast_params_default(&fp);
        s.tree[j] = cil_ibtree_create(&ip);
        s.fc[j] = cil_forecaster_create(&fp);
        if (!s.tree[j] || !s.fc[j]) {
            state_free(&s, n);
            cil_errorf(err, errlen, "sim: job '%s': cannot create its learner (domain [%g, %g], L %g)",
                    env->jobs[j].name, lo, hi, lip);
            return -1;
        }
    }

    cil_rng rng;
    cil_rng_seed(&rng, prm.seed);
    cil_metrics_avg avg;
    cil_metrics_avg_init(&avg);
    memset(out, 0, sizeof *out);
    if (!(out->series = calloc(rounds, sizeof *out->series)) ||
        !(out->alloc_s = calloc(rounds, sizeof *out->alloc_s)) ||
        !(out->forecast_s = calloc(rounds, sizeof *out->forecast_s))) {
        cil_sim_result_free(out);
        state_free(&s, n);
        cil_errorf(err, errlen, "sim: out of memory");
        return -1;
    }

    uint64_t k_report = 1; /* next report ends at k_report * ps */
    size_t m_round = 0;    /* next reallocation at m_round * rs */
    double last_realloc = 0;
    int rc = 0;
    for (;;) {
        double tr = (double)k_report * ps, tq = (double)m_round * rs;
        if (tr <= tq + teps(tq) && tr <= T + teps(T)) {
            /* Report event for the span [tr - ps, tr): reports go before a
             * reallocation at the same time (they were measured at the old allocation). */
            double t0 = tr - ps;
            int straddles = last_realloc > t0 + teps(t0);
            for (size_t j = 0; j < n; j++) {
                const cil_job *job = &env->jobs[j];
                double load = mean_load(job, t0, tr);
                double a = (double)s.alloc[j];
                double p = cil_job_perf(job, a, load);
                double reward, sigma;
                out->reports++;
                s.rep_load_sum[j] += load;
                s.rep_count[j]++;
                /* Draw even when dropping, so the noise stream does not depend on it. */
                if (cil_job_report(job, &rng, p, load, ps, &reward, &sigma) != 0)
                    continue;
                if (straddles) {
                    out->reports_dropped++;
                    continue;
                }
                s.obs_sum[j] += reward;
                s.obs_load[j] += load;
                s.obs_count[j]++;
                if (!(load > 0) || s.seen[j]++ < prm.skip_points)
                    continue;
                if (cil_ibtree_add(s.tree[j], a / load, reward, sigma) != 0) {
                    cil_errorf(err, errlen, "sim: job '%s': learner update failed", job->name);
                    rc = -1;
                    break;
                }
                out->points_fed++;
            }
            if (rc)
                break;
            k_report++;
            continue;
        }
        if (m_round >= rounds)
            break;
        /* Round event: a baseline sees the last round's kept reports, the forecasters
         * its mean reported load; then the policy allocates for [tq, tq + rs) and the
         * round's metrics follow. */
        if (s.bl && m_round > 0) {
            for (size_t j = 0; j < n; j++) {
                size_t c = s.obs_count[j];
                s.obs_has[j] = c > 0;
                s.obs_sum[j] = c ? s.obs_sum[j] / (double)c : 0;
                s.obs_load[j] = c ? s.obs_load[j] / (double)c : 0;
            }
            if (cil_baseline_observe(s.bl, s.alloc, s.obs_load, s.obs_sum, s.obs_has) != 0) {
                cil_errorf(err, errlen, "sim: %s: out of memory", cil_policy_name(pol));
                rc = -1;
                break;
            }
        }
        memset(s.obs_sum, 0, n * sizeof *s.obs_sum);
        memset(s.obs_load, 0, n * sizeof *s.obs_load);
        memset(s.obs_count, 0, n * sizeof *s.obs_count);
        double t_fc = now_s();
        for (size_t j = 0; j < n; j++) {
            if (s.rep_count[j] > 0)
                cil_forecaster_observe(s.fc[j], s.rep_load_sum[j] / (double)s.rep_count[j]);
            s.fc_ok[j] = cil_forecaster_predict(s.fc[j], &s.fcst[j]) == 0;
            s.rep_load_sum[j] = 0;
            s.rep_count[j] = 0;
            s.round_load[j] = mean_load(&env->jobs[j], tq, tq + rs);
        }
        out->forecast_s[m_round] = now_s() - t_fc;
        memcpy(s.prev, s.alloc, n * sizeof *s.alloc);
        double t_start = now_s();
        int arc = allocate(&s, env, pol, &prm, m_round);
        out->alloc_s[m_round] = now_s() - t_start;
        if (arc != 0) {
            cil_errorf(err, errlen, "sim: %s: allocation failed in round %zu", cil_policy_name(pol),
                    m_round);
            rc = -1;
            break;
        }
        last_realloc = tq;
        long total = 0;
        for (size_t j = 0; j < n; j++) {
            const cil_job *job = &env->jobs[j];
            double L = s.round_load[j];
            total += s.alloc[j];
            s.demand[j] = true_demand(job, R, L);
            s.util[j] = cil_job_utility(job, cil_job_perf(job, (double)s.alloc[j], L));
            s.share[j] = cil_job_utility(job, cil_job_perf(job, (double)R * s.weight[j] / wsum, L));
            s.allocd[j] = (double)s.alloc[j];
            s.util_sum[j] += s.util[j];
            s.alloc_sum[j] += (double)s.alloc[j];
        }
        if (total > out->max_total_alloc)
            out->max_total_alloc = total;
        cil_metrics m;
        if (cil_metrics_compute(n, (double)R, s.allocd, s.demand, s.util, s.share, s.weight,
                                &m) != 0 ||
            cil_metrics_avg_add(&avg, &m) != 0) {
            cil_errorf(err, errlen, "sim: round %zu: metrics not finite", m_round);
            rc = -1;
            break;
        }
        out->series[m_round] = m;
        m_round++;
    }
    if (rc != 0)
        cil_sim_result_free(out);
    if (rc == 0) {
        out->rounds = rounds;
        out->njobs = n;
        out->job_util = malloc(n * sizeof(double));
        out->job_alloc = malloc(n * sizeof(double));
        if (!out->job_util || !out->job_alloc || cil_metrics_avg_mean(&avg, &out->mean) != 0) {
            cil_sim_result_free(out);
            cil_errorf(err, errlen, "sim: out of memory");
            rc = -1;
        } else {
            for (size_t j = 0; j < n; j++) {
                out->job_util[j] = s.util_sum[j] / (double)rounds;
                out->job_alloc[j] = s.alloc_sum[j] / (double)rounds;
            }
        }
    }
    state_free(&s, n);
    return rc;
}

int cil_sim_alloc_once(const cil_env *env, cil_policy pol, double t_s,
                       const cil_sim_params *params, long *alloc, char *err, size_t errlen)
{
    if (!env || !alloc || env->njobs == 0 || env->cpus <= 0 || !isfinite(t_s)) {
        cil_errorf(err, errlen, "alloc: invalid arguments");
        return -1;
    }
    if (pol != CIL_POL_RESOURCE_FAIR && pol != CIL_POL_ORACLE_NJC && pol != CIL_POL_ORACLE_SW &&
        pol != CIL_POL_ORACLE_EW) {
        cil_errorf(err, errlen,
                "alloc: policy '%s' needs feedback; one allocation from the true curves is "
                "defined for resource-fair, oracle-njc, oracle-sw and oracle-ew",
                cil_policy_name(pol) ? cil_policy_name(pol) : "?");
        return -1;
    }
    cil_sim_params prm;
    if (params)
        prm = *params;
    else
        cil_sim_params_default(&prm);
    size_t n = env->njobs;
    long R = env->cpus;
    sim_state s;
    memset(&s, 0, sizeof s);
    int ok = (s.alloc = calloc(n, sizeof *s.alloc)) && (s.prev = calloc(n, sizeof *s.prev)) &&
             (s.round_load = calloc(n, sizeof(double))) && (s.demand = calloc(n, sizeof(double))) &&
             (s.weight = calloc(n, sizeof(double))) && (s.load_up = calloc(n, sizeof(double))) &&
             (s.tab.table = calloc(n * (size_t)(R + 1), sizeof(double)));
    int rc = -1;
    if (!ok) {
        cil_errorf(err, errlen, "alloc: out of memory");
    } else {
        s.tab.env = env;
        s.tab.n = n;
        s.tab.R = R;
        for (size_t j = 0; j < n; j++) {
            s.weight[j] = env->jobs[j].weight;
            s.round_load[j] = cil_job_load(&env->jobs[j], t_s);
        }
        rc = allocate(&s, env, pol, &prm, 0);
        if (rc == 0)
            memcpy(alloc, s.alloc, n * sizeof *alloc);
        else
            cil_errorf(err, errlen, "alloc: %s: allocation failed", cil_policy_name(pol));
    }
    state_free(&s, n);
    return rc;
}
