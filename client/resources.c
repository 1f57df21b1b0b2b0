/* resources.c: ephemeral-resource writes (set, add, delete, atomic batches) and
 * wait_applied, over the Gcs UpdateResources and WaitApplied methods.
 *
 * Every write is a batch: the single-operation calls commit a batch of one, so there is
 * exactly one path that validates, builds and sends a request. */
#include "client_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "qty.h"
#include "xalloc.h"

/* A target with its strings copied, so a batch does not depend on the caller's memory. */
typedef struct {
    esc_target_kind kind;
    char *node_id;
    esc_amount *where; /* names owned */
    size_t nwhere;
    unsigned num_nodes;
    esc_label *labels; /* strings owned */
    size_t nlabels;
    bool local;        /* target was NULL or ESC_TARGET_LOCAL */
} target_copy;

typedef struct {
    Escher__OpKind kind;
    char *ns;          /* explicit namespace, NULL: the client's */
    char *name;
    int64_t value;
    bool unbounded;
    target_copy target;
    esc_amount *backing; /* names owned; SET only */
    size_t nbacking;
} batch_op;

struct esc_batch {
    batch_op *ops;
    size_t n, cap;
};

/* ------------------------------------------------------------------ batch */

esc_batch *esc_batch_new(void)
{
    return esc_xcalloc(1, sizeof(esc_batch));
}

static void target_copy_free(target_copy *t)
{
    free(t->node_id);
    for (size_t i = 0; i < t->nwhere; i++)
        free((char *)t->where[i].name);
    free(t->where);
    for (size_t i = 0; i < t->nlabels; i++) {
        free((char *)t->labels[i].key);
        free((char *)t->labels[i].value);
    }
    free(t->labels);
}

static void amounts_free(esc_amount *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free((char *)v[i].name);
    free(v);
}

static esc_amount *amounts_copy(const esc_amount *v, size_t n)
{
    if (!v || n == 0)
        return NULL;
    esc_amount *c = esc_xcalloc(n, sizeof *c);
    for (size_t i = 0; i < n; i++) {
        c[i] = v[i];
        c[i].name = v[i].name ? esc_xstrdup(v[i].name) : NULL;
    }
    return c;
}

static void batch_op_free(batch_op *op)
{
    free(op->ns);
    free(op->name);
    target_copy_free(&op->target);
    amounts_free(op->backing, op->nbacking);
}

void esc_batch_free(esc_batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        batch_op_free(&b->ops[i]);
    free(b->ops);
    free(b);
}

size_t esc_batch_size(const esc_batch *b)
{
    return b->n;
}

static target_copy copy_target(const esc_target *t)
{
    target_copy c = {.kind = ESC_TARGET_LOCAL, .local = true};
    if (!t || t->kind == ESC_TARGET_LOCAL)
        return c;
    c.local = false;
    c.kind = t->kind;
    c.node_id = t->node_id ? esc_xstrdup(t->node_id) : NULL;
    c.num_nodes = t->num_nodes;
    c.nwhere = t->where ? t->nwhere : 0;
    c.where = amounts_copy(t->where, c.nwhere);
    c.nlabels = t->labels ? t->nlabels : 0;
    c.labels = esc_xcalloc(c.nlabels + 1, sizeof *c.labels);
    for (size_t i = 0; i < c.nlabels; i++)
        c.labels[i] = (esc_label){esc_xstrdup(t->labels[i].key ? t->labels[i].key : ""),
                                  esc_xstrdup(t->labels[i].value ? t->labels[i].value : "")};
    return c;
}

static void batch_push(esc_batch *b, Escher__OpKind kind, const char *ns, const char *name,
                       int64_t value, bool unbounded, const esc_target *target)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4;
        b->ops = esc_xrealloc(b->ops, b->cap * sizeof *b->ops);
    }
    b->ops[b->n++] = (batch_op){
        .kind = kind,
        .ns = ns ? esc_xstrdup(ns) : NULL,
        .name = name ? esc_xstrdup(name) : NULL,
        .value = value,
        .unbounded = unbounded,
        .target = copy_target(target),
    };
}

void esc_batch_set(esc_batch *b, const char *name, int64_t qty, const esc_target *target)
{
    batch_push(b, ESCHER__OP_KIND__OP_SET, NULL, name, qty, false, target);
}

void esc_batch_set_backed(esc_batch *b, const char *name, int64_t qty,
                          const esc_amount *backing, size_t nbacking, const esc_target *target)
{
    batch_push(b, ESCHER__OP_KIND__OP_SET, NULL, name, qty, false, target);
    batch_op *op = &b->ops[b->n - 1];
    op->backing = amounts_copy(backing, nbacking);
    op->nbacking = op->backing ? nbacking : 0;
}

