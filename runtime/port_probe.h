/* port_probe.h: telling "the port is in use" from other listen failures, so that a
 * daemon can say which one it was (gRPC only says that it could not listen). */
#ifndef ESC_PORT_PROBE_H
#define ESC_PORT_PROBE_H

#include <stddef.h>

/* Tries to bind a TCP socket to host:port (an IPv4 or IPv6 literal, or a name that
 * resolves; port 0 always succeeds) and closes it again. Returns 0 when the bind
 * succeeds; -1 with a one-line reason in err otherwise: "port P is in use" for
 * EADDRINUSE, "cannot listen on HOST:P: <reason>" for anything else. */
int esc_port_probe(const char *host, int port, char *err, size_t errlen);

#endif
