/* registry.c: the ephemeral-resource registry and UpdateResources.
 *
 * A write is validated and resolved to concrete (node, name) ops first, then planned on
 * an overlay of the registry (so ops of one batch see each other), then committed as one
 * event: storage first, memory after, so a failed write leaves nothing applied. Capacity
 * changes follow capacity.h, the same rule the raylets apply.
 *
 * Backed resources (ResourceOp.backing): the backing is a property of the row, given by
 * the SET that creates it (or revives it after a delete) and kept by later SETs and
 * ADDs that name none; a SET naming a different backing for a live row is refused
 * (delete it first), so a raylet never has to move held units between backings. An
 * unbounded capacity has no backing. The raylets do the carving; the registry only
 * keeps the backing so that snapshots carry it. */
#include "gcs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity.h"
#include "log.h"
#include "names.h"
#include "pbutil.h"
#include "qty.h"
#include "xalloc.h"

#define KEY_MAX (ESC_FULLNAME_MAX + 48)

void gcs_registry_key(const char *node_id, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s|%s", node_id, name);
}

/* ------------------------------------------------------------------ plans */

typedef struct {
    const Escher__RegistryEntry *before; /* borrowed from the registry; NULL if absent */
    esc_capacity cap;
    char *node_id, *name, *ns, *owner;
    Escher__Amount **backing;            /* borrowed (registry row or request) */
    size_t nbacking;
} plan_row;

typedef struct {
    esc_strmap *rows;   /* registry key -> plan_row */
    Escher__LogOp **ops;
    size_t nops, cap;
} plan;

static void plan_init(plan *p)
{
    memset(p, 0, sizeof *p);
    p->rows = esc_strmap_new();
}

static void plan_free(plan *p)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(p->rows, &pos, &k, &v)) {
        plan_row *r = v;
        free(r->node_id);
        free(r->name);
        free(r->ns);
        free(r->owner);
        free(r);
    }
    esc_strmap_free(p->rows);
    for (size_t i = 0; i < p->nops; i++)
        protobuf_c_message_free_unpacked(&p->ops[i]->base, NULL);
    free(p->ops);
}

static plan_row *plan_row_for(gcs *g, plan *p, const char *node_id, const char *name,
                              const char *ns, const char *owner)
{
    char key[KEY_MAX];
    gcs_registry_key(node_id, name, key, sizeof key);
    plan_row *r = esc_strmap_get(p->rows, key);
    if (r)
        return r;
    r = esc_xcalloc(1, sizeof *r);
    r->before = esc_strmap_get(g->registry, key);
    r->node_id = esc_xstrdup(node_id);
    r->name = esc_xstrdup(name);
    if (r->before) {
        r->cap = (esc_capacity){true, r->before->unbounded, r->before->total};
        r->backing = r->before->backing;
        r->nbacking = r->before->n_backing;
        r->ns = esc_xstrdup(r->before->namespace_);
        r->owner = esc_xstrdup(r->before->owner_job);
    } else {
        r->ns = esc_xstrdup(ns);
        r->owner = esc_xstrdup(owner);
    }
    esc_strmap_put(p->rows, key, r);
    return r;
}