void esc_batch_set_unbounded(esc_batch *b, const char *name, const esc_target *target)
{
    batch_push(b, ESCHER__OP_KIND__OP_SET, NULL, name, 0, true, target);
}

void esc_batch_add(esc_batch *b, const char *name, int64_t delta, const esc_target *target)
{
    batch_push(b, ESCHER__OP_KIND__OP_ADD, NULL, name, delta, false, target);
}

void esc_batch_delete(esc_batch *b, const char *name, const esc_target *target)
{
    batch_push(b, ESCHER__OP_KIND__OP_DELETE, NULL, name, 0, false, target);
}

/* ------------------------------------------------------------------ validation */

/* Checks done here as well as in the GCS so that a caller gets the precise reason
 * without a round trip; the GCS stays the authority. */
static int check_name(const char *name, esc_status *st)
{
    /* Physical first: "node:<id>" is not a valid short name, but what the caller needs
     * to hear is that it is not theirs to write. */
    if (esc_name_is_physical(name))
        return esc_status_set(st, ESC_PERMISSION_DENIED,
                              "%s is a physical resource: only its node's raylet sets it", name);
    if (!name || !esc_name_valid(name))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "invalid resource name \"%s\": 1-64 characters of A-Z a-z 0-9 "
                              "_ . -, not starting with '.'",
                              name ? name : "(null)");
    return ESC_OK;
}

static int check_target(const esc_client *c, const target_copy *t, bool any_local,
                        esc_status *st)
{
    if (t->local && !any_local && !c->node_id[0])
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "this client has no local node (no node_id in the session "
                              "directory or $ESCHER_NODE_ID): aim at a node, a selector or "
                              "all nodes");
    if (t->kind == ESC_TARGET_NODE && (!t->node_id || !t->node_id[0]))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "target node id is empty");
    if (t->kind == ESC_TARGET_LABELS && t->nlabels == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a label target needs a label");
    for (size_t i = 0; i < t->nlabels; i++)
        if (!t->labels[i].key[0])
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "label target has an empty key");
    if (t->kind > ESC_TARGET_LABELS)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "unknown target kind %d", (int)t->kind);
    for (size_t i = 0; i < t->nwhere; i++)
        if (!t->where[i].name || !t->where[i].name[0])
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "selector has an empty name");
    return ESC_OK;
}

static int check_op(const esc_client *c, const batch_op *op, bool any_local, esc_status *st)
{
    if (op->ns && !esc_name_valid(op->ns))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "invalid namespace \"%s\"", op->ns);
    int rc = check_name(op->name, st);
    if (rc != ESC_OK)
        return rc;
    if (op->value > ESC_QTY_MAX || op->value < -ESC_QTY_MAX)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "quantity of %s out of range",
                              op->name);
    if (op->kind == ESCHER__OP_KIND__OP_SET && !op->unbounded && op->value < 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "capacity of %s must not be negative", op->name);
    for (size_t i = 0; i < op->nbacking; i++) {
        const esc_amount *b = &op->backing[i];
        if (!b->name || !b->name[0])
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "backing of %s has an empty name",
                                  op->name);
        if (b->unbounded || b->value <= 0 || b->value > ESC_QTY_MAX)
            return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                  "backing %s of %s must be a positive quantity", b->name,
                                  op->name);
    }
    return check_target(c, &op->target, any_local, st);
}

/* ------------------------------------------------------------------ request */

/* The protobuf form of a batch. Strings point into the batch, so nothing is copied
 * twice. Selector names go as given: the GCS resolves a short one to a static custom
 * resource of that name, else to the job's namespace. */
typedef struct {
    Escher__UpdateResourcesRequest req;
    Escher__ResourceOp *ops, **opp;
    Escher__Target *targets;
    Escher__Amount *amounts, **amountp;
    size_t namounts;
    Escher__Label *labels, **labelp;
    size_t nlabels, next_label;
} update_msg;

static void fill_amount(update_msg *u, const esc_amount *from, size_t k)
{
    Escher__Amount *a = &u->amounts[k];
    escher__amount__init(a);
    a->name = (char *)from->name;
    a->value = from->value;
    a->unbounded = from->unbounded;
    u->amountp[k] = a;
}

