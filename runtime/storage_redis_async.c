/* storage_redis_async.c: commits through hiredis's asynchronous API on the
 * owner's libev loop, so a slow, hung or dead Redis delays only the commits
 * waiting for it; the loop goes on serving everything else.
 *
 * One connection, one commit in flight at a time (the GCS writes one at a time
 * anyway), and a FIFO of commits waiting behind it, so commits reach Redis and
 * complete in the order they were made. Each commit has a deadline from the
 * moment it was made:
 *   - still waiting when it passes (never sent): it fails and is dropped, so it
 *     can never be applied;
 *   - in flight when it passes: it fails, but Redis may still apply it when it
 *     resumes. The connection is kept, and nothing else is sent until its reply
 *     (or the connection's end) says what happened. Every commit also reads, in
 *     the same transaction, the values it replaces (HGET before its writes), so
 *     when the late reply says it was applied, an undo that puts them back goes
 *     first, before any later commit: Redis ends as if it had failed, which is
 *     what its caller was told and what the GCS's memory holds. Only when the
 *     connection ends with such a commit unanswered is its outcome unknown.
 * A connection that drops is replaced at once in the background; the commit in
 * flight (not given up) is sent again on the new one, which is safe because a
 * commit is only sets and deletes and the GCS is the only writer. A connection
 * attempt that fails (refused, or no answer to SELECT within CONNECT_TIMEOUT_MS)
 * fails the commits waiting, and the next attempt follows after a backoff of
 * 50 ms doubling to 1 s.
 */
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "log.h"
#include "storage_redis_internal.h"
#include "xalloc.h"

#define CONNECT_TIMEOUT_MS 2000
#define BACKOFF_FIRST_MS 50
#define BACKOFF_MAX_MS 1000

typedef struct rwrite rwrite;
struct rwrite {
    esc_redis_async *ra;
    esc_storage_batch *batch;
    esc_storage_done_fn done;
    void *ud;
    int timeout_ms;
    ev_timer deadline;
    int given_up; /* done already ran on the deadline; the reply is only logged */
    int failed;   /* a reply so far was not the expected one */
    size_t replies; /* replies read so far (the first answers MULTI) */
    int undo;       /* puts back what a late commit overwrote: never expires or fails
                       while waiting, goes before every other commit */
    char err[256];
    rwrite *next;
};

struct esc_redis_async {
    esc_redis_store *rs;
    struct ev_loop *loop;
    redisAsyncContext *ac; /* NULL while down */
    int ready;             /* SELECT answered on ac: commits may go */
    int ever_ready;
    int closing;           /* detaching: no new connection, no new commit */
    ev_timer retry;        /* bounds an attempt while connecting; spaces them while down */
    int backoff_ms;
    rwrite *inflight;      /* sent, reply not yet read */
    rwrite *head, *tail;   /* waiting, in order */
};

static void pump(esc_redis_async *ra);
static void start_connect(esc_redis_async *ra);

/* ---- commits ---- */

static void write_free(rwrite *w)
{
    ev_timer_stop(w->ra->loop, &w->deadline);
    esc_storage_batch_free(w->batch);
    free(w);
}

/* Calls done once (unless the deadline already did) and frees w. */
static void write_finish(rwrite *w, const char *err)
{
    esc_storage_done_fn done = w->given_up ? NULL : w->done;
    void *ud = w->ud;
    char why[512];
    if (err != NULL)
        esc_storage_seterr(why, sizeof why, "%s", err);
    write_free(w);
    if (done != NULL)
        done(ud, err != NULL ? why : NULL);
}

static void queue_push_front(esc_redis_async *ra, rwrite *w)
{
    w->next = ra->head;
    ra->head = w;
    if (ra->tail == NULL)
        ra->tail = w;
}

static void queue_push_back(esc_redis_async *ra, rwrite *w)
{
    w->next = NULL;
    if (ra->tail != NULL)
        ra->tail->next = w;
    else
        ra->head = w;
    ra->tail = w;
}

