/* fuzz_rpc.h: what the handler targets (fuzz_gcs_handlers.c, fuzz_raylet_handlers.c)
 * share: an input is one call of one method of a daemon's services, sent through its
 * real gRPC server; the request's empty id fields are filled with live ids first. */
#ifndef ESC_FUZZ_RPC_H
#define ESC_FUZZ_RPC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"

/* Replaces the string *str of field f (an unpacked message's) with a copy of value. An
 * unset string is the field's static default, a set one the message's own: the copy is
 * freed with the message (protobuf_c_message_free_unpacked frees what is not the
 * default; protobuf-c's default allocator is malloc and free). */
static void fuzz_set_string(char **str, const ProtobufCFieldDescriptor *f, const char *value)
{
    if (*str != f->default_value)
        free(*str);
    *str = strdup(value);
}

/* A string field to fill when an input leaves it empty: every field of that name, nested
 * messages included. */
typedef struct {
    const char *field;
    const char *value;
} fuzz_fill;

/* Fills the empty string fields of m that fills[0..n) name. */
static void fuzz_fill_strings(ProtobufCMessage *m, const fuzz_fill *fills, size_t n)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        void *at = (char *)m + f->offset;
        if (f->type == PROTOBUF_C_TYPE_STRING && f->label != PROTOBUF_C_LABEL_REPEATED) {
            char **str = at;
            for (size_t k = 0; k < n; k++) {
                if (strcmp(f->name, fills[k].field) != 0 || (*str && **str))
                    continue;
                fuzz_set_string(str, f, fills[k].value);
                break;
            }
        } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                size_t count = *(size_t *)((char *)m + f->quantifier_offset);
                ProtobufCMessage **v = *(ProtobufCMessage ***)at;
                for (size_t k = 0; k < count; k++)
                    fuzz_fill_strings(v[k], fills, n);
            } else if (*(ProtobufCMessage **)at) {
                fuzz_fill_strings(*(ProtobufCMessage **)at, fills, n);
            }
        }
    }
}

/* The method number `pick` selects among every method of services[0..n) in order
 * (modulo their count), as a method handle (a valid one: an index of its service). */
static esc_rpc_method fuzz_pick_method(const ProtobufCServiceDescriptor *const *services,
                                       size_t n, unsigned pick)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += services[i]->n_methods;
    size_t k = pick % total, s = 0;
    while (k >= services[s]->n_methods)
        k -= services[s++]->n_methods;
    return (esc_rpc_method){services[s], (unsigned)k};
}

/* True when m is one of methods (generated handles, NULL-terminated): compared by
 * service and index, since m is a copy. */
static bool fuzz_method_in(const esc_rpc_method *m, const esc_rpc_method *const *methods)
{
    for (; *methods; methods++)
        if ((*methods)->svc == m->svc && (*methods)->index == m->index)
            return true;
    return false;
}

/* Sends bytes as a request of method over ch: when they unpack as its request, with the
 * empty fields of fills filled, then edit(request) when edit is not NULL, and packed
 * again; else as they are (the server cannot unpack them either). Returns the call's
 * status code. */
static int fuzz_call(esc_rpc_channel *ch, const esc_rpc_method *method, const uint8_t *bytes,
                     size_t len, const fuzz_fill *fills, size_t nfills,
                     void (*edit)(ProtobufCMessage *req), int timeout_ms)
{
    const ProtobufCMethodDescriptor *m = esc_rpc_method_desc(method);
    ProtobufCMessage *req = protobuf_c_message_unpack(m->input, NULL, len, bytes);
    uint8_t *packed = NULL;
    if (req) {
        fuzz_fill_strings(req, fills, nfills);
        if (edit)
            edit(req);
        len = protobuf_c_message_get_packed_size(req);
        packed = malloc(len + 1);
        if (!packed)
            abort();
        protobuf_c_message_pack(req, packed);
        protobuf_c_message_free_unpacked(req, NULL);
    }
    esc_status st;
    int rc = esc_rpc_call_bytes(ch, method, packed ? packed : bytes, len, timeout_ms, &st);
    free(packed);
    return rc;
}

/* After a call of method that returned rc: aborts, so that the fuzzer keeps the input,
 * when the call missed its deadline although it is not held by design, or when `who`
 * ("the GCS") no longer answers a plain read (answering) after one that is. */
static void fuzz_check_answered(int rc, bool held, const esc_rpc_method *method,
                                bool (*answering)(void), const char *who)
{
    if (rc != ESC_DEADLINE_EXCEEDED)
        return;
    if (!held) {
        fprintf(stderr, "fuzz: %s was never answered by %s\n", esc_rpc_method_name(method),
                who);
        abort();
    }
    if (!answering()) {
        fprintf(stderr, "fuzz: %s stopped answering after %s\n", who,
                esc_rpc_method_name(method));
        abort();
    }
}

#endif
