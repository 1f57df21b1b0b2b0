/* pubsub.c: Subscribe streams. A raylet subscribes with its node id and the last sequence
 * it applied; it gets the missed events from the ring, or a snapshot of the whole state
 * when they are gone (or the GCS restarted), then every node's current availability
 * (load.c: not replayed), then every new event in order. A driver subscribes with its
 * job id: that stream keeps its job alive, and carries node and job events (not resource
 * entries or availability, which drivers do not need). */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"

struct gcs_sub {
    gcs_sub *prev, *next;
    gcs *g;
    esc_rpc_ctx *call;
    char *node_id;
    char *job_id;
    bool watch;        /* an application's event stream (SubscribeRequest.watch) */
    char **prefixes;   /* watch: the resource names it follows */
    size_t nprefixes;
    char **kv;         /* watch: the key-value rows it follows, as "ns\nprefix" */
    size_t nkv;
    bool loads;        /* watch: availability too (SubscribeRequest.loads) */
};

static void sub_unlink(gcs *g, gcs_sub *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        g->subs = s->next;
    if (s->next)
        s->next->prev = s->prev;
}

static void sub_free(gcs_sub *s)
{
    for (size_t i = 0; i < s->nprefixes; i++)
        free(s->prefixes[i]);
    free(s->prefixes);
    for (size_t i = 0; i < s->nkv; i++)
        free(s->kv[i]);
    free(s->kv);
    free(s->node_id);
    free(s->job_id);
    free(s);
}

/* Drivers need neither resource entries nor availability, nor the jobs' rows (which
 * carry credential hashes and grants: the raylets' business). */
static bool wants(const gcs_sub *s, const Escher__Event *ev)
{
    return s->node_id || (ev->kind != ESCHER__EVENT_KIND__EV_RESOURCES &&
                          ev->kind != ESCHER__EVENT_KIND__EV_NODE_LOAD &&
                          ev->kind != ESCHER__EVENT_KIND__EV_JOB_UPDATED &&
                          ev->kind != ESCHER__EVENT_KIND__EV_KV);
}

/* The running jobs' rows, for a raylet's snapshot (NULL-terminated array, rows borrowed). */
static Escher__JobInfo **running_jobs(gcs *g, size_t *n)
{
    Escher__JobInfo **jobs = esc_xcalloc(esc_strmap_count(g->jobs) + 1, sizeof *jobs);
    size_t pos = 0, i = 0;
    const char *key;
    void *val;
    while (esc_strmap_next(g->jobs, &pos, &key, &val)) {
        Escher__JobInfo *info = ((gcs_job *)val)->info;
        if (info->state == ESCHER__JOB_STATE__JOB_RUNNING)
            jobs[i++] = info;
    }
    *n = i;
    return jobs;
}

static bool followed(const gcs_sub *s, const char *name)
{
    for (size_t i = 0; i < s->nprefixes; i++)
        if (!strncmp(name, s->prefixes[i], strlen(s->prefixes[i])))
            return true;
    return false;
}

/* Whether the watch follows key-value row ns/key (its filters are "ns\nprefix"). */
static bool kv_followed(const gcs_sub *s, const char *ns, const char *key)
{
    size_t nslen = strlen(ns);
    for (size_t i = 0; i < s->nkv; i++) {
        const char *f = s->kv[i];
        if (!strncmp(f, ns, nslen) && f[nslen] == '\n' &&
            !strncmp(key, f + nslen + 1, strlen(f + nslen + 1)))
            return true;
    }
    return false;
}

/* Physical resources (no namespace) and the names the watch follows. */
static bool load_row_followed(const gcs_sub *s, const char *name)
{
    return !strchr(name, '/') || followed(s, name);
}

/* The operations on followed names of a resource entry. */
static void send_watched_ops(gcs_sub *s, const Escher__Event *ev)
{
    Escher__Event part = *ev;
    part.ops = esc_xcalloc(ev->n_ops + 1, sizeof *part.ops);
    part.n_ops = 0;
    for (size_t i = 0; i < ev->n_ops; i++)
        if (followed(s, ev->ops[i]->name))
            part.ops[part.n_ops++] = ev->ops[i];
    if (part.n_ops)
        esc_rpc_send(s->call, &part.base);
    free(part.ops);
}

static bool kv_followed_key(void *ud, const char *ns, const char *key)
{
    return kv_followed(ud, ns, key);
}

