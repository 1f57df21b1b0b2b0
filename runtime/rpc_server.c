/* rpc_server.c: serves protobuf-c services over gRPC core.
 *
 * One completion-queue thread owns every grpc completion. For each registered method one
 * request is always armed; when a call arrives the thread checks the token, unpacks the
 * request with the method's input descriptor, refuses a daemon-only call that lacks the
 * daemon key (esc_rpc_server_daemon_calls) and posts the handler to the owner's loop.
 * Answers are queued on the call (an outbox) and go out one batch at a time, because
 * gRPC allows only one send in flight per call.
 */
#include "rpc_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/string_util.h>

#include "log.h"
#include "secret.h"
#include "utf8.h"
#include "xalloc.h"

typedef enum { TAG_NEW_CALL, TAG_UNKNOWN_CALL, TAG_CLOSE, TAG_SEND, TAG_SHUTDOWN, TAG_DONE } tag_kind;

typedef struct tag {
    tag_kind kind;
    void *owner;
} tag;

typedef struct method_reg {
    esc_rpc_server *srv;
    const ProtobufCMethodDescriptor *md;
    char *path;
    void *handle;
    esc_rpc_handler fn;
    void *ud;
    const esc_rpc_daemon_call *daemon; /* which calls need the daemon key; NULL: none */
    uint64_t calls;                    /* calls received (atomic: the CQ thread counts) */
    /* Answered calls by latency, each counted in its own bucket only (one atomic add
     * per call; the cumulative counts are summed when read). Atomics: answers come from
     * any thread. */
    uint64_t le[ESC_RPC_LATENCY_BUCKETS];
    uint64_t answered;
    uint64_t sum_ns;
} method_reg;

