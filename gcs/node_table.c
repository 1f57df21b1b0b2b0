/* node_table.c: raylets register, report (heartbeat plus applied sequence plus their
 * accounting), drain, and are declared dead after a silence. A dead node's ephemeral
 * resources are removed in the same event that announces its death; its object
 * locations are dropped from the directory. After --dead-node-retention-ms the dead
 * node leaves the table too (storage, then memory), so a long-lived cluster does not
 * list every raylet it ever lost; the event of its death stays in the log. */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "names.h"
#include "pbutil.h"
#include "xalloc.h"

gcs_node *gcs_node_find(gcs *g, const char *id)
{
    return id ? esc_strmap_get(g->nodes, id) : NULL;
}

bool gcs_node_alive(const gcs_node *n)
{
    return n && n->info->state != ESCHER__NODE_STATE__NODE_DEAD;
}

bool gcs_node_forgotten(gcs *g, const char *id)
{
    return g->forgotten && id && esc_strmap_get(g->forgotten, id);
}

static void node_free(gcs_node *n)
{
    protobuf_c_message_free_unpacked(&n->info->base, NULL);
    gcs_load_forget(n);
    free(n);
}

/* Puts info (owned) in the table, replacing an older entry of the same node. */
static gcs_node *node_put(gcs *g, Escher__NodeInfo *info)
{
    gcs_node *n = gcs_node_find(g, info->node_id);
    if (n) {
        protobuf_c_message_free_unpacked(&n->info->base, NULL);
    } else {
        n = esc_xcalloc(1, sizeof *n);
        esc_strmap_put(g->nodes, info->node_id, n);
    }
    n->info = info;
    n->last_seen_ms = esc_now_ms();
    return n;
}

void gcs_node_load(gcs *g, Escher__NodeInfo *info)
{
    gcs_node *n = node_put(g, info);
    /* Its raylet learns of this GCS's start only from a snapshot: the ring is empty, and
     * a raylet whose last event was the last stored one would otherwise resume with
     * nothing to send, and never announce its objects to this empty directory. */
    n->needs_snapshot = true;
    /* Its death time is not stored: the retention counts from the load. */
    if (!gcs_node_alive(n))
        n->dead_since_ms = esc_now_ms();
}

static int check_node_info(const Escher__NodeInfo *in, esc_status *st)
{
    if (!in)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "no node info");
    if (!in->address || !*in->address || strlen(in->address) > 255)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "node address missing or too long");
    if (*in->node_id && !esc_name_valid(in->node_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "invalid node id");
    for (size_t i = 0; i < in->n_physical; i++) {
        const Escher__Amount *a = in->physical[i];
        if (!esc_name_is_physical(a->name) && !esc_name_valid(a->name))
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "invalid resource name '%.64s'",
                                  a->name);
        if (a->value < 0)
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "negative capacity of %.64s",
                                  a->name);
    }
    return ESC_OK;
}

typedef struct {
    esc_rpc_ctx *call;
    Escher__NodeInfo *info; /* owned until applied, then the table's */
} add_ctx;

static void apply_node_added(gcs *g, void *ud)
{
    add_ctx *c = ud;
    gcs_node *n = node_put(g, c->info);
    n->needs_snapshot = true;
    /* Registered while a death declared in memory waited for storage: it is alive. */
    n->death_unstored = false;
}

/* Answers RegisterNode once storage has the node (or failed). */
static void node_added(gcs *g, uint64_t seq, const char *err, void *ud)
{
    add_ctx *c = ud;
    if (!seq) {
        protobuf_c_message_free_unpacked(&c->info->base, NULL);
        esc_rpc_finish(c->call, ESC_UNAVAILABLE, err);
        free(c);
        return;
    }
    ESC_INFO("node %s registered at %s (seq %llu)", c->info->node_id, c->info->address,
             (unsigned long long)seq);
    Escher__RegisterNodeReply rep = ESCHER__REGISTER_NODE_REPLY__INIT;
    rep.node_id = c->info->node_id;
    rep.seq = seq;
    rep.heartbeat_ms = (uint32_t)g->cfg.heartbeat_ms;
    esc_rpc_reply(c->call, &rep.base);
    free(c);
}

static void handle_register(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__RegisterNodeRequest *req = (const Escher__RegisterNodeRequest *)msg;
    esc_status st = {0};
    if (check_node_info(req->node, &st)) {
        esc_rpc_finish(call, st.code, st.message);
        return;
    }
    gcs_node *known = gcs_node_find(g, req->node->node_id);
    if ((known && !gcs_node_alive(known)) || gcs_node_forgotten(g, req->node->node_id)) {
        esc_rpc_finish(call, ESC_FAILED_PRECONDITION,
                       "this node was declared dead; start a new raylet");
        return;
    }
    Escher__NodeInfo *info = (Escher__NodeInfo *)esc_pb_dup(&req->node->base);
    if (!*info->node_id) {
        if (info->node_id != protobuf_c_empty_string) /* unpacked "" is a shared constant */
            free(info->node_id);
        info->node_id = esc_xmalloc(ESC_ID_HEX + 1);
        esc_random_hex(info->node_id, ESC_ID_HEX / 2);
    }
    info->state = ESCHER__NODE_STATE__NODE_ALIVE;

    esc_storage_batch *b = esc_storage_batch_new();
    gcs_put_msg(b, GCS_T_NODES, info->node_id, &info->base);
    Escher__Event *ev = gcs_event_new(ESCHER__EVENT_KIND__EV_NODE_ADDED);
    ev->node = (Escher__NodeInfo *)esc_pb_dup(&info->base);
    add_ctx *c = esc_xmalloc(sizeof *c);
    *c = (add_ctx){call, info};
    gcs_history_stage_node(g, ESCHER__HISTORY_KIND__H_NODE_ADDED, info);
    gcs_commit(g, ev, b, apply_node_added, node_added, c);
}

