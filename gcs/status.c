/* status.c: GetClusterStatus. Each node's rows are what its raylet last reported (the
 * raylet is the authority on held); the registry adds owner and namespace. */
#include "gcs.h"
#include "xalloc.h"

#include <stdlib.h>

/* A node's rows before its first report: its physical resources, nothing held. */
static void physical_rows(const gcs_node *n, Escher__NodeStatus *ns)
{
    ns->resources = esc_xcalloc(n->info->n_physical + 1, sizeof *ns->resources);
    for (size_t i = 0; i < n->info->n_physical; i++) {
        const Escher__Amount *a = n->info->physical[i];
        Escher__ResourceState *r = esc_xmalloc(sizeof *r);
        escher__resource_state__init(r);
        r->name = a->name;
        r->total = a->value;
        r->unbounded = a->unbounded;
        ns->resources[ns->n_resources++] = r;
    }
}

static void handle_status(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    (void)msg;
    gcs *g = ud;
    Escher__GetClusterStatusReply rep = ESCHER__GET_CLUSTER_STATUS_REPLY__INIT;
    size_t nn = esc_strmap_count(g->nodes);
    rep.committed_seq = g->seq;
    rep.seq = g->seq;
    rep.nodes = esc_xcalloc(nn + 1, sizeof *rep.nodes);
    Escher__NodeStatus *statuses = esc_xcalloc(nn + 1, sizeof *statuses);
    bool *borrowed_rows = esc_xcalloc(nn + 1, sizeof *borrowed_rows);
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->nodes, &pos, &k, &v)) {
        gcs_node *n = v;
        Escher__NodeStatus *ns = &statuses[rep.n_nodes];
        escher__node_status__init(ns);
        ns->node = n->info;
        ns->applied_seq = n->applied_seq;
        if (n->report) {
            ns->resources = n->report->resources;
            ns->n_resources = n->report->n_resources;
            borrowed_rows[rep.n_nodes] = true;
        } else if (gcs_node_alive(n)) {
            physical_rows(n, ns);
        }
        if (gcs_node_alive(n) && n->demand) { /* borrowed */
            ns->demand = n->demand->demand;
            ns->n_demand = n->demand->n_demand;
        }
        if (gcs_node_alive(n) && n->applied_seq < rep.seq)
            rep.seq = n->applied_seq;
        rep.nodes[rep.n_nodes++] = ns;
    }
    rep.registry = esc_xcalloc(esc_strmap_count(g->registry) + 1, sizeof *rep.registry);
    pos = 0;
    while (esc_strmap_next(g->registry, &pos, &k, &v))
        rep.registry[rep.n_registry++] = v;
    esc_rpc_reply(call, &rep.base);
    for (size_t i = 0; i < rep.n_nodes; i++) {
        if (borrowed_rows[i])
            continue;
        for (size_t r = 0; r < statuses[i].n_resources; r++)
            free(statuses[i].resources[r]);
        free(statuses[i].resources);
    }
    free(borrowed_rows);
    free(statuses);
    free(rep.nodes);
    free(rep.registry);
}

void gcs_status_register(gcs *g)
{
    esc_rpc_server_handle(g->server, &ESC_M_GCS_GET_CLUSTER_STATUS, handle_status, g);
}