static Escher__Amount **copy_amounts(Escher__Amount *const *v, size_t n)
{
    if (n == 0)
        return NULL;
    Escher__Amount **out = esc_xcalloc(n, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = (Escher__Amount *)esc_pb_dup(&v[i]->base);
    return out;
}

static void plan_push_op(plan *p, const char *node_id, const char *name, int kind,
                         int64_t value, bool unbounded, Escher__Amount *const *backing,
                         size_t nbacking)
{
    Escher__LogOp *op = esc_xmalloc(sizeof *op);
    escher__log_op__init(op);
    op->kind = (Escher__OpKind)kind;
    op->node_id = esc_xstrdup(node_id);
    op->name = esc_xstrdup(name);
    op->value = value;
    op->unbounded = unbounded;
    op->backing = copy_amounts(backing, nbacking);
    op->n_backing = op->backing ? nbacking : 0;
    if (p->nops == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->ops = esc_xrealloc(p->ops, p->cap * sizeof *p->ops);
    }
    p->ops[p->nops++] = op;
}

static bool same_amounts(Escher__Amount *const *x, size_t nx, Escher__Amount *const *y,
                         size_t ny)
{
    if (nx != ny)
        return false;
    for (size_t i = 0; i < nx; i++)
        if (strcmp(x[i]->name, y[i]->name) != 0 || x[i]->value != y[i]->value)
            return false;
    return true;
}

/* One op as planned: what it does and, for a SET, the backing it names. */
typedef struct {
    int kind;
    int64_t value;
    bool unbounded;
    Escher__Amount *const *backing;
    size_t nbacking;
} op_args;

/* An ADD to a live bounded row must keep the total within [-ESC_QTY_MAX, ESC_QTY_MAX]:
 * the shared rule (capacity.h) would saturate it, silently dropping part of the delta,
 * so the GCS refuses the batch instead and no raylet ever sees a saturating ADD. Both
 * operands are within that range, so their sum can not overflow int64. */
static int check_add_range(const plan_row *r, const op_args *o, esc_status *st)
{
    if (o->kind != ESC_CAP_ADD || !r->cap.present || r->cap.unbounded || o->unbounded)
        return ESC_OK;
    int64_t sum = r->cap.total + o->value;
    if (sum <= ESC_QTY_MAX && sum >= -ESC_QTY_MAX)
        return ESC_OK;
    char d[32], t[32], m[32];
    return esc_status_set(st, ESC_INVALID_ARGUMENT,
                          "add %s to %.130s on node %.40s (total %s) leaves the range of "
                          "quantities (magnitude at most %s)",
                          esc_qty_format(o->value, d, sizeof d), r->name, r->node_id,
                          esc_qty_format(r->cap.total, t, sizeof t),
                          esc_qty_format(ESC_QTY_MAX, m, sizeof m));
}

/* Plans one op on one node. Returns ESC_OK, NOT_FOUND for a DELETE of a resource that
 * is absent (st untouched: the caller decides whether that is an error), or
 * INVALID_ARGUMENT for a SET naming another backing than the live row's or an ADD that
 * leaves the range of quantities. */
static int plan_op(gcs *g, plan *p, const char *node_id, const char *name, const char *ns,
                   const char *owner, const op_args *o, esc_status *st)
{
    plan_row *r = plan_row_for(g, p, node_id, name, ns, owner);
    if (o->kind == ESC_CAP_DELETE && !r->cap.present)
        return ESC_NOT_FOUND;
    int rc = check_add_range(r, o, st);
    if (rc != ESC_OK)
        return rc;
    bool was = r->cap.present;
    if (was && o->nbacking > 0 &&
        !same_amounts(r->backing, r->nbacking, o->backing, o->nbacking))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "%.130s exists with another backing on node %.40s: delete it "
                              "first", name, node_id);
    esc_capacity_apply(&r->cap, o->kind, o->value, o->unbounded);
    if (!was && r->cap.present && !r->before) {
        free(r->owner);
        r->owner = esc_xstrdup(owner);
    }
    if (!was || !r->cap.present || r->cap.unbounded) {
        r->backing = r->cap.present && !r->cap.unbounded ? (Escher__Amount **)o->backing : NULL;
        r->nbacking = r->backing ? o->nbacking : 0;
    }
    plan_push_op(p, node_id, name, o->kind, o->value, o->unbounded, o->backing, o->nbacking);
    return ESC_OK;
}

static Escher__RegistryEntry *entry_from_row(const plan_row *r)
{
    Escher__RegistryEntry *e = esc_xmalloc(sizeof *e);
    escher__registry_entry__init(e);
    e->node_id = esc_xstrdup(r->node_id);
    e->name = esc_xstrdup(r->name);
    e->namespace_ = esc_xstrdup(r->ns);
    e->owner_job = esc_xstrdup(r->owner);
    e->total = r->cap.total;
    e->unbounded = r->cap.unbounded;
    e->backing = copy_amounts(r->backing, r->nbacking);
    e->n_backing = e->backing ? r->nbacking : 0;
    return e;
}

