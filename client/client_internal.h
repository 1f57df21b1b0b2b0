/* client_internal.h: the client object shared by the SDK's modules (not public). */
#ifndef ESC_CLIENT_INTERNAL_H
#define ESC_CLIENT_INTERNAL_H

#include "escher/escher.h"
#include "gcs.pb-c.h"
#include "subscription.h"

/* Every field is set by esc_connect and read-only afterwards, which is what makes one
 * client safe to share between threads (the channel is thread-safe itself). */
struct esc_client {
    esc_rpc_channel *gcs;
    char *address;
    char *job_id;
    char *namespace_;
    char *node_id;      /* "" when unknown */
    bool detached;
    int timeout_ms;
    /* The job's liveness: the GCS ends a job whose driver has had no Subscribe stream
     * for its job timeout. NULL for a short-lived client. */
    esc_subscription *live;
};

/* One unary call of a Gcs method with the client's default deadline. */
int esc_client_call(esc_client *c, const char *method, const ProtobufCMessage *req,
                    ProtobufCMessage **reply, int flags, esc_status *st);

/* strdup that maps NULL to "" so optional proto strings never need NULL checks. */
char *esc_client_strdup(const char *s);

#endif
