/* ibtree.c: interval binary tree estimator (Cilantro, OSDI'23).
 *
 * Every node stores the count, the weight sum S and the weighted sum of p of the
 * points in its interval; only leaves store the points themselves, so that a split
 * can hand them to the children. Estimates come from a cache of the leaves in x
 * order, rebuilt after each add. */
#include "cilantro/ibtree.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    double x, p, w;
} pt;

typedef struct node {
    double a, b;           /* interval [a, b) ([a, b] for the rightmost) */
    int depth;
    uint64_t n;
    double s, swp;         /* sum of w, sum of w * p */
    struct node *left, *right;
    pt *pts;               /* leaves only */
    size_t npts, cap;
} node;

struct cil_ibtree {
    cil_ibtree_params par;
    node *root;
    uint64_t n;
    size_t nleaves;
    int depth;
    /* cache of the leaves in x order, valid when !dirty */
    int dirty;
    size_t cache_cap;
    double *edges, *lower, *upper, *wmean;
    size_t *anchor;
};

void cil_ibtree_params_default(cil_ibtree_params *p, double lo, double hi, double lipschitz)
{
    if (p == NULL)
        return;
    p->lo = lo;
    p->hi = hi;
    p->lipschitz = lipschitz;
    p->c_beta = 1e-3;
    p->c_tau = 1e-5;
    p->delta = 0.001;
    p->max_depth = 12;
    p->p_lo = 0.0;
    p->p_hi = 1.0;
}

static int params_ok(const cil_ibtree_params *p)
{
    return p != NULL && isfinite(p->lo) && isfinite(p->hi) && p->lo < p->hi &&
           isfinite(p->lipschitz) && p->lipschitz > 0 &&
           isfinite(p->c_beta) && p->c_beta >= 0 && isfinite(p->c_tau) && p->c_tau >= 0 &&
           isfinite(p->delta) && p->delta > 0 && p->delta < 1 &&
           p->max_depth >= 0 && p->max_depth <= CIL_IBTREE_MAX_DEPTH &&
           isfinite(p->p_lo) && isfinite(p->p_hi) && p->p_lo < p->p_hi;
}

static node *node_new(double a, double b, int depth)
{
    node *nd = calloc(1, sizeof(*nd));
    if (nd == NULL)
        return NULL;
    nd->a = a;
    nd->b = b;
    nd->depth = depth;
    return nd;
}

static void node_free(node *nd)
{
    if (nd == NULL)
        return;
    node_free(nd->left);
    node_free(nd->right);
    free(nd->pts);
    free(nd);
}

static int leaf_push(node *nd, pt p)
{
    if (nd->npts == nd->cap) {
        size_t cap = nd->cap ? nd->cap * 2 : 4;
        pt *np = realloc(nd->pts, cap * sizeof(*np));
        if (np == NULL)
            return -1;
        nd->pts = np;
        nd->cap = cap;
    }
    nd->pts[nd->npts++] = p;
    nd->n++;
    nd->s += p.w;
    nd->swp += p.w * p.p;
    return 0;
}

cil_ibtree *cil_ibtree_create(const cil_ibtree_params *params)
{
    if (!params_ok(params))
        return NULL;
    cil_ibtree *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->par = *params;
    t->root = node_new(params->lo, params->hi, 0);
    if (t->root == NULL) {
        free(t);
        return NULL;
    }
    t->nleaves = 1;
    t->dirty = 1;
    return t;
}

void cil_ibtree_free(cil_ibtree *t)
{
    if (t == NULL)
        return;
    node_free(t->root);
    free(t->edges);
    free(t->lower);
    free(t->upper);
    free(t->wmean);
    free(t->anchor);
    free(t);
}

double cil_ibtree_beta(const cil_ibtree *t)
{
    if (t == NULL)
        return NAN;
    return cil_beta(t->par.c_beta, t->par.delta, t->n);
}

/* tau_h = c_tau * (beta_t / L)^2 * 4^h */
static double tau(const cil_ibtree *t, int depth, double beta)
{
    double r = beta / t->par.lipschitz;
    return t->par.c_tau * r * r * ldexp(1.0, 2 * depth);
}

/* Splits a leaf into two halves and moves its points down; -1 on no memory (the
 * leaf is left as it was). */
static int split(cil_ibtree *t, node *nd)
{
    double m = nd->a + 0.5 * (nd->b - nd->a);
    node *l = node_new(nd->a, m, nd->depth + 1);
    node *r = node_new(m, nd->b, nd->depth + 1);
    if (l == NULL || r == NULL) {
        free(l);
        free(r);
        return -1;
    }
    for (size_t i = 0; i < nd->npts; i++) {
        if (leaf_push(nd->pts[i].x < m ? l : r, nd->pts[i]) != 0) {
            node_free(l);
            node_free(r);
            return -1;
        }
    }
    free(nd->pts);
    nd->pts = NULL;
    nd->npts = nd->cap = 0;
    nd->left = l;
    nd->right = r;
    t->nleaves++;
    if (nd->depth + 1 > t->depth)
        t->depth = nd->depth + 1;
    return 0;
}

/* Expands a leaf (and then its children) while it holds >= 3 points, S >= tau_h
 * and the depth allows. A failed split only stops the expansion. */