static intptr_t ns_rows(gcs *g, const char *ns)
{
    return (intptr_t)esc_strmap_get(g->ns_rows, ns);
}

static void ns_rows_add(gcs *g, const char *ns, intptr_t delta)
{
    intptr_t n = ns_rows(g, ns) + delta;
    if (n > 0)
        esc_strmap_put(g->ns_rows, ns, (void *)n);
    else
        esc_strmap_del(g->ns_rows, ns);
}

/* Rows each namespace gains; returns a namespace that the whole plan leaves over quota
 * while growing it, or NULL. The net gain is summed over every row first: the map's
 * order is not the ops' order, so a running sum could count a batch's new row before
 * the row it deletes. */
static const char *plan_over_quota(gcs *g, plan *p)
{
    esc_strmap *gain = esc_strmap_new();
    const char *over = NULL;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(p->rows, &pos, &k, &v)) {
        plan_row *r = v;
        intptr_t d = (intptr_t)r->cap.present - (intptr_t)(r->before != NULL);
        intptr_t n = (intptr_t)esc_strmap_get(gain, r->ns) + d;
        esc_strmap_put(gain, r->ns, (void *)n);
    }
    pos = 0;
    while (!over && esc_strmap_next(p->rows, &pos, &k, &v)) {
        plan_row *r = v;
        intptr_t n = (intptr_t)esc_strmap_get(gain, r->ns);
        if (n > 0 && ns_rows(g, r->ns) + n > g->cfg.max_resources_per_job)
            over = r->ns;
    }
    esc_strmap_free(gain);
    return over;
}

static void plan_to_batch(plan *p, esc_storage_batch *b)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(p->rows, &pos, &k, &v)) {
        plan_row *r = v;
        if (r->cap.present) {
            Escher__RegistryEntry *e = entry_from_row(r);
            gcs_put_msg(b, GCS_T_REGISTRY, k, &e->base);
            protobuf_c_message_free_unpacked(&e->base, NULL);
        } else if (r->before) {
            esc_storage_del(b, GCS_T_REGISTRY, k);
        }
    }
}

/* The in-memory half of a commit: swap the planned rows into the registry. */
static void plan_apply(gcs *g, void *ud)
{
    plan *p = ud;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(p->rows, &pos, &k, &v)) {
        plan_row *r = v;
        /* The new entry first: the row may borrow the old entry's backing. */
        Escher__RegistryEntry *e = r->cap.present ? entry_from_row(r) : NULL;
        Escher__RegistryEntry *old = esc_strmap_del(g->registry, k);
        if (old) {
            ns_rows_add(g, old->namespace_, -1);
            protobuf_c_message_free_unpacked(&old->base, NULL);
        }
        if (e) {
            esc_strmap_put(g->registry, k, e);
            ns_rows_add(g, r->ns, 1);
        }
    }
}

/* A plan on its way to storage, with the caller's completion. The registry rows and
 * request fields it borrows stay put meanwhile: no other write runs (write_queue.c)
 * and the request lives until its call is answered, in done. */
typedef struct {
    plan p;
    gcs_done_fn done;
    void *ud;
} plan_commit_ctx;

static void plan_commit_apply(gcs *g, void *ud)
{
    plan_apply(g, &((plan_commit_ctx *)ud)->p);
}

static void plan_committed(gcs *g, uint64_t seq, const char *err, void *ud)
{
    plan_commit_ctx *c = ud;
    plan_free(&c->p);
    c->done(g, seq, err, c->ud);
    free(c);
}

/* Moves the plan's ops into ev and commits both; the plan is taken (freed when the
 * commit is over), and done runs as gcs_commit's. */
