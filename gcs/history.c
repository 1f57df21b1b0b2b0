/* history.c: the event history (docs/observability.md, "Event history: escher events").
 *
 * A bounded table of what happened in the cluster: nodes joining, draining and dying,
 * jobs starting and ending, every resource change, tasks failing and retrying. It is
 * its own table (GCS_T_HISTORY) of small rows, not the log's events kept longer: log
 * events carry what raylets need to apply them (whole KV values, job rows, snapshots)
 * and not what a reader of the history wants (the writer, the job's end state, wall
 * time), and task failures and drains are no log entries at all.
 *
 * Rows ride on the commits that make the change: a call site stages its row
 * (gcs_history_stage) just before gcs_commit / gcs_write, which put it, and the delete
 * of the row that falls off the bound, into the same storage batch: a row is durable
 * exactly when its change is, and costs no extra round trip. Task events come from the
 * raylets' reports and are written in an internal write of their own, bounded (a storm
 * of failures is counted as dropped, never queued without limit). */
#include "gcs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "names.h"
#include "pbutil.h"
#include "utf8.h"
#include "xalloc.h"

#define HISTORY_MAX_OPS 16        /* ops kept per row; ops_total says how many there were */
#define TASK_QUEUE_MAX 1024       /* task rows waiting for their write; more are dropped */
#define TASK_EVENTS_PER_REPORT 64 /* task events taken from one report; more are dropped */
#define LIST_MAX 1000             /* rows per ListEvents answer */
#define ENTRYPOINT_MAX 256
#define ERROR_MAX 512

typedef Escher__HistoryEvent hrow;

typedef struct {
    hrow **v;
    size_t n, cap;
} hrow_vec;

struct gcs_history {
    hrow **ring;          /* the newest rows, oldest first from head; owned */
    size_t cap, head, len;
    uint64_t last_id;     /* the newest id committed */
    hrow_vec staged;      /* for the next commit (this loop turn) */
    hrow_vec flight;      /* in the batch on its way to storage */
    hrow_vec tasks;       /* task rows waiting for their write */
    bool task_write_queued;
    uint64_t dropped;     /* task events dropped and not yet recorded */
};

static void vec_push(hrow_vec *v, hrow *r)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 16;
        v->v = esc_xrealloc(v->v, v->cap * sizeof *v->v);
    }
    v->v[v->n++] = r;
}

static void vec_clear(hrow_vec *v)
{
    for (size_t i = 0; i < v->n; i++)
        protobuf_c_message_free_unpacked(&v->v[i]->base, NULL);
    v->n = 0;
}

static void vec_free(hrow_vec *v)
{
    vec_clear(v);
    free(v->v);
    *v = (hrow_vec){0};
}

static char *dup_cut(const char *s, size_t max)
{
    return esc_xstrndup(s ? s : "", esc_utf8_prefix(s ? s : "", max));
}

hrow *gcs_history_row(Escher__HistoryKind kind)
{
    hrow *r = esc_xcalloc(1, sizeof *r);
    escher__history_event__init(r);
    r->kind = kind;
    r->node_id = esc_xstrdup("");
    r->job_id = esc_xstrdup("");
    r->namespace_ = esc_xstrdup("");
    r->address = esc_xstrdup("");
    r->hostname = esc_xstrdup("");
    r->entrypoint = esc_xstrdup("");
    r->task_id = esc_xstrdup("");
    r->task_name = esc_xstrdup("");
    r->error = esc_xstrdup("");
    return r;
}

static void set_str(char **field, const char *v, size_t max)
{
    free(*field);
    *field = dup_cut(v, max);
}

void gcs_history_set(hrow *r, const char *node_id, const char *job_id, const char *ns)
{
    if (node_id)
        set_str(&r->node_id, node_id, 128);
    if (job_id)
        set_str(&r->job_id, job_id, 128);
    if (ns)
        set_str(&r->namespace_, ns, 256);
}

void gcs_history_set_entrypoint(hrow *r, const char *entrypoint)
{
    set_str(&r->entrypoint, entrypoint, ENTRYPOINT_MAX);
}

void gcs_history_stage_node(gcs *g, Escher__HistoryKind kind, const Escher__NodeInfo *n)
{
    hrow *r = gcs_history_row(kind);
    gcs_history_set(r, n->node_id, NULL, NULL);
    set_str(&r->address, n->address, 256);
    set_str(&r->hostname, n->hostname, 256);
    gcs_history_stage(g, r);
}

