/* gcs_link.c: the raylet's two threads that talk to the GCS.
 *
 * The report thread registers the node (RegisterNode, retried for up to 30 s), hands
 * the result to the loop, then sends ReportNode at once whenever the loop publishes a
 * change (a new applied seq, new rows) and otherwise every heartbeat_ms. The loop only
 * swaps a prepared copy of the rows in under the mutex, so several changes made while
 * a report is in flight go out as one report carrying the latest state. When the GCS
 * answers unknown_node (it restarted without persistence) the node registers again
 * with its id; FAILED_PRECONDITION then means it was declared dead: exit 1.
 *
 * The subscription (runtime/subscription.c) holds Subscribe{from_seq, node_id} open and
 * posts every event to the loop in order, resubscribing from the last seq it received
 * when the GCS restarts or is unreachable; leases keep their resources meanwhile.
 *
 * Shutdown (loop thread): set stopping, wake the report thread and join it, then stop
 * the subscription. */
#include "gcs_link.h"
#include "raylet.h"
#include "files.h"
#include "resource_rows.h"
#include "log_apply.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ids.h"
#include "log.h"
#include "subscription.h"
#include "xalloc.h"

#define REGISTER_TOTAL_MS 30000   /* give up on the first registration after this */
#define REGISTER_ATTEMPT_MS 1000  /* one attempt; short so shutdown is not held up */
#define REPORT_TIMEOUT_MS 2000
#define REPORT_RETRY_MS 100       /* after a failed report, wait this long at least */
#define DEFAULT_HEARTBEAT_MS 1000
/* Task events (failed, retried) held for the next report: a storm of failures costs the
 * GCS at most this many rows per report; the rest are counted as dropped and the count
 * travels instead (ReportNodeRequest.task_events_dropped). */
#define TASK_EVENTS_PER_REPORT 64
#define TASK_EVENT_ERROR_MAX 512

typedef struct demand_set demand_set;

struct gcs_link {
    raylet *r;
    esc_rpc_channel *ch;

    /* The registration message (read by the report thread only, after creation). */
    Escher__NodeInfo info;
    Escher__Amount *amounts;
    Escher__Amount **amount_ptrs;
    Escher__Label *labels;
    Escher__Label **label_ptrs;
    char *wanted_id;               /* --node-id, or NULL */

    /* Written by the report thread before the registration is posted; read-only after. */
    char node_id[128];
    uint32_t heartbeat_ms;         /* report thread */

    pthread_mutex_t mu;
    pthread_cond_t report_cv;      /* CLOCK_MONOTONIC */
    bool stopping;
    bool wake;                     /* something was published since the last report */
    uint64_t seq;                  /* latest applied seq published by the loop */
    resource_rows *pending;          /* latest rows published and not yet taken */
    resource_rows *spare;            /* a used rows block, for the loop to fill again */
    demand_set *pending_demand;      /* latest demand published and not yet taken */
    Escher__TaskEvent *task_events[TASK_EVENTS_PER_REPORT]; /* for the next report, owned */
    size_t ntask_events;
    uint64_t task_events_dropped;  /* over the bound or lost with a failed report */
    esc_subscription *sub;         /* the event stream (started and stopped by the loop) */

    pthread_t report_thread;
    bool report_started;
};

/* ------------------------------------------------------------ helpers */

/* The node's queued tasks by shape, as the loop last published them. */
struct demand_set {
    Escher__Demand **v;
    size_t n;
};

static void demand_set_free(demand_set *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        protobuf_c_message_free_unpacked(&d->v[i]->base, NULL);
    free(d->v);
    free(d);
}


static bool is_stopping(gcs_link *l)
{
    pthread_mutex_lock(&l->mu);
    bool s = l->stopping;
    pthread_mutex_unlock(&l->mu);
    return s;
}

