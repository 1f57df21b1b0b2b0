/* status.c: the cluster status (GetClusterStatus) as plain C structs: per node, each
 * resource's total, held and available, with owner and namespace of ephemeral ones. */
#include "client_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "xalloc.h"

static const char *node_state_name(Escher__NodeState s)
{
    switch (s) {
    case ESCHER__NODE_STATE__NODE_ALIVE:
        return "ALIVE";
    case ESCHER__NODE_STATE__NODE_DRAINING:
        return "DRAINING";
    case ESCHER__NODE_STATE__NODE_DEAD:
        return "DEAD";
    default:
        return "UNKNOWN";
    }
}

/* Registry rows are keyed by node and full name; '\n' can be in neither. */
static void registry_key(const char *node_id, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s\n%s", node_id, name);
}

static esc_strmap *index_registry(const Escher__GetClusterStatusReply *r)
{
    esc_strmap *m = esc_strmap_new();
    char key[512];
    for (size_t i = 0; i < r->n_registry; i++) {
        registry_key(r->registry[i]->node_id, r->registry[i]->name, key, sizeof key);
        esc_strmap_put(m, key, r->registry[i]);
    }
    return m;
}

/* The namespace of a full name: what precedes its '/'. */
static char *namespace_of(const char *full)
{
    const char *slash = strchr(full, '/');
    return esc_xstrndup(full, (size_t)(slash - full));
}

static void fill_resource(esc_resource_info *ri, const Escher__ResourceState *rs,
                          const char *node_id, const esc_strmap *registry)
{
    ri->name = esc_xstrdup(rs->name);
    ri->total = rs->total;
    ri->held = rs->held;
    ri->available = rs->total - rs->held;
    ri->unbounded = rs->unbounded;
    ri->deleted = rs->deleted;
    ri->ephemeral = strchr(rs->name, '/') != NULL;
    ri->backed = rs->backed;
    ri->pending = rs->pending;
    ri->carved = rs->carved;
    if (!ri->ephemeral)
        return;
    char key[512];
    registry_key(node_id, rs->name, key, sizeof key);
    const Escher__RegistryEntry *e = esc_strmap_get(registry, key);
    /* A row can be missing for a moment (deleted while still held): the name still
     * says the namespace, and the owner is then unknown, shown as "". */
    ri->namespace_ = e && e->namespace_[0] ? esc_xstrdup(e->namespace_) : namespace_of(rs->name);
    ri->owner = esc_xstrdup(e ? e->owner_job : "");
    if (!e || e->n_backing == 0)
        return;
    ri->nbacking = e->n_backing;
    ri->backing = esc_xcalloc(e->n_backing, sizeof *ri->backing);
    for (size_t i = 0; i < e->n_backing; i++)
        ri->backing[i] = (esc_amount){esc_xstrdup(e->backing[i]->name), e->backing[i]->value, false};
}

/* Physical resources first, then ephemeral ones, each by name: a stable order for
 * people and for diffs of scripted output. */
static int resource_cmp(const void *a, const void *b)
{
    const esc_resource_info *x = a, *y = b;
    if (x->ephemeral != y->ephemeral)
        return x->ephemeral ? 1 : -1;
    return strcmp(x->name, y->name);
}

static void fill_node(esc_node_status *ns, const Escher__NodeStatus *n, const esc_strmap *reg)
{
    const Escher__NodeInfo *info = n->node;
    ns->id = esc_xstrdup(info ? info->node_id : "");
    ns->address = esc_xstrdup(info ? info->address : "");
    ns->state = esc_xstrdup(node_state_name(info ? info->state : ESCHER__NODE_STATE__NODE_DEAD));
    ns->applied_seq = n->applied_seq;
    ns->cpu_shares_enforced = info && info->cpu_shares_enforced;
    ns->head = info && info->head;
    ns->cpu_shares = esc_xstrdup(info ? info->cpu_shares : "");
    ns->nlabels = info ? info->n_labels : 0;
    ns->labels = esc_xcalloc(ns->nlabels + 1, sizeof *ns->labels);
    for (size_t i = 0; i < ns->nlabels; i++)
        ns->labels[i] = (esc_label){esc_xstrdup(info->labels[i]->key), esc_xstrdup(info->labels[i]->value)};
    ns->nresources = n->n_resources;
    ns->resources = esc_xcalloc(n->n_resources + 1, sizeof *ns->resources);
    for (size_t i = 0; i < n->n_resources; i++)
        fill_resource(&ns->resources[i], n->resources[i], ns->id, reg);
    qsort(ns->resources, ns->nresources, sizeof *ns->resources, resource_cmp);
}


