/* storage_backend.h: the internal interface between storage.c and its backends.
 *
 * Not part of the public API (see storage.h). storage.c owns URI dispatch and
 * the batch type; each backend file supplies an open function and a vtable.
 * A backend's store struct embeds esc_storage as its first member, so a
 * backend casts the esc_storage pointer it receives back to its own type.
 */
#ifndef ESC_STORAGE_BACKEND_H
#define ESC_STORAGE_BACKEND_H

#include <stddef.h>

#include "storage.h"

typedef enum {
    ESC_STORAGE_OP_PUT,
    ESC_STORAGE_OP_DEL,
} esc_storage_op_kind;

/* One buffered write. Strings and value are owned by the batch; a backend's
 * commit may take ownership of any of them by setting the field to NULL (the
 * memory store does, to avoid copying every value a second time). value is
 * never NULL for a put, even when len is 0. */
typedef struct {
    esc_storage_op_kind kind;
    char *table;
    char *key;
    void *value;
    size_t len;
} esc_storage_op;

struct esc_storage_batch {
    esc_storage_op *ops;
    size_t count;        /* ops recorded */
    size_t cap;
    size_t writes;       /* put/del calls, recorded or not */
    const char *invalid; /* first reason the batch cannot commit, or NULL */
};

typedef struct {
    int durable;
    /* Frees the store (never NULL here). */
    void (*close)(esc_storage *st);
    /* Applies all of b->ops[0..count) or none of them. b is valid and non-empty;
     * storage.c frees it afterwards. Returns 0, or -1 with a reason in err. */
    int (*commit)(esc_storage *st, esc_storage_batch *b, char *err, size_t errlen);
    /* Optional (NULL: commits complete at once through commit). attach: starts
     * serving asynchronous commits from loop; 0 or -1 with err. commit_async:
     * takes b (valid, non-empty) and calls done exactly once (storage.h). */
    int (*attach)(esc_storage *st, struct ev_loop *loop, char *err, size_t errlen);
    void (*commit_async)(esc_storage *st, esc_storage_batch *b, int timeout_ms,
                         esc_storage_done_fn done, void *ud);
    int (*get)(esc_storage *st, const char *table, const char *key, void **value, size_t *len);
    /* fn may be NULL (count only). */
    long (*scan)(esc_storage *st, const char *table, esc_storage_scan_fn fn, void *ud);
} esc_storage_vtable;

struct esc_storage {
    const esc_storage_vtable *vt;
};

/* Backend constructors; the URI has already been matched by scheme. */
esc_storage *esc_storage_memory_open(char *err, size_t errlen);
esc_storage *esc_storage_redis_open(const char *uri, char *err, size_t errlen);

/* Writes a formatted reason into err (when err is not NULL and errlen > 0),
 * truncating as needed and turning any line break into a space, so every
 * message is one line whatever text (server replies, strerror) it quotes. */
void esc_storage_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
