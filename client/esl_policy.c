/* esl_policy.c: placement policies of the ESL as ephemeral resources (esl.h).
 *
 * Every policy is the same mechanism: one ephemeral resource created (in one atomic
 * batch) on the nodes the policy chose, with the capacity that expresses the policy, and
 * a request of one unit that its tasks carry. Only the choice of nodes and capacities
 * differs, so each policy is a small function that makes that choice. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escher/esl.h"
#include "esl_internal.h"
#include "xalloc.h"

#define APPLY_WAIT_MS 5000

/* What a policy does when one of its nodes dies (its resource died with the node). */
typedef enum {
    LOST_NOTHING,        /* the other nodes still carry it (anti-affinity, barrier) */
    LOST_REPLACE,        /* create it on another node with room (co-location) */
    LOST_REBALANCE,      /* spread the same tasks over the nodes left (balance) */
} on_lost;

struct esl_policy {
    esc_client *c;
    char *name;          /* short name, in the client's namespace */
    esl_request request;
    pthread_mutex_t mu;  /* nodes change on the event thread when a node dies */
    char **nodes;        /* where the resource was created */
    size_t nnodes;
    on_lost lost;
    unsigned n;          /* co-location: group size; balance: tasks */
    esl_request each;    /* co-location: what each task needs besides */
    bool watching;
};

/* ------------------------------------------------------------------ common */

void esl_request_for(esc_client *c, const char *name, int64_t qty, esl_request *out)
{
    char full[256];
    snprintf(full, sizeof full, "%s/%s", esc_client_namespace(c), name);
    esl_request_add(out, full, qty);
}

const esl_request *esl_policy_request(const esl_policy *p)
{
    return &p->request;
}

size_t esl_policy_nodes(esl_policy *p, char ***ids)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->nnodes;
    /* Sized by the cluster: a checked calloc, 0 and NULL when it fails (esl.h). */
    char **v = calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        v[i] = esc_xstrdup(p->nodes[i]);
    pthread_mutex_unlock(&p->mu);
    *ids = v;
    return v ? n : 0;
}

void esl_policy_nodes_free(char **ids, size_t n)
{
    for (size_t i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
}

static void policy_free(esl_policy *p)
{
    for (size_t i = 0; i < p->nnodes; i++)
        free(p->nodes[i]);
    free(p->nodes);
    esl_request_clear(&p->request);
    esl_request_clear(&p->each);
    pthread_mutex_destroy(&p->mu);
    free(p->name);
    free(p);
}

static void on_node_dead(void *ud, const char *node_id);

int esl_policy_free(esc_client *c, esl_policy *p, esc_status *st)
{
    if (!p)
        return esc_status_set(st, ESC_OK, NULL);
    if (p->watching)
        esc_off_node_dead(c, on_node_dead, p);
    int rc = ESC_OK;
    if (p->nnodes) {
        esc_batch *b = esc_batch_new();
        for (size_t i = 0; i < p->nnodes; i++) {
            esc_target t = ESC_NODE(p->nodes[i]);
            esc_batch_delete(b, p->name, &t);
        }
        rc = esc_batch_commit(c, b, NULL, st);
        esc_batch_free(b);
    }
    policy_free(p);
    return rc == ESC_OK ? esc_status_set(st, ESC_OK, NULL) : rc;
}

/* A policy whose resource `name` gets capacity cap[i] (unbounded when cap[i] < 0) on
 * nodes[i], in one batch; tasks carry name=1. */
static int policy_create(esc_client *c, const char *name, char **nodes, const int64_t *cap,
                         size_t n, int64_t request_qty, esl_policy **out, esc_status *st)
{
    *out = NULL;
    esl_policy *p = esc_xcalloc(1, sizeof *p);
    p->c = c;
    pthread_mutex_init(&p->mu, NULL);
    p->name = esc_xstrdup(name);
    p->nodes = esc_xcalloc(n + 1, sizeof *p->nodes);
    esc_batch *b = esc_batch_new();
    for (size_t i = 0; i < n; i++) {
        p->nodes[p->nnodes++] = esc_xstrdup(nodes[i]);
        esc_target t = ESC_NODE(nodes[i]);
        if (cap[i] < 0)
            esc_batch_set_unbounded(b, name, &t);
        else if (cap[i] == 0)
            esc_batch_add(b, name, 0, &t); /* creates at 0, keeps signals that came first */
        else
            esc_batch_set(b, name, cap[i], &t);
    }
    uint64_t seq = 0;
    int rc = n ? esc_batch_commit(c, b, &seq, st) : esc_status_set(st, ESC_OK, NULL);
    esc_batch_free(b);
    if (rc != ESC_OK) {
        policy_free(p);
        return rc;
    }
    /* In force when we return: its nodes admit by it, and the cluster status (which
     * AND consults) shows it. A slow node only delays that; the policy stands. */
    if (n)
        esc_wait_applied(c, seq, (const char *const *)p->nodes, p->nnodes, APPLY_WAIT_MS, NULL);
    if (n)
        esl_request_for(c, name, request_qty, &p->request);
    *out = p;
    return ESC_OK;
}

/* ------------------------------------------------------------------ co-location */

/* The node for a group of n tasks of `each`: the client's local node when it has room,
 * else the roomiest alive one. Copies its id into out; false when none has room. */
static bool roomy_node(esc_client *c, unsigned n, const esl_request *each, char *out,
                       size_t len, esc_status *st)
{
    esc_cluster_status *s = NULL;
    if (esc_get_cluster_status(c, &s, st) != ESC_OK)
        return false;
    const esc_node_status *best = NULL;
    int64_t best_room = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *node = &s->nodes[i];
        int64_t room = esl_alive(node) ? esl_room(node, each) : 0;
        if (room < n)
            continue;
        if (!strcmp(node->id, esc_client_node_id(c))) {
            best = node;
            break;
        }
        if (!best || room > best_room) {
            best = node;
            best_room = room;
        }
    }
    if (best)
        snprintf(out, len, "%s", best->id);
    else
        esc_status_set(st, ESC_RESOURCE_EXHAUSTED, "no alive node has room for %u tasks", n);
    esc_cluster_status_free(s);
    return best != NULL;
}

