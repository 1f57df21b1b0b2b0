/* port_probe.c: see port_probe.h. */
#include "port_probe.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int esc_port_probe(const char *host, int port, char *err, size_t errlen)
{
    if (port == 0)
        return 0;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host && *host ? host : NULL, service, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host ? host : "*", port,
                 gai_strerror(gai));
        return -1;
    }
    int rc = 0;
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd >= 0) {
        /* As gRPC does: a port left in TIME_WAIT is not in use. */
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1) != 0) {
            if (errno == EADDRINUSE)
                snprintf(err, errlen, "port %d is in use", port);
            else
                snprintf(err, errlen, "cannot listen on %s:%d: %s", host ? host : "*", port,
                         strerror(errno));
            rc = -1;
        }
        close(fd);
    }
    freeaddrinfo(res);
    return rc;
}
