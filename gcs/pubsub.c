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

struct gcs_sub {
    gcs_sub *prev, *next;
    gcs *g;
    esc_rpc_ctx *call;
    char *node_id;
    char *job_id;
    bool watch;        /* an application's event stream (SubscribeRequest.watch) */
    char **prefixes;   /* watch: the resource names it follows */
    size_t nprefixes;
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
                          ev->kind != ESCHER__EVENT_KIND__EV_JOB_UPDATED);
}

/* The running jobs' rows, for a raylet's snapshot (NULL-terminated array, rows borrowed). */
static Escher__JobInfo **running_jobs(gcs *g, size_t *n)
{
    Escher__JobInfo **jobs = calloc(esc_strmap_count(g->jobs) + 1, sizeof *jobs);
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

/* A watcher gets node and job-end events whole, and of a resource entry only the
 * operations on names it follows (nothing when none is). */
static void send_watched(gcs_sub *s, const Escher__Event *ev)
{
    if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_LOAD ||
        ev->kind == ESCHER__EVENT_KIND__EV_JOB_UPDATED ||
        ev->kind == ESCHER__EVENT_KIND__EV_SNAPSHOT)
        return;
    if (ev->kind != ESCHER__EVENT_KIND__EV_RESOURCES) {
        esc_rpc_send(s->call, &ev->base);
        return;
    }
    Escher__Event part = *ev;
    part.ops = calloc(ev->n_ops + 1, sizeof *part.ops);
    part.n_ops = 0;
    for (size_t i = 0; i < ev->n_ops; i++)
        if (followed(s, ev->ops[i]->name))
            part.ops[part.n_ops++] = ev->ops[i];
    if (part.n_ops)
        esc_rpc_send(s->call, &part.base);
    free(part.ops);
}

static void send_to(gcs_sub *s, const Escher__Event *ev)
{
    if (s->watch)
        send_watched(s, ev);
    else if (wants(s, ev))
        esc_rpc_send(s->call, &ev->base);
}

void gcs_broadcast(gcs *g, const Escher__Event *ev)
{
    for (gcs_sub *s = g->subs; s; s = s->next)
        send_to(s, ev);
}

/* Sends the full state at g->seq: every node and every registry row, and to a raylet
 * every running job. */
static void send_snapshot(gcs *g, gcs_sub *s)
{
    Escher__Event ev = ESCHER__EVENT__INIT;
    ev.kind = ESCHER__EVENT_KIND__EV_SNAPSHOT;
    ev.seq = g->seq;
    ev.n_nodes = esc_strmap_count(g->nodes);
    ev.nodes = calloc(ev.n_nodes + 1, sizeof *ev.nodes);
    size_t pos = 0, i = 0;
    const char *key;
    void *val;
    while (esc_strmap_next(g->nodes, &pos, &key, &val))
        ev.nodes[i++] = ((gcs_node *)val)->info;
    ev.registry = calloc(esc_strmap_count(g->registry) + 1, sizeof *ev.registry);
    pos = i = 0;
    while (esc_strmap_next(g->registry, &pos, &key, &val))
        if (!s->watch || followed(s, ((Escher__RegistryEntry *)val)->name))
            ev.registry[i++] = val;
    ev.n_registry = i;
    if (s->node_id)
        ev.jobs = running_jobs(g, &ev.n_jobs);
    esc_rpc_send(s->call, &ev.base);
    free(ev.nodes);
    free(ev.registry);
    free(ev.jobs);
}

/* Availability is not replayed (load.c): after the log, every node's current rows. */
static void send_loads(gcs *g, gcs_sub *s)
{
    Escher__Event *ev = gcs_load_full_event(g);
    if (ev->n_loads)
        esc_rpc_send(s->call, &ev->base);
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
            send_to(s, gcs_ring_at(g, first + (size_t)k));
    }
    if (!s->watch)
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
 * may use (gcs_ns_access), like its resource writes. */
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
        rc = gcs_ns_access(g, caller, ns, why, len);
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
    gcs_sub *s = calloc(1, sizeof *s);
    s->g = g;
    s->call = call;
    s->watch = true;
    s->job_id = req->job_id && *req->job_id ? strdup(req->job_id) : NULL;
    s->prefixes = calloc(req->n_prefixes + 1, sizeof *s->prefixes);
    for (size_t i = 0; i < req->n_prefixes; i++)
        s->prefixes[s->nprefixes++] = strdup(req->prefixes[i]);
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
    gcs_sub *s = calloc(1, sizeof *s);
    s->g = g;
    s->call = call;
    s->node_id = has_node ? strdup(req->node_id) : NULL;
    s->job_id = has_job ? strdup(req->job_id) : NULL;
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

void gcs_pubsub_close_all(gcs *g)
{
    while (g->subs) {
        gcs_sub *s = g->subs;
        sub_unlink(g, s);
        esc_rpc_finish(s->call, ESC_UNAVAILABLE, "gcs shutting down");
        sub_free(s);
    }
}

void gcs_pubsub_register(gcs *g)
{
    esc_rpc_server_handle(g->server, &escher__gcs__descriptor, "Subscribe", handle_subscribe, g);
}
