/* bl_models.c: the two model-fitting baselines, Ernest (a parametric time model per
 * job, non-negative least squares) and Quasar (collaborative filtering of observed
 * rewards across workload types), plus the small exact NNLS they rest on. Both turn
 * their model into a demand at the job's SLO; baselines.c water-fills the demands.
 * Choices: docs/cilantro.md, section "Baselines". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bl_internal.h"
#include "cilantro/policy.h"

#define ERNEST_K 4          /* features: 1, 1/z, log z, z */
#define ERNEST_Z_SPAN 16.0  /* z = 1 + 16 x / x_hi: Ernest's "machines" from 1 to 17 */
#define ERNEST_MIN_REWARD 0.02 /* time = 1 / max(reward, this) */
#define QUASAR_ITERS 300    /* multiplicative-update sweeps of the factorization */

/* ---- NNLS ---- */

/* Solves the s x s system A t = c in place by Gaussian elimination with partial
 * pivoting. 0, or -1 when singular. */
static int solve_small(size_t s, double *A, double *c)
{
    for (size_t col = 0; col < s; col++) {
        size_t piv = col;
        for (size_t r = col + 1; r < s; r++)
            if (fabs(A[r * s + col]) > fabs(A[piv * s + col]))
                piv = r;
        if (fabs(A[piv * s + col]) < 1e-12)
            return -1;
        if (piv != col) {
            for (size_t k = 0; k < s; k++) {
                double t = A[col * s + k];
                A[col * s + k] = A[piv * s + k];
                A[piv * s + k] = t;
            }
            double t = c[col];
            c[col] = c[piv];
            c[piv] = t;
        }
        for (size_t r = col + 1; r < s; r++) {
            double f = A[r * s + col] / A[col * s + col];
            for (size_t k = col; k < s; k++)
                A[r * s + k] -= f * A[col * s + k];
            c[r] -= f * c[col];
        }
    }
    for (size_t i = s; i-- > 0;) {
        double v = c[i];
        for (size_t k = i + 1; k < s; k++)
            v -= A[i * s + k] * c[k];
        c[i] = v / A[i * s + i];
    }
    return 0;
}

int cil_nnls_small(size_t k, const double *G, const double *c, double *theta)
{
    if (k == 0 || k > 8 || !G || !c || !theta)
        return -1;
    double best = INFINITY;
    memset(theta, 0, k * sizeof *theta);
    /* For a support S the least-squares optimum solves G_SS t = c_S and its error is
     * |y|^2 - t.c_S; the feasible support with the least error is the NNLS optimum. */
    for (unsigned mask = 1; mask < (1u << k); mask++) {
        size_t idx[8], s = 0;
        for (size_t i = 0; i < k; i++)
            if (mask & (1u << i))
                idx[s++] = i;
        double A[64], t[8];
        for (size_t r = 0; r < s; r++) {
            t[r] = c[idx[r]];
            for (size_t q = 0; q < s; q++)
                A[r * s + q] = G[idx[r] * k + idx[q]];
        }
        if (solve_small(s, A, t) != 0)
            continue;
        double err = 0;
        int feasible = 1;
        for (size_t r = 0; r < s; r++) {
            feasible &= t[r] >= 0;
            err -= t[r] * c[idx[r]];
        }
        if (feasible && err < best) {
            best = err;
            memset(theta, 0, k * sizeof *theta);
            for (size_t r = 0; r < s; r++)
                theta[idx[r]] = t[r];
        }
    }
    return 0;
}

/* ---- state ---- */

/* Jobs share a Quasar row when their true curves are the same kind of workload: the
 * same profile file, or the same built-in form and parameter. */
static int same_workload(const cil_job *a, const cil_job *b)
{
    if (a->curve != b->curve)
        return 0;
    if (a->curve == CIL_CURVE_PROFILE)
        return a->profile == b->profile;
    if (a->curve == CIL_CURVE_LINEAR)
        return a->demand == b->demand;
    return a->offset == b->offset;
}

