/* node_ip.c: the address this machine advertises to the cluster. */
#include "node_ip.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Connecting a UDP socket sends nothing; it only asks the kernel which local address
 * routes outward, which is the one other machines can reach. Without a route (an
 * isolated machine) loopback is the only sensible answer. */
const char *cli_node_ip(char *buf, size_t len)
{
    snprintf(buf, len, "127.0.0.1");
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return buf;
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(53)};
    inet_pton(AF_INET, "8.8.8.8", &to.sin_addr);
    struct sockaddr_in me;
    socklen_t mlen = sizeof me;
    if (connect(fd, (struct sockaddr *)&to, sizeof to) == 0 &&
        getsockname(fd, (struct sockaddr *)&me, &mlen) == 0 && me.sin_addr.s_addr != 0)
        inet_ntop(AF_INET, &me.sin_addr, buf, (socklen_t)len);
    close(fd);
    return buf;
}

int cli_node_ip_toward(const char *gcs_address, char *buf, size_t len)
{
    char host[320];
    const char *colon = strrchr(gcs_address, ':');
    if (!colon || (size_t)(colon - gcs_address) >= sizeof host)
        return -1;
    memcpy(host, gcs_address, (size_t)(colon - gcs_address));
    host[colon - gcs_address] = '\0';
    char *h = host;
    size_t hl = strlen(h);
    if (hl > 2 && h[0] == '[' && h[hl - 1] == ']') {
        h[hl - 1] = '\0';
        h++;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(h, colon + 1, &hints, &res) != 0)
        return -1;
    int rc = -1;
    for (struct addrinfo *a = res; a && rc != 0; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        struct sockaddr_storage me;
        socklen_t mlen = sizeof me;
        char text[INET6_ADDRSTRLEN];
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
            getsockname(fd, (struct sockaddr *)&me, &mlen) == 0) {
            const void *ip = me.ss_family == AF_INET
                                 ? (const void *)&((struct sockaddr_in *)&me)->sin_addr
                                 : (const void *)&((struct sockaddr_in6 *)&me)->sin6_addr;
            if (inet_ntop(me.ss_family, ip, text, sizeof text) && strlen(text) < len) {
                snprintf(buf, len, "%s", text);
                rc = 0;
            }
        }
        close(fd);
    }
    freeaddrinfo(res);
    return rc;
}

int cli_bind_specific(const char *host)
{
    return host && *host && strcmp(host, "0.0.0.0") != 0 && strcmp(host, "::") != 0 &&
           strcmp(host, "[::]") != 0;
}
