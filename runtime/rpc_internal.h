/* rpc_internal.h: pieces shared by rpc_server.c and rpc_client.c. */
#ifndef ESC_RPC_INTERNAL_H
#define ESC_RPC_INTERNAL_H

#include <grpc/grpc.h>

#include "rpc.h"

#define ESC_TOKEN_KEY "x-escher-token"
#define ESC_RPC_SECRETS_MAX 2 /* esc_rpc_channel_set_secret */
#define ESC_RPC_MD_MAX (3 + ESC_RPC_SECRETS_MAX)

/* Packs msg into a new byte buffer (caller destroys it). */
grpc_byte_buffer *esc_rpc_pack(const ProtobufCMessage *msg);

/* Unpacks a byte buffer with desc; NULL when the bytes are not a valid message. */
ProtobufCMessage *esc_rpc_unpack(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *bb);

/* Returns "/package.Service/Method" (malloc'd) and the method descriptor, or NULL for
 * an invalid handle (then *md is NULL too). */
char *esc_rpc_method_path(const esc_rpc_method *method, const ProtobufCMethodDescriptor **md);

/* Server credentials from the environment (rpc_tls.c): TLS when ESCHER_TLS_CERT and
 * ESCHER_TLS_KEY are set, else plaintext. NULL with a reason in err when the files are
 * unusable. */
grpc_server_credentials *esc_rpc_server_creds(char *err, size_t errlen);

/* A channel to target with the base args and credentials from the environment: TLS
 * verified against ESCHER_TLS_CA when it is set, else plaintext. */
grpc_channel *esc_rpc_channel_create(const char *target, const grpc_channel_args *base);

/* grpc_init / grpc_shutdown, counted. */
void esc_rpc_grpc_ref(void);
void esc_rpc_grpc_unref(void);

#endif