static void fill_demand(esc_demand *d, const Escher__Demand *m)
{
    d->nshape = m->n_shape;
    d->shape = esc_xcalloc(m->n_shape + 1, sizeof *d->shape);
    for (size_t i = 0; i < m->n_shape; i++)
        d->shape[i] = (esc_amount){esc_xstrdup(m->shape[i]->name), m->shape[i]->value, false};
    d->count = m->count;
    d->infeasible = m->infeasible;
    d->nmissing = m->n_missing;
    d->missing = esc_xcalloc(m->n_missing + 1, sizeof *d->missing);
    for (size_t i = 0; i < m->n_missing; i++)
        d->missing[i] = esc_xstrdup(m->missing[i]);
}

static void set_demand(esc_node_status *ns, Escher__Demand *const *demand, size_t n)
{
    ns->ndemand = n;
    ns->demand = esc_xcalloc(n + 1, sizeof *ns->demand);
    for (size_t i = 0; i < n; i++)
        fill_demand(&ns->demand[i], demand[i]);
}

static int get_status(esc_client *c, bool with_demand, esc_cluster_status **out,
                      esc_status *st)
{
    *out = NULL;
    Escher__GetClusterStatusRequest req = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    ProtobufCMessage *m;
    int rc = esc_client_call(c, &ESC_M_GCS_GET_CLUSTER_STATUS, &req.base, &m,
                             ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    const Escher__GetClusterStatusReply *r = (const Escher__GetClusterStatusReply *)m;
    esc_strmap *reg = index_registry(r);
    esc_cluster_status *s = esc_xcalloc(1, sizeof *s);
    s->seq = r->seq;
    s->committed_seq = r->committed_seq;
    s->nnodes = r->n_nodes;
    s->nodes = esc_xcalloc(r->n_nodes + 1, sizeof *s->nodes);
    for (size_t i = 0; i < r->n_nodes; i++) {
        fill_node(&s->nodes[i], r->nodes[i], reg);
        if (with_demand)
            set_demand(&s->nodes[i], r->nodes[i]->demand, r->nodes[i]->n_demand);
    }
    esc_strmap_free(reg);
    protobuf_c_message_free_unpacked(m, NULL);
    *out = s;
    return ESC_OK;
}

int esc_get_cluster_status(esc_client *c, esc_cluster_status **out, esc_status *st)
{
    return get_status(c, true, out, st);
}

int esc_get_cluster_resources(esc_client *c, esc_cluster_status **out, esc_status *st)
{
    return get_status(c, false, out, st);
}

void esc_cluster_status_free(esc_cluster_status *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nnodes; i++) {
        esc_node_status *n = &s->nodes[i];
        for (size_t j = 0; j < n->nresources; j++) {
            free(n->resources[j].name);
            free(n->resources[j].namespace_);
            free(n->resources[j].owner);
            for (size_t k = 0; k < n->resources[j].nbacking; k++)
                free((char *)n->resources[j].backing[k].name);
            free(n->resources[j].backing);
        }
        free(n->resources);
        for (size_t j = 0; j < n->ndemand; j++) {
            for (size_t k = 0; k < n->demand[j].nshape; k++)
                free((char *)n->demand[j].shape[k].name);
            free(n->demand[j].shape);
            for (size_t k = 0; k < n->demand[j].nmissing; k++)
                free(n->demand[j].missing[k]);
            free(n->demand[j].missing);
        }
        free(n->demand);
        free(n->id);
        free(n->address);
        free(n->state);
        free(n->cpu_shares);
        for (size_t j = 0; j < n->nlabels; j++) {
            free((char *)n->labels[j].key);
            free((char *)n->labels[j].value);
        }
        free(n->labels);
    }
    free(s->nodes);
    free(s);
}

const esc_resource_info *esc_node_resource(const esc_node_status *n, const char *name)
{
    for (size_t i = 0; i < n->nresources; i++)
        if (strcmp(n->resources[i].name, name) == 0)
            return &n->resources[i];
    return NULL;
}
