/* cilantro/gp.h: Gaussian-process regression with a Matérn 5/2 kernel (item 7 of the
 * Cilantro issue), the learner behind the microservice UCB policy (cilantro/micro.h).
 *
 * Isotropic Matérn 5/2 kernel over real input vectors, a Gaussian noise term, targets
 * standardized (mean 0, sd 1) before fitting so one set of hyperparameters suits any
 * target scale. The model keeps at most `cap` points, dropping the oldest, so a fit
 * costs at most cap^3 / 3 flops. Hyperparameters are fixed by the caller or chosen from
 * a small grid by the log marginal likelihood (ML-II). Formulas: docs/cilantro_micro.md.
 */
#ifndef CILANTRO_GP_H
#define CILANTRO_GP_H

#include <stddef.h>

/* k(r) = sf2 * (1 + sqrt5 r / ls + 5 r^2 / (3 ls^2)) * exp(-sqrt5 r / ls) for a distance
 * r >= 0. NAN when r < 0, ls <= 0, sf2 < 0 or an argument is not finite. */
double cil_matern52(double r, double ls, double sf2);

/* In-place Cholesky factorization of the symmetric positive-definite n x n matrix a
 * (row-major; only the lower triangle is read): on success the lower triangle holds L
 * with a = L L^T and the strict upper triangle is zeroed. Returns 0, or -1 when a pivot
 * is not positive and finite (a is then partly overwritten) or a is NULL. */
int cil_cholesky(size_t n, double *a);

/* Solves L L^T x = b in place (b becomes x) with L from cil_cholesky. */
void cil_chol_solve(size_t n, const double *L, double *b);

/* Solves L z = b in place (forward substitution). */
void cil_chol_forward(size_t n, const double *L, double *b);

typedef struct cil_gp cil_gp;

/* A GP over inputs of dim >= 1 reals keeping at most cap >= 2 points. Default
 * hyperparameters (standardized units): length-scale 1, signal variance 1, noise
 * variance 0.05. NULL and a one-line message in err on bad arguments or no memory.
 * Free with cil_gp_free. */
cil_gp *cil_gp_new(size_t dim, size_t cap, char *err, size_t errlen);
void cil_gp_free(cil_gp *gp);

/* Adds the observation (x, y) (x has dim finite entries, copied; y finite), dropping
 * the oldest point when cap is reached. The fit is stale until cil_gp_fit. 0 or -1. */
int cil_gp_add(cil_gp *gp, const double *x, double y);

/* Number of points held. */
size_t cil_gp_size(const cil_gp *gp);

/* Sets the hyperparameters (ls > 0, sf2 > 0, sn2 > 0; the variances are in units of the
 * standardized target). 0, or -1 on a bad value (nothing changed). Marks the fit stale. */
int cil_gp_set_hyper(cil_gp *gp, double ls, double sf2, double sn2);
void cil_gp_get_hyper(const cil_gp *gp, double *ls, double *sf2, double *sn2);

/* Factorizes K + sn2 I for the points held (standardizing y first). With no points the
 * posterior is the prior (mean 0, sd sqrt(sf2), in target units: 0 and 1). When the
 * factorization fails, jitter (1e-8, growing tenfold up to 1e-2) is added to the
 * diagonal. 0, or -1 if even that fails or memory runs out. */
int cil_gp_fit(cil_gp *gp);

/* ML-II over the grid ls in lss[0..nls), sn2 in sn2s[0..nsn) (sf2 fixed at 1): keeps the
 * pair with the highest log marginal likelihood of the standardized targets, then fits.
 * With fewer than 3 points it only fits. 0, or -1 on bad arguments or a failed fit;
 * *lml_out (optional) gets the winning log marginal likelihood. */
int cil_gp_fit_ml(cil_gp *gp, const double *lss, size_t nls, const double *sn2s, size_t nsn,
                  double *lml_out);

/* Log marginal likelihood of the standardized targets under the current fit (call
 * cil_gp_fit first); NAN when the fit is stale. */
double cil_gp_lml(const cil_gp *gp);

/* Posterior mean and sd of the latent function at x, in the target's units (the
 * noise variance is not included in sd). Uses internal scratch space, so one gp must
 * not be queried from two threads at once. 0, or -1 when the fit is stale or an
 * argument is NULL. */
int cil_gp_predict(cil_gp *gp, const double *x, double *mean, double *sd);

#endif