/* Sleeps ms on cv unless stopping; returns whether stopping. */
static bool nap(gcs_link *l, pthread_cond_t *cv, uint64_t ms)
{
    struct timespec until = esc_time_after_ms(CLOCK_MONOTONIC, ms);
    pthread_mutex_lock(&l->mu);
    while (!l->stopping) {
        if (pthread_cond_timedwait(cv, &l->mu, &until) == ETIMEDOUT)
            break;
    }
    bool s = l->stopping;
    pthread_mutex_unlock(&l->mu);
    return s;
}

/* ------------------------------------------------------------ posts to the loop */

typedef struct {
    gcs_link *l;
    int code;
} fatal_msg;

static void run_fatal(void *arg)
{
    fatal_msg *m = arg;
    raylet_fail(m->l->r, m->code);
    free(m);
}

static void post_fatal(gcs_link *l, int code)
{
    fatal_msg *m = esc_xmalloc(sizeof *m);
    *m = (fatal_msg){l, code};
    esc_loop_post(l->r->loop, run_fatal, m);
}

typedef struct {
    gcs_link *l;
    uint64_t seq;
} registered_msg;

static void post_event(void *ud, Escher__Event *ev);

/* Loop thread: the node is registered; publish it and start the subscription. */
static void run_registered(void *arg)
{
    registered_msg *m = arg;
    gcs_link *l = m->l;
    raylet *r = l->r;
    uint64_t seq = m->seq;
    free(m);
    if (r->stopping)
        return;
    snprintf(r->node_id, sizeof r->node_id, "%s", l->node_id);
    r->registered = true;
    r->applied_seq = seq;
    if (r->cfg.node_id_file && files_write_atomic(r->cfg.node_id_file, r->node_id) != 0) {
        ESC_ERROR("cannot write node id file %s: %s", r->cfg.node_id_file, strerror(errno));
        raylet_fail(r, 1);
        return;
    }
    l->sub = esc_subscription_start(l->ch, l->node_id, NULL, seq, post_event, l, "raylet");
    if (!l->sub) {
        ESC_ERROR("cannot start the subscription thread");
        raylet_fail(r, 1);
        return;
    }
    r->force_publish = true;
    raylet_changed(r, false);
}

typedef struct {
    raylet *r;
    Escher__Event *ev;
} event_msg;

static void run_event(void *arg)
{
    event_msg *m = arg;
    log_apply_event(m->r, m->ev);
    free(m);
}

/* ------------------------------------------------------------ registration */

/* One RegisterNode with retries on UNAVAILABLE / DEADLINE_EXCEEDED until total_ms
 * passes (0: a single attempt of REGISTER_ATTEMPT_MS). On ESC_OK fills out_id (the id
 * the GCS gave, ESC_NAME_MAX+1 bytes at least), seq and the heartbeat period. */
static int register_node(gcs_link *l, const char *node_id, uint64_t total_ms,
                         char *out_id, size_t out_len, uint64_t *seq, esc_status *st)
{
    Escher__RegisterNodeRequest rq = ESCHER__REGISTER_NODE_REQUEST__INIT;
    l->info.node_id = (char *)(node_id ? node_id : "");
    rq.node = &l->info;
    uint64_t deadline = esc_now_ms() + total_ms;
    bool warned = false;
    for (;;) {
        ProtobufCMessage *out = NULL;
        int rc = esc_rpc_call(l->ch, &ESC_M_GCS_REGISTER_NODE, &rq.base, &out,
                              REGISTER_ATTEMPT_MS, ESC_RPC_IDEMPOTENT, st);
        if (rc == ESC_OK) {
            Escher__RegisterNodeReply *rep = (Escher__RegisterNodeReply *)out;
            snprintf(out_id, out_len, "%s", rep->node_id);
            *seq = rep->seq;
            l->heartbeat_ms = rep->heartbeat_ms ? rep->heartbeat_ms : DEFAULT_HEARTBEAT_MS;
            protobuf_c_message_free_unpacked(out, NULL);
            if (!out_id[0])
                return esc_status_set(st, ESC_INTERNAL, "GCS answered an empty node id");
            return ESC_OK;
        }
        if (rc != ESC_UNAVAILABLE && rc != ESC_DEADLINE_EXCEEDED)
            return rc;
        if (esc_now_ms() >= deadline || is_stopping(l))
            return rc;
        if (!warned) {
            ESC_WARN("GCS at %s not answering yet (%s); retrying for up to %" PRIu64 " s",
                     esc_rpc_channel_target(l->ch), esc_status_name(rc), total_ms / 1000);
            warned = true;
        }
        if (nap(l, &l->report_cv, 50))
            return rc;
    }
}

