/* raylets.c: where a client finds raylets. A node's raylet address comes from the GCS
 * node table (GetClusterStatus) and is cached by node id, which is never reused; one
 * channel per raylet address is kept for the client's life, so repeated object calls
 * reuse one connection. Both caches sit behind one mutex; the calls themselves run
 * outside it. */
#include "client_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "xalloc.h"

void esc_client_raylets_init(esc_client *c)
{
    pthread_mutex_init(&c->raylets_mu, NULL);
    c->raylet_channels = esc_strmap_new();
    c->raylet_addresses = esc_strmap_new();
    c->dead_addresses = esc_strmap_new();
}

void esc_client_raylets_free(esc_client *c)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(c->raylet_channels, &pos, &k, &v))
        esc_rpc_channel_free(v);
    pos = 0;
    while (esc_strmap_next(c->raylet_addresses, &pos, &k, &v))
        free(v);
    esc_strmap_free(c->raylet_channels);
    esc_strmap_free(c->raylet_addresses);
    esc_strmap_free(c->dead_addresses);
    pthread_mutex_destroy(&c->raylets_mu);
}

static bool cached_address(esc_client *c, const char *node_id, char *out, size_t len)
{
    pthread_mutex_lock(&c->raylets_mu);
    const char *a = esc_strmap_get(c->raylet_addresses, node_id);
    if (a)
        snprintf(out, len, "%s", a);
    pthread_mutex_unlock(&c->raylets_mu);
    return a != NULL;
}

static void cache_address(esc_client *c, const char *node_id, const char *address)
{
    pthread_mutex_lock(&c->raylets_mu);
    if (!esc_strmap_get(c->raylet_addresses, node_id))
        esc_strmap_put(c->raylet_addresses, node_id, esc_xstrdup(address));
    pthread_mutex_unlock(&c->raylets_mu);
}

/* Finds an alive node's address in the GCS's node table. */
static int lookup_address(esc_client *c, const char *node_id, char *out, size_t len,
                          esc_status *st)
{
    Escher__GetClusterStatusRequest req = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    ProtobufCMessage *m;
    int rc = esc_client_call(c, &ESC_M_GCS_GET_CLUSTER_STATUS, &req.base, &m,
                             ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    const Escher__GetClusterStatusReply *r = (const Escher__GetClusterStatusReply *)m;
    rc = esc_status_set(st, ESC_NOT_FOUND, "node %s is not an alive node of the cluster",
                        node_id);
    for (size_t i = 0; i < r->n_nodes; i++) {
        const Escher__NodeInfo *n = r->nodes[i]->node;
        if (n && !strcmp(n->node_id, node_id) && n->state != ESCHER__NODE_STATE__NODE_DEAD) {
            snprintf(out, len, "%s", n->address);
            rc = esc_status_set(st, ESC_OK, NULL);
            break;
        }
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

int esc_client_raylet_address(esc_client *c, const char *node_id, char *out, size_t len,
                              esc_status *st)
{
    if (!node_id)
        node_id = c->node_id;
    if (!node_id[0])
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "this client has no local node (no node_id in the session "
                              "directory or $ESCHER_NODE_ID)");
    if (cached_address(c, node_id, out, len))
        return esc_status_set(st, ESC_OK, NULL);
    int rc = lookup_address(c, node_id, out, len, st);
    if (rc == ESC_OK)
        cache_address(c, node_id, out);
    return rc;
}

esc_rpc_channel *esc_client_raylet_channel(esc_client *c, const char *address)
{
    pthread_mutex_lock(&c->raylets_mu);
    esc_rpc_channel *ch = esc_strmap_get(c->raylet_channels, address);
    if (!ch) {
        ch = esc_rpc_channel_new(address, c->token);
        esc_rpc_channel_set_job(ch, c->job_id, c->credential);
        esc_strmap_put(c->raylet_channels, address, ch);
    }
    pthread_mutex_unlock(&c->raylets_mu);
    return ch;
}

void esc_client_mark_dead(esc_client *c, const char *address, bool dead)
{
    pthread_mutex_lock(&c->raylets_mu);
    if (dead)
        esc_strmap_put(c->dead_addresses, address, (void *)1);
    else
        esc_strmap_del(c->dead_addresses, address);
    pthread_mutex_unlock(&c->raylets_mu);
}

bool esc_client_is_dead(esc_client *c, const char *address)
{
    pthread_mutex_lock(&c->raylets_mu);
    bool dead = esc_strmap_get(c->dead_addresses, address) != NULL;
    pthread_mutex_unlock(&c->raylets_mu);
    return dead;
}
