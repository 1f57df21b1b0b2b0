/* frame.h: protobuf-c messages framed on a byte stream (the raylet <-> worker socket).
 *
 * A frame is a 4-byte big-endian payload length followed by the payload (a packed
 * message). Frames longer than ESC_FRAME_MAX are refused on both ends: a writer gets an
 * error, a reader closes the stream; a bad peer can never make us allocate more.
 *
 * Two faces:
 *  - esc_frame_conn: non-blocking, on libev watchers, for the event-loop side (raylet).
 *    Partial frames accumulate in a read buffer; writes that do not fit the socket are
 *    queued and finished when it becomes writable.
 *  - esc_frame_write / esc_frame_read: blocking, for a single-threaded peer (worker).
 */
#ifndef ESC_FRAME_H
#define ESC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>
#include <protobuf-c/protobuf-c.h>

#define ESC_FRAME_MAX (256u << 20) /* largest payload: 256 MiB */
#define ESC_FRAME_HEADER 4

/* ---------------------------------------------------------------- blocking helpers */

/* Writes msg as one frame on fd, retrying partial writes and EINTR (never raises
 * SIGPIPE). Returns 0, or -1 with errno (EMSGSIZE: packed size over ESC_FRAME_MAX). */
int esc_frame_write(int fd, const ProtobufCMessage *msg);

/* Same, for an already packed payload. */
int esc_frame_write_bytes(int fd, const void *data, size_t len);

/* Writes all len bytes to fd (a socket, without SIGPIPE, or a pipe or file), retrying
 * short writes and EINTR. Returns 0, or -1 with errno set. */
int esc_write_all(int fd, const void *buf, size_t len);

/* Reads one frame from fd. Returns 1 with *buf (malloc'd, caller frees; never NULL, even
 * for an empty payload) and *len; 0 at a clean end of stream (no byte of a next frame);
 * -1 with errno on error (EMSGSIZE: announced length over ESC_FRAME_MAX, EPROTO: stream
 * ended inside a frame). */
int esc_frame_read(int fd, uint8_t **buf, size_t *len);

/* ------------------------------------------------------------------ libev connection */

typedef struct esc_frame_conn esc_frame_conn;

/* One complete frame arrived. data is owned by the connection and valid only during the
 * call. The callback may send, or free the connection (then no further callback runs). */
typedef void (*esc_frame_msg_fn)(esc_frame_conn *c, const uint8_t *data, size_t len);

/* The stream ended: peer closed, read/write error, or an oversized frame; why is a short
 * phrase for logs. Called at most once; the watchers are already stopped, and the owner
 * must still call esc_frame_conn_free (it may do so inside this callback). */
typedef void (*esc_frame_close_fn)(esc_frame_conn *c, const char *why);

/* Takes ownership of fd (made non-blocking, closed by esc_frame_conn_free) and starts
 * reading on loop. ud is returned by esc_frame_conn_ud. Never returns NULL. */
esc_frame_conn *esc_frame_conn_new(struct ev_loop *loop, int fd, esc_frame_msg_fn on_message,
                                   esc_frame_close_fn on_close, void *ud);

/* The ud given to esc_frame_conn_new, and the connection's fd (e.g. for SO_PEERCRED). */
void *esc_frame_conn_ud(const esc_frame_conn *c);
int esc_frame_conn_fd(const esc_frame_conn *c);

/* Queues msg as one frame; what the socket takes now is written at once, the rest when
 * it is writable. Returns 0, or -1 when the message is over ESC_FRAME_MAX or the
 * connection already failed (a write error is reported through on_close from the loop,
 * never from inside this call). */
int esc_frame_conn_send(esc_frame_conn *c, const ProtobufCMessage *msg);

/* Bytes queued but not yet written. */
size_t esc_frame_conn_pending(const esc_frame_conn *c);

/* Stops the watchers, closes the fd and frees the connection, dropping unsent frames.
 * No callback runs afterwards. Safe inside this connection's own callbacks. NULL is a
 * no-op. */
void esc_frame_conn_free(esc_frame_conn *c);

#endif