static void handle_report(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__ReportNodeRequest *req = (const Escher__ReportNodeRequest *)msg;
    Escher__ReportNodeReply rep = ESCHER__REPORT_NODE_REPLY__INIT;
    gcs_node *n = gcs_node_find(g, req->node_id);
    if (!gcs_node_alive(n)) {
        rep.unknown_node = true; /* re-register: a dead node is then refused */
        esc_rpc_reply(call, &rep.base);
        return;
    }
    uint64_t now = esc_now_ms(), hb = (uint64_t)g->cfg.heartbeat_ms;
    /* A raylet reports at least every period: a longer gap is periods missed. Jitter
     * within one extra period is not counted. */
    if (now - n->last_seen_ms > 2 * hb)
        n->heartbeats_missed += (now - n->last_seen_ms) / hb - 1;
    n->last_seen_ms = now;
    if (req->has_resources) {
        gcs_load_set_report(n, (Escher__ReportNodeRequest *)esc_pb_dup(&req->base));
        gcs_load_reported(g, n);
    }
    if (req->has_demand)
        gcs_load_set_demand(g, n, req);
    gcs_history_report(g, req);
    /* A GCS restarted on durable storage knows the node but not its accounting. */
    rep.want_resources = !n->report;
    bool advanced = req->applied_seq != n->applied_seq;
    n->applied_seq = req->applied_seq;
    esc_rpc_reply(call, &rep.base);
    if (advanced)
        gcs_wait_recheck(g);
}

typedef struct {
    esc_rpc_ctx *call;
    char *node_id;
} drain_ctx;

static void node_drained(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)seq;
    drain_ctx *c = ud;
    gcs_node *n = gcs_node_find(g, c->node_id);
    if (err) {
        esc_rpc_finish(c->call, ESC_UNAVAILABLE, err);
    } else {
        /* Not over a death declared while the write was out (its own write follows). */
        if (gcs_node_alive(n))
            n->info->state = ESCHER__NODE_STATE__NODE_DRAINING;
        Escher__DrainNodeReply rep = ESCHER__DRAIN_NODE_REPLY__INIT;
        esc_rpc_reply(c->call, &rep.base);
    }
    free(c->node_id);
    free(c);
}

static void handle_drain(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__DrainNodeRequest *req = (const Escher__DrainNodeRequest *)msg;
    gcs_node *n = gcs_node_find(g, req->node_id);
    if (!gcs_node_alive(n)) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, n ? "node is dead" : "unknown node");
        return;
    }
    Escher__NodeInfo *draining = (Escher__NodeInfo *)esc_pb_dup(&n->info->base);
    draining->state = ESCHER__NODE_STATE__NODE_DRAINING;
    esc_storage_batch *b = esc_storage_batch_new();
    gcs_put_msg(b, GCS_T_NODES, draining->node_id, &draining->base);
    protobuf_c_message_free_unpacked(&draining->base, NULL);
    drain_ctx *c = esc_xmalloc(sizeof *c);
    *c = (drain_ctx){call, esc_xstrdup(req->node_id)};
    gcs_history_stage_node(g, ESCHER__HISTORY_KIND__H_NODE_DRAINING, n->info);
    gcs_write(g, b, node_drained, c);
}

/* The durable half of a death already declared in memory (node_die): one event
 * stores the node as dead and removes its ephemeral resources. */
static void death_stored(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)err; /* logged by the commit */
    char *id = ud;
    gcs_node *n = gcs_node_find(g, id);
    if (n) {
        n->death_queued = false;
        if (seq)
            n->death_unstored = false; /* else the next sweep tries again */
    }
    free(id);
}

static void death_run(gcs *g, void *ud)
{
    char *id = ud;
    gcs_node *n = gcs_node_find(g, id);
    if (!n || !n->death_unstored) { /* registered again meanwhile */
        if (n)
            n->death_queued = false;
        free(id);
        return;
    }
    Escher__NodeInfo *dead = (Escher__NodeInfo *)esc_pb_dup(&n->info->base);
    esc_storage_batch *b = esc_storage_batch_new();
    gcs_put_msg(b, GCS_T_NODES, dead->node_id, &dead->base);
    Escher__Event *ev = gcs_event_new(ESCHER__EVENT_KIND__EV_NODE_DEAD);
    ev->node = dead;
    gcs_history_stage_node(g, ESCHER__HISTORY_KIND__H_NODE_DEAD, dead);
    gcs_registry_remove_where(g, id, NULL, ev, b, death_stored, id);
}

