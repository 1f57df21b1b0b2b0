/* daemon_calls.h: the calls that only escher daemons may make (docs/security.md, "The
 * daemon key"). One table for every service, so the whole set reads in one place;
 * escher-gcs and escher-raylet each apply it to the methods they serve
 * (esc_rpc_server_daemon_calls). */
#ifndef ESC_DAEMON_CALLS_H
#define ESC_DAEMON_CALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc.h"

/* The table; *n gets its length. */
const esc_rpc_daemon_call *esc_daemon_calls(size_t *n);

/* Applies the table to s with key; 0, or -1 (see esc_rpc_server_daemon_calls). */
int esc_daemon_calls_apply(esc_rpc_server *s, const char *key);

/* True when a packed TaskSpec carries what only a forwarding raylet sets: forwarded_to,
 * origin, or spill_hops (also when a field repeats with other values); false for bytes
 * protobuf-c would not unpack either. Exposed for the unit test. */
bool esc_daemon_spec_is_forward(const uint8_t *packed, size_t len);

#endif
