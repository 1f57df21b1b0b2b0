/* node_ip.h: detecting the IP address a node advertises. */
#ifndef ESC_CLI_NODE_IP_H
#define ESC_CLI_NODE_IP_H

#include <stddef.h>

/* Writes the IPv4 address of the interface that routes outward into buf, or
 * "127.0.0.1" when there is none; returns buf. */
const char *cli_node_ip(char *buf, size_t len);

/* Writes the local address that reaches the GCS at gcs_address (HOST:PORT, [v6]:PORT):
 * the source address the kernel picks for a connection to it, so a GCS on 127.0.0.1
 * gives 127.0.0.1. Nothing is sent (a UDP socket is connected, then asked its name).
 * Returns 0, or -1 (buf untouched) when the host does not resolve or has no route. */
int cli_node_ip_toward(const char *gcs_address, char *buf, size_t len);

/* True when host is a specific address to listen on (not empty, 0.0.0.0 or ::). */
int cli_bind_specific(const char *host);

#endif