const double esc_rpc_latency_le[ESC_RPC_LATENCY_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

/* One armed request: grpc fills it when a call for the method arrives. */
typedef struct pending {
    tag t;
    method_reg *m;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *payload;
} pending;

typedef struct out_item {
    struct out_item *next;
    grpc_byte_buffer *msg;
    bool has_status;
    int code;
    grpc_slice details;
} out_item;

struct esc_rpc_ctx {
    tag close_tag;
    tag send_tag;
    esc_rpc_server *srv;
    struct esc_rpc_ctx *prev_live, *next_live;
    method_reg *m;
    grpc_call *call;
    grpc_metadata_array req_md;
    ProtobufCMessage *req;
    char *peer;
    pthread_mutex_t mu;
    int refs;
    int close_cancelled;
    bool initial_md_sent;
    bool send_inflight;
    bool finished;
    bool cancelled;
    bool streamed;       /* esc_rpc_send was used: no latency is recorded */
    uint64_t arrived_ns; /* when the call arrived (monotonic) */
    bool from_daemon;   /* carries the server's daemon key */
    out_item *out_head, *out_tail, *inflight;
    esc_rpc_cancel_fn on_cancel;
    void *cancel_ud;
    esc_rpc_drain_fn on_drain;
    void *drain_ud;
};

struct esc_rpc_server {
    grpc_server *server;
    grpc_completion_queue *cq;
    char *token;
    char *daemon_key;    /* esc_rpc_server_daemon_calls; NULL: none */
    int port;
    esc_rpc_post_fn post;
    void *post_ud;
    method_reg **methods;
    size_t nmethods;
    pthread_t thread;
    bool started;
    _Atomic int shutting_down; /* set by esc_rpc_server_free, read by the queue thread */
    bool require_utf8;   /* requests with a string that is not UTF-8 are refused */
    int failed_handles;  /* esc_rpc_server_handle calls that failed: start refuses */
    tag shutdown_tag;
    pthread_mutex_t live_mu;
    esc_rpc_ctx *live;   /* every call not yet freed, so shutdown can orphan them */
};

/* ------------------------------------------------------------------ calls */

static void out_item_free(out_item *it)
{
    if (it->msg)
        grpc_byte_buffer_destroy(it->msg);
    if (it->has_status)
        grpc_slice_unref(it->details);
    free(it);
}

static void call_free(esc_rpc_ctx *c)
{
    esc_rpc_server *s = c->srv;
    if (s) {
        pthread_mutex_lock(&s->live_mu);
        if (c->prev_live)
            c->prev_live->next_live = c->next_live;
        else
            s->live = c->next_live;
        if (c->next_live)
            c->next_live->prev_live = c->prev_live;
        pthread_mutex_unlock(&s->live_mu);
    }
    while (c->out_head) {
        out_item *n = c->out_head->next;
        out_item_free(c->out_head);
        c->out_head = n;
    }
    if (c->inflight)
        out_item_free(c->inflight);
    grpc_call_unref(c->call);
    grpc_metadata_array_destroy(&c->req_md);
    if (c->req)
        protobuf_c_message_free_unpacked(c->req, NULL);
    gpr_free(c->peer);
    pthread_mutex_destroy(&c->mu);
    free(c);
    esc_rpc_grpc_unref(); /* a call may outlive its server; grpc must outlive the call */
}

static void call_unref(esc_rpc_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    int left = --c->refs;
    pthread_mutex_unlock(&c->mu);
    if (left == 0)
        call_free(c);
}

static void drop_outbox_locked(esc_rpc_ctx *c)
{
    while (c->out_head) {
        out_item *n = c->out_head->next;
        out_item_free(c->out_head);
        c->out_head = n;
    }
    c->out_tail = NULL;
}

/* Starts the next queued send if none is in flight. Called with c->mu held. */
static void pump_locked(esc_rpc_ctx *c)
{
    if (c->send_inflight || !c->out_head)
        return;
    if (c->cancelled) {
        drop_outbox_locked(c);
        return;
    }
    out_item *it = c->out_head;
    c->out_head = it->next;
    if (!c->out_head)
        c->out_tail = NULL;

    grpc_op ops[3];
    memset(ops, 0, sizeof ops);
    size_t n = 0;
    if (!c->initial_md_sent) {
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        n++;
        c->initial_md_sent = true;
    }
    if (it->msg) {
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = it->msg;
        n++;
    }
    if (it->has_status) {
        ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        ops[n].data.send_status_from_server.status = (grpc_status_code)it->code;
        ops[n].data.send_status_from_server.status_details = &it->details;
        n++;
    }
    c->inflight = it;
    c->send_inflight = true;
    c->refs++;
    if (grpc_call_start_batch(c->call, ops, n, &c->send_tag, NULL) != GRPC_CALL_OK) {
        c->inflight = NULL;
        c->send_inflight = false;
        c->refs--;
        c->cancelled = true;
        out_item_free(it);
        drop_outbox_locked(c);
    }
}

static void enqueue_locked(esc_rpc_ctx *c, out_item *it)
{
    if (c->out_tail)
        c->out_tail->next = it;
    else
        c->out_head = it;
    c->out_tail = it;
    pump_locked(c);
}

static out_item *status_item(int code, const char *message)
{
    out_item *it = esc_xcalloc(1, sizeof *it);
    it->has_status = true;
    it->code = code;
    it->details = grpc_slice_from_copied_string(message ? message : "");
    return it;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One answered call of m that took ns. */
static void record_latency(method_reg *m, uint64_t ns)
{
    double s = (double)ns / 1e9;
    for (size_t i = 0; i < ESC_RPC_LATENCY_BUCKETS; i++)
        if (s <= esc_rpc_latency_le[i]) {
            __atomic_fetch_add(&m->le[i], 1, __ATOMIC_RELAXED);
            break;
        }
    __atomic_fetch_add(&m->answered, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&m->sum_ns, ns, __ATOMIC_RELAXED);
}

/* Ends the handler's part of the call: queues the final item and drops its reference. */
static void finish_with(esc_rpc_ctx *c, out_item *it)
{
    pthread_mutex_lock(&c->mu);
    if (c->finished) {
        pthread_mutex_unlock(&c->mu);
        out_item_free(it);
        return;
    }
    c->finished = true;
    /* An orphan's method registration went with its server (esc_rpc_server_free). */
    bool timed = !c->streamed && c->srv;
    enqueue_locked(c, it);
    pthread_mutex_unlock(&c->mu);
    if (timed)
        record_latency(c->m, mono_ns() - c->arrived_ns);
    call_unref(c);
}

void esc_rpc_reply(esc_rpc_ctx *c, const ProtobufCMessage *msg)
{
    out_item *it = status_item(ESC_OK, NULL);
    it->msg = esc_rpc_pack(msg);
    finish_with(c, it);
}

void esc_rpc_finish(esc_rpc_ctx *c, int code, const char *message)
{
    finish_with(c, status_item(code, message));
}

struct esc_rpc_packed {
    grpc_byte_buffer *bb;
};

esc_rpc_packed *esc_rpc_packed_new(const ProtobufCMessage *msg)
{
    esc_rpc_packed *p = esc_xmalloc(sizeof *p);
    p->bb = esc_rpc_pack(msg);
    return p;
}

void esc_rpc_packed_free(esc_rpc_packed *p)
{
    if (p)
        grpc_byte_buffer_destroy(p->bb);
    free(p);
}

static int send_buffer(esc_rpc_ctx *c, grpc_byte_buffer *bb);

int esc_rpc_send(esc_rpc_ctx *c, const ProtobufCMessage *msg)
{
    return send_buffer(c, esc_rpc_pack(msg));
}

/* The copy shares the packed slice (reference counted), whichever thread sends it. */
int esc_rpc_send_packed(esc_rpc_ctx *c, const esc_rpc_packed *p)
{
    return send_buffer(c, grpc_byte_buffer_copy(p->bb));
}

/* Queues bb (owned) on the call's stream. */
static int send_buffer(esc_rpc_ctx *c, grpc_byte_buffer *bb)
{
    pthread_mutex_lock(&c->mu);
    if (c->finished || c->cancelled) {
        pthread_mutex_unlock(&c->mu);
        grpc_byte_buffer_destroy(bb);
        return -1;
    }
    out_item *it = esc_xcalloc(1, sizeof *it);
    it->msg = bb;
    c->streamed = true;
    enqueue_locked(c, it);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

const char *esc_rpc_ctx_peer(const esc_rpc_ctx *c)
{
    return c->peer ? c->peer : "";
}

bool esc_rpc_ctx_cancelled(const esc_rpc_ctx *c)
{
    esc_rpc_ctx *m = (esc_rpc_ctx *)c;
    pthread_mutex_lock(&m->mu);
    bool v = m->cancelled;
    pthread_mutex_unlock(&m->mu);
    return v;
}

/* Runs on the owner's loop: tells the handler side that the peer went away. */
static void run_cancel(void *arg)
{
    esc_rpc_ctx *c = arg;
    pthread_mutex_lock(&c->mu);
    bool tell = !c->finished && c->on_cancel;
    esc_rpc_cancel_fn fn = c->on_cancel;
    void *ud = c->cancel_ud;
    pthread_mutex_unlock(&c->mu);
    if (tell)
        fn(c, ud);
    call_unref(c);
}

/* Posts run_cancel, holding a reference for it. Called with c->mu held. */
static void post_cancel_locked(esc_rpc_ctx *c)
{
    esc_rpc_server *s = c->srv;
    if (!s || s->shutting_down || !c->on_cancel || c->finished)
        return;
    c->refs++;
    s->post(s->post_ud, run_cancel, c);
}

void esc_rpc_ctx_on_cancel(esc_rpc_ctx *c, esc_rpc_cancel_fn fn, void *ud)
{
    pthread_mutex_lock(&c->mu);
    c->on_cancel = fn;
    c->cancel_ud = ud;
    if (c->cancelled)
        post_cancel_locked(c);
    pthread_mutex_unlock(&c->mu);
}

/* Runs on the owner's loop: tells a streaming handler that it may send more. */
static void run_drain(void *arg)
{
    esc_rpc_ctx *c = arg;
    pthread_mutex_lock(&c->mu);
    bool tell = !c->finished && !c->cancelled && c->on_drain;
    esc_rpc_drain_fn fn = c->on_drain;
    void *ud = c->drain_ud;
    pthread_mutex_unlock(&c->mu);
    if (tell)
        fn(c, ud);
    call_unref(c);
}

/* Posts run_drain when nothing waits behind the message in flight. Called with c->mu
 * held, after a send completed. */
static void post_drain_locked(esc_rpc_ctx *c)
{
    esc_rpc_server *s = c->srv;
    if (!s || s->shutting_down || !c->on_drain || c->finished || c->cancelled || c->out_head)
        return;
    c->refs++;
    s->post(s->post_ud, run_drain, c);
}

void esc_rpc_ctx_on_drained(esc_rpc_ctx *c, esc_rpc_drain_fn fn, void *ud)
{
    pthread_mutex_lock(&c->mu);
    c->on_drain = fn;
    c->drain_ud = ud;
    pthread_mutex_unlock(&c->mu);
}

/* ------------------------------------------------------------ completions */

static void on_close(esc_rpc_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->close_cancelled) {
        c->cancelled = true;
        drop_outbox_locked(c);
        post_cancel_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
    call_unref(c);
}

static void on_send(esc_rpc_ctx *c, bool ok)
{
    pthread_mutex_lock(&c->mu);
    if (c->inflight) {
        out_item_free(c->inflight);
        c->inflight = NULL;
    }
    c->send_inflight = false;
    if (!ok)
        c->cancelled = true;
    pump_locked(c);
    post_drain_locked(c);
    pthread_mutex_unlock(&c->mu);
    call_unref(c);
}

static void arm(method_reg *m);

/* The value of metadata entry key, or NULL. */
static const grpc_slice *md_value(const grpc_metadata_array *md, const char *key)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i < md->count; i++) {
        const grpc_metadata *e = &md->metadata[i];
        if (GRPC_SLICE_LENGTH(e->key) == klen &&
            memcmp(GRPC_SLICE_START_PTR(e->key), key, klen) == 0)
            return &e->value;
    }
    return NULL;
}

/* Constant time in the secret's length (esc_secret_equal), so the comparison leaks
 * nothing about it. */
static bool md_secret_is(const grpc_metadata_array *md, const char *key, const char *secret)
{
    const grpc_slice *v = md_value(md, key);
    return v && esc_secret_equal(GRPC_SLICE_START_PTR(*v), GRPC_SLICE_LENGTH(*v), secret);
}

static bool token_ok(const esc_rpc_server *s, const grpc_metadata_array *md)
{
    return !s->token || md_secret_is(md, ESC_TOKEN_KEY, s->token);
}

bool esc_rpc_ctx_secret_is(const esc_rpc_ctx *c, const char *key, const char *secret)
{
    return md_secret_is(&c->req_md, key, secret);
}

bool esc_rpc_ctx_from_daemon(const esc_rpc_ctx *c)
{
    return c->from_daemon;
}

/* PERMISSION_DENIED, with why, when the call is daemon-only and lacks the key. The
 * token already admitted the caller to the cluster, so the answer is not
 * UNAUTHENTICATED: it is a client asking for what only daemons may do. */
static bool daemon_refused(const esc_rpc_ctx *c, char *why, size_t len)
{
    const esc_rpc_daemon_call *d = c->m->daemon;
    if (!d || c->from_daemon || (d->when && !d->when(c->req)))
        return false;
    snprintf(why, len, "%s is for escher daemons only: it needs the daemon key (%s)",
             d->what ? d->what : c->m->md->name, ESC_RPC_DAEMON_KEY);
    return true;
}

bool esc_rpc_ctx_metadata(const esc_rpc_ctx *c, const char *key, char *out, size_t len)
{
    out[0] = 0;
    const grpc_slice *v = md_value(&c->req_md, key);
    if (!v || GRPC_SLICE_LENGTH(*v) >= len)
        return false;
    size_t vlen = GRPC_SLICE_LENGTH(*v);
    memcpy(out, GRPC_SLICE_START_PTR(*v), vlen);
    out[vlen] = 0;
    return strlen(out) == vlen; /* no NUL inside */
}

static void dispatch(void *arg)
{
    esc_rpc_ctx *c = arg;
    /* Posted before the server was freed and run after: the handler and its method went
     * with it, so the call only ends (its handler's reference dropped). */
    pthread_mutex_lock(&c->mu);
    bool orphan = !c->srv;
    pthread_mutex_unlock(&c->mu);
    if (orphan) {
        esc_rpc_finish(c, ESC_CANCELLED, "the server stopped");
        return;
    }
    c->m->fn(c, c->req, c->m->ud);
}

static esc_rpc_ctx *call_from_pending(pending *p)
{
    esc_rpc_ctx *c = esc_xcalloc(1, sizeof *c);
    c->close_tag = (tag){TAG_CLOSE, c};
    c->send_tag = (tag){TAG_SEND, c};
    c->srv = p->m->srv;
    c->m = p->m;
    c->call = p->call;
    c->req_md = p->md;
    c->peer = grpc_call_get_peer(p->call);
    c->arrived_ns = mono_ns();
    pthread_mutex_init(&c->mu, NULL);
    c->refs = 2; /* the close op and the handler */
    esc_rpc_grpc_ref();
    esc_rpc_server *s = c->srv;
    pthread_mutex_lock(&s->live_mu);
    c->next_live = s->live;
    if (s->live)
        s->live->prev_live = c;
    s->live = c;
    pthread_mutex_unlock(&s->live_mu);
    return c;
}

static void on_new_call(pending *p, bool ok)
{
    method_reg *m = p->m;
    esc_rpc_server *s = m->srv;
    if (!ok) {
        grpc_metadata_array_destroy(&p->md);
        if (p->payload)
            grpc_byte_buffer_destroy(p->payload);
        free(p);
        return;
    }
    __atomic_fetch_add(&m->calls, 1, __ATOMIC_RELAXED);
    esc_rpc_ctx *c = call_from_pending(p);
    grpc_byte_buffer *payload = p->payload;
    free(p);
    if (!s->shutting_down)
        arm(m);

    grpc_op close_op;
    memset(&close_op, 0, sizeof close_op);
    close_op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    close_op.data.recv_close_on_server.cancelled = &c->close_cancelled;
    if (grpc_call_start_batch(c->call, &close_op, 1, &c->close_tag, NULL) != GRPC_CALL_OK)
        c->refs--; /* cannot happen on a fresh call; keep the count right anyway */

    if (!token_ok(s, &c->req_md)) {
        if (payload)
            grpc_byte_buffer_destroy(payload);
        esc_rpc_finish(c, ESC_UNAUTHENTICATED, "missing or wrong cluster token");
        return;
    }
    if (!payload) {
        esc_rpc_finish(c, ESC_INVALID_ARGUMENT, "no request message");
        return;
    }
    c->req = esc_rpc_unpack(m->md->input, payload);
    grpc_byte_buffer_destroy(payload);
    if (!c->req) {
        char msg[160];
        snprintf(msg, sizeof msg, "malformed %s request", m->md->name);
        esc_rpc_finish(c, ESC_INVALID_ARGUMENT, msg);
        return;
    }
    char why[300];
    if (s->require_utf8 && !esc_pb_utf8_valid(c->req, why, sizeof why)) {
        esc_rpc_finish(c, ESC_INVALID_ARGUMENT, why);
        return;
    }
    c->from_daemon = s->daemon_key && md_secret_is(&c->req_md, ESC_RPC_DAEMON_KEY,
                                                    s->daemon_key);
    if (daemon_refused(c, why, sizeof why)) {
        esc_rpc_finish(c, ESC_PERMISSION_DENIED, why);
        return;
    }
    s->post(s->post_ud, dispatch, c);
}

static void arm(method_reg *m)
{
    pending *p = esc_xcalloc(1, sizeof *p);
    p->t = (tag){TAG_NEW_CALL, p};
    p->m = m;
    grpc_metadata_array_init(&p->md);
    grpc_call_error e = grpc_server_request_registered_call(
        m->srv->server, m->handle, &p->call, &p->deadline, &p->md, &p->payload, m->srv->cq,
        m->srv->cq, &p->t);
    if (e != GRPC_CALL_OK) {
        grpc_metadata_array_destroy(&p->md);
        free(p);
    }
}

/* Calls of methods nobody registered: answered UNIMPLEMENTED right here, so they never
 * wait for a handler. */
typedef struct unknown_call {
    tag t;
    tag done;
    esc_rpc_server *srv;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
    grpc_slice message;
    int cancelled;
} unknown_call;

static void arm_unknown(esc_rpc_server *s)
{
    unknown_call *u = esc_xcalloc(1, sizeof *u);
    u->t = (tag){TAG_UNKNOWN_CALL, u};
    u->done = (tag){TAG_DONE, u};
    u->srv = s;
    grpc_call_details_init(&u->details);
    grpc_metadata_array_init(&u->md);
    if (grpc_server_request_call(s->server, &u->call, &u->details, &u->md, s->cq, s->cq, &u->t) !=
        GRPC_CALL_OK) {
        grpc_call_details_destroy(&u->details);
        grpc_metadata_array_destroy(&u->md);
        free(u);
    }
}

static void unknown_free(unknown_call *u)
{
    if (u->call)
        grpc_call_unref(u->call);
    grpc_call_details_destroy(&u->details);
    grpc_metadata_array_destroy(&u->md);
    grpc_slice_unref(u->message);
    free(u);
}

static void on_unknown_call(unknown_call *u, bool ok)
{
    if (!ok) {
        u->message = grpc_empty_slice();
        unknown_free(u);
        return;
    }
    if (!u->srv->shutting_down)
        arm_unknown(u->srv);
    u->message = grpc_slice_from_static_string("no such method");
    grpc_op ops[3];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[1].data.send_status_from_server.status = GRPC_STATUS_UNIMPLEMENTED;
    ops[1].data.send_status_from_server.status_details = &u->message;
    ops[2].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[2].data.recv_close_on_server.cancelled = &u->cancelled;
    if (grpc_call_start_batch(u->call, ops, 3, &u->done, NULL) != GRPC_CALL_OK)
        unknown_free(u);
}

static void *cq_thread(void *arg)
{
    esc_rpc_server *s = arg;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        tag *t = ev.tag;
        switch (t->kind) {
        case TAG_NEW_CALL:
            on_new_call(t->owner, ev.success);
            break;
        case TAG_UNKNOWN_CALL:
            on_unknown_call(t->owner, ev.success);
            break;
        case TAG_DONE:
            unknown_free(t->owner);
            break;
        case TAG_CLOSE:
            on_close(t->owner);
            break;
        case TAG_SEND:
            on_send(t->owner, ev.success);
            break;
        case TAG_SHUTDOWN:
            grpc_completion_queue_shutdown(s->cq);
            break;
        }
    }
    return NULL;
}