/* From now on the policy is repaired when one of its nodes dies (drivers only: a
 * short-lived client hears of no deaths). */
static void watch(esl_policy *p)
{
    p->watching = esc_on_node_dead(p->c, on_node_dead, p, NULL) == ESC_OK;
}

int esl_colocate(esc_client *c, const char *name, unsigned n, const esl_request *each,
                 esl_policy **out, esc_status *st)
{
    *out = NULL;
    if (n == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a group needs at least one task");
    char node[128];
    if (!roomy_node(c, n, each, node, sizeof node, st))
        return st ? st->code : ESC_RESOURCE_EXHAUSTED;
    char *nodes[1] = {node};
    int64_t cap = ESC_QTY(1) * (int64_t)n;
    int rc = policy_create(c, name, nodes, &cap, 1, ESC_QTY(1), out, st);
    if (rc == ESC_OK) {
        (*out)->lost = LOST_REPLACE;
        (*out)->n = n;
        for (size_t i = 0; each && i < each->n; i++)
            esl_request_add(&(*out)->each, each->v[i].name, each->v[i].value);
        watch(*out);
    }
    return rc;
}

/* ------------------------------------------------------------------ per-node limits */

typedef struct {
    const esc_node_status *node;
    int64_t cpu;
} ranked;

static int by_cpu_desc(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    return (x->cpu < y->cpu) - (x->cpu > y->cpu);
}

/* The alive nodes, the most available CPU first. */
static size_t rank_nodes(const esc_cluster_status *s, ranked *out)
{
    size_t k = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        if (!esl_alive(&s->nodes[i]))
            continue;
        const esc_resource_info *cpu = esc_node_resource(&s->nodes[i], "CPU");
        out[k++] = (ranked){&s->nodes[i], cpu ? cpu->available : 0};
    }
    qsort(out, k, sizeof *out, by_cpu_desc);
    return k;
}

/* `name` with capacity per_node on `nodes` nodes (0: all alive ones). */
static int per_node_limit(esc_client *c, const char *name, int64_t per_node, unsigned nodes,
                          esl_policy **out, esc_status *st)
{
    *out = NULL;
    esc_cluster_status *s = NULL;
    int rc = esc_get_cluster_status(c, &s, st);
    if (rc != ESC_OK)
        return rc;
    ranked *r = esc_xcalloc(s->nnodes + 1, sizeof *r);
    size_t alive_n = rank_nodes(s, r);
    size_t use = nodes ? nodes : alive_n;
    if (use > alive_n || use == 0) {
        free(r);
        esc_cluster_status_free(s);
        return esc_status_set(st, ESC_FAILED_PRECONDITION, "%zu nodes wanted, %zu alive", use,
                              alive_n);
    }
    char **ids = esc_xcalloc(use, sizeof *ids);
    int64_t *cap = esc_xcalloc(use, sizeof *cap);
    for (size_t i = 0; i < use; i++) {
        ids[i] = r[i].node->id;
        cap[i] = per_node;
    }
    rc = policy_create(c, name, ids, cap, use, ESC_QTY(1), out, st);
    free(ids);
    free(cap);
    free(r);
    esc_cluster_status_free(s);
    return rc;
}

int esl_anti_affinity(esc_client *c, const char *name, esl_policy **out, esc_status *st)
{
    return per_node_limit(c, name, ESC_QTY(1), 0, out, st);
}

