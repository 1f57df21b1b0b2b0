/* write_queue.c: table writes run one at a time, in arrival order.
 *
 * A write is planned on the tables in memory and applied to them only once storage
 * has it (event_log.c), so the next write must not be planned before the previous
 * one is over: it would miss its effects (and reuse its sequence number). Writing
 * handlers and internal writes (a node's death, a job's end) therefore wait here
 * while a commit is in flight; everything else (reads, heartbeats, streams) never
 * does, so a slow storage delays only the writes.
 *
 * Each write has a deadline, --storage-timeout-ms from its arrival: one still
 * waiting when it passes is answered UNAVAILABLE without running, and the commit of
 * one that runs gets what is left of it (gcs_write_time_left).
 */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>

#include "ids.h"
#include "xalloc.h"

typedef struct write_item write_item;
struct write_item {
    gcs_write_fn run;
    gcs_write_fn expire;
    void *ud;
    uint64_t deadline_ms;
    write_item *next;
};

/* A writing RPC waiting for its turn. */
typedef struct {
    esc_rpc_ctx *call;
    const ProtobufCMessage *req; /* valid until the call is answered */
    esc_rpc_handler fn;
} rpc_write;

#define MAX_METHODS 16

typedef struct {
    gcs *g;
    esc_rpc_handler fn;
} method_entry;

struct gcs_writes {
    write_item *head, *tail;
    bool busy;            /* a commit is in flight */
    bool draining;        /* run_ready is on the stack */
    bool closing;         /* shutting down: waiting writes expire instead of running */
    uint64_t deadline_ms; /* of the write now running */
    method_entry methods[MAX_METHODS];
    size_t nmethods;
};

void gcs_writes_init(gcs *g)
{
    g->writes = esc_xcalloc(1, sizeof *g->writes);
}

/* Runs waiting writes until one leaves a commit in flight. A commit that completes
 * at once (memory storage) calls back into here; the flag keeps that iterative. */
static void run_ready(gcs *g)
{
    gcs_writes *w = g->writes;
    if (w->draining)
        return;
    w->draining = true;
    while (!w->busy && w->head) {
        write_item *it = w->head;
        w->head = it->next;
        if (!w->head)
            w->tail = NULL;
        if (w->closing || esc_now_ms() >= it->deadline_ms) {
            it->expire(g, it->ud);
        } else {
            w->deadline_ms = it->deadline_ms;
            it->run(g, it->ud);
        }
        free(it);
    }
    w->draining = false;
}

void gcs_queue_write(gcs *g, gcs_write_fn run, gcs_write_fn expire, void *ud)
{
    gcs_writes *w = g->writes;
    write_item *it = esc_xcalloc(1, sizeof *it);
    *it = (write_item){run, expire, ud, esc_now_ms() + (uint64_t)g->cfg.storage_timeout_ms,
                       NULL};
    if (w->tail)
        w->tail->next = it;
    else
        w->head = it;
    w->tail = it;
    run_ready(g);
}

int gcs_write_time_left(gcs *g)
{
    uint64_t now = esc_now_ms();
    uint64_t end = g->writes->deadline_ms;
    if (end == 0)
        return g->cfg.storage_timeout_ms; /* a commit outside a queued write */
    return end > now ? (int)(end - now) : 1;
}

bool gcs_write_begin(gcs *g)
{
    if (g->writes->busy)
        return false;
    g->writes->busy = true;
    return true;
}

void gcs_write_end(gcs *g)
{
    g->writes->busy = false;
    run_ready(g);
}

static void rpc_write_run(gcs *g, void *ud)
{
    rpc_write *r = ud;
    r->fn(r->call, r->req, g);
    free(r);
}

static void rpc_write_expire(gcs *g, void *ud)
{
    rpc_write *r = ud;
    char msg[160];
    snprintf(msg, sizeof msg,
             "storage is not answering: an earlier write has held this one for over %d ms",
             g->cfg.storage_timeout_ms);
    esc_rpc_finish(r->call, ESC_UNAVAILABLE, msg);
    free(r);
}

void gcs_write_call(gcs *g, esc_rpc_ctx *call, const ProtobufCMessage *req, esc_rpc_handler fn)
{
    rpc_write *r = esc_xmalloc(sizeof *r);
    *r = (rpc_write){call, req, fn};
    gcs_queue_write(g, rpc_write_run, rpc_write_expire, r);
}

static void on_write_call(esc_rpc_ctx *call, const ProtobufCMessage *req, void *ud)
{
    method_entry *m = ud;
    gcs_write_call(m->g, call, req, m->fn);
}

void gcs_handle_write(gcs *g, const esc_rpc_method *method, esc_rpc_handler fn)
{
    gcs_writes *w = g->writes;
    if (w->nmethods == MAX_METHODS) {
        fprintf(stderr, "escher-gcs: too many writing methods (raise MAX_METHODS)\n");
        abort();
    }
    method_entry *m = &w->methods[w->nmethods++];
    *m = (method_entry){g, fn};
    esc_rpc_server_handle(g->server, method, on_write_call, m);
}

void gcs_writes_close_all(gcs *g)
{
    gcs_writes *w = g->writes;
    if (!w)
        return;
    /* Closing the store fails the commit in flight (its caller is answered), and
     * its end expires, rather than runs, whatever still waits. */
    w->closing = true;
    esc_storage_close(g->store);
    g->store = NULL;
    w->busy = false;
    run_ready(g);
}

void gcs_writes_free(gcs *g)
{
    free(g->writes);
    g->writes = NULL;
}