static void plan_commit(gcs *g, plan *p, Escher__Event *ev, esc_storage_batch *b,
                        gcs_done_fn done, void *ud)
{
    plan_to_batch(p, b);
    ev->ops = p->ops;
    ev->n_ops = p->nops;
    p->ops = NULL;
    p->nops = p->cap = 0;
    plan_commit_ctx *c = esc_xmalloc(sizeof *c);
    *c = (plan_commit_ctx){*p, done, ud};
    gcs_commit(g, ev, b, plan_commit_apply, plan_committed, c);
}

/* ------------------------------------------------------------ target nodes */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Alive node ids in id order (deterministic choices); caller frees the array only. */
static const char **alive_nodes(gcs *g, size_t *n)
{
    const char **ids = esc_xcalloc(esc_strmap_count(g->nodes) + 1, sizeof *ids);
    size_t pos = 0, k = 0;
    const char *key;
    void *val;
    while (esc_strmap_next(g->nodes, &pos, &key, &val))
        if (gcs_node_alive(val))
            ids[k++] = key;
    qsort(ids, k, sizeof *ids, cmp_str);
    *n = k;
    return ids;
}

/* What a node has available of `name`, from its last report (or its physical resources
 * before the first report). Returns false when the node lacks the name. */
static bool node_available(const gcs_node *n, const char *name, int64_t *avail, bool *unbounded)
{
    if (n->report) {
        for (size_t i = 0; i < n->report->n_resources; i++) {
            const Escher__ResourceState *r = n->report->resources[i];
            if (strcmp(r->name, name) != 0 || r->deleted)
                continue;
            *avail = r->total - r->held;
            *unbounded = r->unbounded;
            return true;
        }
        return false;
    }
    for (size_t i = 0; i < n->info->n_physical; i++) {
        const Escher__Amount *a = n->info->physical[i];
        if (strcmp(a->name, name) == 0) {
            *avail = a->value;
            *unbounded = a->unbounded;
            return true;
        }
    }
    return false;
}

/* One resource of a node that a selector asks for, under the name it resolved to, with
 * the sum of every entry of the selector that resolved to it. */
typedef struct {
    int64_t avail;
    bool unbounded;      /* the node's row is unbounded */
    bool want_unbounded; /* some entry asked for inf */
    __int128 need;       /* the entries' sum: a wide type, so no sum of int64s overflows */
} sel_need;

/* Resolves a selector name on node n: itself when the node has it, else a short
 * ephemeral name in namespace ns. Writes the resolved name into out. */
static bool node_resolve(const gcs_node *n, const char *name, const char *ns, char *out,
                         size_t len, int64_t *avail, bool *unb)
{
    snprintf(out, len, "%s", name);
    if (node_available(n, name, avail, unb))
        return true;
    if (strchr(name, '/') || esc_name_is_physical(name))
        return false;
    return esc_name_join(ns, name, out, len) == 0 && node_available(n, out, avail, unb);
}

/* Does node n have available what the selector asks? Entries resolving to the same
 * resource are summed, as admission sums repeated names of a request (raylet/
 * accounting.c), so CPU=1.5,CPU=1.5 needs 3 CPUs, not 1.5. */
static bool node_covers(const gcs_node *n, const Escher__Target *t, const char *ns)
{
    esc_strmap *by_name = esc_strmap_new();
    sel_need *needs = esc_xcalloc(t->n_where + 1, sizeof *needs);
    size_t used = 0;
    bool ok = true;
    for (size_t i = 0; i < t->n_where && ok; i++) {
        const Escher__Amount *w = t->where[i];
        char full[ESC_FULLNAME_MAX];
        int64_t avail;
        bool unb;
        ok = node_resolve(n, w->name, ns, full, sizeof full, &avail, &unb);
        sel_need *s = ok ? esc_strmap_get(by_name, full) : NULL;
        if (ok && !s) {
            s = &needs[used++];
            *s = (sel_need){.avail = avail, .unbounded = unb};
            esc_strmap_put(by_name, full, s);
        }
        if (s) {
            s->need += w->value;
            s->want_unbounded |= w->unbounded;
        }
    }
    for (size_t i = 0; i < used && ok; i++)
        ok = needs[i].unbounded || (!needs[i].want_unbounded && needs[i].need <= needs[i].avail);
    esc_strmap_free(by_name);
    free(needs);
    return ok;
}