/* The report thread's first job. Returns true when registered. */
static bool register_first(gcs_link *l)
{
    esc_status st = {0};
    uint64_t seq = 0;
    /* The subscription thread does not run yet: l->node_id is this thread's alone. */
    int rc = register_node(l, l->wanted_id, REGISTER_TOTAL_MS, l->node_id, sizeof l->node_id,
                           &seq, &st);
    if (is_stopping(l))
        return false;
    if (rc != ESC_OK) {
        if (rc == ESC_UNAVAILABLE || rc == ESC_DEADLINE_EXCEEDED)
            ESC_ERROR("cannot register with the GCS at %s after %d s: %s %s",
                      esc_rpc_channel_target(l->ch), REGISTER_TOTAL_MS / 1000,
                      esc_status_name(rc), st.message);
        else
            ESC_ERROR("the GCS at %s refused to register this node: %s %s",
                      esc_rpc_channel_target(l->ch), esc_status_name(rc), st.message);
        post_fatal(l, 1);
        return false;
    }
    ESC_INFO("registered with the GCS at %s as node %s (seq %" PRIu64 ", heartbeat %u ms)",
             esc_rpc_channel_target(l->ch), l->node_id, seq, l->heartbeat_ms);
    registered_msg *m = esc_xmalloc(sizeof *m);
    /* A fresh node has nothing below the registration seq; a reused id may have rows in
     * the GCS registry, so it asks for everything (the GCS then sends a snapshot). */
    *m = (registered_msg){l, l->wanted_id ? 0 : seq};
    esc_loop_post(l->r->loop, run_registered, m);
    return true;
}

/* After unknown_node: the GCS lost the node (restart without persistence). Returns
 * ESC_OK, another code to retry later, or -1 when the raylet must exit. */
static int reregister(gcs_link *l)
{
    const char *id = l->node_id; /* read-only now: the subscription thread reads it too */
    char got[sizeof l->node_id];
    esc_status st = {0};
    uint64_t seq = 0;
    int rc = register_node(l, id, 0, got, sizeof got, &seq, &st);
    if (rc == ESC_FAILED_PRECONDITION) {
        ESC_ERROR("the GCS refused to re-register node %s (declared dead): %s", id, st.message);
        post_fatal(l, 1);
        return -1;
    }
    if (rc != ESC_OK) {
        ESC_WARN("re-registering node %s failed: %s %s; will retry", id, esc_status_name(rc),
                 st.message);
        return rc;
    }
    if (strcmp(id, got) != 0) {
        ESC_ERROR("the GCS re-registered node %s under another id (%s)", id, got);
        post_fatal(l, 1);
        return -1;
    }
    ESC_INFO("re-registered node %s with the GCS (seq %" PRIu64 ")", id, seq);
    return ESC_OK;
}

/* ------------------------------------------------------------ reports */

/* Keeps the bigger of rows and the current spare for reuse; frees the other. */
static void stash(gcs_link *l, resource_rows *rows)
{
    if (!rows)
        return;
    pthread_mutex_lock(&l->mu);
    if (!l->spare || rows->cap >= l->spare->cap) {
        resource_rows *t = l->spare;
        l->spare = rows;
        rows = t;
    }
    pthread_mutex_unlock(&l->mu);
    free(rows);
}

void gcs_link_publish_demand(gcs_link *l, Escher__Demand **v, size_t n)
{
    demand_set *d = esc_xmalloc(sizeof *d);
    *d = (demand_set){v, n};
    pthread_mutex_lock(&l->mu);
    demand_set *old = l->pending_demand;
    l->pending_demand = d;
    l->wake = true;
    pthread_cond_signal(&l->report_cv);
    pthread_mutex_unlock(&l->mu);
    demand_set_free(old);
}