static void fill_target(update_msg *u, const target_copy *t, Escher__Target *pt,
                        size_t *next_amount)
{
    escher__target__init(pt);
    pt->kind = (Escher__TargetKind)t->kind;
    pt->node_id = t->node_id ? t->node_id : (char *)"";
    if (t->kind == ESC_TARGET_SELECTOR)
        pt->num_nodes = t->num_nodes ? t->num_nodes : 1;
    pt->n_where = t->nwhere;
    pt->where = t->nwhere ? &u->amountp[*next_amount] : NULL;
    for (size_t i = 0; i < t->nwhere; i++)
        fill_amount(u, &t->where[i], (*next_amount)++);
    if (t->kind == ESC_TARGET_LABELS)
        pt->num_nodes = t->num_nodes;
    pt->n_labels = t->nlabels;
    pt->labels = t->nlabels ? &u->labelp[u->next_label] : NULL;
    for (size_t i = 0; i < t->nlabels; i++, u->next_label++) {
        Escher__Label *l = &u->labels[u->next_label];
        escher__label__init(l);
        l->key = (char *)t->labels[i].key;
        l->value = (char *)t->labels[i].value;
        u->labelp[u->next_label] = l;
    }
}

static void build_update(const esc_client *c, const esc_batch *b, update_msg *u)
{
    memset(u, 0, sizeof *u);
    for (size_t i = 0; i < b->n; i++)
        u->namounts += b->ops[i].target.nwhere + b->ops[i].nbacking;
    for (size_t i = 0; i < b->n; i++)
        u->nlabels += b->ops[i].target.nlabels;
    u->labels = esc_xcalloc(u->nlabels + 1, sizeof *u->labels);
    u->labelp = esc_xcalloc(u->nlabels + 1, sizeof *u->labelp);
    u->ops = esc_xcalloc(b->n, sizeof *u->ops);
    u->opp = esc_xcalloc(b->n, sizeof *u->opp);
    u->targets = esc_xcalloc(b->n, sizeof *u->targets);
    u->amounts = esc_xcalloc(u->namounts + 1, sizeof *u->amounts);
    u->amountp = esc_xcalloc(u->namounts + 1, sizeof *u->amountp);
    size_t next_amount = 0;
    for (size_t i = 0; i < b->n; i++) {
        const batch_op *op = &b->ops[i];
        Escher__ResourceOp *p = &u->ops[i];
        escher__resource_op__init(p);
        p->kind = op->kind;
        p->name = op->name;
        p->namespace_ = op->ns ? op->ns : c->namespace_;
        p->value = op->value;
        p->unbounded = op->unbounded;
        fill_target(u, &op->target, &u->targets[i], &next_amount);
        p->target = &u->targets[i];
        p->n_backing = op->nbacking;
        p->backing = op->nbacking ? &u->amountp[next_amount] : NULL;
        for (size_t k = 0; k < op->nbacking; k++)
            fill_amount(u, &op->backing[k], next_amount++);
        u->opp[i] = p;
    }
    escher__update_resources_request__init(&u->req);
    u->req.job_id = c->job_id;
    u->req.local_node_id = c->node_id;
    u->req.detached = c->detached;
    u->req.n_ops = b->n;
    u->req.ops = u->opp;
}

static void free_update(update_msg *u)
{
    free(u->labelp);
    free(u->labels);
    free(u->amountp);
    free(u->amounts);
    free(u->targets);
    free(u->opp);
    free(u->ops);
}

/* ------------------------------------------------------------------ commit */

int esc_batch_commit(esc_client *c, esc_batch *b, uint64_t *seq, esc_status *st)
{
    if (b->n == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "empty batch");
    for (size_t i = 0; i < b->n; i++) {
        int rc = check_op(c, &b->ops[i], false, st);
        if (rc != ESC_OK)
            return rc;
    }
    update_msg u;
    build_update(c, b, &u);
    ProtobufCMessage *m;
    /* Not idempotent: an add that reached the GCS must not be applied twice. */
    int rc = esc_client_call(c, &ESC_M_GCS_UPDATE_RESOURCES, &u.req.base, &m, 0, st);
    free_update(&u);
    if (rc != ESC_OK)
        return rc;
    if (seq)
        *seq = ((Escher__UpdateResourcesReply *)m)->seq;
    protobuf_c_message_free_unpacked(m, NULL);
    return ESC_OK;
}

/* Commits a batch of one operation (ns NULL: the client's namespace). */
static int commit_one(esc_client *c, Escher__OpKind kind, const char *ns, const char *name,
                      int64_t value, bool unbounded, const esc_target *target, uint64_t *seq,
                      esc_status *st)
{
    esc_batch b = {0};
    batch_push(&b, kind, ns, name, value, unbounded, target);
    int rc = esc_batch_commit(c, &b, seq, st);
    batch_op_free(&b.ops[0]);
    free(b.ops);
    return rc;
}

