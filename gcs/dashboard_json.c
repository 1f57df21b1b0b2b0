/* dashboard_json.c: the GCS tables as the dashboard's JSON (dashboard.h). Each node's
 * rows are what its raylet last reported (the raylet is the authority on held, as for
 * GetClusterStatus); the registry adds owner and namespace. Quantities are numbers of
 * units (fixed point / ESC_QTY_SCALE), null when unbounded. */
#include "dashboard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "qty.h"

json_t *gcs_dash_qty(int64_t q, bool unbounded)
{
    return unbounded ? json_null() : json_real((double)q / (double)ESC_QTY_SCALE);
}

static const char *node_state(Escher__NodeState s)
{
    switch (s) {
    case ESCHER__NODE_STATE__NODE_ALIVE: return "alive";
    case ESCHER__NODE_STATE__NODE_DRAINING: return "draining";
    case ESCHER__NODE_STATE__NODE_DEAD: return "dead";
    default: return "unknown";
    }
}

static const char *job_state(Escher__JobState s)
{
    switch (s) {
    case ESCHER__JOB_STATE__JOB_RUNNING: return "running";
    case ESCHER__JOB_STATE__JOB_FINISHED: return "finished";
    case ESCHER__JOB_STATE__JOB_FAILED: return "failed";
    default: return "unknown";
    }
}

static json_t *amounts(Escher__Amount **a, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, a[i]->name, gcs_dash_qty(a[i]->value, a[i]->unbounded));
    return o;
}

/* One accounting row. Ephemeral names are full ("namespace/name"): physical ones have
 * no slash. */
static json_t *row_json(const char *name, int64_t total, int64_t held, bool unbounded)
{
    json_t *r = json_object();
    json_object_set_new(r, "name", json_string(name));
    json_object_set_new(r, "ephemeral", json_boolean(strchr(name, '/') != NULL));
    json_object_set_new(r, "total", gcs_dash_qty(total, unbounded));
    json_object_set_new(r, "held", gcs_dash_qty(held, false));
    json_object_set_new(r, "available", gcs_dash_qty(total - held, unbounded));
    json_object_set_new(r, "unbounded", json_boolean(unbounded));
    return r;
}

/* A node's rows: its last report, else (not reported yet) its physical resources. */
static json_t *node_rows(const gcs_node *n)
{
    json_t *rows = json_array();
    if (n->report) {
        for (size_t i = 0; i < n->report->n_resources; i++) {
            const Escher__ResourceState *s = n->report->resources[i];
            json_t *r = row_json(s->name, s->total, s->held, s->unbounded);
            json_object_set_new(r, "deleted", json_boolean(s->deleted));
            json_object_set_new(r, "pending", json_boolean(s->pending));
            json_array_append_new(rows, r);
        }
    } else if (gcs_node_alive(n)) {
        for (size_t i = 0; i < n->info->n_physical; i++) {
            const Escher__Amount *a = n->info->physical[i];
            json_array_append_new(rows, row_json(a->name, a->value, 0, a->unbounded));
        }
    }
    return rows;
}

static json_t *demand_rows(const gcs_node *n, const char *node_id)
{
    json_t *out = json_array();
    for (size_t i = 0; n->demand && i < n->demand->n_demand; i++) {
        const Escher__Demand *d = n->demand->demand[i];
        json_t *missing = json_array();
        for (size_t m = 0; m < d->n_missing; m++)
            json_array_append_new(missing, json_string(d->missing[m]));
        json_array_append_new(out, json_pack("{s:s, s:o, s:I, s:b, s:o}", "node_id", node_id,
                                             "shape", amounts(d->shape, d->n_shape), "count",
                                             (json_int_t)d->count, "infeasible",
                                             (int)d->infeasible, "missing", missing));
    }
    return out;
}

json_t *gcs_dash_nodes(gcs *g)
{
    json_t *out = json_array();
    size_t pos = 0;
    const char *id;
    void *v;
    uint64_t now = esc_now_ms();
    while (esc_strmap_next(g->nodes, &pos, &id, &v)) {
        const gcs_node *n = v;
        json_t *labels = json_object();
        for (size_t i = 0; i < n->info->n_labels; i++)
            json_object_set_new(labels, n->info->labels[i]->key,
                                json_string(n->info->labels[i]->value));
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:I}", "node_id", id, "address",
                              n->info->address, "hostname", n->info->hostname, "state",
                              node_state(n->info->state), "labels", labels, "applied_seq",
                              (json_int_t)n->applied_seq, "last_seen_ms_ago",
                              (json_int_t)(now > n->last_seen_ms ? now - n->last_seen_ms : 0));
        json_object_set_new(o, "resources", node_rows(n));
        json_object_set_new(o, "demand", demand_rows(n, id));
        json_array_append_new(out, o);
    }
    return out;
}