int esl_balance(esc_client *c, const char *name, unsigned tasks, unsigned nodes,
                esl_policy **out, esc_status *st)
{
    *out = NULL;
    if (tasks == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "no tasks to balance");
    if (nodes == 0) {
        /* Count the alive nodes first: the per-node cap depends on it. */
        esc_cluster_status *s = NULL;
        int rc = esc_get_cluster_status(c, &s, st);
        if (rc != ESC_OK)
            return rc;
        for (size_t i = 0; i < s->nnodes; i++)
            nodes += esl_alive(&s->nodes[i]);
        esc_cluster_status_free(s);
        if (nodes == 0)
            return esc_status_set(st, ESC_FAILED_PRECONDITION, "no alive node");
    }
    int64_t per = ((int64_t)tasks + nodes - 1) / nodes;
    int rc = per_node_limit(c, name, ESC_QTY(1) * per, nodes, out, st);
    if (rc == ESC_OK) {
        (*out)->lost = LOST_REBALANCE;
        (*out)->n = tasks;
        watch(*out);
    }
    return rc;
}

/* ------------------------------------------------------------------ data locality */

int esl_locality(esc_client *c, const char *name, const esc_ref *input, esl_policy **out,
                 esc_status *st)
{
    *out = NULL;
    esc_object_locations *l = NULL;
    int rc = esc_ref_locations(c, input, &l, st);
    if (rc != ESC_OK)
        return rc;
    int64_t *cap = esc_xcalloc(l->n + 1, sizeof *cap);
    for (size_t i = 0; i < l->n; i++)
        cap[i] = -1; /* unbounded: locality limits where, not how many */
    rc = policy_create(c, name, l->node_ids, cap, l->n, ESC_QTY(1), out, st);
    free(cap);
    esc_object_locations_free(l);
    return rc;
}

/* ------------------------------------------------------------------ task operations */

void esl_op_mark_here(esc_batch *b, const char *name)
{
    esc_batch_set_unbounded(b, name, NULL);
}

void esl_op_signal(esc_batch *b, const char *name)
{
    esc_target all = ESC_ALL_NODES;
    esc_batch_add(b, name, ESC_QTY(1), &all);
}

/* ------------------------------------------------------------------ barriers */

int esl_barrier(esc_client *c, const char *name, unsigned producers, esl_policy **out,
                esc_status *st)
{
    *out = NULL;
    if (producers == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a barrier waits for a producer");
    int rc = per_node_limit(c, name, 0, 0, out, st);
    if (rc == ESC_OK) {
        esl_request_clear(&(*out)->request);
        esl_request_for(c, name, ESC_QTY(1) * (int64_t)producers, &(*out)->request);
    }
    return rc;
}

int esl_signal(esc_client *c, const char *name, esc_status *st)
{
    esc_target all = ESC_ALL_NODES;
    return esc_resource_add(c, name, ESC_QTY(1), &all, NULL, st);
}

/* ------------------------------------------------------------------ node deaths */

/* Removes node_id from the policy's nodes; true when it was one of them. */
static bool drop_node(esl_policy *p, const char *node_id)
{
    bool had = false;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nnodes; i++) {
        if (!strcmp(p->nodes[i], node_id)) {
            free(p->nodes[i]);
            p->nodes[i] = p->nodes[--p->nnodes];
            had = true;
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return had;
}

static void add_node(esl_policy *p, const char *node_id)
{
    pthread_mutex_lock(&p->mu);
    char **v = esc_xrealloc(p->nodes, (p->nnodes + 1) * sizeof *v);
    p->nodes = v;
    p->nodes[p->nnodes++] = esc_xstrdup(node_id);
    pthread_mutex_unlock(&p->mu);
}

/* Co-location: the group starts again on another node with room (its tasks that are
 * retried find it there). */
static void replace(esl_policy *p)
{
    char node[128];
    esc_status st;
    if (!roomy_node(p->c, p->n, &p->each, node, sizeof node, &st))
        return; /* nowhere to go: its tasks wait until a node with room joins */
    esc_target t = ESC_NODE(node);
    if (esc_resource_set(p->c, p->name, ESC_QTY(1) * (int64_t)p->n, &t, NULL, &st) == ESC_OK)
        add_node(p, node);
}

/* Balance: the same tasks over the nodes left, ceil(tasks / nodes) each. */
static void rebalance(esl_policy *p)
{
    pthread_mutex_lock(&p->mu);
    size_t m = p->nnodes;
    esc_batch *b = esc_batch_new();
    for (size_t i = 0; i < m; i++) {
        esc_target t = ESC_NODE(p->nodes[i]);
        esc_batch_set(b, p->name, ESC_QTY(1) * (((int64_t)p->n + (int64_t)m - 1) / (int64_t)m),
                      &t);
    }
    pthread_mutex_unlock(&p->mu);
    if (m)
        esc_batch_commit(p->c, b, NULL, NULL);
    esc_batch_free(b);
}

static void on_node_dead(void *ud, const char *node_id)
{
    esl_policy *p = ud;
    if (!drop_node(p, node_id))
        return;
    if (p->lost == LOST_REPLACE)
        replace(p);
    else if (p->lost == LOST_REBALANCE)
        rebalance(p);
}