static void send_watched_kv(gcs_sub *s, const Escher__Event *ev)
{
    for (size_t i = 0; i < ev->n_kvs; i++)
        if (kv_followed(s, ev->kvs[i]->ns, ev->kvs[i]->key)) {
            esc_rpc_send(s->call, &ev->base);
            return;
        }
}

/* Each node's followed availability rows; nodes left with none are left out. */
static void send_watched_loads(gcs_sub *s, const Escher__Event *ev)
{
    Escher__Event part = *ev;
    Escher__NodeLoad *block = esc_xcalloc(ev->n_loads + 1, sizeof *block);
    part.loads = esc_xcalloc(ev->n_loads + 1, sizeof *part.loads);
    part.n_loads = 0;
    for (size_t i = 0; i < ev->n_loads; i++) {
        const Escher__NodeLoad *l = ev->loads[i];
        Escher__NodeLoad *out = &block[part.n_loads];
        *out = *l;
        out->rows = esc_xcalloc(l->n_rows + 1, sizeof *out->rows);
        out->n_rows = 0;
        for (size_t k = 0; k < l->n_rows; k++)
            if (load_row_followed(s, l->rows[k]->name))
                out->rows[out->n_rows++] = l->rows[k];
        if (out->n_rows || l->full || l->has_demand)
            part.loads[part.n_loads++] = out;
        else
            free(out->rows);
    }
    if (part.n_loads)
        esc_rpc_send(s->call, &part.base);
    for (size_t i = 0; i < part.n_loads; i++)
        free(part.loads[i]->rows);
    free(part.loads);
    free(block);
}

/* A watcher gets node and job-end events whole, of a resource entry only the operations
 * on names it follows, key-value changes of the rows it follows, and availability when
 * it asked for it. */
static void send_watched(gcs_sub *s, const Escher__Event *ev)
{
    switch (ev->kind) {
    case ESCHER__EVENT_KIND__EV_RESOURCES:
        send_watched_ops(s, ev);
        break;
    case ESCHER__EVENT_KIND__EV_KV:
        send_watched_kv(s, ev);
        break;
    case ESCHER__EVENT_KIND__EV_NODE_LOAD:
        if (s->loads)
            send_watched_loads(s, ev);
        break;
    case ESCHER__EVENT_KIND__EV_JOB_UPDATED:
    case ESCHER__EVENT_KIND__EV_SNAPSHOT:
        break;
    default:
        esc_rpc_send(s->call, &ev->base);
    }
}

/* A raylet keeps no key-value table, but its applied seq must move past the entry. */
static void send_kv_seq(gcs_sub *s, const Escher__Event *ev)
{
    Escher__Event bare = ESCHER__EVENT__INIT;
    bare.kind = ev->kind;
    bare.seq = ev->seq;
    esc_rpc_send(s->call, &bare.base);
}

/* whole (may be NULL): where the event packed whole is kept for the next stream that
 * takes it whole, so that a broadcast packs it once, not once per raylet. */
static void send_to(gcs_sub *s, const Escher__Event *ev, esc_rpc_packed **whole)
{
    if (s->watch) {
        send_watched(s, ev);
    } else if (s->node_id && ev->kind == ESCHER__EVENT_KIND__EV_KV) {
        send_kv_seq(s, ev);
    } else if (wants(s, ev) && whole) {
        if (!*whole)
            *whole = esc_rpc_packed_new(&ev->base);
        esc_rpc_send_packed(s->call, *whole);
    } else if (wants(s, ev)) {
        esc_rpc_send(s->call, &ev->base);
    }
}

void gcs_broadcast(gcs *g, const Escher__Event *ev)
{
    gcs_dashboard_event(g, ev);
    gcs_metrics_event(g, ev);
    esc_rpc_packed *whole = NULL;
    for (gcs_sub *s = g->subs; s; s = s->next)
        send_to(s, ev, &whole);
    esc_rpc_packed_free(whole);
}

/* Sends the full state at g->seq: every node and every registry row, and to a raylet
 * every running job. */