typedef struct {
    const char **ids;
    size_t n;
} node_list;

static int resolve_selector(gcs *g, const Escher__Target *t, const char *ns, node_list *out,
                            esc_status *st)
{
    unsigned want = t->num_nodes ? t->num_nodes : 1;
    size_t n;
    const char **alive = alive_nodes(g, &n);
    out->ids = esc_xcalloc(n + 1, sizeof *out->ids);
    for (size_t i = 0; i < n && out->n < want; i++) {
        if (node_covers(gcs_node_find(g, alive[i]), t, ns))
            out->ids[out->n++] = alive[i];
    }
    free(alive);
    if (out->n < want)
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "selector matched %zu of the %u nodes asked for", out->n, want);
    return ESC_OK;
}

/* Does node n carry every label of the target (key and value)? */
static bool node_has_labels(const gcs_node *n, const Escher__Target *t)
{
    for (size_t i = 0; i < t->n_labels; i++) {
        bool found = false;
        for (size_t k = 0; k < n->info->n_labels && !found; k++)
            found = !strcmp(n->info->labels[k]->key, t->labels[i]->key) &&
                    !strcmp(n->info->labels[k]->value, t->labels[i]->value);
        if (!found)
            return false;
    }
    return true;
}

/* TARGET_LABELS: every alive node with the labels (and `where` available, if given),
 * or num_nodes of them; at least one. */
static int resolve_labels(gcs *g, const Escher__Target *t, const char *ns, node_list *out,
                          esc_status *st)
{
    if (t->n_labels == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a label target needs a label");
    size_t n;
    const char **alive = alive_nodes(g, &n);
    out->ids = esc_xcalloc(n + 1, sizeof *out->ids);
    for (size_t i = 0; i < n && (!t->num_nodes || out->n < t->num_nodes); i++) {
        const gcs_node *node = gcs_node_find(g, alive[i]);
        if (node_has_labels(node, t) && (t->n_where == 0 || node_covers(node, t, ns)))
            out->ids[out->n++] = alive[i];
    }
    free(alive);
    if (out->n == 0 || (t->num_nodes && out->n < t->num_nodes))
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "labels matched %zu alive node%s%s", out->n,
                              out->n == 1 ? "" : "s",
                              t->num_nodes ? " (fewer than asked for)" : "");
    return ESC_OK;
}

static int resolve_one(gcs *g, const char *id, node_list *out, esc_status *st)
{
    if (!id || !*id)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "no node given (client has no local node)");
    gcs_node *n = gcs_node_find(g, id);
    if (!n && !gcs_node_forgotten(g, id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "unknown node %.40s", id);
    if (!gcs_node_alive(n))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "node %.40s is dead", id);
    out->ids = esc_xcalloc(2, sizeof *out->ids);
    out->ids[0] = n->info->node_id;
    out->n = 1;
    return ESC_OK;
}

static int resolve_target(gcs *g, const Escher__UpdateResourcesRequest *req,
                          const Escher__Target *t, const char *ns, node_list *out, esc_status *st)
{
    memset(out, 0, sizeof *out);
    Escher__TargetKind kind = t ? t->kind : ESCHER__TARGET_KIND__TARGET_LOCAL;
    switch (kind) {
    case ESCHER__TARGET_KIND__TARGET_LOCAL:
        return resolve_one(g, req->local_node_id, out, st);
    case ESCHER__TARGET_KIND__TARGET_NODE:
        return resolve_one(g, t->node_id, out, st);
    case ESCHER__TARGET_KIND__TARGET_SELECTOR:
        return resolve_selector(g, t, ns, out, st);
    case ESCHER__TARGET_KIND__TARGET_LABELS:
        return resolve_labels(g, t, ns, out, st);
    case ESCHER__TARGET_KIND__TARGET_ALL:
        out->ids = alive_nodes(g, &out->n);
        if (out->n == 0)
            return esc_status_set(st, ESC_FAILED_PRECONDITION, "no alive nodes");
        return ESC_OK;
    default:
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "unknown target kind %d", (int)kind);
    }
}

