/* fanout.h: one call to many raylets at once (`escher status`'s demand, the state API's
 * lists). Asked one after another, 250 nodes cost 250 round trips (a second at 250
 * nodes: docs/benchmarks.md, "Scale"); asked by a few threads at once they cost a few.
 * Internal to libescher. */
#ifndef ESC_CLIENT_FANOUT_H
#define ESC_CLIENT_FANOUT_H

#include <stddef.h>

#include "escher/escher.h"
#include "rpc.h"

/* One raylet's answer: code ESC_OK with reply (the caller frees it with
 * protobuf_c_message_free_unpacked), or the call's code and status. */
typedef struct {
    int code;
    esc_status st;
    ProtobufCMessage *reply;
} esc_fanout_result;

/* Calls method (its handle, &ESC_M_TASK_SERVICE_LIST_TASKS) with req on the raylet at
 * each of addresses[0..n), at most ESC_FANOUT_THREADS at once, each with timeout_ms and
 * flags as esc_rpc_call; returns results[i] for addresses[i] (freed by the caller with
 * esc_fanout_free; out of memory aborts: escher.h). Channels come from the client's cache
 * (esc_client_raylet_channel). */
#define ESC_FANOUT_THREADS 16
esc_fanout_result *esc_fanout_call(esc_client *c, const char *const *addresses, size_t n,
                                   const esc_rpc_method *method, const ProtobufCMessage *req,
                                   int timeout_ms, int flags);
void esc_fanout_free(esc_fanout_result *results, size_t n);

#endif
