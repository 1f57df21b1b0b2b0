/* metrics_http.h: a daemon's Prometheus endpoint (docs/observability.md).
 *
 * libmicrohttpd runs without a thread of its own: its epoll descriptor is an ev_io on
 * the daemon's loop and MHD_run is called from there, so `fill` runs on the loop thread
 * and reads the daemon's tables without locks. GET /metrics answers 200 with the text
 * format 0.0.4; any other path or method answers 404.
 */
#ifndef ESC_METRICS_HTTP_H
#define ESC_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>

/* A growing text of samples. */
typedef struct {
    char *buf;
    size_t len, cap;
} esc_metrics_text;

/* "# HELP name help\n# TYPE name type\n". */
void esc_metrics_header(esc_metrics_text *t, const char *name, const char *type,
                        const char *help);
/* "name{labels} value\n"; labels is a NULL-terminated list of key, value pairs (values
 * escaped here), or NULL. */
void esc_metrics_sample(esc_metrics_text *t, const char *name, const char *const *labels,
                        double value);

typedef void (*esc_metrics_fill_fn)(void *ud, esc_metrics_text *t);

typedef struct esc_metrics_http esc_metrics_http;

/* Listens on bind:port (an IPv4 or IPv6 address; port 0 picks a free one) and serves
 * from ev. NULL with a reason in err. */
esc_metrics_http *esc_metrics_http_start(struct ev_loop *ev, const char *bind, int port,
                                         esc_metrics_fill_fn fill, void *ud, char *err,
                                         size_t errlen);
/* The port it listens on. */
int esc_metrics_http_port(const esc_metrics_http *m);
/* Stops serving and frees m (NULL is fine). Loop thread. */
void esc_metrics_http_stop(esc_metrics_http *m);

/* Writes "port\n" to path through a temporary file and a rename. 0 or -1 (errno). */
int esc_metrics_write_port_file(const char *path, int port);
struct esc_rpc_server;
/* The server's calls per method as counter `calls_name` (NULL: none) and their latency
 * as the histogram escher_rpc_server_seconds (runtime/rpc.h, esc_rpc_latency), each
 * sample labelled method plus `labels` (NULL-terminated key, value pairs, at most 4
 * pairs; NULL: none). */
void esc_metrics_rpc(esc_metrics_text *t, const struct esc_rpc_server *s,
                     const char *calls_name, const char *const *labels);
/* Writes text to path the same way (readers never see half a file). 0 or -1 (errno). */
int esc_metrics_write_file(const char *path, const char *text);
/* True for an address that listens on every interface ("0.0.0.0", "::", ""): others
 * reach such an endpoint at the host's own address, not at this one. */
bool esc_metrics_wildcard(const char *bind);

#endif