/* ------------------------------------------------------------- validation */

static int check_op(const Escher__ResourceOp *op, const char *job_ns, esc_status *st)
{
    if (esc_name_is_physical(op->name))
        return esc_status_set(st, ESC_PERMISSION_DENIED,
                              "%.64s is a physical resource; only its raylet sets it", op->name);
    if (!esc_name_valid(op->name))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "invalid resource name '%.80s' (1-64 of A-Z a-z 0-9 _ . -)",
                              op->name);
    if (op->namespace_ && *op->namespace_ && strcmp(op->namespace_, job_ns) != 0)
        return esc_status_set(st, ESC_PERMISSION_DENIED,
                              "namespace %.64s belongs to another job that has not granted it (this "
                              "job's is %.64s)",
                              op->namespace_, job_ns);
    if (op->kind > ESCHER__OP_KIND__OP_DELETE)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "unknown operation %d", (int)op->kind);
    if (op->kind == ESCHER__OP_KIND__OP_SET && !op->unbounded && op->value < 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "negative capacity for %.64s", op->name);
    if (op->kind == ESCHER__OP_KIND__OP_ADD && op->unbounded)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "add takes a number, not inf");
    if (op->value > ESC_QTY_MAX || op->value < -ESC_QTY_MAX)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "quantity out of range for %.64s",
                              op->name);
    return ESC_OK;
}

/* A backing must name physical resources of the node, once each, with 0 < qty, and
 * capacity x backing must stay in range. */
static int check_backing(gcs *g, const Escher__ResourceOp *op, const char *node_id,
                         esc_status *st)
{
    if (op->n_backing == 0)
        return ESC_OK;
    if (op->kind != ESCHER__OP_KIND__OP_SET || op->unbounded)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "only a bounded set can carry a backing (%.64s)", op->name);
    const gcs_node *n = gcs_node_find(g, node_id);
    for (size_t i = 0; i < op->n_backing; i++) {
        const Escher__Amount *b = op->backing[i];
        bool known = false;
        for (size_t k = 0; n && k < n->info->n_physical && !known; k++)
            known = !strcmp(n->info->physical[k]->name, b->name);
        if (!known && (strchr(b->name, '/') || !esc_name_is_physical(b->name)))
            return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                  "backing %.130s of %.64s is not a physical resource",
                                  b->name, op->name);
        if (!known)
            return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                  "backing %.64s of %.64s: node %.40s has no such resource",
                                  b->name, op->name, node_id);
        int64_t carve;
        if (b->unbounded || b->value <= 0)
            return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                  "backing %.64s of %.64s must be a positive quantity",
                                  b->name, op->name);
        if (esc_backing_amount(op->value, b->value, &carve) != 0)
            return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                  "backing %.64s of %.64s is out of range", b->name, op->name);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(op->backing[k]->name, b->name))
                return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                      "backing of %.64s names %.64s twice", op->name, b->name);
    }
    return ESC_OK;
}

/* Plans one request op on each of its nodes. A DELETE of a resource absent on any one
 * of them rejects the whole batch (docs/resources.md), whatever the target: with
 * --all-nodes too, since a batch commits all of its ops or none. The one exception is
 * a DELETE aimed by labels: it removes every copy on the nodes with those labels (what
 * a `set` with the same labels made) and skips those without one; it needs one. */
