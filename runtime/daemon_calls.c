/* daemon_calls.c: the daemon-only calls (daemon_calls.h).
 *
 * A call is daemon-only when it acts as a node: registering or reporting one, taking the
 * resource log a node applies, announcing where objects are, reporting an entrypoint
 * that a raylet queued, publishing where an actor lives, passing a task on along its
 * forward path, or presenting a job's credential taken from a task spec (which only the
 * raylets on the task's path hold).
 * Clients reach every other method with the cluster token alone; reads of objects
 * (Pull) and Reconstruct stay open because clients make them too, to any node. */
#include "daemon_calls.h"

#include <string.h>

#include "gcs.pb-c.h"
#include "object.pb-c.h"
#include "task.pb-c.h"

/* TaskSpec fields that only a raylet forwarding the task fills (task.proto). */
enum { SPEC_SPILL_HOPS = 15, SPEC_ORIGIN = 19, SPEC_FORWARDED_TO = 20 };

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

static bool forward_field(uint32_t field)
{
    return field == SPEC_SPILL_HOPS || field == SPEC_ORIGIN || field == SPEC_FORWARDED_TO;
}

/* Skips one value of wire type wt; *nonzero says whether it was not the default. */
static bool skip_value(const uint8_t **p, const uint8_t *end, unsigned wt, bool *nonzero)
{
    uint64_t v;
    switch (wt) {
    case 0:
        if (!read_varint(p, end, &v))
            return false;
        *nonzero = v != 0;
        return true;
    case 1:
    case 5: {
        size_t n = wt == 1 ? 8 : 4;
        if ((size_t)(end - *p) < n)
            return false;
        *p += n;
        *nonzero = true;
        return true;
    }
    case 2:
        if (!read_varint(p, end, &v) || v > (uint64_t)(end - *p))
            return false;
        *p += v;
        *nonzero = v != 0;
        return true;
    default:
        return false; /* groups: protobuf-c refuses them */
    }
}

/* Scans the top-level fields of the packed spec without unpacking it: the batch is
 * unpacked once, by the handler, and this runs on the completion-queue thread. Bytes it
 * cannot scan (truncated, a group, wire type 6 or 7) are bytes protobuf-c refuses to
 * unpack too, so the handler rejects that spec as "not a TaskSpec" and nothing it
 * carries is read: such a spec is not a forward, and a client's batch keeps its
 * per-spec answer. */
bool esc_daemon_spec_is_forward(const uint8_t *packed, size_t len)
{
    if (!packed)
        return false; /* an empty spec (protobuf-c leaves its data NULL): no fields */
    const uint8_t *p = packed, *end = packed + len;
    while (p < end) {
        uint64_t tag;
        bool nonzero = false;
        if (!read_varint(&p, end, &tag) || !skip_value(&p, end, (unsigned)(tag & 7), &nonzero))
            return false;
        if (nonzero && forward_field((uint32_t)(tag >> 3)))
            return true;
    }
    return false;
}

static bool spec_is_forward(const ProtobufCMessage *req)
{
    const Escher__TaskSpec *s = (const Escher__TaskSpec *)req;
    return s->spill_hops || *s->origin || *s->forwarded_to;
}

static bool batch_has_forward(const ProtobufCMessage *req)
{
    const Escher__TaskBatch *b = (const Escher__TaskBatch *)req;
    for (size_t i = 0; i < b->n_specs; i++)
        if (esc_daemon_spec_is_forward(b->specs[i].data, b->specs[i].len))
            return true;
    return false;
}

static bool subscribe_as_node(const ProtobufCMessage *req)
{
    return *((const Escher__SubscribeRequest *)req)->node_id != '\0';
}

static bool update_with_spec_credential(const ProtobufCMessage *req)
{
    return *((const Escher__UpdateResourcesRequest *)req)->job_credential != '\0';
}

static bool cancel_with_spec_credential(const ProtobufCMessage *req)
{
    return *((const Escher__CancelTaskRequest *)req)->job_credential != '\0';
}

/* Actor placement and state: only the hosting raylet writes them (a forged placement
 * would send other jobs' actor calls elsewhere). Readers are everyone. */
static bool actor_ns(const char *ns)
{
    return !strcmp(ns, "_actors") || !strcmp(ns, "_actor_state");
}

static bool kv_put_actor_ns(const ProtobufCMessage *req)
{
    return actor_ns(((const Escher__KvPutRequest *)req)->ns);
}

static bool kv_del_actor_ns(const ProtobufCMessage *req)
{
    return actor_ns(((const Escher__KvDelRequest *)req)->ns);
}

static const esc_rpc_daemon_call calls[] = {
    /* escher-gcs: nodes */
    {&ESC_M_GCS_REGISTER_NODE, NULL, NULL},
    {&ESC_M_GCS_REPORT_NODE, NULL, NULL},
    {&ESC_M_GCS_DRAIN_NODE, NULL, NULL},
    {&ESC_M_GCS_SUBSCRIBE, subscribe_as_node, "a node's Subscribe (node_id set)"},
    {&ESC_M_GCS_REPORT_ENTRYPOINT, NULL, NULL},
    {&ESC_M_GCS_UPDATE_RESOURCES, update_with_spec_credential,
     "UpdateResources with a task's job_credential (a raylet committing on_success)"},
    {&ESC_M_GCS_KV_PUT, kv_put_actor_ns,
     "a KvPut in _actors or _actor_state (actors' placement, written by their raylets)"},
    {&ESC_M_GCS_KV_DEL, kv_del_actor_ns,
     "a KvDel in _actors or _actor_state (actors' placement, written by their raylets)"},
    /* escher-gcs: where objects are */
    {&ESC_M_OBJECT_DIRECTORY_ADD_LOCATION, NULL, NULL},
    {&ESC_M_OBJECT_DIRECTORY_ADD_LOCATIONS, NULL, NULL},
    {&ESC_M_OBJECT_DIRECTORY_REMOVE_LOCATION, NULL, NULL},
    {&ESC_M_OBJECT_DIRECTORY_REMOVE_LOCATIONS, NULL, NULL},
    /* escher-raylet: a task's forward path */
    {&ESC_M_TASK_SERVICE_SUBMIT_TASK, spec_is_forward,
     "a forwarded task (forwarded_to, origin or spill_hops set)"},
    {&ESC_M_TASK_SERVICE_SUBMIT_TASKS, batch_has_forward,
     "a forwarded task (forwarded_to, origin or spill_hops set)"},
    {&ESC_M_TASK_SERVICE_TASKS_DONE, NULL, NULL},
    {&ESC_M_TASK_SERVICE_CANCEL_TASK, cancel_with_spec_credential,
     "CancelTask with a task's job_credential (a withdraw passed along its path)"},
};

const esc_rpc_daemon_call *esc_daemon_calls(size_t *n)
{
    *n = sizeof calls / sizeof calls[0];
    return calls;
}

int esc_daemon_calls_apply(esc_rpc_server *s, const char *key)
{
    size_t n;
    const esc_rpc_daemon_call *c = esc_daemon_calls(&n);
    return esc_rpc_server_daemon_calls(s, key, c, n);
}