/* Adds a row to the totals: unbounded is sticky (a sum with an unbounded part is). */
static void add_total(json_t *totals, const char *name, int64_t total, int64_t held,
                      bool unbounded)
{
    json_t *t = json_object_get(totals, name);
    if (!t) {
        t = json_object();
        json_object_set_new(t, "total", json_real(0));
        json_object_set_new(t, "held", json_real(0));
        json_object_set_new(t, "unbounded", json_false());
        json_object_set_new(t, "nodes", json_integer(0));
        json_object_set_new(totals, name, t);
    }
    double q = (double)ESC_QTY_SCALE;
    json_real_set(json_object_get(t, "total"),
                  json_real_value(json_object_get(t, "total")) + (unbounded ? 0 : total / q));
    json_real_set(json_object_get(t, "held"), json_real_value(json_object_get(t, "held")) + held / q);
    json_integer_set(json_object_get(t, "nodes"),
                     json_integer_value(json_object_get(t, "nodes")) + 1);
    if (unbounded)
        json_object_set_new(t, "unbounded", json_true());
}

json_t *gcs_dash_totals(gcs *g)
{
    json_t *totals = json_object();
    size_t pos = 0;
    const char *id;
    void *v;
    while (esc_strmap_next(g->nodes, &pos, &id, &v)) {
        const gcs_node *n = v;
        if (!gcs_node_alive(n))
            continue;
        if (n->report) {
            for (size_t i = 0; i < n->report->n_resources; i++) {
                const Escher__ResourceState *s = n->report->resources[i];
                if (!s->deleted)
                    add_total(totals, s->name, s->total, s->held, s->unbounded);
            }
        } else {
            for (size_t i = 0; i < n->info->n_physical; i++)
                add_total(totals, n->info->physical[i]->name, n->info->physical[i]->value, 0,
                          n->info->physical[i]->unbounded);
        }
    }
    /* available = total - held, and null where unbounded. */
    const char *name;
    json_t *t;
    json_object_foreach(totals, name, t) {
        bool unb = json_is_true(json_object_get(t, "unbounded"));
        double total = json_real_value(json_object_get(t, "total"));
        double held = json_real_value(json_object_get(t, "held"));
        json_object_set_new(t, "available", unb ? json_null() : json_real(total - held));
        if (unb)
            json_object_set_new(t, "total", json_null());
    }
    return totals;
}

json_t *gcs_dash_demand(gcs *g)
{
    json_t *out = json_array();
    size_t pos = 0;
    const char *id;
    void *v;
    while (esc_strmap_next(g->nodes, &pos, &id, &v)) {
        const gcs_node *n = v;
        if (!gcs_node_alive(n))
            continue;
        json_t *rows = demand_rows(n, id);
        json_array_extend(out, rows);
        json_decref(rows);
    }
    return out;
}

/* The node's accounting row for name, or NULL. */
static const Escher__ResourceState *reported_row(const gcs_node *n, const char *name)
{
    for (size_t i = 0; n && n->report && i < n->report->n_resources; i++)
        if (!strcmp(n->report->resources[i]->name, name))
            return n->report->resources[i];
    return NULL;
}

static json_t *history_json(const gcs *g, const char *key)
{
    json_t *out = json_array();
    const gcs_dash_history *h = gcs_dashboard_history(g, key);
    for (size_t i = 0; h && i < h->len; i++) {
        size_t k = (h->start + i) % GCS_DASH_HISTORY;
        json_array_append_new(out, json_pack("{s:I, s:I, s:o}", "t_ms", (json_int_t)h->t_ms[k],
                                             "seq", (json_int_t)h->seq[k], "total",
                                             gcs_dash_qty(h->value[k], h->unbounded[k])));
    }
    return out;
}