static rwrite *queue_pop(esc_redis_async *ra)
{
    rwrite *w = ra->head;
    if (w != NULL) {
        ra->head = w->next;
        if (ra->head == NULL)
            ra->tail = NULL;
        w->next = NULL;
    }
    return w;
}

static void queue_remove(esc_redis_async *ra, rwrite *w)
{
    rwrite **p = &ra->head;
    rwrite *prev = NULL;
    while (*p != NULL && *p != w) {
        prev = *p;
        p = &(*p)->next;
    }
    if (*p == NULL)
        return;
    *p = w->next;
    if (ra->tail == w)
        ra->tail = prev;
}

/* Fails every commit still waiting (they were never sent); an undo stays queued
 * unless the store closes. */
static void fail_waiting(esc_redis_async *ra, const char *why, int closing)
{
    rwrite *keep = NULL, *w;
    while ((w = queue_pop(ra)) != NULL) {
        if (w->undo && !closing) {
            w->next = keep;
            keep = w;
        } else {
            write_finish(w, why);
        }
    }
    while ((w = keep) != NULL) { /* back in front (there is at most one) */
        keep = w->next;
        queue_push_front(ra, w);
    }
}

static void on_deadline(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    rwrite *w = t->data;
    esc_redis_async *ra = w->ra;
    char why[512];
    esc_storage_seterr(why, sizeof why, "%s: commit: no reply within %d ms", ra->rs->where,
             w->timeout_ms);
    if (w != ra->inflight) {
        queue_remove(ra, w);
        write_finish(w, why);
        return;
    }
    /* Sent: keep it, so that its reply (whenever Redis resumes) is matched and
     * nothing is sent before it. */
    w->given_up = 1;
    w->done(w->ud, why);
}

/* Reply to MULTI or to a queued write. A NULL reply means the connection is
 * going away; then w may be gone, and on_link_lost deals with it. */
static void on_queued(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)ac;
    if (reply == NULL)
        return;
    rwrite *w = privdata;
    const char *expect = w->replies++ == 0 ? "OK" : "QUEUED";
    esc_redis_check_status(w->ra->rs, reply, expect, &w->failed, w->err, sizeof w->err);
}

static void log_late(const esc_redis_async *ra, const rwrite *w)
{
    if (w->failed)
        ESC_INFO("%s: a commit given up on its deadline failed when Redis resumed", ra->rs->where);
    else
        ESC_WARN("%s: a commit given up on its deadline was applied when Redis resumed "
                 "(%zu writes); its caller was told it failed",
                 ra->rs->where, w->batch->count);
}

/* EXEC answers the n HGETs (the values before the commit), then the n writes. */
static void check_reply(const esc_redis_async *ra, rwrite *w, const redisReply *r)
{
    size_t n = w->batch->count;
    if (r->type != REDIS_REPLY_ARRAY) {
        esc_redis_check_exec(ra->rs, r, n, &w->failed, w->err, sizeof w->err);
        return;
    }
    if (r->elements != 2 * n) {
        if (!w->failed)
            esc_storage_seterr(w->err, sizeof w->err, "%s: commit failed: unexpected reply "
                               "to EXEC", ra->rs->where);
        w->failed = 1;
        return;
    }
    redisReply writes = *r; /* the second half, as check_exec expects it */
    writes.elements = n;
    writes.element = r->element + n;
    esc_redis_check_exec(ra->rs, &writes, n, &w->failed, w->err, sizeof w->err);
}

static void undo_done(void *ud, const char *err)
{
    esc_redis_async *ra = ud;
    if (err)
        ESC_ERROR("%s: could not undo a commit applied after its deadline: %s", ra->rs->where,
                  err);
    else
        ESC_WARN("%s: undid a commit applied after its deadline", ra->rs->where);
}

/* A commit that failed on its deadline was applied late. Its caller was told it
 * failed and the GCS did not apply it in memory, so Redis gets back the values it
 * overwrote, before any later commit (none was sent after it). */