void gcs_history_stage_job(gcs *g, Escher__HistoryKind kind, const Escher__JobInfo *j)
{
    hrow *r = gcs_history_row(kind);
    gcs_history_set(r, NULL, j->job_id, j->namespace_);
    set_str(&r->entrypoint, j->entrypoint, ENTRYPOINT_MAX);
    r->job_state = j->state;
    gcs_history_stage(g, r);
}

/* ------------------------------------------------------------ the ring */

static size_t bound(const gcs *g)
{
    return (size_t)g->cfg.event_history;
}

static void ring_push(gcs *g, hrow *r)
{
    gcs_history *h = g->history;
    if (h->len == h->cap) {
        protobuf_c_message_free_unpacked(&h->ring[h->head]->base, NULL);
        h->ring[h->head] = r;
        h->head = (h->head + 1) % h->cap;
        return;
    }
    h->ring[(h->head + h->len) % h->cap] = r;
    h->len++;
}

static hrow *ring_at(const gcs_history *h, size_t i)
{
    return h->ring[(h->head + i) % h->cap];
}

void gcs_history_init(gcs *g)
{
    gcs_history *h = esc_xcalloc(1, sizeof *h);
    h->cap = bound(g);
    h->ring = esc_xcalloc(h->cap, sizeof *h->ring);
    g->history = h;
}

void gcs_history_free(gcs *g)
{
    gcs_history *h = g->history;
    if (!h)
        return;
    for (size_t i = 0; i < h->len; i++)
        protobuf_c_message_free_unpacked(&ring_at(h, i)->base, NULL);
    free(h->ring);
    vec_free(&h->staged);
    vec_free(&h->flight);
    vec_free(&h->tasks);
    free(h);
    g->history = NULL;
}

/* ------------------------------------------------------------ commits */

static void row_key(uint64_t id, char out[24])
{
    /* Zero-padded so that keys sort as numbers do (redis-cli HKEYS, debugging). */
    snprintf(out, 24, "%020" PRIu64, id);
}

void gcs_history_stage(gcs *g, hrow *r)
{
    vec_push(&g->history->staged, r);
}

/* Copies at most HISTORY_MAX_OPS of the commit's ops into r. */
static void take_ops(hrow *r, const Escher__Event *ev)
{
    r->ops_total = (uint32_t)ev->n_ops;
    size_t n = ev->n_ops < HISTORY_MAX_OPS ? ev->n_ops : HISTORY_MAX_OPS;
    if (!n)
        return;
    r->ops = esc_xcalloc(n, sizeof *r->ops);
    for (size_t i = 0; i < n; i++)
        r->ops[i] = (Escher__LogOp *)esc_pb_dup(&ev->ops[i]->base);
    r->n_ops = n;
}

static bool kind_has_ops(Escher__HistoryKind k)
{
    return k == ESCHER__HISTORY_KIND__H_RESOURCES || k == ESCHER__HISTORY_KIND__H_NODE_DEAD ||
           k == ESCHER__HISTORY_KIND__H_JOB_ENDED;
}

void gcs_history_flush(gcs *g, esc_storage_batch *b, uint64_t seq, const Escher__Event *ev)
{
    gcs_history *h = g->history;
    vec_clear(&h->flight); /* nothing should be left: each commit ends before the next */
    uint64_t now = esc_wall_ms();
    for (size_t i = 0; i < h->staged.n; i++) {
        hrow *r = h->staged.v[i];
        r->id = h->last_id + 1 + i;
        r->seq = seq;
        if (!r->time_ms)
            r->time_ms = now;
        if (ev && kind_has_ops(r->kind))
            take_ops(r, ev);
        char key[24];
        row_key(r->id, key);
        gcs_put_msg(b, GCS_T_HISTORY, key, &r->base);
        if (r->id > bound(g)) {
            row_key(r->id - bound(g), key);
            esc_storage_del(b, GCS_T_HISTORY, key);
        }
        vec_push(&h->flight, r);
    }
    h->staged.n = 0;
}

void gcs_history_landed(gcs *g, bool ok)
{
    gcs_history *h = g->history;
    if (!ok) {
        vec_clear(&h->flight);
        return;
    }
    for (size_t i = 0; i < h->flight.n; i++) {
        h->last_id = h->flight.v[i]->id;
        ring_push(g, h->flight.v[i]);
    }
    h->flight.n = 0;
}

/* ------------------------------------------------------------ task events */

static void task_rows_done(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)seq;
    size_t n = (size_t)(uintptr_t)ud;
    if (err) {
        ESC_WARN("%zu task event(s) of the history were not stored: %s", n, err);
        g->history->dropped += n;
    }
}

