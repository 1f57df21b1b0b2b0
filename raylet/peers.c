/* peers.c: see peers.h. */
#include "peers.h"

#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "cluster_view.h"
#include "log.h"
#include "raylet.h"
#include "raylet.pb-c.h"
#include "strmap.h"
#include "task.pb-c.h"
#include "xalloc.h"

/* A suspect peer is asked again after PROBE_FIRST_MS, doubling up to PROBE_MAX_MS: it
 * answers soon after it comes back, and a dead one costs one call every few seconds
 * until the GCS declares it dead. */
#define PROBE_FIRST_MS 200
#define PROBE_MAX_MS 3000

struct peer {
    peers *ps;
    char *address;
    esc_rpc_channel *ch;
    esc_rpc_async *q;       /* this peer's sender: nothing else waits behind its calls */
    bool suspect;
    bool probing;           /* a probe call is out */
    int backoff_ms;
    ev_timer probe;
};

struct peers {
    raylet *r;
    int timeout_ms;
    esc_strmap *all;        /* address -> peer */
    esc_strmap *suspects;   /* address -> peer, read by the cluster view */
    bool stopped;
};

typedef struct {
    peer *p;
    esc_rpc_async_fn fn;
    void *ud;
} call_ctx;

static void probe_later(peer *p);

/* A failure that says the peer did not answer, as opposed to an answer that refused. */
static bool unreachable(int code)
{
    return code == ESC_UNAVAILABLE || code == ESC_DEADLINE_EXCEEDED;
}

static void set_suspect(peer *p, const char *why)
{
    if (p->suspect || p->ps->stopped)
        return;
    p->suspect = true;
    esc_strmap_put(p->ps->suspects, p->address, p);
    ESC_WARN("raylet %s did not answer (%s): it gets no new work until it answers again or "
             "its node is declared dead", p->address, why);
    /* What waits behind the failed call would wait for nothing: fail it now, so its
     * owners place the work elsewhere in this loop turn. */
    esc_rpc_async_fail_queued(p->q, ESC_UNAVAILABLE, "peer raylet suspect");
    p->backoff_ms = PROBE_FIRST_MS;
    probe_later(p);
}

bool peer_suspect(const peer *p)
{
    return p->suspect;
}

static void clear_suspect(peer *p)
{
    if (!p->suspect)
        return;
    p->suspect = false;
    esc_strmap_del(p->ps->suspects, p->address);
    ev_timer_stop(esc_loop_ev(p->ps->r->loop), &p->probe);
}

static void on_call_done(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    call_ctx *c = ud;
    if (unreachable(code))
        set_suspect(c->p, st->message[0] ? st->message : esc_status_name(code));
    if (c->fn)
        c->fn(c->ud, code, st, reply);
    else if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    free(c);
}

static void on_probed(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    peer *p = ud;
    (void)st;
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    p->probing = false;
    if (!p->suspect || p->ps->stopped)
        return;
    if (code == ESC_OK) {
        ESC_INFO("raylet %s answers again", p->address);
        clear_suspect(p);
        raylet_changed(p->ps->r, true);
        return;
    }
    p->backoff_ms = p->backoff_ms * 2 > PROBE_MAX_MS ? PROBE_MAX_MS : p->backoff_ms * 2;
    probe_later(p);
}

static void on_probe_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    peer *p = w->data;
    if (p->probing || !p->suspect || p->ps->stopped)
        return;
    p->probing = true;
    Escher__GetNodeStateRequest req = ESCHER__GET_NODE_STATE_REQUEST__INIT;
    /* Waits for the channel to connect (the peer may be restarting), up to the timeout. */
    esc_rpc_async_call(p->q, p->ch, &ESC_M_RAYLET_GET_NODE_STATE, &req.base, p->ps->timeout_ms,
                       ESC_RPC_IDEMPOTENT, on_probed, p);
}

static void probe_later(peer *p)
{
    struct ev_loop *ev = esc_loop_ev(p->ps->r->loop);
    ev_timer_stop(ev, &p->probe);
    ev_timer_set(&p->probe, p->backoff_ms / 1000.0, 0.);
    ev_timer_start(ev, &p->probe);
}

peers *peers_new(raylet *r, int timeout_ms)
{
    peers *ps = esc_xcalloc(1, sizeof *ps);
    ps->r = r;
    ps->timeout_ms = timeout_ms;
    ps->all = esc_strmap_new();
    ps->suspects = esc_strmap_new();
    cluster_view_set_suspects(r->view, ps->suspects);
    return ps;
}

peer *peers_get(peers *ps, const char *address)
{
    peer *p = esc_strmap_get(ps->all, address);
    if (p)
        return p;
    p = esc_xcalloc(1, sizeof *p);
    p->ps = ps;
    p->address = esc_xstrdup(address);
    p->ch = raylet_channel_new(ps->r, address);
    p->q = esc_rpc_async_new(esc_loop_post, ps->r->loop);
    if (!p->q) {
        /* Out of threads: a raylet that cannot call its peers cannot do its job. */
        ESC_ERROR("cannot start a sender thread for raylet %s", address);
        abort();
    }
    ev_timer_init(&p->probe, on_probe_timer, 0., 0.);
    p->probe.data = p;
    esc_strmap_put(ps->all, p->address, p);
    return p;
}

const char *peer_address(const peer *p)
{
    return p->address;
}

/* A call made after peers_stop: it fails like the ones the stop ended, on the loop. */
static void fail_stopped(void *arg)
{
    call_ctx *c = arg;
    esc_status st = {0};
    esc_status_set(&st, ESC_UNAVAILABLE, "raylet shutting down");
    if (c->fn)
        c->fn(c->ud, ESC_UNAVAILABLE, &st, NULL);
    free(c);
}

void peers_call(peers *ps, peer *p, const esc_rpc_method *method, const ProtobufCMessage *req,
                int timeout_ms, int flags, esc_rpc_async_fn fn, void *ud)
{
    call_ctx *c = esc_xmalloc(sizeof *c);
    *c = (call_ctx){p, fn, ud};
    if (ps->stopped) {
        esc_loop_post(ps->r->loop, fail_stopped, c);
        return;
    }
    esc_rpc_async_call(p->q, p->ch, method, req, timeout_ms ? timeout_ms : ps->timeout_ms,
                       flags, on_call_done, c);
}

void peers_node_dead(peers *ps, const char *address)
{
    peer *p = address ? esc_strmap_get(ps->all, address) : NULL;
    if (!p)
        return;
    clear_suspect(p);
    /* CANCELLED, not UNAVAILABLE: these failures say nothing of whoever listens at the
     * address next, and must not make it suspect. */
    esc_rpc_async_fail_queued(p->q, ESC_CANCELLED, "peer raylet's node died");
}

void peers_stop(peers *ps)
{
    if (!ps || ps->stopped)
        return;
    ps->stopped = true;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(ps->all, &pos, &k, &v)) {
        peer *p = v;
        ev_timer_stop(esc_loop_ev(ps->r->loop), &p->probe);
        esc_rpc_async_free(p->q);
        p->q = NULL;
    }
}

void peers_free(peers *ps)
{
    if (!ps)
        return;
    peers_stop(ps);
    cluster_view_set_suspects(ps->r->view, NULL);
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(ps->all, &pos, &k, &v)) {
        peer *p = v;
        esc_rpc_channel_free(p->ch);
        free(p->address);
        free(p);
    }
    esc_strmap_free(ps->all);
    esc_strmap_free(ps->suspects);
    free(ps);
}