static void death_expired(gcs *g, void *ud)
{
    death_stored(g, 0, NULL, ud);
}

static void queue_death(gcs *g, gcs_node *n)
{
    n->death_queued = true;
    gcs_queue_write(g, death_run, death_expired, esc_xstrdup(n->info->node_id));
}

/* Declares n dead. Everything the GCS decides alone happens at once, even while
 * storage is slow or down: the node reads as dead, its reports are refused, writes to
 * it fail, waiters stop waiting for it, its objects are dropped. The event that tells
 * the raylets and removes its resources follows once storage has it. Declaring a
 * death before it is stored acknowledges no write: a GCS restarted before that finds
 * the node alive, gives it a fresh heartbeat window, and declares it dead again. */
static void node_die(gcs *g, gcs_node *n)
{
    ESC_WARN("node %s missed heartbeats for %d ms: declared dead", n->info->node_id,
             g->cfg.node_timeout_ms);
    n->info->state = ESCHER__NODE_STATE__NODE_DEAD;
    n->dead_since_ms = esc_now_ms();
    n->death_unstored = true;
    gcs_objects_node_dead(g, n->info->node_id);
    gcs_load_forget(n);
    gcs_wait_recheck(g);
    queue_death(g, n);
}

/* ------------------------------------------------------------------ forgetting */

/* Removes a dead node from memory once storage no longer has it. Its id is kept, so
 * that its raylet, should it come back, is still refused as dead. */
static void forget_done(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)seq; /* a plain write has none */
    char *id = ud;
    gcs_node *n = gcs_node_find(g, id);
    if (n) {
        n->forget_queued = false;
        if (!err) { /* else the next sweep tries again */
            ESC_INFO("node %s dead for %d ms: removed from the node table", id,
                     g->cfg.dead_node_retention_ms);
            if (!g->forgotten)
                g->forgotten = esc_strmap_new();
            esc_strmap_put(g->forgotten, id, (void *)1);
            esc_strmap_del(g->nodes, id);
            node_free(n);
        }
    }
    free(id);
}

static void forget_run(gcs *g, void *ud)
{
    char *id = ud;
    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_del(b, GCS_T_NODES, id);
    gcs_write(g, b, forget_done, id);
}

static void forget_expired(gcs *g, void *ud)
{
    forget_done(g, 0, "storage timeout", ud);
}

/* Dead long enough, and its death is stored (else a restarted GCS would find it
 * alive with no node to refuse). */
static bool due_to_forget(const gcs *g, const gcs_node *n, uint64_t now)
{
    /* now may be older than a death declared in the same sweep: no unsigned wrap. */
    return !gcs_node_alive(n) && !n->death_unstored && !n->death_queued && !n->forget_queued &&
           now >= n->dead_since_ms &&
           now - n->dead_since_ms >= (uint64_t)g->cfg.dead_node_retention_ms;
}

/* Queues the removal of every node due; the writes may run at once and free nodes, so
 * the ids are collected first. */
static void forget_dead(gcs *g, uint64_t now)
{
    char **due = esc_xcalloc(esc_strmap_count(g->nodes) + 1, sizeof *due);
    size_t n = 0, pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->nodes, &pos, &k, &v)) {
        gcs_node *node = v;
        if (due_to_forget(g, node, now)) {
            node->forget_queued = true;
            due[n++] = esc_xstrdup(k);
        }
    }
    for (size_t i = 0; i < n; i++)
        gcs_queue_write(g, forget_run, forget_expired, due[i]);
    free(due);
}

void gcs_nodes_sweep(gcs *g, uint64_t now)
{
    size_t pos = 0;
    const char *k;
    void *v;
    /* Collect first: node_die mutates tables while the iteration would continue. */
    gcs_node **late = esc_xcalloc(esc_strmap_count(g->nodes) + 1, sizeof *late);
    size_t n = 0;
    while (esc_strmap_next(g->nodes, &pos, &k, &v)) {
        gcs_node *node = v;
        if (gcs_node_alive(node) && now - node->last_seen_ms > (uint64_t)g->cfg.node_timeout_ms)
            late[n++] = node;
        else if (node->death_unstored && !node->death_queued)
            queue_death(g, node); /* storage failed it last time */
    }
    for (size_t i = 0; i < n; i++)
        node_die(g, late[i]);
    free(late);
    forget_dead(g, now);
}

void gcs_nodes_free(gcs *g)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->nodes, &pos, &k, &v))
        node_free(v);
    esc_strmap_free(g->nodes);
    if (g->forgotten)
        esc_strmap_free(g->forgotten);
}

void gcs_nodes_register(gcs *g)
{
    gcs_handle_write(g, &ESC_M_GCS_REGISTER_NODE, handle_register);
    esc_rpc_server_handle(g->server, &ESC_M_GCS_REPORT_NODE, handle_report, g);
    gcs_handle_write(g, &ESC_M_GCS_DRAIN_NODE, handle_drain);
}
