/* infer.c: the inference profile: how much accuracy a stream keeps when its inference
 * share is too small to process every frame (see ekya/profiles.h). */
#include <stdlib.h>
#include <string.h>

#include "ekya/csv.h"
#include "ekya/profiles.h"

void ekya_infer_free(ekya_infer_profile *p)
{
    free(p->subsampling);
    free(p->multiplier);
    memset(p, 0, sizeof *p);
}

/* Inserts (sub, mult) keeping the table sorted; -2 when sub is already there. */
static int insert(ekya_infer_profile *p, double sub, double mult)
{
    int i = p->n;
    while (i > 0 && p->subsampling[i - 1] > sub)
        i--;
    if (i > 0 && p->subsampling[i - 1] == sub)
        return -2;
    memmove(p->subsampling + i + 1, p->subsampling + i, (size_t)(p->n - i) * sizeof(double));
    memmove(p->multiplier + i + 1, p->multiplier + i, (size_t)(p->n - i) * sizeof(double));
    p->subsampling[i] = sub;
    p->multiplier[i] = mult;
    p->n++;
    return 0;
}

static int grow(ekya_infer_profile *p, int cap)
{
    double *s = realloc(p->subsampling, (size_t)cap * sizeof *s);
    if (!s)
        return -1;
    p->subsampling = s;
    double *m = realloc(p->multiplier, (size_t)cap * sizeof *m);
    if (!m)
        return -1;
    p->multiplier = m;
    return 0;
}

int ekya_infer_from_arrays(ekya_infer_profile *out, int n, const double *sub,
                           const double *mult)
{
    memset(out, 0, sizeof *out);
    if (n <= 0 || grow(out, n) != 0) {
        ekya_infer_free(out);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (sub[i] < 1 || mult[i] < 0 || mult[i] > 1 || insert(out, sub[i], mult[i]) != 0) {
            ekya_infer_free(out);
            return -1;
        }
    return 0;
}

static int read_table(ekya_csv *c, ekya_infer_profile *out, char *err, size_t errlen)
{
    int r = ekya_csv_next(c, err, errlen);
    if (r <= 0) {
        if (r == 0)
            snprintf(err, errlen, "%s:1:1: empty file, expected header "
                     "subsampling,accuracy_multiplier", c->path);
        return -1;
    }
    int is = ekya_csv_index(c, "subsampling"), im = ekya_csv_index(c, "accuracy_multiplier");
    if (is < 0 || im < 0) {
        ekya_csv_error(c, -1, err, errlen, "header lacks column '%s'",
                       is < 0 ? "subsampling" : "accuracy_multiplier");
        return -1;
    }
    int cap = 0;
    while ((r = ekya_csv_next(c, err, errlen)) == 1) {
        double s, m;
        if (ekya_csv_double(c, is, "subsampling", &s, err, errlen) ||
            ekya_csv_double(c, im, "accuracy_multiplier", &m, err, errlen))
            return -1;
        if (s < 1) {
            ekya_csv_error(c, is, err, errlen, "subsampling must be >= 1 (got %s)",
                           c->field[is]);
            return -1;
        }
        if (m < 0 || m > 1) {
            ekya_csv_error(c, im, err, errlen, "accuracy_multiplier must be in 0..1 (got %s)",
                           c->field[im]);
            return -1;
        }
        if (out->n == cap && grow(out, cap = cap ? 2 * cap : 16) != 0) {
            ekya_csv_error(c, -1, err, errlen, "out of memory");
            return -1;
        }
        if (insert(out, s, m) != 0) {
            ekya_csv_error(c, is, err, errlen, "duplicate subsampling %s", c->field[is]);
            return -1;
        }
    }
    if (r < 0)
        return -1;
    if (out->n == 0) {
        snprintf(err, errlen, "%s:%d:1: no data rows", c->path, c->line);
        return -1;
    }
    return 0;
}

int ekya_infer_load(const char *path, ekya_infer_profile *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    ekya_csv c;
    if (ekya_csv_open(&c, path, err, errlen) != 0)
        return -1;
    int rc = read_table(&c, out, err, errlen);
    if (rc != 0)
        ekya_infer_free(out);
    ekya_csv_close(&c);
    return rc;
}

/* Tolerance so that shares built from delta steps (0.1 * k) do not fall just short
 * of a subsampling ratio they meet exactly on paper. */
#define EKYA_RATIO_EPS 1e-9

double ekya_infer_subsampling(const ekya_infer_profile *p, double share, double rmax)
{
    if (share <= 0)
        return 0;
    double need = rmax / share;
    if (need <= 1 + EKYA_RATIO_EPS)
        return 1;
    for (int i = 0; i < p->n; i++)
        if (p->subsampling[i] >= need - EKYA_RATIO_EPS * need)
            return p->subsampling[i];
    return 0;
}

double ekya_infer_multiplier(const ekya_infer_profile *p, double share, double rmax)
{
    double sub = ekya_infer_subsampling(p, share, rmax);
    if (sub == 0)
        return 0;
    for (int i = 0; i < p->n; i++)
        if (p->subsampling[i] == sub)
            return p->multiplier[i];
    return 1.0; /* sub == 1 and the table has no row for it */
}