static void task_event_free(Escher__TaskEvent *t)
{
    free(t->task_id);
    free(t->job_id);
    free(t->name);
    free(t->error);
    free(t);
}

void gcs_link_task_event(gcs_link *l, const char *task_id, const char *job_id,
                         const char *name, uint32_t attempt, uint32_t max_retries,
                         const char *error, bool retried)
{
    pthread_mutex_lock(&l->mu);
    if (l->ntask_events == TASK_EVENTS_PER_REPORT) {
        l->task_events_dropped++;
    } else {
        Escher__TaskEvent *t = esc_xmalloc(sizeof *t);
        escher__task_event__init(t);
        t->task_id = esc_xstrdup(task_id ? task_id : "");
        t->job_id = esc_xstrdup(job_id ? job_id : "");
        t->name = esc_xstrdup(name ? name : "");
        t->error = esc_xstrndup(error ? error : "", TASK_EVENT_ERROR_MAX);
        t->attempt = attempt;
        t->max_retries = max_retries;
        t->retried = retried;
        t->time_ms = esc_wall_ms();
        l->task_events[l->ntask_events++] = t;
    }
    l->wake = true;
    pthread_cond_signal(&l->report_cv);
    pthread_mutex_unlock(&l->mu);
}

/* Task events taken from the link for one report (report thread). */
typedef struct {
    Escher__TaskEvent *v[TASK_EVENTS_PER_REPORT];
    size_t n;
    uint64_t dropped;
} task_batch;

static void take_task_events(gcs_link *l, task_batch *tb)
{
    memcpy(tb->v, l->task_events, l->ntask_events * sizeof *tb->v);
    tb->n = l->ntask_events;
    tb->dropped = l->task_events_dropped;
    l->ntask_events = 0;
    l->task_events_dropped = 0;
}

/* After the report: the events are freed; when it failed they count as dropped (the
 * GCS may or may not have them: never sent twice). */
static void task_events_sent(gcs_link *l, task_batch *tb, bool ok)
{
    for (size_t i = 0; i < tb->n; i++)
        task_event_free(tb->v[i]);
    if (!ok && (tb->n || tb->dropped)) {
        pthread_mutex_lock(&l->mu);
        l->task_events_dropped += tb->n + tb->dropped;
        pthread_mutex_unlock(&l->mu);
    }
    tb->n = 0;
    tb->dropped = 0;
}

resource_rows *gcs_link_take_spare(gcs_link *l)
{
    pthread_mutex_lock(&l->mu);
    resource_rows *s = l->spare;
    l->spare = NULL;
    pthread_mutex_unlock(&l->mu);
    return s;
}

static int send_report(gcs_link *l, uint64_t seq, const resource_rows *rows,
                       const demand_set *demand, task_batch *tasks, bool *unknown,
                       bool *want_rows, esc_status *st)
{
    Escher__ReportNodeRequest rq = ESCHER__REPORT_NODE_REQUEST__INIT;
    rq.node_id = l->node_id;
    rq.applied_seq = seq;
    if (tasks) {
        rq.task_events = tasks->v;
        rq.n_task_events = tasks->n;
        rq.task_events_dropped = tasks->dropped;
    }
    if (rows) {
        rq.has_resources = true;
        rq.n_resources = rows->n;
        rq.resources = rows->rows;
    }
    if (demand) {
        rq.has_demand = true;
        rq.n_demand = demand->n;
        rq.demand = demand->v;
    }
    ProtobufCMessage *out = NULL;
    int rc =
        esc_rpc_call(l->ch, &ESC_M_GCS_REPORT_NODE, &rq.base, &out, REPORT_TIMEOUT_MS, 0, st);
    *unknown = *want_rows = false;
    if (rc == ESC_OK) {
        *unknown = ((Escher__ReportNodeReply *)out)->unknown_node;
        *want_rows = ((Escher__ReportNodeReply *)out)->want_resources;
        protobuf_c_message_free_unpacked(out, NULL);
    }
    return rc;
}

