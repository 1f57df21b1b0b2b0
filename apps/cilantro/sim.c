/* sim.c: the discrete-event simulator loop. See cilantro/sim.h and docs/cilantro.md. */
#include "cilantro/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cilantro/common.h"

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


/* The options of the policy object a run drives: the run's seed and parameters; the
 * oracles plan for the true mean load over plan_span_s. */
static void policy_opts(const cil_sim_params *prm, double plan_span_s, cil_policy_opts *o)
{
    cil_policy_opts_default(o);
    o->seed = prm->seed;
    o->skip_points = prm->skip_points;
    o->njc = prm->njc;
    o->sw = prm->sw;
    o->ew_max_moves = prm->ew_max_moves;
    o->c_beta = prm->c_beta;
    o->c_tau = prm->c_tau;
    o->delta = prm->delta;
    o->max_depth = prm->max_depth;
    o->plan_span_s = plan_span_s;
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
    long *alloc;
    double *dalloc;      /* the policy's answer */
    double *round_load;  /* true mean load of the current round */
    double *demand, *util, *share, *weight;
    double *util_sum, *alloc_sum, *allocd;
} sim_state;

static void state_free(sim_state *s)
{
    free(s->alloc);
    free(s->dalloc);
    free(s->round_load);
    free(s->demand);
    free(s->util);
    free(s->share);
    free(s->weight);
    free(s->util_sum);
    free(s->alloc_sum);
    free(s->allocd);
}

/* Tolerance for comparing event times. */
static double teps(double t) { return 1e-9 * (fabs(t) > 1 ? fabs(t) : 1); }

int cil_sim_run(const cil_env *env, cil_policy_kind pol, const cil_sim_params *params,
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

    cil_policy_opts po;
    policy_opts(&prm, rs, &po);
    char perr[256];
    cil_policy *policy = cil_policy_new(cil_policy_name(pol), env, &po, perr, sizeof perr);
    if (!policy) {
        cil_errorf(err, errlen, "sim: %s", perr);
        return -1;
    }
    sim_state s;
    memset(&s, 0, sizeof s);
    int ok = (s.alloc = calloc(n, sizeof *s.alloc)) && (s.dalloc = calloc(n, sizeof(double))) &&
             (s.round_load = calloc(n, sizeof(double))) &&
             (s.demand = calloc(n, sizeof(double))) && (s.util = calloc(n, sizeof(double))) &&
             (s.share = calloc(n, sizeof(double))) && (s.weight = calloc(n, sizeof(double))) &&
             (s.util_sum = calloc(n, sizeof(double))) &&
             (s.alloc_sum = calloc(n, sizeof(double))) &&
             (s.allocd = calloc(n, sizeof(double)));
    if (!ok) {
        state_free(&s);
        cil_policy_free(policy);
        cil_errorf(err, errlen, "sim: out of memory");
        return -1;
    }
    double wsum = 0;
    for (size_t j = 0; j < n; j++) {
        s.weight[j] = env->jobs[j].weight;
        wsum += s.weight[j];
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
        state_free(&s);
        cil_policy_free(policy);
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
                double load = cil_job_mean_load(job, t0, tr);
                double a = (double)s.alloc[j];
                double p = cil_job_perf(job, a, load);
                double reward, sigma;
                out->reports++;
                /* Draw even when dropping, so the noise stream does not depend on it. A
                 * dropped report (or one without a draw) still tells its load. */
                if (cil_job_report(job, &rng, p, load, ps, &reward, &sigma) != 0)
                    reward = sigma = NAN;
                else if (straddles) {
                    out->reports_dropped++;
                    reward = sigma = NAN;
                }
                if (cil_policy_report(policy, (int)j, load, a, reward, sigma, ps) != 0) {
                    cil_errorf(err, errlen, "sim: job '%s': learner update failed", job->name);
                    rc = -1;
                    break;
                }
            }
            if (rc)
                break;
            k_report++;
            continue;
        }
        if (m_round >= rounds)
            break;
        /* Round event: the policy sees the round's feedback and allocates for
         * [tq, tq + rs); the round's metrics follow. */
        char rerr[256];
        if (cil_policy_round(policy, tq, s.dalloc, rerr, sizeof rerr) != 0) {
            cil_errorf(err, errlen, "sim: %s", rerr);
            rc = -1;
            break;
        }
        cil_policy_stats st;
        cil_policy_get_stats(policy, &st);
        out->forecast_s[m_round] = st.forecast_s;
        out->alloc_s[m_round] = st.decide_s;
        last_realloc = tq;
        long total = 0;
        for (size_t j = 0; j < n; j++) {
            const cil_job *job = &env->jobs[j];
            double L = cil_job_mean_load(job, tq, tq + rs);
            s.round_load[j] = L;
            s.alloc[j] = (long)s.dalloc[j];
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
    if (rc == 0) {
        cil_policy_stats st;
        cil_policy_get_stats(policy, &st);
        out->points_fed = st.points_fed;
    }
    cil_policy_free(policy);
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
    state_free(&s);
    return rc;
}

int cil_sim_alloc_once(const cil_env *env, cil_policy_kind pol, double t_s,
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
    cil_policy_opts po;
    policy_opts(&prm, 0, &po); /* the oracles plan for the load at t_s */
    char perr[256];
    cil_policy *policy = cil_policy_new(cil_policy_name(pol), env, &po, perr, sizeof perr);
    double *a = calloc(n, sizeof *a);
    int rc = -1;
    if (!policy || !a) {
        cil_errorf(err, errlen, "alloc: %s", policy ? "out of memory" : perr);
    } else if (cil_policy_round(policy, t_s, a, perr, sizeof perr) != 0) {
        cil_errorf(err, errlen, "alloc: %s: allocation failed", cil_policy_name(pol));
    } else {
        for (size_t j = 0; j < n; j++)
            alloc[j] = (long)a[j];
        rc = 0;
    }
    free(a);
    cil_policy_free(policy);
    return rc;
}