static void queue_undo(esc_redis_async *ra, const rwrite *late, const redisReply *r)
{
    esc_storage_batch *b = esc_storage_batch_new();
    for (size_t i = 0; i < late->batch->count; i++) {
        const esc_storage_op *op = &late->batch->ops[i];
        const redisReply *old = r->element[i];
        if (old->type == REDIS_REPLY_STRING)
            esc_storage_put(b, op->table, op->key, old->str, old->len);
        else
            esc_storage_del(b, op->table, op->key);
    }
    rwrite *w = esc_xcalloc(1, sizeof *w);
    *w = (rwrite){.ra = ra, .batch = b, .done = undo_done, .ud = ra, .undo = 1};
    ev_timer_init(&w->deadline, on_deadline, 0.0, 0.0); /* never started */
    w->deadline.data = w;
    queue_push_front(ra, w);
}

static void on_exec(redisAsyncContext *ac, void *reply, void *privdata)
{
    (void)ac;
    if (reply == NULL)
        return;
    rwrite *w = privdata;
    esc_redis_async *ra = w->ra;
    check_reply(ra, w, reply);
    ra->inflight = NULL;
    if (w->given_up) {
        log_late(ra, w);
        if (!w->failed)
            queue_undo(ra, w, reply);
    }
    write_finish(w, w->failed ? w->err : NULL);
    pump(ra);
}

/* Reads the value a write is about to replace, inside the transaction: if the
 * commit is applied after its deadline, this is what an undo puts back. */
static int send_read(redisAsyncContext *ac, rwrite *w, const esc_storage_op *op)
{
    return redisAsyncCommand(ac, on_queued, w, "HGET escher:%s %s", op->table, op->key);
}

static int send_op(redisAsyncContext *ac, rwrite *w, const esc_storage_op *op)
{
    if (op->kind == ESC_STORAGE_OP_PUT)
        return redisAsyncCommand(ac, on_queued, w, "HSET escher:%s %s %b", op->table, op->key,
                                 op->value, op->len);
    return redisAsyncCommand(ac, on_queued, w, "HDEL escher:%s %s", op->table, op->key);
}

/* Queues MULTI, the writes and EXEC on the connection (hiredis sends them when the
 * socket is writable). Returns -1 when hiredis refused (out of memory, or the
 * context is going away); what was queued then dies with the context. */
static int send_write(esc_redis_async *ra, rwrite *w)
{
    w->failed = 0;
    w->replies = 0;
    w->err[0] = '\0';
    if (redisAsyncCommand(ra->ac, on_queued, w, "MULTI") != REDIS_OK)
        return -1;
    for (size_t i = 0; i < w->batch->count; i++) {
        if (send_read(ra->ac, w, &w->batch->ops[i]) != REDIS_OK)
            return -1;
    }
    for (size_t i = 0; i < w->batch->count; i++) {
        if (send_op(ra->ac, w, &w->batch->ops[i]) != REDIS_OK)
            return -1;
    }
    return redisAsyncCommand(ra->ac, on_exec, w, "EXEC") == REDIS_OK ? 0 : -1;
}

static void drop_connection(esc_redis_async *ra, const char *why);

/* Sends the next waiting commit when the connection is ready and idle. */
static void pump(esc_redis_async *ra)
{
    if (ra->closing || ra->inflight != NULL || ra->head == NULL)
        return;
    if (ra->ac == NULL) {
        if (!ev_is_active(&ra->retry))
            start_connect(ra);
        return;
    }
    if (!ra->ready)
        return;
    rwrite *w = queue_pop(ra);
    ra->inflight = w;
    if (send_write(ra, w) != 0)
        drop_connection(ra, "cannot queue the commit (out of memory)");
}

/* ---- connection ---- */

static void schedule_retry(esc_redis_async *ra, int ms)
{
    ev_timer_stop(ra->loop, &ra->retry);
    ev_timer_set(&ra->retry, ms / 1000.0, 0.0);
    ev_timer_start(ra->loop, &ra->retry);
}

