/* cluster_view.c: see cluster_view.h. Capacities follow capacity.h, the rule every
 * raylet and the GCS apply, so this view agrees with the nodes' own tables. */
#include "cluster_view.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capacity.h"
#include "ids.h"
#include "strmap.h"
#include "xalloc.h"

/* A debit stands for tasks sent to a node since its last advertisement; if none comes
 * (the tasks queued there and changed nothing) it lapses after this long. */
#define DEBIT_TTL_MS 1000
/* An advertisement reflects a forward only once the task arrived, was admitted and the
 * node reported (its rows at most every 20 ms) and the GCS advertised (every 50 ms). One
 * that comes sooner may predate the task: a debit goes when an advertisement shows its
 * name's availability fallen by it, or from the first advertisement this long after it. */
#define DEBIT_FRESH_MS 100

/* What this raylet sent to a node of one name, and the availability it saw then. */
typedef struct {
    int64_t qty;
    int64_t base_free;
} debit;

typedef struct {
    int64_t free;       /* total - held as advertised (0 once deleted); may be < 0 */
    bool unbounded;
} avail_row;

typedef struct {
    char *address;
    bool alive;
    esc_strmap *caps;   /* name -> esc_capacity* (physical and ephemeral) */
    esc_strmap *avail;  /* name -> avail_row*, from EV_NODE_LOAD */
    esc_strmap *debits; /* name -> debit*: sent there, not yet seen advertised */
    uint64_t debit_ms;  /* when the last debit was made */
} view_node;

struct cluster_view {
    esc_strmap *nodes;  /* node id -> view_node */
    const esc_strmap *suspects; /* addresses to skip (peers.h); may be NULL */
    uint64_t rng;       /* xorshift state: ties between equally idle nodes */
};

static void free_values(esc_strmap *m)
{
    size_t pos = 0;
    const char *k;
    void *val;
    while (esc_strmap_next(m, &pos, &k, &val))
        free(val);
    esc_strmap_free(m);
}

static void node_free(view_node *n)
{
    free_values(n->caps);
    free_values(n->avail);
    free_values(n->debits);
    free(n->address);
    free(n);
}

static void clear(cluster_view *v)
{
    size_t pos = 0;
    const char *k;
    void *val;
    while (esc_strmap_next(v->nodes, &pos, &k, &val))
        node_free(val);
    esc_strmap_free(v->nodes);
    v->nodes = esc_strmap_new();
}

cluster_view *cluster_view_new(void)
{
    cluster_view *v = esc_xcalloc(1, sizeof *v);
    v->nodes = esc_strmap_new();
    /* Different per raylet, so raylets that see the same loads break ties differently. */
    v->rng = (esc_now_ms() << 20) ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)v;
    if (!v->rng)
        v->rng = 1;
    return v;
}

void cluster_view_free(cluster_view *v)
{
    if (!v)
        return;
    clear(v);
    esc_strmap_free(v->nodes);
    free(v);
}

static esc_capacity *cap_of(view_node *n, const char *name)
{
    esc_capacity *c = esc_strmap_get(n->caps, name);
    if (!c) {
        c = esc_xcalloc(1, sizeof *c);
        esc_strmap_put(n->caps, name, c);
    }
    return c;
}

/* A new raylet listens at address: whatever other node the view has there is gone (two
 * raylets cannot listen on one address), even before the GCS declares it dead. */
static void replace_at(cluster_view *v, const char *address, const char *new_id)
{
    size_t pos = 0;
    const char *id;
    void *val;
    while (esc_strmap_next(v->nodes, &pos, &id, &val)) {
        view_node *n = val;
        if (n->alive && strcmp(id, new_id) && !strcmp(n->address, address))
            n->alive = false;
    }
}

/* Adds or refreshes a node from its NodeInfo (physical resources as capacities). */
static void put_node(cluster_view *v, const Escher__NodeInfo *info)
{
    view_node *n = esc_strmap_get(v->nodes, info->node_id);
    if (!n) {
        n = esc_xcalloc(1, sizeof *n);
        n->caps = esc_strmap_new();
        n->avail = esc_strmap_new();
        n->debits = esc_strmap_new();
        esc_strmap_put(v->nodes, info->node_id, n);
    }
    free(n->address);
    n->address = esc_xstrdup(info->address);
    n->alive = info->state != ESCHER__NODE_STATE__NODE_DEAD;
    for (size_t i = 0; i < info->n_physical; i++) {
        const Escher__Amount *a = info->physical[i];
        esc_capacity_apply(cap_of(n, a->name), ESC_CAP_SET, a->value, a->unbounded);
    }
}

static void apply_op(cluster_view *v, const Escher__LogOp *op)
{
    view_node *n = esc_strmap_get(v->nodes, op->node_id);
    if (n)
        esc_capacity_apply(cap_of(n, op->name), (int)op->kind, op->value, op->unbounded);
}

