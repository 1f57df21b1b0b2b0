/* fuzz_rpc_decode.c: protobuf-c decoding of every request and reply of every gRPC
 * service (proto/gcs.proto, raylet.proto, object.proto, task.proto), as the daemons'
 * handlers and the SDK unpack them (runtime/rpc_server.c, rpc_client.c) before any
 * handler code runs. The GCS's handlers themselves are fuzz_gcs_handlers.c's.
 *
 * The same for the rows the GCS reloads from storage after a restart (gcs/persist.c).
 *
 * Input: the first two bytes pick the method (of all services' methods in order) and
 * whether its request or its reply, or a stored row's type; the rest is the message. What unpacks packs to the
 * size it reports, and that packing is stable: unpacked and packed again, it is the
 * same bytes. */
#include "fuzz_util.h"

#include "gcs.pb-c.h"
#include "object.pb-c.h"
#include "rpc_methods.h" /* every method of every service: generated from the .proto files */

/* The rows the GCS stores and reloads after a restart (gcs/persist.c unpacks each
 * table's values as these before handing them to the tables). */
static const ProtobufCMessageDescriptor *const rows[] = {
    &escher__node_info__descriptor,      &escher__job_info__descriptor,
    &escher__registry_entry__descriptor, &escher__object_location__descriptor,
};
#define NROWS (sizeof rows / sizeof rows[0])

/* Selector bit 1 set: stored row k (modulo their count). Else the message type of method
 * number k of the generated table (modulo its size), its reply when bit 0 is set. The
 * table follows the .proto files, so a method added there is fuzzed without an edit
 * here. */
static const ProtobufCMessageDescriptor *pick(unsigned k, unsigned sel)
{
    if (sel & 2)
        return rows[k % NROWS];
    const ProtobufCMethodDescriptor *m =
        esc_rpc_method_desc(esc_rpc_methods[k % ESC_RPC_METHOD_COUNT]);
    return (sel & 1) ? m->output : m->input;
}

/* Packs m into a new buffer, checking the size protobuf-c announced. */
static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *out = malloc(*len ? *len : 1);
    FUZZ_CHECK(out && protobuf_c_message_pack(m, out) == *len);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const ProtobufCMessageDescriptor *d = pick(data[0], data[1]);
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, size - 2, data + 2);
    if (!m)
        return 0;
    size_t len1, len2;
    uint8_t *p1 = pack(m, &len1);
    protobuf_c_message_free_unpacked(m, NULL);
    /* Debian 12's protobuf-c keeps an unknown field numbered 0 when its tag comes as a
     * longer varint than needed (0x81 0x00), packs it back as 0x01 and then refuses
     * that (regress/rpc_decode/field0-nonminimal-tag): a library quirk, so only what
     * unpacks again is compared. */
    ProtobufCMessage *again = protobuf_c_message_unpack(d, NULL, len1, p1);
    if (again) {
        uint8_t *p2 = pack(again, &len2);
        FUZZ_CHECK(len1 == len2 && memcmp(p1, p2, len1) == 0);
        free(p2);
        protobuf_c_message_free_unpacked(again, NULL);
    }
    free(p1);
    return 0;
}
