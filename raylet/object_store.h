/* object_store.h: the node's in-memory object store (one per raylet).
 *
 * An object is an immutable byte value with an id, an owner job and, for a failed task,
 * an error text. It is written in chunks into a buffer reserved at creation and becomes
 * readable once sealed (the last byte written). The store has a byte capacity (the
 * raylet's object_store_memory): an object that does not fit is refused with
 * RESOURCE_EXHAUSTED, never evicted for, and never a crash. An unsealed object whose
 * writer stopped writing is dropped by object_store_expire.
 *
 * Readers pin an object while they stream it out; freeing a pinned object removes it
 * from the index at once (no new reader finds it) and releases its memory, counted in
 * `used`, when the last pin goes.
 *
 * Not thread-safe: the raylet's loop thread owns it. Clocks are passed in (now_ms), so
 * the store has no timer of its own and tests drive time directly.
 */
#ifndef RAYLET_OBJECT_STORE_H
#define RAYLET_OBJECT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc.h" /* esc_status */

/* Longest error text kept with an error object; longer ones are cut. */
#define OBJECT_ERROR_MAX 4096

typedef struct object_store object_store;
typedef struct object_entry object_entry;

typedef struct {
    uint64_t capacity;   /* bytes */
    uint64_t used;       /* bytes reserved by objects, sealed or not, and freed-but-pinned */
    uint32_t objects;    /* objects in the index (sealed and unsealed) */
    uint32_t unsealed;
} object_store_stats;

/* A read-only view of a sealed object, valid until the object is freed (or, when it
 * was pinned, until it is unpinned). */
typedef struct {
    const char *id;
    const char *job_id;
    const uint8_t *data;
    uint64_t size;
    bool is_error;
    const char *error;   /* "" unless is_error */
    const char *origin;  /* the node that can make it again, "" none (TaskSpec.origin) */
} object_view;

/* A store of `capacity` bytes; unsealed objects untouched for partial_timeout_ms are
 * dropped by object_store_expire. Free with object_store_free. */
object_store *object_store_new(uint64_t capacity, uint64_t partial_timeout_ms);

/* Frees every object, pinned or not (the owner ends every reader first). */
void object_store_free(object_store *s);

/* Reserves an unsealed object of `size` bytes. error is copied (NULL: ""); an object of
 * size 0 is sealed at once. Returns ESC_OK, ALREADY_EXISTS when the id is taken,
 * INVALID_ARGUMENT for a bad id, or RESOURCE_EXHAUSTED "object store full (used X of Y
 * bytes)" when it does not fit (st says which). */
int object_store_create(object_store *s, const char *id, const char *job_id, uint64_t size,
                        bool is_error, const char *error, uint64_t now_ms, esc_status *st);

/* Writes len bytes at offset into an unsealed object. Chunks come in order: offset must
 * be where the last one ended; a repeat of bytes already written (a retried call) is
 * accepted and ignored. *sealed tells whether the object is complete now. Returns
 * ESC_OK, NOT_FOUND (no such object), FAILED_PRECONDITION (already sealed) or
 * INVALID_ARGUMENT (past the end, or a gap). */
int object_store_write(object_store *s, const char *id, uint64_t offset, const void *data,
                       size_t len, uint64_t now_ms, bool *sealed, esc_status *st);

/* Creates, writes and seals an object in one call: the C API for the raylet's own
 * writers (task returns). Same codes as object_store_create. */
int object_store_put(object_store *s, const char *id, const char *job_id, const void *data,
                     size_t len, bool is_error, const char *error, esc_status *st);

/* Records the node that can make the object again (a task's return: its origin), so
 * that a directory that restarted learns it again with the object. False when the id
 * is not in the store or origin is empty. */
bool object_store_set_origin(object_store *s, const char *id, const char *origin);

/* The view of a sealed object: true, or false when absent or not sealed yet. */
bool object_store_get(const object_store *s, const char *id, object_view *out);

/* True when the id is in the index, sealed or not: *sealed (may be NULL) says which,
 * and *out (may be NULL) describes it (the data of an unsealed object is partial). */
bool object_store_peek(const object_store *s, const char *id, object_view *out, bool *sealed);

/* Pins a sealed object for a reader and fills *out; NULL when absent or unsealed.
 * Every pin is ended with object_store_unpin. */
object_entry *object_store_pin(object_store *s, const char *id, object_view *out);
void object_store_unpin(object_store *s, object_entry *e);

/* Frees one object (sealed or not). Returns true when it was in the index; *was_sealed
 * (may be NULL) tells whether it was sealed. */
bool object_store_delete(object_store *s, const char *id, bool *was_sealed);

/* Frees every object of a job. Returns how many. */
size_t object_store_delete_job(object_store *s, const char *job_id);

/* Drops unsealed objects not written to for the partial timeout. Returns how many. */
size_t object_store_expire(object_store *s, uint64_t now_ms);

/* Calls fn for every sealed object (for re-announcing locations). fn must not change
 * the store. */
void object_store_each_sealed(const object_store *s,
                              void (*fn)(void *ud, const object_view *v), void *ud);

/* What the state API shows of an object (docs/observability.md): never its data. */
typedef struct {
    const char *id;
    const char *job_id;
    uint64_t size;       /* bytes of its value */
    bool sealed;
    bool pinned;         /* a reader streams it out now */
    bool is_error;
} object_row;

/* Calls fn for every object in the index, sealed or not. fn must not change the store. */
void object_store_each(const object_store *s, void (*fn)(void *ud, const object_row *row),
                       void *ud);

void object_store_get_stats(const object_store *s, object_store_stats *out);

#endif