static void try_expand(cil_ibtree *t, node *nd, double beta)
{
    if (nd->left != NULL || nd->depth >= t->par.max_depth || nd->n < 3 ||
        nd->s < tau(t, nd->depth, beta))
        return;
    if (split(t, nd) != 0)
        return;
    try_expand(t, nd->left, beta);
    try_expand(t, nd->right, beta);
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int cil_ibtree_add(cil_ibtree *t, double x, double p, double sigma)
{
    if (t == NULL || !isfinite(x) || !isfinite(p) || !isfinite(sigma) || sigma <= 0)
        return -1;
    double w = 1.0 / (sigma * sigma);
    if (!isfinite(w))
        return -1;
    x = clampd(x, t->par.lo, t->par.hi);
    node *nd = t->root;
    while (nd->left != NULL)
        nd = x < nd->left->b ? nd->left : nd->right;
    if (leaf_push(nd, (pt){x, p, w}) != 0)
        return -1;
    /* only now that nothing can fail, update the ancestors */
    for (node *a = t->root; a != nd; a = x < a->left->b ? a->left : a->right) {
        a->n++;
        a->s += w;
        a->swp += w * p;
    }
    t->n++;
    t->dirty = 1;
    try_expand(t, nd, cil_ibtree_beta(t));
    return 0;
}

/* Confidence interval of one node: weighted mean +- (L * width + beta / sqrt(S)),
 * clipped to [p_lo, p_hi]; the whole range when the node is empty. */
static void node_bounds(const cil_ibtree *t, const node *nd, double beta, double *lo, double *hi)
{
    if (nd->n == 0 || nd->s <= 0) {
        *lo = t->par.p_lo;
        *hi = t->par.p_hi;
        return;
    }
    double m = nd->swp / nd->s;
    double u = t->par.lipschitz * (nd->b - nd->a) + beta / sqrt(nd->s);
    *lo = clampd(m - u, t->par.p_lo, t->par.p_hi);
    *hi = clampd(m + u, t->par.p_lo, t->par.p_hi);
}

/* In-order walk: each leaf gets the intersection of the intervals on its path. */
static void collect(cil_ibtree *t, const node *nd, double beta, double lo, double hi,
                    double wm, size_t *k)
{
    double nlo, nhi;
    node_bounds(t, nd, beta, &nlo, &nhi);
    if (nlo > lo)
        lo = nlo;
    if (nhi < hi)
        hi = nhi;
    if (nd->n > 0 && nd->s > 0)
        wm = nd->swp / nd->s;
    if (nd->left != NULL) {
        collect(t, nd->left, beta, lo, hi, wm, k);
        collect(t, nd->right, beta, lo, hi, wm, k);
        return;
    }
    t->edges[*k] = nd->a;
    t->lower[*k] = lo;
    t->upper[*k] = hi;
    t->wmean[*k] = wm;
    (*k)++;
}

static int refresh(cil_ibtree *t)
{
    if (!t->dirty)
        return 0;
    if (t->cache_cap < t->nleaves + 1) {
        size_t cap = t->nleaves + 1;
        double *e = realloc(t->edges, cap * sizeof(double));
        if (e == NULL)
            return -1;
        t->edges = e;
        double *l = realloc(t->lower, cap * sizeof(double));
        if (l == NULL)
            return -1;
        t->lower = l;
        double *u = realloc(t->upper, cap * sizeof(double));
        if (u == NULL)
            return -1;
        t->upper = u;
        double *w = realloc(t->wmean, cap * sizeof(double));
        if (w == NULL)
            return -1;
        t->wmean = w;
        size_t *an = realloc(t->anchor, cap * sizeof(size_t));
        if (an == NULL)
            return -1;
        t->anchor = an;
        t->cache_cap = cap;
    }
    size_t k = 0;
    collect(t, t->root, cil_ibtree_beta(t), t->par.p_lo, t->par.p_hi, NAN, &k);
    t->edges[k] = t->par.hi;
    cil_monotone_envelope(k, t->lower, t->upper);
    cil_pieces_anchor(k, t->edges, t->upper, t->par.lipschitz, t->anchor);
    t->dirty = 0;
    return 0;
}

/* The refreshed cache as a curve: the leaves, with the Lipschitz cap. */
static cil_pieces pieces(const cil_ibtree *t)
{
    cil_pieces c = {t->nleaves, t->edges, t->lower, t->upper, t->anchor, t->par.lipschitz};
    return c;
}

int cil_ibtree_estimate(cil_ibtree *t, double x, cil_estimate *out)
{
    if (t == NULL || out == NULL || !isfinite(x) || refresh(t) != 0)
        return -1;
    x = clampd(x, t->par.lo, t->par.hi);
    /* the last leaf whose left edge is <= x */
    size_t lo = 0, hi = t->nleaves;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->edges[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    cil_pieces c = pieces(t);
    cil_pieces_at(&c, lo, x, out);
    out->wmean = t->wmean[lo];
    return 0;
}

int cil_ibtree_recommend(cil_ibtree *t, double goal, cil_rec_mode mode, double *x)
{
    if (t == NULL || refresh(t) != 0)
        return -1;
    cil_pieces c = pieces(t);
    return cil_pieces_recommend(&c, goal, mode, x);
}

uint64_t cil_ibtree_num_points(const cil_ibtree *t) { return t ? t->n : 0; }
size_t cil_ibtree_num_leaves(const cil_ibtree *t) { return t ? t->nleaves : 0; }
int cil_ibtree_depth(const cil_ibtree *t) { return t ? t->depth : 0; }
