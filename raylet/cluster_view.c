/* cluster_view.c: see cluster_view.h. Capacities follow capacity.h, the rule every
 * raylet and the GCS apply, so this view agrees with the nodes' own tables. */
#include "cluster_view.h"

#include <stdlib.h>
#include <string.h>

#include "capacity.h"
#include "strmap.h"

typedef struct {
    char *address;
    bool alive;
    esc_strmap *caps;   /* name -> esc_capacity* (physical and ephemeral) */
} view_node;

struct cluster_view {
    esc_strmap *nodes;  /* node id -> view_node */
};

static void node_free(view_node *n)
{
    size_t pos = 0;
    const char *k;
    void *val;
    while (esc_strmap_next(n->caps, &pos, &k, &val))
        free(val);
    esc_strmap_free(n->caps);
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
    cluster_view *v = calloc(1, sizeof *v);
    v->nodes = esc_strmap_new();
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
        c = calloc(1, sizeof *c);
        esc_strmap_put(n->caps, name, c);
    }
    return c;
}

/* Adds or refreshes a node from its NodeInfo (physical resources as capacities). */
static void put_node(cluster_view *v, const Escher__NodeInfo *info)
{
    view_node *n = esc_strmap_get(v->nodes, info->node_id);
    if (!n) {
        n = calloc(1, sizeof *n);
        n->caps = esc_strmap_new();
        esc_strmap_put(v->nodes, info->node_id, n);
    }
    free(n->address);
    n->address = strdup(info->address);
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

void cluster_view_apply(cluster_view *v, const Escher__Event *ev)
{
    if (ev->kind == ESCHER__EVENT_KIND__EV_SNAPSHOT) {
        apply_snapshot(v, ev);
        return;
    }
    if (ev->node && ev->node->node_id && *ev->node->node_id)
        put_node(v, ev->node);
    for (size_t i = 0; i < ev->n_ops; i++)
        apply_op(v, ev->ops[i]);
}

static bool covers(const view_node *n, const esc_acct_req *req, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        const esc_capacity *c = esc_strmap_get(n->caps, req[i].name);
        if (!c || !c->present || (!c->unbounded && c->total < req[i].qty))
            return false;
    }
    return true;
}

const char *cluster_view_find_feasible(const cluster_view *v, const char *self,
                                       const esc_acct_req *req, size_t n, const char **node_id)
{
    const char *best_id = NULL, *best_addr = NULL;
    size_t pos = 0;
    const char *id;
    void *val;
    while (esc_strmap_next(v->nodes, &pos, &id, &val)) {
        const view_node *node = val;
        if (!node->alive || (self && strcmp(id, self) == 0) || !covers(node, req, n))
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
