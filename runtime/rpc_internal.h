/* rpc_internal.h: pieces shared by rpc_server.c and rpc_client.c. */
#ifndef ESC_RPC_INTERNAL_H
#define ESC_RPC_INTERNAL_H

#include <grpc/grpc.h>

#include "rpc.h"

#define ESC_TOKEN_KEY "x-escher-token"

/* Packs msg into a new byte buffer (caller destroys it). */
grpc_byte_buffer *esc_rpc_pack(const ProtobufCMessage *msg);

/* Unpacks a byte buffer with desc; NULL when the bytes are not a valid message. */
ProtobufCMessage *esc_rpc_unpack(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *bb);

/* Returns "/package.Service/Method" (malloc'd) and the method descriptor, or NULL. */
char *esc_rpc_method_path(const ProtobufCServiceDescriptor *svc, const char *method,
                          const ProtobufCMethodDescriptor **md);

/* grpc_init / grpc_shutdown, counted. */
void esc_rpc_grpc_ref(void);
void esc_rpc_grpc_unref(void);

#endif
