/* rpc.h: one generic binding that serves and calls any protobuf-c service over gRPC core.
 *
 * Methods are named by generated handles (ESC_M_GCS_SUBSCRIBE: proto/rpc_method.h), which
 * point into the service's ProtobufCServiceDescriptor, so a method renamed in a .proto
 * fails the build; requests and replies are packed and unpacked with the descriptors,
 * so no method has hand-written serialization. Every call carries the cluster token in
 * the "x-escher-token" metadata entry; a server with a token answers UNAUTHENTICATED to
 * calls without it. Daemons add their daemon key ("x-escher-daemon"), which daemon-only
 * calls need (PERMISSION_DENIED without it; docs/security.md).
 *
 * Transport: plaintext, or TLS when the process environment says so (ESCHER_TLS_CERT and
 * ESCHER_TLS_KEY for servers, ESCHER_TLS_CA for clients; see rpc_tls.c).
 *
 * Server threading: one completion-queue thread receives calls and hands each one, with
 * its unpacked request, to the owner's event loop through a post function. Handlers run
 * there and answer from there (or from any thread) with esc_rpc_reply / esc_rpc_send /
 * esc_rpc_finish. Client calls are blocking and may be made from any thread.
 */
#ifndef ESC_RPC_H
#define ESC_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "escher/status.h" /* esc_status and the status codes: public */
#include "rpc_methods.h"   /* esc_rpc_method and the ESC_M_* handles: generated */

/* Largest message accepted by servers and clients (bigger ones: RESOURCE_EXHAUSTED). */
#define ESC_RPC_MAX_MESSAGE (64 * 1024 * 1024)

/* ---------------------------------------------------------------- server */

typedef struct esc_rpc_server esc_rpc_server;
typedef struct esc_rpc_ctx esc_rpc_ctx;

/* Runs fn(arg) on the owner's thread; must be thread-safe (esc_loop_post is one). */
typedef void (*esc_rpc_post_fn)(void *post_ud, void (*fn)(void *), void *arg);

/* A method handler. Runs on the owner's thread with the unpacked request, which it
 * does not own: it is freed with the call, which may happen as soon as the handler
 * answers, so copy what is needed before esc_rpc_reply / esc_rpc_finish. It must eventually answer with
 * esc_rpc_reply or esc_rpc_finish (possibly later, from any thread), and may first
 * send stream messages with esc_rpc_send. */
typedef void (*esc_rpc_handler)(esc_rpc_ctx *call, const ProtobufCMessage *req, void *ud);

/* Runs on the owner's thread when the peer cancels or disconnects before the call was
 * finished. After it returns, the handler's side must not use the call again except
 * through esc_rpc_finish/esc_rpc_finish, which stay safe. */
typedef void (*esc_rpc_cancel_fn)(esc_rpc_ctx *call, void *ud);

/* Creates a server listening on addr ("127.0.0.1:0" picks a free port). token may be
 * NULL (no authentication). Returns NULL on failure with a reason in err. */
esc_rpc_server *esc_rpc_server_new(const char *addr, const char *token, esc_rpc_post_fn post,
                                   void *post_ud, char *err, size_t errlen);

/* The port the server is bound to. */
int esc_rpc_server_port(const esc_rpc_server *s);

/* Registers the handler of one method (its handle, &ESC_M_GCS_SUBSCRIBE). Must be
 * called before esc_rpc_server_start. Returns 0, or -1 when the handle is NULL or not a
 * method of its service, the method is already registered, or gRPC refuses it; ud is
 * passed to the handler. A failure cannot pass unnoticed: it logs one error line naming
 * the service and the method, and esc_rpc_server_start then refuses to serve (-1), so a
 * daemon exits at startup instead of answering UNIMPLEMENTED. */
int esc_rpc_server_handle(esc_rpc_server *s, const esc_rpc_method *method, esc_rpc_handler fn,
                          void *ud);

/* Refuses, with INVALID_ARGUMENT naming the field, every request that has a string
 * field (nested ones included) that is not valid UTF-8, before its handler runs
 * (utf8.h says why). Must be called before esc_rpc_server_start. */
void esc_rpc_server_require_utf8(esc_rpc_server *s);
/* The i-th registered method's name and how many calls of it arrived (any outcome);
 * false past the last. Any thread. */
bool esc_rpc_server_method_calls(const esc_rpc_server *s, size_t i, const char **method,
                                 uint64_t *calls);

/* How long the calls of a method took, from arrival to their answer (the reply or the
 * error status queued), per upper bound esc_rpc_latency_le[i] in seconds (cumulative, as
 * Prometheus histograms are), with their count and sum. Calls that streamed messages
 * (subscriptions, pulls, logs) are left out: their length is the stream's life. */
#define ESC_RPC_LATENCY_BUCKETS 14
extern const double esc_rpc_latency_le[ESC_RPC_LATENCY_BUCKETS];
typedef struct {
    uint64_t le[ESC_RPC_LATENCY_BUCKETS];
    uint64_t count;
    double sum_s;
} esc_rpc_latency;
/* The i-th method's latencies into *out (and its name); false past the last. Any
 * thread; each field is read on its own, so a call ending meanwhile may be half in. */