int bl_models_init(cil_baseline *b)
{
    size_t n = b->n;
    if (!(b->gram = calloc(n * ERNEST_K * ERNEST_K, sizeof(double))) ||
        !(b->rhs = calloc(n * ERNEST_K, sizeof(double))) || !(b->npts = calloc(n, sizeof(size_t))) ||
        !(b->xhi = calloc(n, sizeof(double))) || !(b->type_of = calloc(n, sizeof(size_t))) ||
        !(b->qsum = calloc(n * BL_QBINS, sizeof(double))) ||
        !(b->qcnt = calloc(n * BL_QBINS, sizeof(double))))
        return -1;
    for (size_t j = 0; j < n; j++) {
        double lo, hi, lip, p_hi;
        cil_policy_learner_domain(b->env, j, &lo, &hi, &lip, &p_hi);
        b->xhi[j] = hi > 0 ? hi : 1;
        size_t t = 0;
        while (t < j && !same_workload(&b->env->jobs[t], &b->env->jobs[j]))
            t++;
        b->type_of[j] = t < j ? b->type_of[t] : b->ntypes++;
    }
    return 0;
}

void bl_models_free(cil_baseline *b)
{
    free(b->gram);
    free(b->rhs);
    free(b->npts);
    free(b->xhi);
    free(b->type_of);
    free(b->qsum);
    free(b->qcnt);
}

/* ---- Ernest ---- */

static void ernest_features(double x, double xhi, double *phi)
{
    double z = 1 + ERNEST_Z_SPAN * (x > 0 ? x : 0) / xhi;
    phi[0] = 1;
    phi[1] = 1 / z;
    phi[2] = log(z);
    phi[3] = z;
}

void bl_ernest_observe(cil_baseline *b, size_t j, long a, double load, double reward)
{
    if (!(load > 0))
        return;
    double phi[ERNEST_K];
    ernest_features((double)a / load, b->xhi[j], phi);
    double t = 1 / (reward > ERNEST_MIN_REWARD ? reward : ERNEST_MIN_REWARD);
    double *G = b->gram + j * ERNEST_K * ERNEST_K, *c = b->rhs + j * ERNEST_K;
    for (size_t r = 0; r < ERNEST_K; r++) {
        c[r] += phi[r] * t;
        for (size_t q = 0; q < ERNEST_K; q++)
            G[r * ERNEST_K + q] += phi[r] * phi[q];
    }
    b->npts[j]++;
}

/* Predicted performance 1 / time at x under theta. */
static double ernest_perf(const double *theta, double x, double xhi)
{
    double phi[ERNEST_K], t = 0;
    ernest_features(x, xhi, phi);
    for (size_t r = 0; r < ERNEST_K; r++)
        t += theta[r] * phi[r];
    return t > 1e-9 ? 1 / t : 1e9;
}

int bl_ernest_demands(cil_baseline *b, const double *forecast)
{
    for (size_t j = 0; j < b->n; j++) {
        double L = bl_plan_load(b, forecast, j), theta[ERNEST_K];
        if (!(L > 0) || b->npts[j] == 0 ||
            cil_nnls_small(ERNEST_K, b->gram + j * ERNEST_K * ERNEST_K, b->rhs + j * ERNEST_K,
                           theta) != 0) {
            b->demand[j] = (double)b->R / (double)b->n;
            continue;
        }
        /* the smallest allocation the model says meets the SLO; else its best one */
        long best_a = b->R, hit = -1;
        double best_p = -INFINITY, slo = b->env->jobs[j].slo;
        for (long a = 1; a <= b->R && hit < 0; a++) {
            double p = ernest_perf(theta, (double)a / L, b->xhi[j]);
            if (p >= slo)
                hit = a;
            if (p > best_p) {
                best_p = p;
                best_a = a;
            }
        }
        b->demand[j] = (double)(hit >= 0 ? hit : best_a);
    }
    return 0;
}

/* ---- Quasar ---- */

