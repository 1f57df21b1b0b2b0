/* pbutil.h: small helpers over protobuf-c messages. */
#ifndef ESC_PBUTIL_H
#define ESC_PBUTIL_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/* A deep copy of msg (packed then unpacked); free with protobuf_c_message_free_unpacked. */
ProtobufCMessage *esc_pb_dup(const ProtobufCMessage *msg);

/* msg packed into a malloc'd buffer; *len gets its size. */
void *esc_pb_pack(const ProtobufCMessage *msg, size_t *len);

#endif
