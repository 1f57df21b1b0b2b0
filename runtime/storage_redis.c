/* storage_redis.c: the Redis backend: the store, its URI, and the synchronous
 * hiredis connection.
 *
 * Table T is the Redis hash "escher:T"; each key is a field. A commit is one
 * pipeline MULTI, HSET/HDEL..., EXEC, and succeeds only when every reply is as
 * expected.
 *
 * Two connections serve a store. The synchronous one here does open, get, scan
 * and the commits of a store not attached to a loop: the GCS's loading at start,
 * before its loop serves anything, and tools and tests. It runs every operation
 * with a socket timeout, so a hung Redis turns into an error, and an operation
 * that loses the connection reconnects once and runs again. Once the store is
 * attached to an event loop (esc_storage_attach), commits go through hiredis's
 * asynchronous API on that loop instead (storage_redis_async.c): a slow, hung or
 * dead Redis then delays only the commits waiting for it, each fails with a
 * reason when no reply came within its deadline, and a synchronous commit is
 * refused (it could overtake one queued on the loop).
 *
 * Running a commit again is safe: it is only sets and deletes, so applying it
 * twice (if the first EXEC did land) leaves the same state, and the GCS is the
 * only writer. The converse is the limit of deadlines: a commit that failed on
 * its deadline after it was sent may still be applied when Redis resumes; the
 * loop's connection then undoes it before anything else (storage_redis_async.c),
 * unless the connection ended first. Nothing acknowledged is ever missing.
 *
 * Limit: Redis does not roll back a transaction whose queued commands fail at
 * run time. The only such failure for HSET/HDEL is WRONGTYPE, which needs a
 * foreign non-hash key under "escher:"; commit reports it, but writes to other
 * tables in the same batch may have been applied. Out-of-memory and unknown-
 * command errors are raised while queueing and abort the whole transaction.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "storage_redis_internal.h"
#include "xalloc.h"

#define CONNECT_TIMEOUT_MS 2000
#define COMMAND_TIMEOUT_MS 5000
/* HSCAN page size: large enough to keep round trips few on big tables. */
#define SCAN_COUNT "1000"
#define HOST_MAX ESC_REDIS_HOST_MAX

typedef esc_redis_store redis_store;

typedef enum { RS_OK, RS_FAIL, RS_LOST } rs_result;

/* ---- URI ---- */

/* Reads 1+ decimal digits (no sign, no spaces) into *out, up to max. */
static const char *parse_digits(const char *s, long max, long *out)
{
    long v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (*p - '0');
        if (v > max)
            return NULL;
    }
    if (p == s)
        return NULL;
    *out = v;
    return p;
}

/* Copies the host of "HOST:..." or "[V6]:..." and returns what follows it. */
static const char *parse_host(const char *s, char *host)
{
    const char *end;
    if (*s == '[') {
        s++;
        end = strchr(s, ']');
        if (end == NULL)
            return NULL;
    } else {
        end = s + strcspn(s, ":/");
    }
    size_t n = (size_t)(end - s);
    if (n == 0 || n > HOST_MAX)
        return NULL;
    memcpy(host, s, n);
    host[n] = '\0';
    return *end == ']' ? end + 1 : end;
}

/* "redis://HOST:PORT[/DB]" -> rs->host, rs->port, rs->db. */
static int parse_uri(redis_store *rs, const char *uri, char *err, size_t errlen)
{
    const char *p = parse_host(uri + strlen("redis://"), rs->host);
    long port = 0, db = 0;
    if (p != NULL && *p == ':')
        p = parse_digits(p + 1, 65535, &port);
    else
        p = NULL;
    if (p != NULL && *p == '/')
        p = parse_digits(p + 1, INT_MAX, &db);
    if (p == NULL || *p != '\0' || port == 0) {
        esc_storage_seterr(err, errlen,
                           "redis storage: bad URI \"%.200s\" (expected redis://HOST:PORT[/DB])",
                           uri);
        return -1;
    }
    rs->port = (int)port;
    rs->db = (int)db;
    snprintf(rs->where, sizeof(rs->where), "redis %s:%d/%d", rs->host, rs->port, rs->db);
    return 0;
}