static void apply_snapshot(cluster_view *v, const Escher__Event *ev)
{
    clear(v);
    for (size_t i = 0; i < ev->n_nodes; i++)
        put_node(v, ev->nodes[i]);
    for (size_t i = 0; i < ev->n_registry; i++) {
        const Escher__RegistryEntry *e = ev->registry[i];
        view_node *n = esc_strmap_get(v->nodes, e->node_id);
        if (n)
            esc_capacity_apply(cap_of(n, e->name), ESC_CAP_SET, e->total, e->unbounded);
    }
}

static void clear_debits(view_node *n)
{
    free_values(n->debits);
    n->debits = esc_strmap_new();
}

/* One node's advertisement: its rows replace what this view had of them. */
static void apply_load(cluster_view *v, const Escher__NodeLoad *l)
{
    view_node *n = esc_strmap_get(v->nodes, l->node_id);
    if (!n)
        return; /* not known yet: its full rows come with the next (re)subscription */
    if (l->full) {
        free_values(n->avail);
        n->avail = esc_strmap_new();
    }
    for (size_t i = 0; i < l->n_rows; i++) {
        const Escher__ResourceState *s = l->rows[i];
        if (s->deleted && s->held == 0) {
            free(esc_strmap_del(n->avail, s->name)); /* gone */
            continue;
        }
        avail_row *a = esc_strmap_get(n->avail, s->name);
        if (!a) {
            a = esc_xmalloc(sizeof *a);
            esc_strmap_put(n->avail, s->name, a);
        }
        a->unbounded = s->unbounded && !s->deleted;
        a->free = s->deleted ? 0 : s->total - s->held;
        debit *d = esc_strmap_get(n->debits, s->name);
        if (d && a->free <= d->base_free - d->qty)
            free(esc_strmap_del(n->debits, s->name)); /* the row has what was sent */
    }
    /* Fresh numbers include (or no longer need) what this raylet sent there. */
    if (esc_now_ms() - n->debit_ms >= DEBIT_FRESH_MS)
        clear_debits(n);
}

void cluster_view_apply(cluster_view *v, const Escher__Event *ev)
{
    if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_LOAD) {
        for (size_t i = 0; i < ev->n_loads; i++)
            apply_load(v, ev->loads[i]);
        return;
    }
    if (ev->kind == ESCHER__EVENT_KIND__EV_SNAPSHOT) {
        apply_snapshot(v, ev);
        return;
    }
    if (ev->node && ev->node->node_id && *ev->node->node_id) {
        put_node(v, ev->node);
        /* A registration is the newest news of its address (a snapshot's list is not
         * ordered, so it cannot tell which of two nodes at one address is the new one). */
        if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_ADDED)
            replace_at(v, ev->node->address, ev->node->node_id);
    }
    for (size_t i = 0; i < ev->n_ops; i++)
        apply_op(v, ev->ops[i]);
}

const Escher__NodeInfo **cluster_view_missed_deaths(const cluster_view *v,
                                                    const Escher__Event *snap, size_t *n)
{
    const Escher__NodeInfo **dead = esc_xcalloc(snap->n_nodes + 1, sizeof *dead);
    *n = 0;
    for (size_t i = 0; i < snap->n_nodes; i++) {
        const Escher__NodeInfo *info = snap->nodes[i];
        const view_node *known = esc_strmap_get(v->nodes, info->node_id);
        if (known && known->alive && info->state == ESCHER__NODE_STATE__NODE_DEAD)
            dead[(*n)++] = info;
    }
    return dead;
}

/* The node is this raylet: its id, or its address (an earlier node of this address that
 * is not declared dead yet is this raylet's predecessor: sending there is sending here). */
static bool is_self(const cluster_view *v, const char *self, const char *id,
                    const view_node *n)
{
    if (!self)
        return false;
    if (!strcmp(id, self))
        return true;
    const view_node *me = esc_strmap_get(v->nodes, self);
    return me && me->address && !strcmp(me->address, n->address);
}

void cluster_view_node_gone(cluster_view *v, const char *node_id)
{
    view_node *n = node_id ? esc_strmap_get(v->nodes, node_id) : NULL;
    if (n)
        n->alive = false;
}

/* A node tasks may be sent to: alive for the GCS and not suspect here. */
static bool usable(const cluster_view *v, const view_node *n)
{
    return n->alive && !(v->suspects && esc_strmap_get(v->suspects, n->address));
}

void cluster_view_set_suspects(cluster_view *v, const esc_strmap *suspects)
{
    v->suspects = suspects;
}

static bool covers(const view_node *n, const accounting_req *req, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        const esc_capacity *c = esc_strmap_get(n->caps, req[i].name);
        if (!c || !c->present || (!c->unbounded && c->total < req[i].qty))
            return false;
    }
    return true;
}

