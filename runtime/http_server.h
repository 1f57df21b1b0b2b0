/* http_server.h: a small HTTP server on a daemon's libev loop (libmicrohttpd).
 *
 * MHD runs without a thread of its own: its epoll descriptor is an ev_io on the loop and
 * MHD_run is called from there, so every handler runs on the loop thread and may read
 * the daemon's tables without locks. A server has routes (an exact path, or a prefix),
 * answers with a buffer, a JSON document (jansson) or a file from a folder, and can keep
 * a response open as a server-sent-events stream (text/event-stream). Users: the
 * Prometheus endpoint (metrics_http.c) and the GCS's dashboard (gcs/dashboard.c).
 *
 * Only GET and HEAD reach handlers; other methods answer 405. A path with no route
 * answers 404.
 */
#ifndef ESC_HTTP_SERVER_H
#define ESC_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>
#include <jansson.h>

typedef struct esc_http_server esc_http_server;
typedef struct esc_http_req esc_http_req;
typedef struct esc_http_sse esc_http_sse;

/* Handles one request. It must answer it exactly once, with one of the esc_http_reply*
 * calls or esc_http_sse_start, before returning; a handler that does not is answered
 * 500. req is valid only during the call. */
typedef void (*esc_http_handler)(void *ud, esc_http_req *req);

/* Listens on bind:port (an IPv4 or IPv6 address; port 0 picks a free one) and serves
 * from ev. `what` names the server in error messages ("metrics", "dashboard"). NULL
 * with a one-line reason in err. */
esc_http_server *esc_http_start(struct ev_loop *ev, const char *what, const char *bind,
                                int port, char *err, size_t errlen);
/* The port it listens on. */
int esc_http_port(const esc_http_server *s);
/* Adds a route: requests whose path equals path (prefix false) or starts with it
 * (prefix true) go to fn(ud, req). The first route added that matches wins. 0, or -1
 * when out of memory. path is copied. */
int esc_http_route(esc_http_server *s, const char *path, bool prefix, esc_http_handler fn,
                   void *ud);
/* Closes every event stream (their close callbacks run), stops serving and frees s
 * (NULL is fine). Loop thread. */
void esc_http_stop(esc_http_server *s);

/* ---- a request (valid during the handler only) ---- */
const char *esc_http_method(const esc_http_req *r);
const char *esc_http_path(const esc_http_req *r);
/* The query argument key, or NULL when absent. */
const char *esc_http_query(const esc_http_req *r, const char *key);
/* The request header name (case-insensitive), or NULL. */
const char *esc_http_header(const esc_http_req *r, const char *name);
/* The cookie name, or NULL. */
const char *esc_http_cookie(const esc_http_req *r, const char *name);
/* Adds a header to the answer this handler is about to give (name and value copied; at
 * most 8). 0, or -1 when full or out of memory. */
int esc_http_add_header(esc_http_req *r, const char *name, const char *value);

/* ---- answering (once per request) ---- */
/* Answers code with len bytes of body (copied) of content_type. */
void esc_http_reply(esc_http_req *r, unsigned code, const char *content_type,
                    const void *body, size_t len);
/* The same with a NUL-terminated text, "text/plain; charset=utf-8". */
void esc_http_reply_text(esc_http_req *r, unsigned code, const char *text);
/* Answers code with the JSON document j ("application/json"), and releases j (the
 * caller's reference; NULL answers 500). */
void esc_http_reply_json(esc_http_req *r, unsigned code, json_t *j);
/* Answers with the file rel (a path below dir: "..", "//" and hidden names are refused
 * with 404) with a content type from its extension; 404 when it cannot be opened. */
void esc_http_reply_file(esc_http_req *r, const char *dir, const char *rel);

/* ---- server-sent events ---- */
/* Called once when the stream ends: the client went away, or the server stopped. The
 * stream is freed after it returns; do not use it again. */
typedef void (*esc_http_sse_close_fn)(void *ud, esc_http_sse *st);

/* Answers the request with 200 text/event-stream and keeps it open. Data is sent as
 * esc_http_sse_send queues it; while nothing is queued the connection is suspended
 * (no polling), and a comment every 15 s finds clients that went away. NULL when out of
 * memory (the request is then answered 500). */
esc_http_sse *esc_http_sse_start(esc_http_req *r, esc_http_sse_close_fn on_close, void *ud);
/* Queues one event: "event: <event>\n" (when event is not NULL), "data: <line>\n" per
 * line of data, and a blank line. A stream whose client reads too slowly (more than
 * 4 MiB queued) is ended. */
void esc_http_sse_send(esc_http_sse *st, const char *event, const char *data);

/* ---- a later answer ---- */
/* Answers the request with 200 and content_type now, and its body later: the connection
 * sleeps until esc_http_later_finish gives the body (for answers that wait on other
 * daemons). on_close runs when the answer is done or the client or the server went
 * away; after it, st must not be used. NULL when out of memory (answered 500). */
esc_http_sse *esc_http_later_start(esc_http_req *r, const char *content_type,
                                   esc_http_sse_close_fn on_close, void *ud);
/* The body (copied), and the end of the answer. Once. */
void esc_http_later_finish(esc_http_sse *st, const char *body, size_t len);

#endif
