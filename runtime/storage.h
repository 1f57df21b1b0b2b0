/* storage.h: the GCS table store, behind one interface with two backends.
 *
 * A store holds named tables of (key -> bytes). The GCS writes every change
 * through here before it acknowledges it; after a restart it reloads each table
 * with esc_storage_scan. Backends: the embedded in-memory store (default; state
 * dies with the process) and Redis through hiredis (one hash per table).
 *
 * Two ways to commit. esc_storage_commit blocks until the batch is durable; it is
 * for loading and tools. A daemon serving from an event loop attaches the store to
 * its loop (esc_storage_attach) and commits with esc_storage_commit_async, so that a
 * slow or hung backend delays only the writes waiting for it, never the loop.
 *
 * Not thread-safe: a store is owned by the GCS event-loop thread.
 */
#ifndef ESC_STORAGE_H
#define ESC_STORAGE_H

#include <stddef.h>
#include <stdint.h>

struct ev_loop;

typedef struct esc_storage esc_storage;

/* Opens a store from a URI: "memory" (or NULL/"") for the embedded store, or
 * "redis://HOST:PORT[/DB]". Returns NULL on failure and, when err is not NULL,
 * writes a one-line reason into err (errlen bytes). The caller owns the store
 * and frees it with esc_storage_close. */
esc_storage *esc_storage_open(const char *uri, char *err, size_t errlen);

/* Closes the store and frees it; asynchronous commits still waiting complete with
 * an error first. NULL is allowed. */
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

/* Frees a batch that will not be committed (NULL is allowed). */
void esc_storage_batch_free(esc_storage_batch *b);

/* Number of writes in the batch. */
size_t esc_storage_batch_size(const esc_storage_batch *b);

/* Applies every write of the batch atomically and durably (for Redis: the reply
 * to EXEC has arrived), then frees the batch (always, even on failure).
 * Returns 0 on success, -1 on failure with a reason in err. On failure nothing
 * of the batch is visible. */
int esc_storage_commit(esc_storage *st, esc_storage_batch *b, char *err, size_t errlen);

/* Runs once when an asynchronous commit is over, on the loop thread: err is NULL
 * when the batch is durable, else a one-line reason (valid during the call only). */
typedef void (*esc_storage_done_fn)(void *ud, const char *err);

/* Serves later asynchronous commits from loop. Returns 0, or -1 with err. A store
 * that is not attached completes esc_storage_commit_async before it returns; so does
 * the memory store always. After attaching, use esc_storage_commit_async for
 * writes: a synchronous commit is refused, since it could overtake an asynchronous
 * one in flight. Reads stay synchronous (they are for loading at start). */
int esc_storage_attach(esc_storage *st, struct ev_loop *loop, char *err, size_t errlen);

/* Applies the batch like esc_storage_commit, then calls done(ud, NULL); or, when it
 * fails or no answer comes within timeout_ms (> 0: from this call), done(ud, reason).
 * Takes the batch (freed, always). Commits reach the backend and complete in the
 * order they were made. A commit that failed is not applied: one that Redis
 * applies after its deadline is undone before any later commit (storage_redis.c
 * says when that cannot be known). done may run before this returns. */
void esc_storage_commit_async(esc_storage *st, esc_storage_batch *b, int timeout_ms,
                              esc_storage_done_fn done, void *ud);

/* Reads one value. Returns 1 and sets *value (malloc'd, caller frees) and *len
 * when found, 0 when absent, -1 on error. */
int esc_storage_get(esc_storage *st, const char *table, const char *key,
                    void **value, size_t *len);

/* Calls fn once for every entry of table (order unspecified). The key and value
 * are only valid during the call. Returns the number of entries, or -1 on error. */
typedef void (*esc_storage_scan_fn)(void *ud, const char *key, const void *value, size_t len);
long esc_storage_scan(esc_storage *st, const char *table, esc_storage_scan_fn fn, void *ud);

#endif
