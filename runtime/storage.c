/* storage.c: URI dispatch, the write batch, and calls through the backend vtable.
 * See storage.h for the contract and storage_backend.h for the backend side.
 */
#include "storage.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage_backend.h"
#include "xalloc.h"

#define REDIS_SCHEME "redis://"

void esc_storage_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *p = err; *p != '\0'; p++) {
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    }
}

esc_storage *esc_storage_open(const char *uri, char *err, size_t errlen)
{
    if (uri == NULL || uri[0] == '\0' || strcmp(uri, "memory") == 0)
        return esc_storage_memory_open(err, errlen);
    if (strncmp(uri, REDIS_SCHEME, strlen(REDIS_SCHEME)) == 0)
        return esc_storage_redis_open(uri, err, errlen);
    esc_storage_seterr(err, errlen,
                       "storage: unsupported URI \"%.200s\" (expected \"memory\" or "
                       "\"redis://HOST:PORT[/DB]\")",
                       uri);
    return NULL;
}

void esc_storage_close(esc_storage *st)
{
    if (st != NULL)
        st->vt->close(st);
}

int esc_storage_is_durable(const esc_storage *st)
{
    return st != NULL && st->vt->durable;
}

/* ---- batch ---- */

esc_storage_batch *esc_storage_batch_new(void)
{
    return esc_xcalloc(1, sizeof(esc_storage_batch));
}

static void op_free(esc_storage_op *op)
{
    free(op->table);
    free(op->key);
    free(op->value);
}

void esc_storage_batch_free(esc_storage_batch *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->count; i++)
        op_free(&b->ops[i]);
    free(b->ops);
    free(b);
}

/* put/del return nothing, so a write that cannot be recorded (a bad argument; running
 * out of memory aborts, xalloc.h) poisons the batch instead: committing a batch that silently
 * lost one of its writes would break "all or nothing". */
static void batch_invalidate(esc_storage_batch *b, const char *why)
{
    if (b->invalid == NULL)
        b->invalid = why;
}

static esc_storage_op *batch_append(esc_storage_batch *b)
{
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 8;
        b->ops = esc_xrealloc(b->ops, cap * sizeof(*b->ops));
        b->cap = cap;
    }
    esc_storage_op *op = &b->ops[b->count];
    memset(op, 0, sizeof(*op));
    return op;
}

/* Records one write; value is NULL for a delete. */
static void batch_add(esc_storage_batch *b, esc_storage_op_kind kind, const char *table,
                      const char *key, const void *value, size_t len)
{
    esc_storage_op *op = batch_append(b);
    op->kind = kind;
    op->table = esc_xstrdup(table);
    op->key = esc_xstrdup(key);
    if (kind == ESC_STORAGE_OP_PUT) {
        /* Never NULL, so backends need no special case for empty values. */
        op->value = esc_xmalloc(len ? len : 1);
        if (len > 0)
            memcpy(op->value, value, len);
        op->len = len;
    }
    b->count++;
}

void esc_storage_put(esc_storage_batch *b, const char *table, const char *key,
                     const void *value, size_t len)
{
    if (b == NULL)
        return;
    b->writes++;
    if (table == NULL || key == NULL || (value == NULL && len > 0)) {
        batch_invalidate(b, "put with a NULL table, key or value");
        return;
    }
    batch_add(b, ESC_STORAGE_OP_PUT, table, key, value, len);
}

void esc_storage_del(esc_storage_batch *b, const char *table, const char *key)
{
    if (b == NULL)
        return;
    b->writes++;
    if (table == NULL || key == NULL) {
        batch_invalidate(b, "delete with a NULL table or key");
        return;
    }
    batch_add(b, ESC_STORAGE_OP_DEL, table, key, NULL, 0);
}

size_t esc_storage_batch_size(const esc_storage_batch *b)
{
    return b != NULL ? b->writes : 0;
}

/* The checks of every commit; returns 1 when the batch needs the backend. */
static int precheck(esc_storage *st, esc_storage_batch *b, char *err, size_t errlen)
{
    if (st == NULL)
        esc_storage_seterr(err, errlen, "storage: commit on a NULL store");
    else if (b == NULL)
        esc_storage_seterr(err, errlen, "storage: commit of a NULL batch "
                                        "(esc_storage_batch_new failed?)");
    else if (b->invalid != NULL)
        esc_storage_seterr(err, errlen, "storage: commit refused: %s", b->invalid);
    else
        return 1;
    return 0;
}

int esc_storage_commit(esc_storage *st, esc_storage_batch *b, char *err, size_t errlen)
{
    int rc = -1;
    /* An empty batch has nothing to apply: spare the backend a round trip. */
    if (precheck(st, b, err, errlen))
        rc = b->count == 0 ? 0 : st->vt->commit(st, b, err, errlen);
    esc_storage_batch_free(b);
    return rc;
}

int esc_storage_attach(esc_storage *st, struct ev_loop *loop, char *err, size_t errlen)
{
    if (st == NULL || loop == NULL) {
        esc_storage_seterr(err, errlen, "storage: attach needs a store and a loop");
        return -1;
    }
    return st->vt->attach ? st->vt->attach(st, loop, err, errlen) : 0;
}


void esc_storage_commit_async(esc_storage *st, esc_storage_batch *b, int timeout_ms,
                              esc_storage_done_fn done, void *ud)
{
    char err[512] = "";
    if (!precheck(st, b, err, sizeof err)) {
        esc_storage_batch_free(b);
        done(ud, err);
        return;
    }
    /* Even an empty batch goes through the backend's queue: it must not complete
     * ahead of commits made before it. */
    if (st->vt->commit_async != NULL) {
        st->vt->commit_async(st, b, timeout_ms, done, ud);
        return;
    }
    /* A backend that completes at once (memory, or Redis not attached). */
    int rc = esc_storage_commit(st, b, err, sizeof err);
    done(ud, rc == 0 ? NULL : err);
}

int esc_storage_get(esc_storage *st, const char *table, const char *key, void **value,
                    size_t *len)
{
    if (st == NULL || table == NULL || key == NULL || value == NULL || len == NULL)
        return -1;
    *value = NULL;
    *len = 0;
    return st->vt->get(st, table, key, value, len);
}

long esc_storage_scan(esc_storage *st, const char *table, esc_storage_scan_fn fn, void *ud)
{
    if (st == NULL || table == NULL)
        return -1;
    return st->vt->scan(st, table, fn, ud);
}