static int plan_on_nodes(gcs *g, plan *p, const Escher__ResourceOp *op, const char *full,
                         const char *ns, const char *owner, const node_list *nodes,
                         esc_status *st)
{
    op_args o = {(int)op->kind, op->value, op->unbounded, op->backing, op->n_backing};
    bool by_labels = op->kind == ESCHER__OP_KIND__OP_DELETE && op->target &&
                     op->target->kind == ESCHER__TARGET_KIND__TARGET_LABELS;
    size_t planned = 0;
    for (size_t k = 0; k < nodes->n; k++) {
        int rc = check_backing(g, op, nodes->ids[k], st);
        if (rc == ESC_OK)
            rc = plan_op(g, p, nodes->ids[k], full, ns, owner, &o, st);
        if (rc == ESC_NOT_FOUND && by_labels)
            continue;
        planned++;
        if (rc == ESC_NOT_FOUND)
            return esc_status_set(st, ESC_NOT_FOUND, "%.130s does not exist on node %.40s",
                                  full, nodes->ids[k]);
        if (rc != ESC_OK)
            return rc;
    }
    if (by_labels && planned == 0)
        return esc_status_set(st, ESC_NOT_FOUND,
                              "%.130s does not exist on any node with those labels", full);
    return ESC_OK;
}

/* The namespace an op acts in: the job's, or one whose owner granted it to the job
 * (docs/security.md), whole or by a prefix of op's name (gcs_grant_covers). An owned
 * namespace that is not granted is refused here, with the grant's reason; any other
 * is the job's, so check_op refuses it. */
static int op_namespace(gcs *g, const gcs_job *job, const Escher__ResourceOp *op,
                        const char **ns_out, esc_status *st)
{
    const char *ns = op->namespace_;
    *ns_out = job->info->namespace_;
    if (!ns || !*ns || !strcmp(ns, job->info->namespace_))
        return ESC_OK;
    const gcs_job *owner = gcs_ns_owner(g, ns);
    if (!owner)
        return ESC_OK;
    char why[400];
    if (gcs_grant_covers(owner, job->info->job_id, op->name, why, sizeof why) != ESC_OK)
        return esc_status_set(st, ESC_PERMISSION_DENIED, "%s", why);
    *ns_out = ns;
    return ESC_OK;
}

/* Plans every op of the request; on error nothing is kept. */
static int plan_request(gcs *g, const Escher__UpdateResourcesRequest *req, const gcs_job *job,
                        plan *p, esc_status *st)
{
    const char *owner = req->detached ? "" : job->info->job_id;
    for (size_t i = 0; i < req->n_ops; i++) {
        const Escher__ResourceOp *op = req->ops[i];
        const char *ns;
        int rc = op_namespace(g, job, op, &ns, st);
        if (rc == ESC_OK)
            rc = check_op(op, ns, st);
        if (rc)
            return rc;
        char full[ESC_FULLNAME_MAX];
        esc_name_join(ns, op->name, full, sizeof full);
        node_list nodes;
        rc = resolve_target(g, req, op->target, ns, &nodes, st);
        if (rc == ESC_OK)
            rc = plan_on_nodes(g, p, op, full, ns, owner, &nodes, st);
        free(nodes.ids);
        if (rc)
            return rc;
    }
    const char *over = plan_over_quota(g, p);
    if (over)
        return esc_status_set(st, ESC_RESOURCE_EXHAUSTED,
                              "namespace %.64s would exceed its quota of %ld resources", over,
                              g->cfg.max_resources_per_job);
    return ESC_OK;
}

typedef struct {
    esc_rpc_ctx *call;
    esc_strmap *touched; /* node ids the batch wrote to */
} update_ctx;