/* The connection is gone (ra->ac already NULL). The commit in flight goes back to
 * the head of the queue unless it was given up; when the connection had never
 * become ready, the attempt failed and the commits waiting fail with it. */
static void on_link_lost(esc_redis_async *ra, const char *why, int was_ready)
{
    ra->ready = 0;
    rwrite *w = ra->inflight;
    ra->inflight = NULL;
    if (w != NULL && w->given_up) {
        ESC_WARN("%s: connection lost with a commit given up on its deadline in flight; "
                 "Redis may or may not have applied it",
                 ra->rs->where);
        write_free(w);
    } else if (w != NULL) {
        queue_push_front(ra, w);
    }
    if (was_ready) {
        ESC_WARN("%s: connection lost (%s); reconnecting", ra->rs->where, why);
        ra->backoff_ms = BACKOFF_FIRST_MS;
        schedule_retry(ra, 0);
        return;
    }
    char msg[512];
    esc_storage_seterr(msg, sizeof msg, "%s: %s", ra->rs->where, why);
    schedule_retry(ra, ra->backoff_ms);
    ra->backoff_ms = ra->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ra->backoff_ms * 2;
    fail_waiting(ra, msg, 0);
}

/* Closes the connection on our side (never from inside onConnect/onDisconnect,
 * where hiredis still uses the context after the callback). */
static void drop_connection(esc_redis_async *ra, const char *why)
{
    redisAsyncContext *ac = ra->ac;
    int was_ready = ra->ready;
    ra->ac = NULL;
    ev_timer_stop(ra->loop, &ra->retry);
    if (ac != NULL)
        redisAsyncFree(ac); /* pending callbacks get NULL and ignore it */
    on_link_lost(ra, why, was_ready);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    esc_redis_async *ra = ac->data;
    if (status == REDIS_OK || ac != ra->ac)
        return;
    /* hiredis frees ac when this returns. */
    char why[512];
    esc_storage_seterr(why, sizeof why, "cannot connect: %s", ac->errstr[0] ? ac->errstr : "error");
    ra->ac = NULL;
    ev_timer_stop(ra->loop, &ra->retry);
    on_link_lost(ra, why, 0);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    esc_redis_async *ra = ac->data;
    if (ac != ra->ac)
        return; /* dropped on our side: already handled */
    char why[512];
    esc_storage_seterr(why, sizeof why, "%s", ac->errstr[0] ? ac->errstr : "closed by the server");
    int was_ready = ra->ready;
    ra->ac = NULL;
    ev_timer_stop(ra->loop, &ra->retry);
    on_link_lost(ra, why, was_ready);
}

/* SELECT also proves that the server answers: a TCP connect alone succeeds
 * against a stopped Redis. */