json_t *gcs_dash_resources(gcs *g)
{
    json_t *out = json_array();
    size_t pos = 0;
    const char *key;
    void *v;
    while (esc_strmap_next(g->registry, &pos, &key, &v)) {
        const Escher__RegistryEntry *e = v;
        const Escher__ResourceState *s = reported_row(gcs_node_find(g, e->node_id), e->name);
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:b}", "node_id", e->node_id, "name",
                              e->name, "namespace", e->namespace_, "owner_job", e->owner_job,
                              "total", gcs_dash_qty(e->total, e->unbounded), "unbounded",
                              (int)e->unbounded);
        /* held and available as the node last reported them (null before it did). */
        json_object_set_new(o, "held", s ? gcs_dash_qty(s->held, false) : json_null());
        json_object_set_new(o, "available",
                            s ? gcs_dash_qty(e->total - s->held, e->unbounded) : json_null());
        json_object_set_new(o, "backing", amounts(e->backing, e->n_backing));
        json_object_set_new(o, "history", history_json(g, key));
        json_array_append_new(out, o);
    }
    return out;
}

json_t *gcs_dash_jobs(gcs *g)
{
    json_t *out = json_array();
    size_t pos = 0;
    const char *id;
    void *v;
    while (esc_strmap_next(g->jobs, &pos, &id, &v)) {
        const Escher__JobInfo *j = ((const gcs_job *)v)->info;
        json_array_append_new(
            out, json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:s}", "job_id", id, "namespace",
                           j->namespace_, "state", job_state(j->state), "entrypoint",
                           j->entrypoint, "start_ms", (json_int_t)j->start_ms, "end_ms",
                           (json_int_t)j->end_ms, "driver_pid", (json_int_t)j->driver_pid,
                           "pending_node", j->pending_node));
    }
    return out;
}

/* ------------------------------------------------------------------ events */

/* "EV_NODE_ADDED" -> "node_added". */
static json_t *kind_name(Escher__EventKind k)
{
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(
        &escher__event_kind__descriptor, (int)k);
    char buf[64];
    snprintf(buf, sizeof buf, "%s", ev ? ev->name : "EV_UNKNOWN");
    for (char *p = buf; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return json_string(strncmp(buf, "ev_", 3) ? buf : buf + 3);
}

static json_t *ops_json(const Escher__Event *ev)
{
    static const char *const names[] = {"set", "add", "delete"};
    json_t *ops = json_array();
    for (size_t i = 0; i < ev->n_ops; i++) {
        const Escher__LogOp *op = ev->ops[i];
        json_array_append_new(
            ops, json_pack("{s:s, s:s, s:s, s:o}", "op",
                           (unsigned)op->kind < 3 ? names[op->kind] : "unknown", "node_id",
                           op->node_id, "name", op->name, "value",
                           gcs_dash_qty(op->value, op->unbounded)));
    }
    return ops;
}

json_t *gcs_dash_event(const Escher__Event *ev, uint64_t wall_ms)
{
    json_t *o = json_pack("{s:I, s:o, s:I}", "seq", (json_int_t)ev->seq, "kind",
                          kind_name(ev->kind), "t_ms", (json_int_t)wall_ms);
    if (ev->n_ops)
        json_object_set_new(o, "ops", ops_json(ev));
    if (ev->node)
        json_object_set_new(o, "node", json_pack("{s:s, s:s, s:s}", "node_id",
                                                 ev->node->node_id, "address",
                                                 ev->node->address, "state",
                                                 node_state(ev->node->state)));
    if (ev->job_id && *ev->job_id)
        json_object_set_new(o, "job_id", json_string(ev->job_id));
    json_t *jobs = json_array();
    for (size_t i = 0; i < ev->n_jobs; i++) /* never the credential hash */
        json_array_append_new(jobs, json_pack("{s:s, s:s}", "job_id", ev->jobs[i]->job_id,
                                              "state", job_state(ev->jobs[i]->state)));
    json_object_set_new(o, "jobs", jobs);
    json_t *kvs = json_array();
    for (size_t i = 0; i < ev->n_kvs; i++) /* names only: values stay in the KV table */
        json_array_append_new(kvs, json_pack("{s:s, s:s, s:b}", "ns", ev->kvs[i]->ns, "key",
                                             ev->kvs[i]->key, "deleted",
                                             (int)ev->kvs[i]->deleted));
    json_object_set_new(o, "kvs", kvs);
    json_t *loads = json_array();
    for (size_t i = 0; i < ev->n_loads; i++)
        json_array_append_new(loads, json_string(ev->loads[i]->node_id));
    json_object_set_new(o, "load_nodes", loads);
    return o;
}