/* The queued write's turn: every task row waiting, and a row counting the dropped. */
static void task_write_run(gcs *g, void *ud)
{
    (void)ud;
    gcs_history *h = g->history;
    h->task_write_queued = false;
    if (h->dropped) {
        hrow *r = gcs_history_row(ESCHER__HISTORY_KIND__H_TASK_EVENTS_DROPPED);
        r->dropped = h->dropped;
        vec_push(&h->tasks, r);
        h->dropped = 0;
    }
    size_t n = h->tasks.n;
    for (size_t i = 0; i < n; i++)
        gcs_history_stage(g, h->tasks.v[i]);
    h->tasks.n = 0;
    gcs_write(g, esc_storage_batch_new(), task_rows_done, (void *)(uintptr_t)n);
}

static void task_write_expire(gcs *g, void *ud)
{
    (void)ud;
    gcs_history *h = g->history;
    h->task_write_queued = false;
    h->dropped += h->tasks.n;
    vec_clear(&h->tasks);
}

static hrow *task_row(gcs *g, const char *node_id, const Escher__TaskEvent *t)
{
    hrow *r = gcs_history_row(t->retried ? ESCHER__HISTORY_KIND__H_TASK_RETRIED
                                         : ESCHER__HISTORY_KIND__H_TASK_FAILED);
    gcs_job *j = gcs_job_find(g, t->job_id);
    gcs_history_set(r, node_id, t->job_id, j ? j->info->namespace_ : "");
    set_str(&r->task_id, t->task_id, 128);
    set_str(&r->task_name, t->name, 256);
    set_str(&r->error, t->error, ERROR_MAX);
    r->attempt = t->attempt;
    r->max_retries = t->max_retries;
    r->time_ms = t->time_ms;
    return r;
}

void gcs_history_report(gcs *g, const Escher__ReportNodeRequest *req)
{
    gcs_history *h = g->history;
    if (!req->n_task_events && !req->task_events_dropped)
        return;
    h->dropped += req->task_events_dropped;
    for (size_t i = 0; i < req->n_task_events; i++) {
        if (i >= TASK_EVENTS_PER_REPORT || h->tasks.n >= TASK_QUEUE_MAX) {
            h->dropped++;
            continue;
        }
        vec_push(&h->tasks, task_row(g, req->node_id, req->task_events[i]));
    }
    if (!h->task_write_queued) {
        h->task_write_queued = true;
        gcs_queue_write(g, task_write_run, task_write_expire, NULL);
    }
}

/* ------------------------------------------------------------ loading */

static void load_row(void *ud, const char *key, const void *value, size_t len)
{
    (void)key;
    hrow_vec *v = ud;
    hrow *r = escher__history_event__unpack(NULL, len, value);
    if (r)
        vec_push(v, r);
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = (*(hrow *const *)a)->id, y = (*(hrow *const *)b)->id;
    return x < y ? -1 : x > y;
}

int gcs_history_load(gcs *g)
{
    hrow_vec v = {0};
    if (esc_storage_scan(g->store, GCS_T_HISTORY, load_row, &v) < 0)
        return -1;
    if (v.n)
        qsort(v.v, v.n, sizeof *v.v, by_id);
    /* Rows past the bound (it was larger in an earlier life) go from storage now. */
    size_t extra = v.n > bound(g) ? v.n - bound(g) : 0;
    esc_storage_batch *b = esc_storage_batch_new();
    for (size_t i = 0; i < v.n; i++) {
        if (i < extra) {
            char key[24];
            row_key(v.v[i]->id, key);
            esc_storage_del(b, GCS_T_HISTORY, key);
            protobuf_c_message_free_unpacked(&v.v[i]->base, NULL);
            continue;
        }
        g->history->last_id = v.v[i]->id;
        ring_push(g, v.v[i]);
    }
    free(v.v);
    char err[200];
    if (esc_storage_batch_size(b) && esc_storage_commit(g->store, b, err, sizeof err) != 0) {
        ESC_WARN("cannot trim the event history in storage: %s", err);
        return 0;
    }
    if (!extra)
        esc_storage_batch_free(b);
    return 0;
}

/* ------------------------------------------------------------ ListEvents */

/* What a job may see of namespace ns (docs/observability.md, "Visibility"). */
static bool may_see(gcs *g, const gcs_job *caller, const char *ns, const char *name)
{
    if (!caller || gcs_ns_shared(ns) || !strcmp(ns, caller->info->namespace_))
        return true;
    gcs_job *owner = gcs_ns_owner(g, ns);
    char why[8];
    return owner && gcs_grant_covers(owner, caller->info->job_id, name, why, sizeof why) == 0;
}

