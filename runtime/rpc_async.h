/* rpc_async.h: outbound unary calls for an event-loop owner that must never block.
 *
 * A caller on the loop thread queues a call; a sender thread makes it (blocking,
 * esc_rpc_call) and posts the outcome back to the loop, where the callback runs. Calls
 * go out in queue order on one thread, which keeps per-destination order too.
 */
#ifndef ESC_RPC_ASYNC_H
#define ESC_RPC_ASYNC_H

#include "rpc.h"

typedef struct esc_rpc_async esc_rpc_async;

/* Runs on the owner's thread with the outcome; reply (may be NULL) is owned by the
 * callee (free with protobuf_c_message_free_unpacked). */
typedef void (*esc_rpc_async_fn)(void *ud, int code, const esc_status *st, ProtobufCMessage *reply);

/* Starts the sender thread; post/post_ud deliver callbacks (esc_loop_post). */
esc_rpc_async *esc_rpc_async_new(esc_rpc_post_fn post, void *post_ud);

/* Queues a call of `method` (its handle, &ESC_M_GCS_KV_PUT). req is copied now; the
 * handle is not (the generated ones are static). fn may be NULL (fire and forget). The
 * channel must outlive the call. */
void esc_rpc_async_call(esc_rpc_async *a, esc_rpc_channel *ch, const esc_rpc_method *method,
                        const ProtobufCMessage *req, int timeout_ms, int flags,
                        esc_rpc_async_fn fn, void *ud);

/* Ends every call not made yet with code and msg (their callbacks are posted); the call
 * in flight, if any, goes on. For a destination known to be gone: what waits behind a
 * failed call would only wait for its own failure. */
void esc_rpc_async_fail_queued(esc_rpc_async *a, int code, const char *msg);

/* Lets the call in flight end, joins the thread and frees it; calls not made yet end
 * with ESC_UNAVAILABLE. Every callback is posted (exactly once), so the owner drains its
 * loop afterwards. */
void esc_rpc_async_free(esc_rpc_async *a);

#endif
