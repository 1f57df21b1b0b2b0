/* storage_redis_internal.h: what the two halves of the Redis backend share.
 *
 * storage_redis.c holds the store, its URI, the synchronous connection (open,
 * get, scan, and commits before the store is attached to a loop) and the checks
 * of a transaction's replies. storage_redis_async.c holds the asynchronous
 * connection that serves commits once the store is attached to an event loop.
 */
#ifndef ESC_STORAGE_REDIS_INTERNAL_H
#define ESC_STORAGE_REDIS_INTERNAL_H

#include <signal.h>

#include <hiredis/hiredis.h>

#include "storage_backend.h"

#define ESC_REDIS_HOST_MAX 255

typedef struct esc_redis_async esc_redis_async;

typedef struct {
    esc_storage base;
    redisContext *ctx; /* synchronous connection; NULL while disconnected */
    char host[ESC_REDIS_HOST_MAX + 1];
    int port;
    int db;
    char where[ESC_REDIS_HOST_MAX + 32]; /* "redis HOST:PORT/DB", prefix of messages */
    /* get and scan have no err parameter; their last reason is kept here so it
     * can be seen in a debugger or core file. */
    char last_error[256];
    esc_redis_async *async; /* the loop's connection; NULL until attached */
} esc_redis_store;

/* SIGPIPE blocked on this thread around a write to Redis (storage_redis.c). */
typedef struct {
    sigset_t old;
    int was_pending;
} esc_redis_sigpipe_guard;

void esc_redis_sigpipe_block(esc_redis_sigpipe_guard *g);
void esc_redis_sigpipe_restore(const esc_redis_sigpipe_guard *g);

/* Checks the reply to MULTI (expect "OK") or to a queued command ("QUEUED"), then
 * the reply to EXEC of n writes. Each keeps the first problem: *failed is set and
 * err says why. */
void esc_redis_check_status(const esc_redis_store *rs, const redisReply *r, const char *expect,
                            int *failed, char *err, size_t errlen);
void esc_redis_check_exec(const esc_redis_store *rs, const redisReply *r, size_t n,
                          int *failed, char *err, size_t errlen);

/* storage_redis_async.c. attach connects (asynchronously) on loop; commit_async
 * queues a commit on that connection; detach fails what is still waiting and
 * closes the connection. */
int esc_redis_attach(esc_redis_store *rs, struct ev_loop *loop, char *err, size_t errlen);
void esc_redis_commit_async(esc_redis_store *rs, esc_storage_batch *b, int timeout_ms,
                            esc_storage_done_fn done, void *ud);
void esc_redis_detach(esc_redis_store *rs);

#endif