const char *cluster_view_find_feasible(const cluster_view *v, const char *self,
                                       const accounting_req *req, size_t n, const char **node_id)
{
    const char *best_id = NULL, *best_addr = NULL;
    size_t pos = 0;
    const char *id;
    void *val;
    while (esc_strmap_next(v->nodes, &pos, &id, &val)) {
        const view_node *node = val;
        if (!usable(v, node) || is_self(v, self, id, node) || !covers(node, req, n))
            continue;
        if (!best_id || strcmp(id, best_id) < 0) {
            best_id = id;
            best_addr = node->address;
        }
    }
    if (node_id)
        *node_id = best_id;
    return best_addr;
}

bool cluster_view_has_name(const cluster_view *v, const char *name)
{
    size_t pos = 0;
    const char *id;
    void *val;
    while (esc_strmap_next(v->nodes, &pos, &id, &val)) {
        const view_node *node = val;
        const esc_capacity *c = esc_strmap_get(node->caps, name);
        if (node->alive && c && c->present)
            return true;
    }
    return false;
}

/* ------------------------------------------------------------ availability */

static uint64_t next_random(cluster_view *v)
{
    v->rng ^= v->rng << 13;
    v->rng ^= v->rng >> 7;
    v->rng ^= v->rng << 17;
    return v->rng;
}

/* What n has free of name now as this raylet believes: advertised minus debits. */
static bool free_of(view_node *n, const char *name, bool debits_valid, int64_t *out,
                    bool *unbounded)
{
    const avail_row *a = esc_strmap_get(n->avail, name);
    if (!a)
        return false;
    *unbounded = a->unbounded;
    *out = a->free;
    const debit *d = debits_valid ? esc_strmap_get(n->debits, name) : NULL;
    if (d)
        *out -= d->qty;
    return true;
}

/* How many times the request fits in n's availability (INFINITY when every name is
 * unbounded); < 1 when it does not fit. Repeated names are summed, as admission does. */
static double headroom(view_node *n, const accounting_req *req, size_t k, uint64_t now)
{
    bool debits_valid = now - n->debit_ms <= DEBIT_TTL_MS;
    double most = INFINITY;
    for (size_t i = 0; i < k; i++) {
        int64_t want = 0, have;
        bool unb;
        for (size_t j = 0; j < k; j++)
            if (!strcmp(req[j].name, req[i].name))
                want += req[j].qty;
        if (!free_of(n, req[i].name, debits_valid, &have, &unb))
            return 0;
        if (unb)
            continue;
        if (have < want)
            return 0;
        double times = (double)have / (double)want;
        if (times < most)
            most = times;
    }
    return most;
}

const char *cluster_view_find_available(cluster_view *v, const char *self,
                                        const accounting_req *req, size_t n,
                                        const char *exclude_node, const char **node_id)
{
    const char *best_id = NULL, *best_addr = NULL;
    double best = 0;
    unsigned ties = 0;
    uint64_t now = esc_now_ms();
    size_t pos = 0;
    const char *id;
    void *val;
    while (esc_strmap_next(v->nodes, &pos, &id, &val)) {
        view_node *node = val;
        if (!usable(v, node) || is_self(v, self, id, node) ||
            (exclude_node && !strcmp(id, exclude_node)))
            continue;
        double h = headroom(node, req, n, now);
        if (h < 1 || h < best)
            continue;
        /* Equal headroom: each candidate is kept with probability 1/ties (reservoir). */
        ties = h > best || !best_id ? 1 : ties + 1;
        if (ties == 1 || next_random(v) % ties == 0) {
            best = h;
            best_id = id;
            best_addr = node->address;
        }
    }
    if (node_id)
        *node_id = best_id;
    return best_addr;
}

/* The availability a new debit of name starts from: the advertised one, else (not
 * advertised yet) the capacity, all of it free. */
static int64_t debit_base(view_node *n, const char *name)
{
    const avail_row *a = esc_strmap_get(n->avail, name);
    if (a)
        return a->free;
    const esc_capacity *c = esc_strmap_get(n->caps, name);
    return c && c->present ? c->total : 0;
}

void cluster_view_debit(cluster_view *v, const char *node_id, const accounting_req *req, size_t n)
{
    view_node *node = esc_strmap_get(v->nodes, node_id);
    if (!node)
        return;
    uint64_t now = esc_now_ms();
    if (now - node->debit_ms > DEBIT_TTL_MS)
        clear_debits(node);
    node->debit_ms = now;
    for (size_t i = 0; i < n; i++) {
        debit *d = esc_strmap_get(node->debits, req[i].name);
        if (!d) {
            d = esc_xcalloc(1, sizeof *d);
            d->base_free = debit_base(node, req[i].name);
            esc_strmap_put(node->debits, req[i].name, d);
        }
        d->qty += req[i].qty;
    }
}

const char *cluster_view_node_at(const cluster_view *v, const char *address)
{
    if (!address || !*address)
        return NULL;
    size_t pos = 0;
    const char *id;
    void *val;
    while (esc_strmap_next(v->nodes, &pos, &id, &val))
        if (!strcmp(((const view_node *)val)->address, address))
            return id;
    return NULL;
}