bool esc_rpc_server_method_latency(const esc_rpc_server *s, size_t i, const char **method,
                                   esc_rpc_latency *out);

/* Starts serving (spawns the completion-queue thread). Returns 0, or -1 when the thread
 * cannot start or an esc_rpc_server_handle failed. */
int esc_rpc_server_start(esc_rpc_server *s);

/* Stops accepting calls, cancels the calls in progress, joins the thread and frees the
 * server. Calls still referenced by handlers stay valid until released. */
void esc_rpc_server_free(esc_rpc_server *s);

/* Metadata of an incoming call: the peer ("ipv4:127.0.0.1:5555"), owned by the call. */
const char *esc_rpc_ctx_peer(const esc_rpc_ctx *call);

/* Copies the value of the call's metadata entry `key` (a job's id or credential:
 * ESC_RPC_JOB_KEY, ESC_RPC_CREDENTIAL_KEY) into out (len bytes, NUL-terminated).
 * Returns false, with out "", when the call has no such entry or it does not fit. */
bool esc_rpc_ctx_metadata(const esc_rpc_ctx *call, const char *key, char *out, size_t len);

/* Metadata keys of a job's identity (esc_rpc_channel_set_job). */
#define ESC_RPC_JOB_KEY "x-escher-job"
#define ESC_RPC_CREDENTIAL_KEY "x-escher-job-credential"

/* Metadata keys of the cluster's other secrets (docs/security.md): the daemon key, which
 * escher-gcs and escher-raylet put on their own channels, and the operator key, which
 * an operator stop (FinishJob.operator_stop) carries. */
#define ESC_RPC_DAEMON_KEY "x-escher-daemon"
#define ESC_RPC_OPERATOR_KEY "x-escher-operator"

/* True when the call's metadata entry `key` equals secret, compared in constant time
 * (false when either is missing or secret is ""). */
bool esc_rpc_ctx_secret_is(const esc_rpc_ctx *call, const char *key, const char *secret);

/* True when the call carries the server's daemon key (esc_rpc_server_daemon_calls). */
bool esc_rpc_ctx_from_daemon(const esc_rpc_ctx *call);

/* Daemon-only calls: which calls of which method need the daemon key. `when` looks at
 * the request only (it runs on the completion-queue thread) and says whether this call
 * is one (NULL: every call of the method); `what` names such a call in the refusal
 * ("a node's Subscribe"; NULL: the method's name). */
typedef bool (*esc_rpc_daemon_when_fn)(const ProtobufCMessage *req);
typedef struct {
    const esc_rpc_method *method;
    esc_rpc_daemon_when_fn when;
    const char *what;
} esc_rpc_daemon_call;

/* Sets the server's daemon key (non-empty) and the daemon-only calls among the methods
 * registered so far: entries for methods this server does not serve are skipped. Such
 * a call without the key is answered PERMISSION_DENIED with a one-line reason before
 * its handler runs. Call after every esc_rpc_server_handle, before
 * esc_rpc_server_start. Returns 0, or -1 when an entry's handle is NULL or not a method
 * of its service, or the key is empty. */
int esc_rpc_server_daemon_calls(esc_rpc_server *s, const char *daemon_key,
                                const esc_rpc_daemon_call *calls, size_t n);

/* Sets the function called when the peer goes away before the call is finished. */
void esc_rpc_ctx_on_cancel(esc_rpc_ctx *call, esc_rpc_cancel_fn fn, void *ud);

/* Runs on the owner's thread when a stream message has gone out and none is waiting
 * behind the one now in flight. */
typedef void (*esc_rpc_drain_fn)(esc_rpc_ctx *call, void *ud);

/* Sets the function called each time the call's outbox drains (see esc_rpc_drain_fn),
 * so a handler streaming a large answer can send one message per call instead of
 * queuing (and copying) all of them at once: flow control without blocking the loop.
 * It is not called once the call is finished or cancelled. */
void esc_rpc_ctx_on_drained(esc_rpc_ctx *call, esc_rpc_drain_fn fn, void *ud);

/* True once the peer cancelled or the server is shutting down. */
bool esc_rpc_ctx_cancelled(const esc_rpc_ctx *call);

/* Sends one reply and OK, ending a unary call. The message is packed at once (the
 * caller keeps ownership of msg). Releases the handler's reference to the call. */
void esc_rpc_reply(esc_rpc_ctx *call, const ProtobufCMessage *msg);

/* Queues one stream message (packed at once; messages go out in order). Returns 0, or
 * -1 when the call is already cancelled or finished. */
int esc_rpc_send(esc_rpc_ctx *call, const ProtobufCMessage *msg);

/* A stream message packed once, to send the same bytes on many streams (a broadcast to
 * every subscriber): each send shares the packed bytes instead of packing them again. */
