/* node_ip.c: the address this machine advertises to the cluster. */
#include "node_ip.h"

#include <arpa/inet.h>
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