/* ----------------------------------------------------------------- server */

esc_rpc_server *esc_rpc_server_new(const char *addr, const char *token, esc_rpc_post_fn post,
                                   void *post_ud, char *err, size_t errlen)
{
    esc_rpc_grpc_ref();
    esc_rpc_server *s = esc_xcalloc(1, sizeof *s);
    s->token = token && *token ? esc_xstrdup(token) : NULL;
    s->post = post;
    s->post_ud = post_ud;
    s->shutdown_tag = (tag){TAG_SHUTDOWN, s};
    pthread_mutex_init(&s->live_mu, NULL);

    grpc_arg args[4];
    args[0] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                         .value.integer = ESC_RPC_MAX_MESSAGE};
    args[1] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
                         .value.integer = ESC_RPC_MAX_MESSAGE};
    /* Clients ping every 10 s on long streams; accept that instead of answering GOAWAY. */
    args[2] = (grpc_arg){.type = GRPC_ARG_INTEGER,
                         .key = GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                         .value.integer = 5000};
    /* Two servers on one port would split the traffic between them: refuse instead. */
    args[3] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ALLOW_REUSEPORT,
                         .value.integer = 0};
    grpc_channel_args cargs = {.num_args = 4, .args = args};
    s->server = grpc_server_create(&cargs, NULL);
    s->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(s->server, s->cq, NULL);

    grpc_server_credentials *creds = esc_rpc_server_creds(err, errlen);
    if (!creds) {
        esc_rpc_server_free(s);
        return NULL;
    }
    s->port = grpc_server_add_http2_port(s->server, addr, creds);
    grpc_server_credentials_release(creds);
    if (s->port == 0) {
        if (err)
            snprintf(err, errlen, "cannot listen on %s (address in use or invalid)", addr);
        esc_rpc_server_free(s);
        return NULL;
    }
    return s;
}

