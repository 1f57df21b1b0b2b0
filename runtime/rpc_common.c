/* rpc_common.c: status helpers and protobuf <-> gRPC byte buffer conversion shared by
 * the server and client halves of the binding. */
#include "rpc_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>

#include "xalloc.h"

int esc_status_set(esc_status *st, int code, const char *fmt, ...)
{
    if (!st)
        return code;
    st->code = code;
    st->message[0] = 0;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->message, sizeof st->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *esc_status_name(int code)
{
    static const char *names[] = {
        "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
        "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
        "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
    };
    if (code < 0 || code >= (int)(sizeof names / sizeof names[0]))
        return "UNKNOWN";
    return names[code];
}

grpc_byte_buffer *esc_rpc_pack(const ProtobufCMessage *msg)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    grpc_slice slice = grpc_slice_malloc(len);
    protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(slice));
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    return bb;
}

ProtobufCMessage *esc_rpc_unpack(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *bb)
{
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, bb))
        return NULL;
    grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
    grpc_byte_buffer_reader_destroy(&reader);
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, GRPC_SLICE_LENGTH(all),
                                                    GRPC_SLICE_START_PTR(all));
    grpc_slice_unref(all);
    return m;
}

char *esc_rpc_method_path(const esc_rpc_method *method, const ProtobufCMethodDescriptor **md)
{
    *md = NULL;
    if (!esc_rpc_method_valid(method))
        return NULL;
    *md = esc_rpc_method_desc(method);
    size_t len = strlen(method->svc->name) + strlen((*md)->name) + 3;
    char *path = esc_xmalloc(len);
    snprintf(path, len, "/%s/%s", method->svc->name, (*md)->name);
    return path;
}

void esc_rpc_grpc_ref(void)
{
    grpc_init();
}

void esc_rpc_grpc_unref(void)
{
    grpc_shutdown();
}

void esc_host_port(char *out, size_t len, const char *host, int port)
{
    if (strchr(host, ':'))
        snprintf(out, len, "[%s]:%d", host, port);
    else
        snprintf(out, len, "%s:%d", host, port);
}