int esc_resource_set(esc_client *c, const char *name, int64_t qty, const esc_target *target,
                     uint64_t *seq, esc_status *st)
{
    return commit_one(c, ESCHER__OP_KIND__OP_SET, NULL, name, qty, false, target, seq, st);
}

int esc_resource_set_ns(esc_client *c, const char *ns, const char *name, int64_t qty,
                        const esc_target *target, uint64_t *seq, esc_status *st)
{
    return commit_one(c, ESCHER__OP_KIND__OP_SET, ns, name, qty, false, target, seq, st);
}

int esc_resource_set_backed(esc_client *c, const char *name, int64_t qty,
                            const esc_amount *backing, size_t nbacking,
                            const esc_target *target, uint64_t *seq, esc_status *st)
{
    esc_batch *b = esc_batch_new();
    esc_batch_set_backed(b, name, qty, backing, nbacking, target);
    int rc = esc_batch_commit(c, b, seq, st);
    esc_batch_free(b);
    return rc;
}

int esc_resource_set_unbounded(esc_client *c, const char *name, const esc_target *target,
                               uint64_t *seq, esc_status *st)
{
    return commit_one(c, ESCHER__OP_KIND__OP_SET, NULL, name, 0, true, target, seq, st);
}

int esc_resource_add(esc_client *c, const char *name, int64_t delta, const esc_target *target,
                     uint64_t *seq, esc_status *st)
{
    return commit_one(c, ESCHER__OP_KIND__OP_ADD, NULL, name, delta, false, target, seq, st);
}

int esc_resource_delete(esc_client *c, const char *name, const esc_target *target,
                        uint64_t *seq, esc_status *st)
{
    return commit_one(c, ESCHER__OP_KIND__OP_DELETE, NULL, name, 0, false, target, seq, st);
}

/* ------------------------------------------------------------------ wait_applied */

/* "a, b, c" of the pending nodes into a status message. */
static int not_applied(esc_status *st, uint64_t seq, int timeout_ms,
                       const Escher__WaitAppliedReply *r)
{
    char list[160] = "";
    size_t used = 0;
    for (size_t i = 0; i < r->n_pending && used < sizeof list; i++) {
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", r->pending[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return esc_status_set(st, ESC_DEADLINE_EXCEEDED,
                          "seq %" PRIu64 " not applied after %d ms on %zu node(s): %s", seq,
                          timeout_ms, r->n_pending, list);
}

/* Slack over the server-side wait, so the server's answer (with the pending nodes)
 * normally arrives before the gRPC deadline cuts the call. */
#define WAIT_SLACK_MS 2000

int esc_wait_applied(esc_client *c, uint64_t seq, const char *const *node_ids, size_t n,
                     int timeout_ms, esc_status *st)
{
    if (timeout_ms <= 0)
        timeout_ms = c->timeout_ms;
    Escher__WaitAppliedRequest req = ESCHER__WAIT_APPLIED_REQUEST__INIT;
    req.seq = seq;
    req.n_node_ids = node_ids ? n : 0;
    req.node_ids = (char **)node_ids; /* only read while packing */
    req.timeout_ms = (uint32_t)timeout_ms;
    ProtobufCMessage *m;
    int rc = esc_rpc_call(c->gcs, &ESC_M_GCS_WAIT_APPLIED, &req.base, &m,
                          timeout_ms + WAIT_SLACK_MS, ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    const Escher__WaitAppliedReply *r = (const Escher__WaitAppliedReply *)m;
    rc = r->applied ? esc_status_set(st, ESC_OK, NULL) : not_applied(st, seq, timeout_ms, r);
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

/* ------------------------------------------------------------------ for tasks */

struct esc_update_msg {
    update_msg u;
};

esc_update_msg *esc_client_task_ops(const esc_client *c, const esc_batch *b,
                                    Escher__UpdateResourcesRequest **req, esc_status *st)
{
    if (b->n == 0) {
        esc_status_set(st, ESC_INVALID_ARGUMENT, "empty batch of task operations");
        return NULL;
    }
    /* A LOCAL target is the node the task will run on: the raylet resolves it. */
    for (size_t i = 0; i < b->n; i++)
        if (check_op(c, &b->ops[i], true, st) != ESC_OK)
            return NULL;
    esc_update_msg *m = esc_xcalloc(1, sizeof *m);
    build_update(c, b, &m->u);
    m->u.req.local_node_id = (char *)"";
    *req = &m->u.req;
    return m;
}

void esc_update_msg_free(esc_update_msg *m)
{
    if (m) {
        free_update(&m->u);
        free(m);
    }
}