static void send_snapshot(gcs *g, gcs_sub *s)
{
    Escher__Event ev = ESCHER__EVENT__INIT;
    ev.kind = ESCHER__EVENT_KIND__EV_SNAPSHOT;
    ev.seq = g->seq;
    ev.n_nodes = esc_strmap_count(g->nodes);
    ev.nodes = esc_xcalloc(ev.n_nodes + 1, sizeof *ev.nodes);
    size_t pos = 0, i = 0;
    const char *key;
    void *val;
    while (esc_strmap_next(g->nodes, &pos, &key, &val))
        ev.nodes[i++] = ((gcs_node *)val)->info;
    ev.registry = esc_xcalloc(esc_strmap_count(g->registry) + 1, sizeof *ev.registry);
    pos = i = 0;
    while (esc_strmap_next(g->registry, &pos, &key, &val))
        if (!s->watch || followed(s, ((Escher__RegistryEntry *)val)->name))
            ev.registry[i++] = val;
    ev.n_registry = i;
    if (s->node_id)
        ev.jobs = running_jobs(g, &ev.n_jobs);
    if (s->nkv)
        ev.kvs = gcs_kv_rows(g, kv_followed_key, s, &ev.n_kvs);
    esc_rpc_send(s->call, &ev.base);
    free(ev.nodes);
    free(ev.registry);
    free(ev.jobs);
    gcs_kv_rows_free(ev.kvs, ev.n_kvs);
}

/* Availability is not replayed (load.c): after the log, every node's current rows. */
static void send_loads(gcs *g, gcs_sub *s)
{
    Escher__Event *ev = gcs_load_full_event(g);
    if (ev->n_loads)
        send_to(s, ev, NULL);
    gcs_load_full_event_free(ev);
}

/* A raylet this GCS does not know, or one that registered in this GCS's life, may hold
 * sequence numbers of an earlier life (a GCS without storage restarted): it must start
 * from a snapshot. So must each node loaded from storage, once: the snapshot is how its
 * raylet learns that the directory is empty again. Others resume from the ring when it
 * still holds what they missed. */
static void catch_up(gcs *g, gcs_sub *s, uint64_t from)
{
    gcs_node *node = s->node_id ? gcs_node_find(g, s->node_id) : NULL;
    size_t first;
    bool resumable = s->watch || (node && !node->needs_snapshot);
    long n = from && resumable ? gcs_ring_since(g, from, &first) : -1;
    if (n < 0) {
        if (node)
            node->needs_snapshot = false;
        send_snapshot(g, s);
    } else {
        for (long k = 0; k < n; k++)
            send_to(s, gcs_ring_at(g, first + (size_t)k), NULL);
    }
    if (!s->watch || s->loads)
        send_loads(g, s);
}

static void on_cancel(esc_rpc_ctx *call, void *ud)
{
    gcs_sub *s = ud;
    gcs *g = s->g;
    sub_unlink(g, s);
    if (s->job_id && !s->watch)
        gcs_job_stream_closed(g, s->job_id);
    esc_rpc_finish(call, ESC_CANCELLED, "subscriber went away");
    sub_free(s);
}

/* A watch (SubscribeRequest.watch): its prefixes must be in namespaces the caller's job
 * may use (gcs_ns_access), like its resource writes; under a prefix grant, the part of
 * a prefix after the namespace must itself start with a granted prefix, so every name
 * the watch can see is one the grantee may touch. */
static int check_watch(gcs *g, const esc_rpc_ctx *call, const Escher__SubscribeRequest *req,
                       char *why, size_t len)
{
    if (req->node_id && *req->node_id) {
        snprintf(why, len, "a watch names no node");
        return ESC_INVALID_ARGUMENT;
    }
    gcs_job *caller = NULL;
    int rc = gcs_auth_caller(g, call, &caller, why, len);
    if (rc != ESC_OK)
        return rc;
    for (size_t i = 0; i < req->n_prefixes; i++) {
        const char *p = req->prefixes[i], *slash = strchr(p, '/');
        if (!slash || slash == p) {
            snprintf(why, len, "watch prefix \"%.80s\" is not NAMESPACE/...", p);
            return ESC_INVALID_ARGUMENT;
        }
        char ns[128];
        snprintf(ns, sizeof ns, "%.*s", (int)(slash - p), p);
        rc = gcs_ns_access(g, caller, ns, slash + 1, why, len);
        if (rc != ESC_OK)
            return rc;
    }
    for (size_t i = 0; i < req->n_kv; i++) {
        const char *ns = req->kv[i]->ns;
        if (!*ns || strchr(ns, '\n')) {
            snprintf(why, len, "watch key-value namespace \"%.80s\" is empty or has a newline",
                     ns);
            return ESC_INVALID_ARGUMENT;
        }
        rc = gcs_ns_access(g, caller, ns, req->kv[i]->prefix, why, len);
        if (rc != ESC_OK)
            return rc;
    }
    return ESC_OK;
}