typedef struct esc_rpc_packed esc_rpc_packed;
/* Packs msg now (the caller keeps msg). */
esc_rpc_packed *esc_rpc_packed_new(const ProtobufCMessage *msg);
/* As esc_rpc_send, with bytes packed before; p stays the caller's, and may be freed as
 * soon as this returns. */
int esc_rpc_send_packed(esc_rpc_ctx *call, const esc_rpc_packed *p);
void esc_rpc_packed_free(esc_rpc_packed *p);

/* Ends the call with a status (after any queued messages) and releases the handler's
 * reference. message may be NULL. */
void esc_rpc_finish(esc_rpc_ctx *call, int code, const char *message);

/* ---------------------------------------------------------------- client */

typedef struct esc_rpc_channel esc_rpc_channel;

/* "host:port" into out, "[host]:port" for an IPv6 host, as channels take them. */
void esc_host_port(char *out, size_t len, const char *host, int port);

/* Opens a channel to target ("host:port") with the token (may be NULL). Connection is
 * lazy and automatic, with reconnect backoff capped at one second. Thread-safe. */
esc_rpc_channel *esc_rpc_channel_new(const char *target, const char *token);
void esc_rpc_channel_free(esc_rpc_channel *ch);

/* Makes every later call of the channel carry a job's id and credential (docs/
 * security.md), beside the token; job_id NULL or "" stops it. Strings are copied.
 * Thread-safe; calls already started keep what they had. */
void esc_rpc_channel_set_job(esc_rpc_channel *ch, const char *job_id, const char *credential);

/* Makes every later call of the channel carry metadata entry key (ESC_RPC_DAEMON_KEY,
 * ESC_RPC_OPERATOR_KEY) with value; value NULL or "" removes it. At most two such keys
 * per channel (abort beyond: a programming error). Strings are copied. Thread-safe. */
void esc_rpc_channel_set_secret(esc_rpc_channel *ch, const char *key, const char *value);

/* The target given at creation (owned by the channel). */
const char *esc_rpc_channel_target(const esc_rpc_channel *ch);

/* Flags of esc_rpc_call. */
enum {
    /* Safe to repeat: retried with backoff on UNAVAILABLE until the deadline, and
     * waits for the server to come up instead of failing at once. */
    ESC_RPC_IDEMPOTENT = 1,
};

/* Makes a unary call of `method` (its handle, &ESC_M_GCS_KV_GET) with req and waits at
 * most timeout_ms. On ESC_OK, *reply holds the unpacked reply, which the caller frees
 * with protobuf_c_message_free_unpacked. Returns the status code (ESC_UNIMPLEMENTED,
 * without a call, for a NULL or invalid handle); st (may be NULL) gets code and
 * message. */
int esc_rpc_call(esc_rpc_channel *ch, const esc_rpc_method *method, const ProtobufCMessage *req,
                 ProtobufCMessage **reply, int timeout_ms, int flags, esc_status *st);

/* Sends raw bytes as the request of `method` (no retry) and discards the reply: for
 * tests and fuzzing of servers against malformed input. Returns the status code
 * (ESC_UNIMPLEMENTED for an invalid handle, as esc_rpc_call). */
int esc_rpc_call_bytes(esc_rpc_channel *ch, const esc_rpc_method *method, const void *bytes,
                       size_t len, int timeout_ms, esc_status *st);

typedef struct esc_rpc_stream esc_rpc_stream;

/* Starts a server-streaming call of `method` (its handle, &ESC_M_GCS_SUBSCRIBE). Returns
 * NULL (and st) when the call can not start (ESC_UNIMPLEMENTED for an invalid handle).
 * The stream has no deadline; end it with esc_rpc_stream_cancel from any thread. */
esc_rpc_stream *esc_rpc_stream_open(esc_rpc_channel *ch, const esc_rpc_method *method,
                                    const ProtobufCMessage *req, esc_status *st);

/* esc_rpc_stream_open with a deadline: the whole stream must end within timeout_ms, else
 * it ends with DEADLINE_EXCEEDED (timeout_ms <= 0: no deadline). */
esc_rpc_stream *esc_rpc_stream_open_timeout(esc_rpc_channel *ch, const esc_rpc_method *method,
                                            const ProtobufCMessage *req, int timeout_ms,
                                            esc_status *st);

/* Blocks for the next message. Returns 1 with *msg (caller frees with
 * protobuf_c_message_free_unpacked), or 0 when the stream ended, with its final
 * status in st (ESC_OK for a clean end). */
int esc_rpc_stream_next(esc_rpc_stream *s, ProtobufCMessage **msg, esc_status *st);

/* Cancels the stream; a blocked esc_rpc_stream_next returns 0 soon after. Thread-safe. */
void esc_rpc_stream_cancel(esc_rpc_stream *s);

/* Frees a stream (cancelling it if it is still open). */
void esc_rpc_stream_free(esc_rpc_stream *s);

#endif