static size_t quasar_bin(const cil_baseline *b, size_t j, double x)
{
    double f = x / b->xhi[j] * BL_QBINS;
    if (!(f > 0))
        return 0;
    return f >= BL_QBINS ? BL_QBINS - 1 : (size_t)f;
}

void bl_quasar_observe(cil_baseline *b, size_t j, long a, double load, double reward)
{
    if (!(load > 0))
        return;
    size_t cell = b->type_of[j] * BL_QBINS + quasar_bin(b, j, (double)a / load);
    b->qsum[cell] += reward;
    b->qcnt[cell] += 1;
}

/* Weighted non-negative factorization M ~ Q P of the observed cells (mask = count > 0)
 * by multiplicative updates, rank r. est (ntypes x BL_QBINS) gets Q P. */
static void quasar_factorize(cil_baseline *b, size_t r, double *Q, double *P, double *est)
{
    size_t T = b->ntypes, B = BL_QBINS;
    for (size_t i = 0; i < T * r; i++)
        Q[i] = 0.1 + cil_rng_uniform(&b->rng);
    for (size_t i = 0; i < r * B; i++)
        P[i] = 0.1 + cil_rng_uniform(&b->rng);
    for (int it = 0; it < QUASAR_ITERS; it++) {
        for (size_t i = 0; i < T * B; i++) {
            double v = 0;
            for (size_t k = 0; k < r; k++)
                v += Q[(i / B) * r + k] * P[k * B + i % B];
            est[i] = v;
        }
        for (size_t t = 0; t < T; t++)
            for (size_t k = 0; k < r; k++) {
                double num = 0, den = 1e-12;
                for (size_t c = 0; c < B; c++) {
                    double cnt = b->qcnt[t * B + c];
                    if (cnt > 0) {
                        num += b->qsum[t * B + c] / cnt * P[k * B + c];
                        den += est[t * B + c] * P[k * B + c];
                    }
                }
                Q[t * r + k] *= num / den;
            }
        for (size_t k = 0; k < r; k++)
            for (size_t c = 0; c < B; c++) {
                double num = 0, den = 1e-12;
                for (size_t t = 0; t < T; t++) {
                    double cnt = b->qcnt[t * B + c];
                    if (cnt > 0) {
                        num += b->qsum[t * B + c] / cnt * Q[t * r + k];
                        den += est[t * B + c] * Q[t * r + k];
                    }
                }
                P[k * B + c] *= num / den;
            }
    }
    for (size_t i = 0; i < T * B; i++) {
        double v = 0;
        for (size_t k = 0; k < r; k++)
            v += Q[(i / B) * r + k] * P[k * B + i % B];
        est[i] = v;
    }
}

int bl_quasar_demands(cil_baseline *b, const double *forecast)
{
    size_t T = b->ntypes, B = BL_QBINS;
    size_t r = T / 2 < 3 ? (T / 2 > 0 ? T / 2 : 1) : 3;
    double *Q = malloc(T * r * sizeof *Q), *P = malloc(r * B * sizeof *P);
    double *est = malloc(T * B * sizeof *est);
    if (!Q || !P || !est) {
        free(Q);
        free(P);
        free(est);
        return -1;
    }
    quasar_factorize(b, r, Q, P, est);
    for (size_t t = 0; t < T; t++) /* performance grows with CPUs: running maximum */
        for (size_t c = 1; c < B; c++)
            if (est[t * B + c] < est[t * B + c - 1])
                est[t * B + c] = est[t * B + c - 1];
    for (size_t j = 0; j < b->n; j++) {
        double L = bl_plan_load(b, forecast, j);
        if (!(L > 0)) {
            b->demand[j] = (double)b->R / (double)b->n;
            continue;
        }
        const double *row = est + b->type_of[j] * B;
        size_t c = 0;
        while (c < B && row[c] < b->env->jobs[j].slo)
            c++;
        double x = (double)(c < B ? c + 1 : B) * b->xhi[j] / (double)B; /* the bin's top */
        double d = x * L;
        b->demand[j] = d < (double)b->R ? d : (double)b->R;
    }
    free(Q);
    free(P);
    free(est);
    return 0;
}
