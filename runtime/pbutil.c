/* pbutil.c: copying protobuf-c messages through their own wire format, which keeps one
 * generic code path instead of a hand-written copy per message type. */
#include "pbutil.h"
#include "xalloc.h"

#include <stdlib.h>

void *esc_pb_pack(const ProtobufCMessage *msg, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(msg);
    void *buf = esc_xmalloc(*len ? *len : 1);
    protobuf_c_message_pack(msg, buf);
    return buf;
}

ProtobufCMessage *esc_pb_dup(const ProtobufCMessage *msg)
{
    size_t len;
    void *buf = esc_pb_pack(msg, &len);
    ProtobufCMessage *copy = protobuf_c_message_unpack(msg->descriptor, NULL, len, buf);
    free(buf);
    return copy;
}