/* What the report thread last took from the loop, and what of it the GCS lacks. */
typedef struct {
    resource_rows *rows;
    demand_set *demand;
    bool send_rows, send_demand;
    task_batch tasks;      /* go with the first report only */
} report_state;

/* One report with what the GCS lacks; again whole when it asks for rows (it restarted)
 * or no longer knows the node (re-registered first). Returns an ESC code, or -1 when
 * the node was declared dead. */
static int report_once(gcs_link *l, uint64_t seq, report_state *cur, esc_status *st)
{
    bool unknown = false, want_rows = false;
    int rc = send_report(l, seq, cur->send_rows ? cur->rows : NULL,
                         cur->send_demand ? cur->demand : NULL, &cur->tasks, &unknown,
                         &want_rows, st);
    /* An unknown node's report was refused whole: its task events are lost too. */
    task_events_sent(l, &cur->tasks, rc == ESC_OK && !unknown);
    if (rc == ESC_OK && want_rows && !cur->send_rows && cur->rows)
        rc = send_report(l, seq, cur->rows, cur->demand, NULL, &unknown, &want_rows, st);
    if (rc == ESC_OK && unknown) {
        rc = reregister(l);
        if (rc < 0)
            return -1;
        if (rc == ESC_OK) {
            cur->send_rows = cur->send_demand = true;
            rc = send_report(l, seq, cur->rows, cur->demand, NULL, &unknown, &want_rows, st);
        }
    }
    if (rc == ESC_OK && !unknown)
        cur->send_rows = cur->send_demand = false;
    return rc;
}

static void report_loop(gcs_link *l)
{
    report_state cur = {0};
    bool failing = false;
    uint64_t next_due = esc_now_ms() + l->heartbeat_ms;
    uint64_t earliest = 0;

    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stopping) {
            uint64_t now = esc_now_ms();
            uint64_t due = l->wake ? earliest : next_due;
            if (now >= due)
                break;
            struct timespec until = esc_time_after_ms(CLOCK_MONOTONIC, due - now);
            pthread_cond_timedwait(&l->report_cv, &l->mu, &until);
        }
        if (l->stopping)
            break;
        uint64_t seq = l->seq;
        resource_rows *rows = l->pending;
        demand_set *demand = l->pending_demand;
        l->pending = NULL;
        l->pending_demand = NULL;
        l->wake = false;
        take_task_events(l, &cur.tasks);
        pthread_mutex_unlock(&l->mu);

        if (rows) {
            stash(l, cur.rows);
            cur.rows = rows;
            cur.send_rows = true;
        }
        if (demand) {
            demand_set_free(cur.demand);
            cur.demand = demand;
            cur.send_demand = true;
        }
        esc_status st = {0};
        int rc = report_once(l, seq, &cur, &st);
        if (rc < 0) {
            free(cur.rows);
            demand_set_free(cur.demand);
            return;
        }
        uint64_t now = esc_now_ms();
        if (rc == ESC_OK) {
            if (failing)
                ESC_INFO("reports to the GCS at %s go through again",
                         esc_rpc_channel_target(l->ch));
            failing = false;
            earliest = 0;
        } else {
            if (!failing && !is_stopping(l))
                ESC_WARN("cannot report to the GCS at %s: %s %s; retrying",
                         esc_rpc_channel_target(l->ch), esc_status_name(rc), st.message);
            failing = true;
            earliest = now + REPORT_RETRY_MS;
        }
        next_due = now + l->heartbeat_ms;
        pthread_mutex_lock(&l->mu);
    }
    pthread_mutex_unlock(&l->mu);
    free(cur.rows);
    demand_set_free(cur.demand);
}

static void *report_main(void *arg)
{
    gcs_link *l = arg;
    if (register_first(l))
        report_loop(l);
    return NULL;
}

/* ------------------------------------------------------------ subscription */

/* Subscription thread: every event goes to the loop, in order. */
static void post_event(void *ud, Escher__Event *ev)
{
    gcs_link *l = ud;
    event_msg *m = esc_xmalloc(sizeof *m);
    *m = (event_msg){l->r, ev};
    esc_loop_post(l->r->loop, run_event, m);
}

