/* events.c: esc_subscribe, the cluster's events for an application (escher.h).
 *
 * A watch is its own Subscribe stream (SubscribeRequest.watch) on its own thread
 * (runtime/subscription.c), which calls the application back in log order. The GCS sends
 * resource entries as operations (set, add a delta, delete); a watch keeps the totals of
 * the rows it follows, per node and name, so each event says what the row is after it:
 * it starts from a snapshot of those rows and, after a reconnect, resumes from the last
 * sequence it received (or from a new snapshot when the GCS no longer holds what it
 * missed: the application sees ESC_EVENT_RESET, then the rows again). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "escher/escher.h"
#include "strmap.h"
#include "subscription.h"
#include "xalloc.h"

typedef struct {
    int64_t total;
    bool unbounded;
} row;

struct esc_watch {
    esc_event_fn fn;
    void *ud;
    esc_strmap *rows; /* "node|name" -> row: only the subscription thread touches it */
    esc_subscription *sub;
};

static void rows_clear(esc_strmap *rows)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(rows, &pos, &k, &v))
        free(v);
    esc_strmap_free(rows);
}

static row *row_at(esc_watch *w, const char *node, const char *name, bool make)
{
    char key[400];
    snprintf(key, sizeof key, "%s|%s", node, name);
    row *r = esc_strmap_get(w->rows, key);
    if (!r && make) {
        r = esc_xcalloc(1, sizeof *r);
        esc_strmap_put(w->rows, key, r);
    }
    return r;
}

static void row_del(esc_watch *w, const char *node, const char *name)
{
    char key[400];
    snprintf(key, sizeof key, "%s|%s", node, name);
    free(esc_strmap_del(w->rows, key));
}

static void on_kv(esc_watch *w, uint64_t seq, const Escher__KvEntry *kv)
{
    esc_event e = {.kind = ESC_EVENT_KV, .seq = seq, .kv_ns = kv->ns, .key = kv->key,
                   .deleted = kv->deleted, .value_len = (size_t)kv->value_len,
                   .value_omitted = kv->value_omitted};
    if (!kv->deleted && !kv->value_omitted)
        e.value = kv->value.data ? (const void *)kv->value.data : (const void *)"";
    w->fn(w->ud, &e);
}

/* The node's demand, borrowing the message's strings. */
static void on_demand(esc_watch *w, uint64_t seq, const Escher__NodeLoad *l)
{
    esc_demand *d = esc_xcalloc(l->n_demand + 1, sizeof *d);
    for (size_t i = 0; i < l->n_demand; i++) {
        const Escher__Demand *m = l->demand[i];
        d[i].nshape = m->n_shape;
        d[i].shape = esc_xcalloc(m->n_shape + 1, sizeof *d[i].shape);
        for (size_t k = 0; k < m->n_shape; k++)
            d[i].shape[k] = (esc_amount){m->shape[k]->name, m->shape[k]->value, false};
        d[i].count = m->count;
        d[i].infeasible = m->infeasible;
        d[i].missing = m->missing;
        d[i].nmissing = m->n_missing;
    }
    esc_event e = {.kind = ESC_EVENT_DEMAND, .seq = seq, .node_id = l->node_id, .demand = d,
                   .ndemand = l->n_demand};
    w->fn(w->ud, &e);
    for (size_t i = 0; i < l->n_demand; i++)
        free(d[i].shape);
    free(d);
}

static void on_loads(esc_watch *w, const Escher__Event *ev)
{
    for (size_t i = 0; i < ev->n_loads; i++) {
        if (ev->loads[i]->has_demand)
            on_demand(w, ev->seq, ev->loads[i]);
        for (size_t k = 0; k < ev->loads[i]->n_rows; k++) {
            const Escher__ResourceState *r = ev->loads[i]->rows[k];
            esc_event e = {.kind = ESC_EVENT_LOAD, .seq = ev->seq,
                           .node_id = ev->loads[i]->node_id, .name = r->name,
                           .total = r->total, .held = r->held, .unbounded = r->unbounded,
                           .deleted = r->deleted};
            w->fn(w->ud, &e);
        }
    }
}

/* A snapshot: the rows start again. */
static void on_snapshot(esc_watch *w, const Escher__Event *ev)
{
    rows_clear(w->rows);
    w->rows = esc_strmap_new();
    esc_event e = {.kind = ESC_EVENT_RESET, .seq = ev->seq};
    w->fn(w->ud, &e);
    for (size_t i = 0; i < ev->n_registry; i++) {
        const Escher__RegistryEntry *re = ev->registry[i];
        row *r = row_at(w, re->node_id, re->name, true);
        r->total = re->total;
        r->unbounded = re->unbounded;
        esc_event x = {.kind = ESC_EVENT_RESOURCE, .seq = ev->seq, .node_id = re->node_id,
                       .name = re->name, .total = r->total, .unbounded = r->unbounded};
        w->fn(w->ud, &x);
    }
    for (size_t i = 0; i < ev->n_kvs; i++)
        on_kv(w, ev->seq, ev->kvs[i]);
}

static void on_op(esc_watch *w, uint64_t seq, const Escher__LogOp *op)
{
    esc_event e = {.kind = ESC_EVENT_RESOURCE, .seq = seq, .node_id = op->node_id,
                   .name = op->name};
    if (op->kind == ESCHER__OP_KIND__OP_DELETE) {
        row_del(w, op->node_id, op->name);
        e.deleted = true;
    } else {
        row *r = row_at(w, op->node_id, op->name, true);
        r->total = op->kind == ESCHER__OP_KIND__OP_SET ? op->value : r->total + op->value;
        r->unbounded = op->kind == ESCHER__OP_KIND__OP_SET ? op->unbounded : r->unbounded;
        e.total = r->total;
        e.unbounded = r->unbounded;
    }
    w->fn(w->ud, &e);
}