static bool op_visible(gcs *g, const gcs_job *caller, const Escher__LogOp *op)
{
    char ns[ESC_FULLNAME_MAX + 1];
    const char *slash = strchr(op->name, '/');
    size_t n = slash ? (size_t)(slash - op->name) : 0;
    if (n >= sizeof ns)
        return false;
    memcpy(ns, op->name, n);
    ns[n] = '\0';
    return may_see(g, caller, ns, slash ? slash + 1 : NULL);
}

static bool matches(const Escher__ListEventsRequest *q, const hrow *r)
{
    if (*q->node_id && strcmp(q->node_id, r->node_id) != 0) {
        bool on_node = false;
        for (size_t i = 0; i < r->n_ops && !on_node; i++)
            on_node = !strcmp(r->ops[i]->node_id, q->node_id);
        if (!on_node)
            return false;
    }
    if (*q->job_id && strcmp(q->job_id, r->job_id) != 0)
        return false;
    if (!q->n_kinds)
        return true;
    for (size_t i = 0; i < q->n_kinds; i++)
        if (q->kinds[i] == r->kind)
            return true;
    return false;
}

/* The row as caller may see it: a shallow copy whose ops are the visible ones (ops
 * points into out_ops), the writer blanked when its namespace is not visible. NULL:
 * nothing of it is. */
static hrow *visible_view(gcs *g, const gcs_job *caller, const hrow *r, hrow *out,
                          Escher__LogOp **out_ops)
{
    *out = *r;
    if (!caller)
        return out;
    bool job_seen = !*r->job_id || may_see(g, caller, r->namespace_, NULL) ||
                    !strcmp(r->job_id, caller->info->job_id);
    out->n_ops = 0;
    out->ops = out_ops;
    for (size_t i = 0; i < r->n_ops; i++)
        if (op_visible(g, caller, r->ops[i]))
            out_ops[out->n_ops++] = r->ops[i];
    switch (r->kind) {
    case ESCHER__HISTORY_KIND__H_RESOURCES:
        if (!out->n_ops && !job_seen)
            return NULL;
        break;
    case ESCHER__HISTORY_KIND__H_JOB_STARTED:
    case ESCHER__HISTORY_KIND__H_JOB_ENDED:
    case ESCHER__HISTORY_KIND__H_TASK_FAILED:
    case ESCHER__HISTORY_KIND__H_TASK_RETRIED:
        if (!job_seen)
            return NULL;
        break;
    default:
        break; /* node events and drop counts are the cluster's, not a job's */
    }
    if (!job_seen) {
        out->job_id = (char *)"";
        out->namespace_ = (char *)"";
        out->entrypoint = (char *)"";
    }
    if (out->n_ops < r->n_ops)
        out->ops_total -= (uint32_t)(r->n_ops - out->n_ops);
    return out;
}

static void handle_list(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__ListEventsRequest *q = (const Escher__ListEventsRequest *)msg;
    gcs_job *caller = NULL;
    char why[300];
    int rc = gcs_auth_caller(g, call, &caller, why, sizeof why);
    if (rc) {
        esc_rpc_finish(call, rc, why);
        return;
    }
    gcs_history *h = g->history;
    size_t limit = q->limit && q->limit < LIST_MAX ? q->limit : LIST_MAX;
    Escher__ListEventsReply rep = ESCHER__LIST_EVENTS_REPLY__INIT;
    rep.last_id = h->last_id;
    rep.first_id = h->len ? ring_at(h, 0)->id : h->last_id + 1;
    rep.bound = (uint32_t)bound(g);
    hrow *views = esc_xcalloc(limit, sizeof *views);
    hrow **ptrs = esc_xcalloc(limit, sizeof *ptrs);
    Escher__LogOp **ops = esc_xcalloc(limit * HISTORY_MAX_OPS + 1, sizeof *ops);
    /* Ids are contiguous: the first wanted row's place is known without a search. */
    size_t i = q->after_id >= rep.first_id ? (size_t)(q->after_id + 1 - rep.first_id) : 0;
    for (; i < h->len && rep.n_events < limit; i++) {
        const hrow *r = ring_at(h, i);
        if (!matches(q, r))
            continue;
        hrow *v = visible_view(g, caller, r, &views[rep.n_events],
                               ops + rep.n_events * HISTORY_MAX_OPS);
        if (!v) {
            rep.hidden++;
            continue;
        }
        ptrs[rep.n_events++] = v;
    }
    rep.events = ptrs;
    esc_rpc_reply(call, &rep.base);
    free(views);
    free(ptrs);
    free(ops);
}

void gcs_history_register(gcs *g)
{
    esc_rpc_server_handle(g->server, &ESC_M_GCS_LIST_EVENTS, handle_list, g);
}