/* ---- SIGPIPE ----
 * hiredis writes with write(2), so writing to a Redis that went away would
 * raise SIGPIPE and kill the process. The runtime is a library and should not
 * change the process-wide disposition, so SIGPIPE is blocked on this thread
 * around each operation and any instance it raised is discarded before the
 * old mask comes back; the failed write itself reports EPIPE. */

typedef esc_redis_sigpipe_guard sigpipe_guard;

static void sigpipe_only(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGPIPE);
}

void esc_redis_sigpipe_block(sigpipe_guard *g)
{
    sigset_t pipe_set, pending;
    sigpipe_only(&pipe_set);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old);
}

void esc_redis_sigpipe_restore(const sigpipe_guard *g)
{
    int saved = errno;
    sigset_t pipe_set, pending;
    sigpipe_only(&pipe_set);
    sigpending(&pending);
    if (!g->was_pending && sigismember(&pending, SIGPIPE)) {
        const struct timespec zero = { 0, 0 };
        while (sigtimedwait(&pipe_set, NULL, &zero) == -1 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = saved;
}

/* ---- connection ---- */

static struct timeval ms_to_tv(int ms)
{
    return (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
}

/* Describes a failed hiredis call on rs->ctx; errno_at_fail is errno right
 * after it, to tell a timeout (EAGAIN from SO_RCVTIMEO) from other I/O errors. */
static void describe_ctx_error(const redis_store *rs, const char *what, int errno_at_fail,
                               char *err, size_t errlen)
{
    const redisContext *c = rs->ctx;
    if (c->err == REDIS_ERR_IO && (errno_at_fail == EAGAIN || errno_at_fail == EWOULDBLOCK))
        esc_storage_seterr(err, errlen, "%s: %s: no reply within %d ms", rs->where, what,
                           COMMAND_TIMEOUT_MS);
    else
        esc_storage_seterr(err, errlen, "%s: %s failed: %s", rs->where, what,
                           c->errstr[0] ? c->errstr : "connection error");
}

static void disconnect(redis_store *rs)
{
    if (rs->ctx != NULL)
        redisFree(rs->ctx);
    rs->ctx = NULL;
}

/* SELECT also proves the server answers: a TCP connect alone can succeed
 * against a stopped process or a port that is not Redis. */
static int select_db(redis_store *rs, char *err, size_t errlen)
{
    redisReply *r = redisCommand(rs->ctx, "SELECT %d", rs->db);
    if (r == NULL) {
        describe_ctx_error(rs, "SELECT", errno, err, errlen);
        return -1;
    }
    int ok = r->type == REDIS_REPLY_STATUS;
    if (!ok)
        esc_storage_seterr(err, errlen, "%s: SELECT %d failed: %s", rs->where, rs->db,
                           r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static int connect_ctx(redis_store *rs, char *err, size_t errlen)
{
    disconnect(rs);
    rs->ctx = redisConnectWithTimeout(rs->host, rs->port, ms_to_tv(CONNECT_TIMEOUT_MS));
    if (rs->ctx == NULL) {
        esc_storage_seterr(err, errlen, "%s: cannot connect: out of memory", rs->where);
        return -1;
    }
    if (rs->ctx->err) {
        esc_storage_seterr(err, errlen, "%s: cannot connect: %s", rs->where, rs->ctx->errstr);
        disconnect(rs);
        return -1;
    }
    if (redisSetTimeout(rs->ctx, ms_to_tv(COMMAND_TIMEOUT_MS)) != REDIS_OK) {
        esc_storage_seterr(err, errlen, "%s: cannot set command timeout: %s", rs->where,
                           rs->ctx->errstr);
        disconnect(rs);
        return -1;
    }
    if (select_db(rs, err, errlen) != 0) {
        disconnect(rs);
        return -1;
    }
    return 0;
}

/* Reconnects. When an operation just lost the connection, err already says
 * how; the reconnect failure is appended, without repeating the address. */
static int reconnect(redis_store *rs, int lost, char *err, size_t errlen)
{
    char why[256] = "";
    if (connect_ctx(rs, why, sizeof(why)) == 0)
        return 0;
    if (!lost || err == NULL || errlen == 0) {
        esc_storage_seterr(err, errlen, "%s", why);
        return -1;
    }
    size_t prefix = strlen(rs->where);
    int same = strncmp(why, rs->where, prefix) == 0 && why[prefix] == ':' &&
               why[prefix + 1] == ' ';
    const char *reason = same ? why + prefix + 2 : why;
    char before[256];
    snprintf(before, sizeof(before), "%s", err);
    esc_storage_seterr(err, errlen, "%s; reconnect failed: %s", before, reason);
    return -1;
}

typedef rs_result (*rs_attempt_fn)(redis_store *rs, void *arg, char *err, size_t errlen);

/* Runs attempt; when it loses the connection (or there is none), reconnects
 * once and runs it again. At most one reconnect per operation, so a dead
 * Redis costs one connect timeout, not a retry loop. */
static int run_op(redis_store *rs, rs_attempt_fn attempt, void *arg, char *err, size_t errlen)
{
    sigpipe_guard guard;
    esc_redis_sigpipe_block(&guard);
    int reconnected = 0, lost = 0, rc = -1;
    for (;;) {
        if (rs->ctx == NULL) {
            if (reconnected || reconnect(rs, lost, err, errlen) != 0)
                break;
            reconnected = 1;
        }
        rs_result r = attempt(rs, arg, err, errlen);
        if (r != RS_LOST) {
            rc = r == RS_OK ? 0 : -1;
            break;
        }
        lost = 1;
        disconnect(rs);
    }
    esc_redis_sigpipe_restore(&guard);
    return rc;
}

/* Reads one reply; on failure describes it and reports the connection lost
 * (hiredis leaves a context unusable after any I/O or protocol error). */
static rs_result read_reply(redis_store *rs, const char *what, redisReply **out, char *err,
                            size_t errlen)
{
    void *reply = NULL;
    if (redisGetReply(rs->ctx, &reply) != REDIS_OK || reply == NULL) {
        describe_ctx_error(rs, what, errno, err, errlen);
        return RS_LOST;
    }
    *out = reply;
    return RS_OK;
}

/* ---- commit ---- */

static int append_op(redisContext *c, const esc_storage_op *op)
{
    if (op->kind == ESC_STORAGE_OP_PUT)
        return redisAppendCommand(c, "HSET escher:%s %s %b", op->table, op->key, op->value,
                                  op->len);
    return redisAppendCommand(c, "HDEL escher:%s %s", op->table, op->key);
}

/* Only buffers: hiredis sends nothing until the first redisGetReply. */
static int append_transaction(redisContext *c, const esc_storage_batch *b)
{
    if (redisAppendCommand(c, "MULTI") != REDIS_OK)
        return -1;
    for (size_t i = 0; i < b->count; i++) {
        if (append_op(c, &b->ops[i]) != REDIS_OK)
            return -1;
    }
    return redisAppendCommand(c, "EXEC");
}

/* Checks the reply to MULTI or to a queued command; keeps the first problem. */
void esc_redis_check_status(const redis_store *rs, const redisReply *r, const char *expect,
                         int *failed, char *err, size_t errlen)
{
    if (*failed)
        return;
    if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, expect) == 0)
        return;
    *failed = 1;
    if (r->type == REDIS_REPLY_ERROR)
        esc_storage_seterr(err, errlen, "%s: commit failed: %s", rs->where, r->str);
    else
        esc_storage_seterr(err, errlen, "%s: commit failed: expected %s from Redis",
                           rs->where, expect);
}

void esc_redis_check_exec(const redis_store *rs, const redisReply *r, size_t n, int *failed,
                       char *err, size_t errlen)
{
    if (*failed)
        return; /* EXEC then only says EXECABORT; the queued error said why */
    *failed = 1;
    if (r->type == REDIS_REPLY_ERROR) {
        esc_storage_seterr(err, errlen, "%s: commit failed: %s", rs->where, r->str);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n) {
        esc_storage_seterr(err, errlen, "%s: commit failed: unexpected reply to EXEC",
                           rs->where);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_INTEGER) {
            esc_storage_seterr(err, errlen, "%s: commit failed at write %zu of %zu: %s",
                               rs->where, i + 1, n,
                               e->type == REDIS_REPLY_ERROR ? e->str : "unexpected reply");
            return;
        }
    }
    *failed = 0;
}

/* Reads all n+2 replies even after a bad one, so the connection stays in step. */
static rs_result read_transaction(redis_store *rs, size_t n, char *err, size_t errlen)
{
    int failed = 0;
    for (size_t i = 0; i < n + 2; i++) {
        redisReply *r = NULL;
        if (read_reply(rs, "commit", &r, err, errlen) != RS_OK)
            return RS_LOST;
        if (i == 0)
            esc_redis_check_status(rs, r, "OK", &failed, err, errlen);
        else if (i <= n)
            esc_redis_check_status(rs, r, "QUEUED", &failed, err, errlen);
        else
            esc_redis_check_exec(rs, r, n, &failed, err, errlen);
        freeReplyObject(r);
    }
    return failed ? RS_FAIL : RS_OK;
}

static rs_result commit_attempt(redis_store *rs, void *arg, char *err, size_t errlen)
{
    const esc_storage_batch *b = arg;
    if (append_transaction(rs->ctx, b) != 0) {
        /* Out of memory while buffering; nothing was sent. Dropping the
         * context discards the half-built pipeline. */
        esc_storage_seterr(err, errlen, "%s: commit failed: %s", rs->where,
                           rs->ctx->errstr[0] ? rs->ctx->errstr : "out of memory");
        disconnect(rs);
        return RS_FAIL;
    }
    return read_transaction(rs, b->count, err, errlen);
}

static int redis_commit(esc_storage *st, esc_storage_batch *b, char *err, size_t errlen)
{
    redis_store *rs = (redis_store *)st;
    if (rs->async != NULL) {
        /* It would go on another connection and could overtake a commit queued on
         * the loop's, breaking the order of writes. */
        esc_storage_seterr(err, errlen, "%s: synchronous commit on a store attached to a loop",
                           rs->where);
        return -1;
    }
    return run_op(rs, commit_attempt, b, err, errlen);
}

static int redis_attach(esc_storage *st, struct ev_loop *loop, char *err, size_t errlen)
{
    return esc_redis_attach((redis_store *)st, loop, err, errlen);
}

static void redis_commit_async(esc_storage *st, esc_storage_batch *b, int timeout_ms,
                               esc_storage_done_fn done, void *ud)
{
    redis_store *rs = (redis_store *)st;
    if (rs->async != NULL) {
        esc_redis_commit_async(rs, b, timeout_ms, done, ud);
        return;
    }
    char err[512] = "";
    int rc = redis_commit(st, b, err, sizeof err);
    esc_storage_batch_free(b);
    done(ud, rc == 0 ? NULL : err);
}

/* ---- get ---- */

typedef struct {
    const char *table;
    const char *key;
    void **value;
    size_t *len;
    int found;
} get_args;

static rs_result take_value(get_args *a, const redisReply *r)
{
    void *copy = esc_xmalloc(r->len ? r->len : 1);
    memcpy(copy, r->str, r->len);
    *a->value = copy;
    *a->len = r->len;
    a->found = 1;
    return RS_OK;
}

static rs_result get_attempt(redis_store *rs, void *arg, char *err, size_t errlen)
{
    get_args *a = arg;
    redisReply *r = redisCommand(rs->ctx, "HGET escher:%s %s", a->table, a->key);
    if (r == NULL) {
        describe_ctx_error(rs, "HGET", errno, err, errlen);
        return RS_LOST;
    }
    rs_result res = RS_OK;
    if (r->type == REDIS_REPLY_STRING) {
        res = take_value(a, r);
        if (res != RS_OK)
            esc_storage_seterr(err, errlen, "%s: HGET: out of memory", rs->where);
    } else if (r->type != REDIS_REPLY_NIL) {
        res = RS_FAIL;
        esc_storage_seterr(err, errlen, "%s: HGET escher:%s failed: %s", rs->where, a->table,
                           r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
    freeReplyObject(r);
    return res;
}

static int redis_get(esc_storage *st, const char *table, const char *key, void **value,
                     size_t *len)
{
    redis_store *rs = (redis_store *)st;
    get_args a = { table, key, value, len, 0 };
    if (run_op(rs, get_attempt, &a, rs->last_error, sizeof(rs->last_error)) != 0)
        return -1;
    return a.found;
}

/* ---- scan ---- */

/* The cursor lives here, not in the attempt, so that after a reconnect the
 * scan resumes where it stopped (HSCAN cursors hold no server-side state)
 * instead of handing the caller the same entries twice. */
typedef struct {
    const char *table;
    esc_storage_scan_fn fn;
    void *ud;
    char cursor[32];
    long count;
} scan_args;

static int valid_page(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= 32 ||
        r->element[1]->type != REDIS_REPLY_ARRAY || r->element[1]->elements % 2 != 0)
        return 0;
    for (size_t i = 0; i < r->element[1]->elements; i++) {
        if (r->element[1]->element[i]->type != REDIS_REPLY_STRING)
            return 0;
    }
    return 1;
}

static void deliver_page(scan_args *a, const redisReply *r)
{
    const redisReply *items = r->element[1];
    for (size_t i = 0; i + 1 < items->elements; i += 2) {
        if (a->fn != NULL)
            a->fn(a->ud, items->element[i]->str, items->element[i + 1]->str,
                  items->element[i + 1]->len);
        a->count++;
    }
    memcpy(a->cursor, r->element[0]->str, r->element[0]->len);
    a->cursor[r->element[0]->len] = '\0';
}

/* One HSCAN page; returns RS_OK with a->cursor "0" once the scan is complete. */
static rs_result scan_page(redis_store *rs, scan_args *a, char *err, size_t errlen)
{
    redisReply *r = redisCommand(rs->ctx, "HSCAN escher:%s %s COUNT " SCAN_COUNT, a->table,
                                 a->cursor);
    if (r == NULL) {
        describe_ctx_error(rs, "HSCAN", errno, err, errlen);
        return RS_LOST;
    }
    rs_result res = RS_OK;
    if (valid_page(r)) {
        deliver_page(a, r);
    } else {
        res = RS_FAIL;
        esc_storage_seterr(err, errlen, "%s: HSCAN escher:%s failed: %s", rs->where, a->table,
                           r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
    freeReplyObject(r);
    return res;
}

static rs_result scan_attempt(redis_store *rs, void *arg, char *err, size_t errlen)
{
    scan_args *a = arg;
    do {
        rs_result res = scan_page(rs, a, err, errlen);
        if (res != RS_OK)
            return res;
    } while (strcmp(a->cursor, "0") != 0);
    return RS_OK;
}

static long redis_scan(esc_storage *st, const char *table, esc_storage_scan_fn fn, void *ud)
{
    redis_store *rs = (redis_store *)st;
    scan_args a = { .table = table, .fn = fn, .ud = ud, .cursor = "0", .count = 0 };
    if (run_op(rs, scan_attempt, &a, rs->last_error, sizeof(rs->last_error)) != 0)
        return -1;
    return a.count;
}

/* ---- lifecycle ---- */

static void redis_close(esc_storage *st)
{
    redis_store *rs = (redis_store *)st;
    esc_redis_detach(rs);
    disconnect(rs);
    free(rs);
}

static const esc_storage_vtable redis_vtable = {
    .durable = 1,
    .close = redis_close,
    .commit = redis_commit,
    .attach = redis_attach,
    .commit_async = redis_commit_async,
    .get = redis_get,
    .scan = redis_scan,
};

esc_storage *esc_storage_redis_open(const char *uri, char *err, size_t errlen)
{
    redis_store *rs = esc_xcalloc(1, sizeof(*rs));
    rs->base.vt = &redis_vtable;
    sigpipe_guard guard;
    esc_redis_sigpipe_block(&guard);
    int rc = parse_uri(rs, uri, err, errlen) == 0 ? connect_ctx(rs, err, errlen) : -1;
    esc_redis_sigpipe_restore(&guard);
    if (rc != 0) {
        free(rs);
        return NULL;
    }
    return &rs->base;
}