/* Answers UpdateResources once storage has the batch (or failed). */
static void update_committed(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)g;
    update_ctx *c = ud;
    if (!seq) {
        esc_rpc_finish(c->call, ESC_UNAVAILABLE, err);
    } else {
        Escher__UpdateResourcesReply rep = ESCHER__UPDATE_RESOURCES_REPLY__INIT;
        rep.seq = seq;
        rep.n_node_ids = esc_strmap_count(c->touched);
        rep.node_ids = esc_xcalloc(rep.n_node_ids + 1, sizeof *rep.node_ids);
        size_t pos = 0, k = 0;
        const char *key;
        void *val;
        while (esc_strmap_next(c->touched, &pos, &key, &val))
            rep.node_ids[k++] = (char *)key;
        esc_rpc_reply(c->call, &rep.base);
        free(rep.node_ids);
    }
    esc_strmap_free(c->touched);
    free(c);
}

static void handle_update(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__UpdateResourcesRequest *req = (const Escher__UpdateResourcesRequest *)msg;
    esc_status st = {0};
    gcs_job *job = gcs_job_find(g, req->job_id);
    if (!job || job->info->state != ESCHER__JOB_STATE__JOB_RUNNING) {
        esc_rpc_finish(call, ESC_FAILED_PRECONDITION, job ? "job has ended" : "unknown job");
        return;
    }
    if (!gcs_auth_is_job(call, job, req->job_credential)) {
        char why[200];
        snprintf(why, sizeof why, "the call does not carry job %.40s's credential",
                 req->job_id);
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    if (req->n_ops == 0) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "empty batch");
        return;
    }
    plan p;
    plan_init(&p);
    int rc = plan_request(g, req, job, &p, &st);
    if (rc) {
        plan_free(&p);
        esc_rpc_finish(call, rc, st.message);
        return;
    }
    /* Node ids for the reply are collected before the ops move into the event. */
    esc_strmap *touched = esc_strmap_new();
    for (size_t i = 0; i < p.nops; i++)
        esc_strmap_put(touched, p.ops[i]->node_id, (void *)1);
    update_ctx *c = esc_xmalloc(sizeof *c);
    *c = (update_ctx){call, touched};
    /* The history's row: the writer is the job whose credential the call carried. */
    Escher__HistoryEvent *h = gcs_history_row(ESCHER__HISTORY_KIND__H_RESOURCES);
    gcs_history_set(h, NULL, job->info->job_id, job->info->namespace_);
    gcs_history_set_entrypoint(h, job->info->entrypoint);
    gcs_history_stage(g, h);
    plan_commit(g, &p, gcs_event_new(ESCHER__EVENT_KIND__EV_RESOURCES),
                esc_storage_batch_new(), update_committed, c);
}

void gcs_registry_remove_where(gcs *g, const char *node_id, const char *owner_job,
                               Escher__Event *ev, esc_storage_batch *b, gcs_done_fn done,
                               void *ud)
{
    plan p;
    plan_init(&p);
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->registry, &pos, &k, &v)) {
        const Escher__RegistryEntry *e = v;
        if (node_id && strcmp(e->node_id, node_id) != 0)
            continue;
        if (owner_job && strcmp(e->owner_job, owner_job) != 0)
            continue;
        op_args o = {.kind = ESC_CAP_DELETE};
        plan_op(g, &p, e->node_id, e->name, e->namespace_, e->owner_job, &o, NULL);
    }
    plan_commit(g, &p, ev, b, done, ud);
}

void gcs_registry_load(gcs *g, Escher__RegistryEntry *e)
{
    char key[KEY_MAX];
    gcs_registry_key(e->node_id, e->name, key, sizeof key);
    Escher__RegistryEntry *old = esc_strmap_put(g->registry, key, e);
    if (old) {
        ns_rows_add(g, old->namespace_, -1);
        protobuf_c_message_free_unpacked(&old->base, NULL);
    }
    ns_rows_add(g, e->namespace_, 1);
}

void gcs_registry_free(gcs *g)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->registry, &pos, &k, &v))
        protobuf_c_message_free_unpacked(v, NULL);
    esc_strmap_free(g->registry);
    esc_strmap_free(g->ns_rows);
}

void gcs_registry_register(gcs *g)
{
    gcs_handle_write(g, &ESC_M_GCS_UPDATE_RESOURCES, handle_update);
}