static void on_select(redisAsyncContext *ac, void *reply, void *privdata)
{
    esc_redis_async *ra = privdata;
    if (reply == NULL || ac != ra->ac)
        return;
    const redisReply *r = reply;
    if (r->type != REDIS_REPLY_STATUS) {
        char why[512];
        esc_storage_seterr(why, sizeof why, "SELECT %d failed: %s", ra->rs->db,
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        drop_connection(ra, why); /* hiredis frees it after this callback */
        return;
    }
    ev_timer_stop(ra->loop, &ra->retry);
    ra->ready = 1;
    ra->backoff_ms = BACKOFF_FIRST_MS;
    if (ra->ever_ready)
        ESC_INFO("%s: connected again", ra->rs->where);
    ra->ever_ready = 1;
    pump(ra);
}

/* hiredis writes with write(2): a Redis that went away would raise SIGPIPE and
 * kill the process. The adapter's write watcher is wrapped so that the signal is
 * blocked around it (a library does not change the process's disposition). */
static void guarded_write_event(struct ev_loop *loop, ev_io *watcher, int revents)
{
    esc_redis_sigpipe_guard guard;
    esc_redis_sigpipe_block(&guard);
    redisLibevWriteEvent(loop, watcher, revents);
    esc_redis_sigpipe_restore(&guard);
}

static void start_connect(esc_redis_async *ra)
{
    char why[512];
    redisAsyncContext *ac = redisAsyncConnect(ra->rs->host, ra->rs->port);
    if (ac == NULL || ac->err) {
        esc_storage_seterr(why, sizeof why, "cannot connect: %s",
                 ac != NULL && ac->errstr[0] ? ac->errstr : "out of memory");
        if (ac != NULL)
            redisAsyncFree(ac);
        on_link_lost(ra, why, 0);
        return;
    }
    ac->data = ra;
    redisLibevAttach(ra->loop, ac);
    redisLibevEvents *events = ac->ev.data;
    ev_set_cb(&events->wev, guarded_write_event);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    ra->ac = ac;
    ra->ready = 0;
    schedule_retry(ra, CONNECT_TIMEOUT_MS); /* the attempt's deadline */
    if (redisAsyncCommand(ac, on_select, ra, "SELECT %d", ra->rs->db) != REDIS_OK)
        drop_connection(ra, "cannot queue SELECT");
}

/* While connecting: the attempt took too long. While down: time to try again. */
static void on_retry(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    esc_redis_async *ra = t->data;
    if (ra->ac != NULL) {
        char why[100];
        esc_storage_seterr(why, sizeof why, "no answer to SELECT within %d ms", CONNECT_TIMEOUT_MS);
        drop_connection(ra, why);
        return;
    }
    start_connect(ra);
}

/* ---- interface ---- */

int esc_redis_attach(esc_redis_store *rs, struct ev_loop *loop, char *err, size_t errlen)
{
    if (rs->async != NULL) {
        esc_storage_seterr(err, errlen, "%s: already attached to a loop", rs->where);
        return -1;
    }
    esc_redis_async *ra = esc_xcalloc(1, sizeof *ra);
    ra->rs = rs;
    ra->loop = loop;
    ra->backoff_ms = BACKOFF_FIRST_MS;
    ev_timer_init(&ra->retry, on_retry, 0.0, 0.0);
    ra->retry.data = ra;
    rs->async = ra;
    start_connect(ra); /* a failure here is retried in the background */
    return 0;
}

void esc_redis_commit_async(esc_redis_store *rs, esc_storage_batch *b, int timeout_ms,
                            esc_storage_done_fn done, void *ud)
{
    esc_redis_async *ra = rs->async;
    rwrite *w = ra->closing ? NULL : esc_xcalloc(1, sizeof *w);
    if (w == NULL) {
        esc_storage_batch_free(b);
        char why[512];
        esc_storage_seterr(why, sizeof why, "%s: commit: %s", rs->where,
                 ra->closing ? "storage closed" : "out of memory");
        done(ud, why);
        return;
    }
    *w = (rwrite){.ra = ra, .batch = b, .done = done, .ud = ud, .timeout_ms = timeout_ms};
    ev_timer_init(&w->deadline, on_deadline, timeout_ms / 1000.0, 0.0);
    w->deadline.data = w;
    if (timeout_ms > 0)
        ev_timer_start(ra->loop, &w->deadline);
    queue_push_back(ra, w);
    pump(ra);
}

void esc_redis_detach(esc_redis_store *rs)
{
    esc_redis_async *ra = rs->async;
    if (ra == NULL)
        return;
    ra->closing = 1; /* what the failed callers do next must not reconnect */
    ev_timer_stop(ra->loop, &ra->retry);
    redisAsyncContext *ac = ra->ac;
    ra->ac = NULL;
    if (ac != NULL)
        redisAsyncFree(ac);
    char why[512];
    esc_storage_seterr(why, sizeof why, "%s: storage closed", rs->where);
    if (ra->inflight != NULL)
        write_finish(ra->inflight, why);
    ra->inflight = NULL;
    fail_waiting(ra, why, 1);
    rs->async = NULL;
    free(ra);
}