static void start_watch(gcs *g, esc_rpc_ctx *call, const Escher__SubscribeRequest *req)
{
    char why[300];
    int rc = check_watch(g, call, req, why, sizeof why);
    if (rc != ESC_OK) {
        esc_rpc_finish(call, rc, why);
        return;
    }
    gcs_sub *s = esc_xcalloc(1, sizeof *s);
    s->g = g;
    s->call = call;
    s->watch = true;
    s->job_id = req->job_id && *req->job_id ? esc_xstrdup(req->job_id) : NULL;
    s->prefixes = esc_xcalloc(req->n_prefixes + 1, sizeof *s->prefixes);
    for (size_t i = 0; i < req->n_prefixes; i++)
        s->prefixes[s->nprefixes++] = esc_xstrdup(req->prefixes[i]);
    s->kv = esc_xcalloc(req->n_kv + 1, sizeof *s->kv);
    for (size_t i = 0; i < req->n_kv; i++) {
        size_t a = strlen(req->kv[i]->ns), b = strlen(req->kv[i]->prefix);
        char *f = esc_xmalloc(a + b + 2);
        memcpy(f, req->kv[i]->ns, a);
        f[a] = '\n';
        memcpy(f + a + 1, req->kv[i]->prefix, b + 1);
        s->kv[s->nkv++] = f;
    }
    s->loads = req->loads;
    s->next = g->subs;
    if (g->subs)
        g->subs->prev = s;
    g->subs = s;
    catch_up(g, s, req->from_seq);
    esc_rpc_ctx_on_cancel(call, on_cancel, s);
}

static void handle_subscribe(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__SubscribeRequest *req = (const Escher__SubscribeRequest *)msg;
    if (req->watch) {
        start_watch(g, call, req);
        return;
    }
    bool has_node = req->node_id && *req->node_id, has_job = req->job_id && *req->job_id;
    if (has_node == has_job) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "subscribe with exactly one of node_id, job_id");
        return;
    }
    if (has_job && !gcs_job_find(g, req->job_id)) {
        esc_rpc_finish(call, ESC_NOT_FOUND, "unknown job");
        return;
    }
    /* A job's stream keeps it alive: only the job itself holds one open. */
    if (has_job && !gcs_auth_is_job(call, gcs_job_find(g, req->job_id), NULL)) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED,
                       "only the job itself (its credential) subscribes as the job");
        return;
    }
    gcs_sub *s = esc_xcalloc(1, sizeof *s);
    s->g = g;
    s->call = call;
    s->node_id = has_node ? esc_xstrdup(req->node_id) : NULL;
    s->job_id = has_job ? esc_xstrdup(req->job_id) : NULL;
    s->next = g->subs;
    if (g->subs)
        g->subs->prev = s;
    g->subs = s;
    if (has_node)
        catch_up(g, s, req->from_seq);
    else
        gcs_job_stream_opened(g, s->job_id);
    esc_rpc_ctx_on_cancel(call, on_cancel, s);
}

static void send_stopping(const gcs *g, gcs_sub *s)
{
    Escher__Event ev = ESCHER__EVENT__INIT;
    ev.kind = ESCHER__EVENT_KIND__EV_CLUSTER_STOPPING;
    ev.seq = g->seq;
    ev.stop_all = g->stop_all;
    esc_rpc_send(s->call, &ev.base);
}

void gcs_pubsub_stopping(gcs *g)
{
    for (gcs_sub *s = g->subs; s; s = s->next)
        if (s->node_id)
            send_stopping(g, s);
}

size_t gcs_pubsub_raylets(const gcs *g)
{
    size_t n = 0;
    for (const gcs_sub *s = g->subs; s; s = s->next)
        n += s->node_id != NULL;
    return n;
}

void gcs_pubsub_close_all(gcs *g)
{
    while (g->subs) {
        gcs_sub *s = g->subs;
        sub_unlink(g, s);
        if (g->clean_stop && s->node_id)
            send_stopping(g, s);
        esc_rpc_finish(s->call, ESC_UNAVAILABLE,
                       g->stop_all ? "cluster stopping" : "gcs shutting down");
        sub_free(s);
    }
}

void gcs_pubsub_register(gcs *g)
{
    esc_rpc_server_handle(g->server, &ESC_M_GCS_SUBSCRIBE, handle_subscribe, g);
}