/* ------------------------------------------------------------ lifetime */

static void build_info(gcs_link *l)
{
    raylet *r = l->r;
    const node_info *n = &r->node;
    Escher__NodeInfo init = ESCHER__NODE_INFO__INIT;
    l->info = init;
    l->info.address = r->address;
    l->info.state = ESCHER__NODE_STATE__NODE_ALIVE;
    l->info.hostname = (char *)n->hostname;
    l->info.pid = (uint32_t)getpid();
    l->info.cpu_shares_enforced = r->quota != NULL;
    l->info.cpu_shares = r->cpu_shares;
    l->info.metrics_address = r->metrics_address;
    l->info.head = r->cfg.head;
    l->amounts = esc_xcalloc(n->nphysical + 1, sizeof *l->amounts);
    l->amount_ptrs = esc_xcalloc(n->nphysical + 1, sizeof *l->amount_ptrs);
    for (size_t i = 0; i < n->nphysical; i++) {
        Escher__Amount a = ESCHER__AMOUNT__INIT;
        a.name = n->physical[i].name;
        a.value = n->physical[i].qty;
        a.unbounded = n->physical[i].unbounded;
        l->amounts[i] = a;
        l->amount_ptrs[i] = &l->amounts[i];
    }
    l->info.n_physical = n->nphysical;
    l->info.physical = l->amount_ptrs;
    l->labels = esc_xcalloc(n->nlabels + 1, sizeof *l->labels);
    l->label_ptrs = esc_xcalloc(n->nlabels + 1, sizeof *l->label_ptrs);
    for (size_t i = 0; i < n->nlabels; i++) {
        Escher__Label lb = ESCHER__LABEL__INIT;
        lb.key = n->labels[i].key;
        lb.value = n->labels[i].value;
        l->labels[i] = lb;
        l->label_ptrs[i] = &l->labels[i];
    }
    l->info.n_labels = n->nlabels;
    l->info.labels = l->label_ptrs;
}

gcs_link *gcs_link_new(raylet *r)
{
    gcs_link *l = esc_xcalloc(1, sizeof *l);
    l->r = r;
    l->ch = raylet_channel_new(r, r->cfg.gcs_address);
    l->wanted_id = r->cfg.node_id;
    l->heartbeat_ms = DEFAULT_HEARTBEAT_MS;
    build_info(l);
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->report_cv, &ca);
    pthread_condattr_destroy(&ca);
    return l;
}

int gcs_link_start(gcs_link *l)
{
    if (pthread_create(&l->report_thread, NULL, report_main, l) != 0)
        return -1;
    l->report_started = true;
    return 0;
}

void gcs_link_publish(gcs_link *l, uint64_t applied_seq, resource_rows *rows)
{
    resource_rows *old = NULL;
    pthread_mutex_lock(&l->mu);
    l->seq = applied_seq;
    if (rows) {
        old = l->pending;
        l->pending = rows;
    }
    l->wake = true;
    pthread_cond_signal(&l->report_cv);
    pthread_mutex_unlock(&l->mu);
    stash(l, old);
}

void gcs_link_stop(gcs_link *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopping = true;
    pthread_cond_broadcast(&l->report_cv);
    pthread_mutex_unlock(&l->mu);
    if (l->report_started)
        pthread_join(l->report_thread, NULL);
    l->report_started = false;
    esc_subscription_stop(l->sub);
    l->sub = NULL;
}

void gcs_link_free(gcs_link *l)
{
    if (!l)
        return;
    gcs_link_stop(l);
    esc_rpc_channel_free(l->ch);
    free(l->pending);
    demand_set_free(l->pending_demand);
    for (size_t i = 0; i < l->ntask_events; i++)
        task_event_free(l->task_events[i]);
    free(l->spare);
    free(l->amounts);
    free(l->amount_ptrs);
    free(l->labels);
    free(l->label_ptrs);
    pthread_cond_destroy(&l->report_cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
