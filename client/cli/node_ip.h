/* node_ip.h: detecting the IP address a node advertises. */
#ifndef ESC_CLI_NODE_IP_H
#define ESC_CLI_NODE_IP_H

#include <stddef.h>

/* Writes the IPv4 address of the interface that routes outward into buf, or
 * "127.0.0.1" when there is none; returns buf. */
const char *cli_node_ip(char *buf, size_t len);

#endif