int esc_rpc_server_port(const esc_rpc_server *s)
{
    return s->port;
}

static method_reg *find_method(esc_rpc_server *s, const ProtobufCMethodDescriptor *md);

/* Logs why method cannot be registered and marks the server so that
 * esc_rpc_server_start refuses to serve without it. -1. */
static int handle_failed(esc_rpc_server *s, const esc_rpc_method *method, const char *why)
{
    ESC_ERROR("cannot register %s.%s: %s",
              method && method->svc ? method->svc->name : "(no service)",
              esc_rpc_method_name(method), why);
    s->failed_handles++;
    return -1;
}

int esc_rpc_server_handle(esc_rpc_server *s, const esc_rpc_method *method, esc_rpc_handler fn,
                          void *ud)
{
    if (!method || !fn)
        return handle_failed(s, method, "no method or handler");
    if (s->started)
        return handle_failed(s, method, "the server is already serving");
    const ProtobufCMethodDescriptor *md;
    char *path = esc_rpc_method_path(method, &md);
    if (!path)
        return handle_failed(s, method, "not a method of its service");
    if (find_method(s, md)) {
        free(path);
        return handle_failed(s, method, "registered twice");
    }
    void *handle = grpc_server_register_method(s->server, path, NULL,
                                               GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    if (!handle) {
        free(path);
        return handle_failed(s, method, "gRPC refused the method");
    }
    method_reg *m = esc_xcalloc(1, sizeof *m);
    m->srv = s;
    m->md = md;
    m->path = path;
    m->fn = fn;
    m->ud = ud;
    m->handle = handle;
    s->methods = esc_xrealloc(s->methods, (s->nmethods + 1) * sizeof *s->methods);
    s->methods[s->nmethods++] = m;
    return 0;
}

bool esc_rpc_server_method_calls(const esc_rpc_server *s, size_t i, const char **method,
                                 uint64_t *calls)
{
    if (i >= s->nmethods)
        return false;
    *method = s->methods[i]->md->name;
    *calls = __atomic_load_n(&s->methods[i]->calls, __ATOMIC_RELAXED);
    return true;
}

bool esc_rpc_server_method_latency(const esc_rpc_server *s, size_t i, const char **method,
                                   esc_rpc_latency *out)
{
    if (i >= s->nmethods)
        return false;
    const method_reg *m = s->methods[i];
    *method = m->md->name;
    uint64_t below = 0;
    for (size_t k = 0; k < ESC_RPC_LATENCY_BUCKETS; k++)
        out->le[k] = below += __atomic_load_n(&m->le[k], __ATOMIC_RELAXED);
    out->count = __atomic_load_n(&m->answered, __ATOMIC_RELAXED);
    out->sum_s = (double)__atomic_load_n(&m->sum_ns, __ATOMIC_RELAXED) / 1e9;
    return true;
}

/* The registration of method md of svc, or NULL. */
static method_reg *find_method(esc_rpc_server *s, const ProtobufCMethodDescriptor *md)
{
    for (size_t i = 0; i < s->nmethods; i++)
        if (s->methods[i]->md == md)
            return s->methods[i];
    return NULL;
}

int esc_rpc_server_daemon_calls(esc_rpc_server *s, const char *daemon_key,
                                const esc_rpc_daemon_call *calls, size_t n)
{
    if (!daemon_key || !*daemon_key)
        return -1;
    free(s->daemon_key);
    s->daemon_key = esc_xstrdup(daemon_key);
    for (size_t i = 0; i < n; i++) {
        if (!esc_rpc_method_valid(calls[i].method))
            return -1;
        method_reg *m = find_method(s, esc_rpc_method_desc(calls[i].method));
        if (m)
            m->daemon = &calls[i];
    }
    return 0;
}

void esc_rpc_server_require_utf8(esc_rpc_server *s)
{
    s->require_utf8 = true;
}

int esc_rpc_server_start(esc_rpc_server *s)
{
    if (s->failed_handles) {
        ESC_ERROR("not serving: %d method registration(s) failed", s->failed_handles);
        return -1;
    }
    grpc_server_start(s->server);
    for (size_t i = 0; i < s->nmethods; i++)
        arm(s->methods[i]);
    arm_unknown(s);
    if (pthread_create(&s->thread, NULL, cq_thread, s) != 0)
        return -1;
    s->started = true;
    return 0;
}

/* After the thread is gone, calls still referenced by their owners must not touch the
 * server again: mark them cancelled and detach them. */
static void orphan_live_calls(esc_rpc_server *s)
{
    pthread_mutex_lock(&s->live_mu);
    for (esc_rpc_ctx *c = s->live; c; c = c->next_live) {
        pthread_mutex_lock(&c->mu);
        c->cancelled = true;
        c->srv = NULL;
        drop_outbox_locked(c);
        pthread_mutex_unlock(&c->mu);
    }
    s->live = NULL;
    pthread_mutex_unlock(&s->live_mu);
}

void esc_rpc_server_free(esc_rpc_server *s)
{
    if (!s)
        return;
    s->shutting_down = 1;
    if (!s->started) {
        /* gRPC only destroys a server that was shut down, and only shuts down a started
         * one: start it with nothing armed and let the thread see the shutdown through. */
        grpc_server_start(s->server);
        grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
        cq_thread(s);
    } else {
        grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
        grpc_server_cancel_all_calls(s->server);
        pthread_join(s->thread, NULL);
    }
    orphan_live_calls(s);
    grpc_server_destroy(s->server);
    grpc_completion_queue_destroy(s->cq);
    for (size_t i = 0; i < s->nmethods; i++) {
        free(s->methods[i]->path);
        free(s->methods[i]);
    }
    free(s->methods);
    free(s->token);
    if (s->daemon_key)
        memset(s->daemon_key, 0, strlen(s->daemon_key));
    free(s->daemon_key);
    pthread_mutex_destroy(&s->live_mu);
    free(s);
    esc_rpc_grpc_unref();
}