static void on_node(esc_watch *w, const Escher__Event *ev)
{
    if (!ev->node)
        return;
    esc_event e = {.seq = ev->seq, .node_id = ev->node->node_id};
    if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_DEAD)
        e.kind = ESC_EVENT_NODE_DEAD;
    else if (ev->node->state == ESCHER__NODE_STATE__NODE_DRAINING)
        e.kind = ESC_EVENT_NODE_DRAINING;
    else
        e.kind = ESC_EVENT_NODE_ADDED;
    w->fn(w->ud, &e);
}

static void on_event(void *ud, Escher__Event *ev)
{
    esc_watch *w = ud;
    switch (ev->kind) {
    case ESCHER__EVENT_KIND__EV_SNAPSHOT:
        on_snapshot(w, ev);
        break;
    case ESCHER__EVENT_KIND__EV_RESOURCES:
        for (size_t i = 0; i < ev->n_ops; i++)
            on_op(w, ev->seq, ev->ops[i]);
        break;
    case ESCHER__EVENT_KIND__EV_NODE_ADDED:
    case ESCHER__EVENT_KIND__EV_NODE_DEAD:
        on_node(w, ev);
        break;
    case ESCHER__EVENT_KIND__EV_KV:
        for (size_t i = 0; i < ev->n_kvs; i++)
            on_kv(w, ev->seq, ev->kvs[i]);
        break;
    case ESCHER__EVENT_KIND__EV_NODE_LOAD:
        on_loads(w, ev);
        break;
    case ESCHER__EVENT_KIND__EV_JOB_FINISHED: {
        esc_event e = {.kind = ESC_EVENT_JOB_FINISHED, .seq = ev->seq, .job_id = ev->job_id};
        w->fn(w->ud, &e);
        break;
    }
    default:
        break;
    }
    protobuf_c_message_free_unpacked(&ev->base, NULL);
}

static int check_filter(const esc_watch_filter *f, esc_status *st)
{
    for (size_t i = 0; i < f->nresources; i++) {
        const char *p = f->resources[i];
        if (!p || !strchr(p, '/') || p[0] == '/')
            return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                  "esc_subscribe: prefix \"%s\" is not NAMESPACE/...",
                                  p ? p : "(null)");
    }
    for (size_t i = 0; i < f->nkv; i++)
        if (f->kv[i].ns && (!*f->kv[i].ns || strchr(f->kv[i].ns, '\n')))
            return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                  "esc_subscribe: key-value namespace \"%s\" is empty or "
                                  "has a newline", f->kv[i].ns);
    if ((f->nresources && !f->resources) || (f->nkv && !f->kv))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "esc_subscribe: a count without its array");
    return ESC_OK;
}

/* The Subscribe request's filter (borrowing f's strings and the blocks given). */
static void fill_request(esc_client *c, const esc_watch_filter *f,
                         Escher__SubscribeRequest *req, Escher__KvPrefix *kv,
                         Escher__KvPrefix **kvp)
{
    req->from_seq = f->from_seq;
    req->prefixes = (char **)f->resources;
    req->n_prefixes = f->nresources;
    req->loads = f->loads;
    for (size_t i = 0; i < f->nkv; i++) {
        escher__kv_prefix__init(&kv[i]);
        kv[i].ns = (char *)(f->kv[i].ns ? f->kv[i].ns : esc_client_namespace(c));
        kv[i].prefix = (char *)(f->kv[i].prefix ? f->kv[i].prefix : "");
        kvp[i] = &kv[i];
    }
    req->kv = kvp;
    req->n_kv = f->nkv;
}

int esc_subscribe(esc_client *c, const esc_watch_filter *filter, esc_event_fn fn, void *ud,
                  esc_watch **out, esc_status *st)
{
    if (out)
        *out = NULL;
    if (!c || !fn || !out)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "esc_subscribe: NULL client, callback or out");
    esc_watch_filter none = {0};
    const esc_watch_filter *f = filter ? filter : &none;
    int rc = check_filter(f, st);
    if (rc != ESC_OK)
        return rc;
    Escher__SubscribeRequest req = ESCHER__SUBSCRIBE_REQUEST__INIT;
    Escher__KvPrefix *kv = esc_xcalloc(f->nkv + 1, sizeof *kv);
    Escher__KvPrefix **kvp = esc_xcalloc(f->nkv + 1, sizeof *kvp);
    fill_request(c, f, &req, kv, kvp);
    esc_watch *w = esc_xcalloc(1, sizeof *w);
    w->fn = fn;
    w->ud = ud;
    w->rows = esc_strmap_new();
    w->sub = esc_subscription_watch(c->gcs, c->job_id, &req, on_event, w);
    free(kv);
    free(kvp);
    if (!w->sub) {
        rows_clear(w->rows);
        free(w);
        return esc_status_set(st, ESC_INTERNAL, "cannot start the watch's thread");
    }
    *out = w;
    return ESC_OK;
}

void esc_unsubscribe(esc_watch *w)
{
    if (!w)
        return;
    esc_subscription_stop(w->sub);
    rows_clear(w->rows);
    free(w);
}
