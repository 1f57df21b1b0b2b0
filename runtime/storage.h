/* storage.h: the GCS table store, behind one interface with two backends.
 *
 * A store holds named tables of (key -> bytes). The GCS writes every change
 * through here before it acknowledges it; after a restart it reloads each table
 * with esc_storage_scan. Backends: the embedded in-memory store (default; state
 * dies with the process) and Redis through hiredis (one hash per table).
 *
 * Not thread-safe: a store is owned by the GCS event-loop thread.
 */
#ifndef ESC_STORAGE_H
#define ESC_STORAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct esc_storage esc_storage;

/* Opens a store from a URI: "memory" (or NULL/"") for the embedded store, or
 * "redis://HOST:PORT[/DB]". Returns NULL on failure and, when err is not NULL,
 * writes a one-line reason into err (errlen bytes). The caller owns the store
 * and frees it with esc_storage_close. */
esc_storage *esc_storage_open(const char *uri, char *err, size_t errlen);

/* Closes the store and frees it. NULL is allowed. */
void esc_storage_close(esc_storage *st);

/* True when the store keeps data beyond the process (Redis). */
int esc_storage_is_durable(const esc_storage *st);

/* A group of writes applied atomically (Redis MULTI/EXEC) by esc_storage_commit.
 * Build it with esc_storage_put / esc_storage_del, then commit. Writes are
 * buffered in the batch (the batch copies keys and values). */
typedef struct esc_storage_batch esc_storage_batch;

/* Starts an empty batch; the caller owns it until esc_storage_commit. */
esc_storage_batch *esc_storage_batch_new(void);

/* Adds "set table[key] = value (len bytes)" to the batch. */
void esc_storage_put(esc_storage_batch *b, const char *table, const char *key,
                     const void *value, size_t len);

/* Adds "delete table[key]" to the batch (no error if absent). */
void esc_storage_del(esc_storage_batch *b, const char *table, const char *key);

/* Number of writes in the batch. */
size_t esc_storage_batch_size(const esc_storage_batch *b);

/* Applies every write of the batch atomically and durably (for Redis: the reply
 * to EXEC has arrived), then frees the batch (always, even on failure).
 * Returns 0 on success, -1 on failure with a reason in err. On failure nothing
 * of the batch is visible. */
int esc_storage_commit(esc_storage *st, esc_storage_batch *b, char *err, size_t errlen);

/* Reads one value. Returns 1 and sets *value (malloc'd, caller frees) and *len
 * when found, 0 when absent, -1 on error. */
int esc_storage_get(esc_storage *st, const char *table, const char *key,
                    void **value, size_t *len);

/* Calls fn once for every entry of table (order unspecified). The key and value
 * are only valid during the call. Returns the number of entries, or -1 on error. */
typedef void (*esc_storage_scan_fn)(void *ud, const char *key, const void *value, size_t len);
long esc_storage_scan(esc_storage *st, const char *table, esc_storage_scan_fn fn, void *ud);

#endif
