/* objects.c: objects in the SDK (escher.h): put into the local node's store, get through
 * the GCS object directory and a Pull stream from a node that holds a copy, release,
 * locations, store stats.
 *
 * A put is a sequence of PutChunk calls (PUT_CHUNK bytes each) to the local raylet; the
 * raylet answers the last one after the GCS registered the location, so the object can
 * be found anywhere once esc_put returns. Chunk calls may be retried (the raylet accepts
 * a repeated chunk), so they are sent with ESC_RPC_IDEMPOTENT. A get asks the GCS for
 * the locations, waiting there (GetLocations wait_ms) rather than polling, then pulls
 * from the local copy if there is one, else from the others in turn. */
#include "client_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ids.h"
#include "names.h"
#include "object.pb-c.h"
#include "task.pb-c.h"
#include "xalloc.h"

#define PUT_CHUNK (4u << 20)
#define PULL_CHUNK 0              /* the raylet's default, 4 MiB */
#define WAIT_ROUND_MS 60000       /* one GetLocations wait of a get without a limit */
#define CALL_SLACK_MS 2000        /* over a server-side wait, so the server answers first */

struct esc_ref {
    char id[ESC_OBJECT_ID_MAX];
};

/* ------------------------------------------------------------------ references */

esc_ref *esc_ref_from_id(const char *id)
{
    if (!esc_object_id_valid(id))
        return NULL;
    esc_ref *r = esc_xcalloc(1, sizeof *r);
    if (r)
        snprintf(r->id, sizeof r->id, "%s", id);
    return r;
}

const char *esc_ref_id(const esc_ref *ref)
{
    return ref->id;
}

void esc_ref_free(esc_ref *ref)
{
    free(ref);
}

/* ------------------------------------------------------------------ calls */

static int store_call(esc_client *c, esc_rpc_channel *ch, const esc_rpc_method *method,
                      const ProtobufCMessage *req, ProtobufCMessage **rep, esc_status *st)
{
    return esc_rpc_call(ch, method, req, rep, c->timeout_ms, ESC_RPC_IDEMPOTENT, st);
}

/* GetLocations, held at the GCS for up to wait_ms (report_lost: answered at once for an
 * object whose every copy died with its node; not_on: copies on these nodes, which the
 * reader could not reach, do not answer it). */
static int get_locations_ex(esc_client *c, const char *id, int wait_ms, bool report_lost,
                            char **not_on, size_t n_not_on, Escher__GetLocationsReply **out,
                            esc_status *st)
{
    Escher__GetLocationsRequest req = ESCHER__GET_LOCATIONS_REQUEST__INIT;
    req.object_id = (char *)id;
    req.report_lost = report_lost;
    req.not_on = not_on;
    req.n_not_on = n_not_on;
    req.wait_ms = wait_ms > 0 ? (uint32_t)wait_ms : 0;
    ProtobufCMessage *m = NULL;
    int rc = esc_rpc_call(c->gcs, &ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS, &req.base, &m,
                          req.wait_ms + CALL_SLACK_MS, ESC_RPC_IDEMPOTENT, st);
    *out = (Escher__GetLocationsReply *)m;
    return rc;
}

static int get_locations(esc_client *c, const char *id, int wait_ms,
                         Escher__GetLocationsReply **out, esc_status *st)
{
    return get_locations_ex(c, id, wait_ms, false, NULL, 0, out, st);
}

/* Every copy of the object died with its node: asks the raylet that keeps the lineage
 * of the task that made it (origin) to run it again. ESC_OK when it does; NOT_FOUND when
 * nobody can. */
static int reconstruct(esc_client *c, const Escher__GetLocationsReply *r, const char *id,
                       esc_status *st)
{
    const char *origin = r->origin_address;
    if (!*origin)
        return esc_status_set(st, ESC_NOT_FOUND, "object %s was lost with its node, and so "
                              "was the node that kept its lineage (%.64s)", id, r->origin);
    esc_rpc_channel *ch = esc_rpc_channel_new(origin, c->token);
    Escher__ReconstructRequest req = ESCHER__RECONSTRUCT_REQUEST__INIT;
    req.object_id = (char *)id;
    Escher__ReconstructReply *rep = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_TASK_SERVICE_RECONSTRUCT, &req.base,
                          (ProtobufCMessage **)&rep, c->timeout_ms, ESC_RPC_IDEMPOTENT, st);
    esc_rpc_channel_free(ch);
    if (rc == ESC_OK && !rep->found)
        rc = esc_status_set(st, ESC_NOT_FOUND, "object %s was lost with its node and %s keeps "
                            "no lineage for it", id, origin);
    if (rep)
        protobuf_c_message_free_unpacked(&rep->base, NULL);
    return rc;
}

/* Frees the object on the raylet at address. */
static int free_at(esc_client *c, const char *address, const char *id, esc_status *st)
{
    Escher__FreeObjectsRequest req = ESCHER__FREE_OBJECTS_REQUEST__INIT;
    char *ids[1] = {(char *)id};
    req.n_object_ids = 1;
    req.object_ids = ids;
    ProtobufCMessage *m = NULL;
    int rc = store_call(c, esc_client_raylet_channel(c, address),
                        &ESC_M_OBJECT_STORE_FREE_OBJECTS, &req.base, &m, st);
    if (m)
        protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

/* ------------------------------------------------------------------ put */

static int put_chunks(esc_client *c, esc_rpc_channel *ch, const char *id, const uint8_t *data,
                      size_t len, esc_status *st)
{
    size_t off = 0;
    do {
        size_t n = len - off < PUT_CHUNK ? len - off : PUT_CHUNK;
        Escher__ObjectChunk chunk = ESCHER__OBJECT_CHUNK__INIT;
        chunk.object_id = (char *)id;
        chunk.job_id = c->job_id;
        chunk.offset = off;
        chunk.total_size = len;
        chunk.data.data = (uint8_t *)data + off;
        chunk.data.len = n;
        ProtobufCMessage *m = NULL;
        int rc = store_call(c, ch, &ESC_M_OBJECT_STORE_PUT_CHUNK, &chunk.base, &m, st);
        bool sealed = rc == ESC_OK && ((Escher__PutChunkReply *)m)->sealed;
        if (m)
            protobuf_c_message_free_unpacked(m, NULL);
        if (rc != ESC_OK)
            return rc;
        off += n;
        if (off == len && !sealed)
            return esc_status_set(st, ESC_INTERNAL, "raylet did not seal object %s", id);
    } while (off < len);
    return ESC_OK;
}

int esc_put(esc_client *c, const void *data, size_t len, esc_ref **out, esc_status *st)
{
    esc_status local;
    if (!st)
        st = &local; /* the helpers read the status back */
    *out = NULL;
    if (!data && len)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "no data");
    char address[300];
    int rc = esc_client_raylet_address(c, NULL, address, sizeof address, st);
    if (rc != ESC_OK)
        return rc;
    esc_ref *ref = esc_xcalloc(1, sizeof *ref);
    if (esc_random_hex(ref->id, 16) != 0) {
        free(ref);
        return esc_status_set(st, ESC_INTERNAL, "cannot make an object id");
    }
    /* A put that fails half way leaves a partial object, which the raylet drops once
     * it has not been written to for its partial timeout. */
    rc = put_chunks(c, esc_client_raylet_channel(c, address), ref->id, data, len, st);
    if (rc != ESC_OK) {
        free(ref);
        return rc;
    }
    *out = ref;
    return esc_status_set(st, ESC_OK, NULL);
}

/* ------------------------------------------------------------------ pull */

typedef struct {
    uint8_t *buf;
    uint64_t total, got;
    bool started;
    bool is_error;
    char error[256];
} assembly;

static int take_chunk(assembly *a, const Escher__ObjectChunk *ch, esc_status *st)
{
    if (!a->started) {
        /* The object's size, which the caller chose when it put it: a checked malloc,
         * RESOURCE_EXHAUSTED when it does not fit (xalloc.h). */
        if (ch->total_size >= SIZE_MAX || !(a->buf = malloc((size_t)ch->total_size + 1)))
            return esc_client_out_of_memory(st, ch->total_size);
        a->total = ch->total_size;
        a->is_error = ch->is_error;
        snprintf(a->error, sizeof a->error, "%s", ch->error ? ch->error : "");
        a->started = true;
    }
    if (ch->total_size != a->total || ch->offset != a->got || ch->data.len > a->total - a->got)
        return esc_status_set(st, ESC_INTERNAL, "malformed object stream (chunk at %" PRIu64
                                                ", expected %" PRIu64 ")",
                              ch->offset, a->got);
    if (ch->data.len)
        memcpy(a->buf + a->got, ch->data.data, ch->data.len);
    a->got += ch->data.len;
    return ESC_OK;
}

/* Reads the whole stream into a. */
static int read_stream(esc_rpc_stream *s, assembly *a, esc_status *st)
{
    ProtobufCMessage *m;
    while (esc_rpc_stream_next(s, &m, st)) {
        int rc = take_chunk(a, (const Escher__ObjectChunk *)m, st);
        protobuf_c_message_free_unpacked(m, NULL);
        if (rc != ESC_OK)
            return rc;
    }
    if (st->code != ESC_OK)
        return st->code;
    if (!a->started || a->got != a->total)
        return esc_status_set(st, ESC_INTERNAL, "object stream ended early");
    return ESC_OK;
}

/* Pulls the object from the raylet at address within timeout_ms (0: no limit). */
static int pull_from(esc_client *c, const char *address, const char *node_id, const char *id,
                     int timeout_ms, void **data, size_t *len, esc_status *st)
{
    Escher__PullRequest req = ESCHER__PULL_REQUEST__INIT;
    req.object_id = (char *)id;
    req.node_id = (char *)node_id;
    req.chunk_size = PULL_CHUNK;
    esc_rpc_stream *s =
        esc_rpc_stream_open_timeout(esc_client_raylet_channel(c, address),
                                    &ESC_M_OBJECT_STORE_PULL, &req.base, timeout_ms, st);
    if (!s)
        return st->code;
    assembly a = {0};
    int rc = read_stream(s, &a, st);
    esc_rpc_stream_free(s);
    if (rc == ESC_OK && a.is_error)
        rc = esc_status_set(st, ESC_ABORTED, "%s", a.error[0] ? a.error : "task failed");
    if (rc != ESC_OK) {
        free(a.buf);
        return rc;
    }
    a.buf[a.got] = 0;
    *data = a.buf;
    *len = (size_t)a.got;
    return ESC_OK;
}

/* ------------------------------------------------------------------ get */

typedef struct {
    bool forever;
    bool once;          /* timeout 0: one look, no waiting */
    uint64_t end_ms;
} deadline;

static deadline deadline_in(int timeout_ms)
{
    return (deadline){.forever = timeout_ms < 0, .once = timeout_ms == 0,
                      .end_ms = esc_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0)};
}

/* Milliseconds left (a round's worth when there is no limit). */
static int left_ms(const deadline *d)
{
    if (d->forever)
        return WAIT_ROUND_MS;
    uint64_t now = esc_now_ms();
    return now >= d->end_ms ? 0 : (int)(d->end_ms - now);
}

/* The local node's copy first: no transfer between machines. */
static size_t *pull_order(const esc_client *c, const Escher__GetLocationsReply *r)
{
    size_t *order = esc_xcalloc(r->n_node_ids + 1, sizeof *order);
    size_t k = 0;
    for (size_t i = 0; i < r->n_node_ids; i++)
        if (!strcmp(r->node_ids[i], c->node_id))
            order[k++] = i;
    for (size_t i = 0; i < r->n_node_ids; i++)
        if (strcmp(r->node_ids[i], c->node_id) != 0)
            order[k++] = i;
    return order;
}

/* Tries each location. NOT_FOUND means every node answered that it holds no copy (the
 * object was freed); UNAVAILABLE that some could not be reached. */
static int pull_any(esc_client *c, const esc_ref *ref, const Escher__GetLocationsReply *r,
                    const deadline *d, void **data, size_t *len, esc_status *st)
{
    size_t *order = pull_order(c, r);
    size_t n = r->n_node_ids < r->n_addresses ? r->n_node_ids : r->n_addresses;
    bool unreachable = false;
    int rc = ESC_NOT_FOUND;
    for (size_t k = 0; k < r->n_node_ids; k++) {
        if (order[k] >= n)
            continue;
        int timeout = d->forever ? 0 : left_ms(d);
        if (!d->forever && !d->once && timeout == 0) {
            rc = esc_status_set(st, ESC_DEADLINE_EXCEEDED, "no time left to pull object %s",
                                ref->id);
            unreachable = true;
            break;
        }
        rc = pull_from(c, r->addresses[order[k]], r->node_ids[order[k]], ref->id,
                       d->once ? c->timeout_ms : timeout, data, len, st);
        if (rc == ESC_OK || rc == ESC_ABORTED || rc == ESC_RESOURCE_EXHAUSTED)
            break;
        unreachable |= rc != ESC_NOT_FOUND;
    }
    free(order);
    if (rc == ESC_OK || rc == ESC_ABORTED || rc == ESC_RESOURCE_EXHAUSTED)
        return rc;
    if (!unreachable)
        return esc_status_set(st, ESC_NOT_FOUND, "object %s was freed", ref->id);
    return rc == ESC_NOT_FOUND ? ESC_UNAVAILABLE : rc;
}

/* Nodes whose copies could not be reached: the next look waits for a copy elsewhere. */
typedef struct {
    char **ids;
    size_t n;
} node_set;

static void node_set_take(node_set *s, const Escher__GetLocationsReply *r)
{
    for (size_t i = 0; i < r->n_node_ids; i++) {
        s->ids = esc_xrealloc(s->ids, (s->n + 1) * sizeof *s->ids);
        s->ids[s->n++] = esc_xstrdup(r->node_ids[i]);
    }
}

static void node_set_free(node_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->ids[i]);
    free(s->ids);
}

static int from_directory(esc_client *c, const esc_ref *ref, int timeout_ms,
                          const deadline *dl, node_set *unreachable, void **data, size_t *len,
                          esc_status *st)
{
    deadline d = *dl;
    bool asked = false; /* a reconstruction was asked for: the next look waits for it */
    for (;;) {
        Escher__GetLocationsReply *r = NULL;
        int rc = get_locations_ex(c, ref->id, d.once ? 0 : left_ms(&d), !asked,
                                  unreachable->ids, unreachable->n, &r, st);
        if (rc != ESC_OK)
            return rc;
        asked = false;
        if (r->lost) {
            rc = reconstruct(c, r, ref->id, st);
            protobuf_c_message_free_unpacked(&r->base, NULL);
            if (rc != ESC_OK)
                return rc;
            asked = true;
            continue;
        }
        bool found = r->found;
        if (found)
            rc = pull_any(c, ref, r, &d, data, len, st);
        if (found && rc != ESC_OK)
            node_set_take(unreachable, r);
        protobuf_c_message_free_unpacked(&r->base, NULL);
        if (found && (rc == ESC_OK || rc == ESC_ABORTED || rc == ESC_NOT_FOUND ||
                      rc == ESC_RESOURCE_EXHAUSTED))
            return rc;
        if (!d.forever && (d.once || left_ms(&d) == 0))
            return found ? rc
                         : esc_status_set(st, ESC_DEADLINE_EXCEEDED,
                                          "object %s is not available after %d ms", ref->id,
                                          timeout_ms);
    }
}

/* Finds the value through the GCS directory: waits there until some node holds it,
 * then pulls it. Copies that cannot be reached are not asked again: the next look waits
 * at the GCS for a copy elsewhere, or for the object to be lost when their node is
 * declared dead (then made again), never for a pause. */
static int get_from_directory(esc_client *c, const esc_ref *ref, int timeout_ms,
                              const deadline *dl, void **data, size_t *len, esc_status *st)
{
    node_set unreachable = {0};
    int rc = from_directory(c, ref, timeout_ms, dl, &unreachable, data, len, st);
    node_set_free(&unreachable);
    return rc;
}

/* A value the results stream brought: inline, or pulled from the raylet named. Returns
 * ESC_OK, a final error, or ESC_UNAVAILABLE when the directory should be asked. */
static int get_owned(esc_client *c, const esc_ref *ref, esc_owned_value *v, const deadline *d,
                     void **data, size_t *len, esc_status *st)
{
    if (v->is_error)
        return esc_status_set(st, v->code, "%s", v->error[0] ? v->error : "task failed");
    if (v->inlined) {
        *data = v->data;
        *len = (size_t)v->size;
        v->data = NULL;
        return esc_status_set(st, ESC_OK, NULL);
    }
    /* Its node died: the value is lost or has copies elsewhere; the directory knows. So
     * it does where a notice names no raylet (told after its node died). */
    if (!*v->address || esc_client_is_dead(c, v->address))
        return ESC_UNAVAILABLE;
    /* Any failure here sends the reader to the directory, which names the node. */
    int rc = pull_from(c, v->address, "", ref->id, d->forever ? 0 : d->once ? c->timeout_ms
                                                                        : left_ms(d),
                       data, len, st);
    return rc == ESC_OK || rc == ESC_ABORTED || rc == ESC_RESOURCE_EXHAUSTED ? rc
                                                                              : ESC_UNAVAILABLE;
}

/* Waits for the value among the results of the client's own tasks, up to the deadline.
 * Returns ESC_OK or a final error when that settles it, ESC_UNAVAILABLE when the stream
 * will not bring it (ask the directory). The stream alone is waited on: every way its
 * notice can be lost ends in an event that wakes this wait (tasks.c, "Why nothing is
 * re-checked periodically"). */
static int get_from_owner(esc_client *c, const esc_ref *ref, const deadline *d, void **data,
                          size_t *len, esc_status *st)
{
    esc_owner *o = esc_owner_peek(c);
    esc_owned_value *v = NULL;
    int state = o ? esc_owner_take(o, ref->id, d->once ? 0 : d->forever ? -1 : left_ms(d), &v)
                  : ESC_OWNED_UNKNOWN;
    if (state == ESC_OWNED_READY) {
        int rc = get_owned(c, ref, v, d, data, len, st);
        esc_owned_value_free(v);
        return rc;
    }
    if (state == ESC_OWNED_UNKNOWN || d->once)
        return ESC_UNAVAILABLE;
    return esc_status_set(st, ESC_DEADLINE_EXCEEDED, "object %s is not available in time",
                          ref->id);
}

int esc_get(esc_client *c, const esc_ref *ref, int timeout_ms, void **data, size_t *len,
            esc_status *st)
{
    esc_status local;
    if (!st)
        st = &local; /* the helpers read the status back */
    *data = NULL;
    *len = 0;
    deadline d = deadline_in(timeout_ms);
    int rc = get_from_owner(c, ref, &d, data, len, st);
    if (rc != ESC_UNAVAILABLE)
        return rc;
    rc = get_from_directory(c, ref, timeout_ms, &d, data, len, st);
    /* Settled without the stream: a notice coming later is not kept for anyone. */
    esc_owner *o = esc_owner_peek(c);
    if (o && rc != ESC_DEADLINE_EXCEEDED)
        esc_owner_forget(o, ref->id);
    return rc;
}

/* ------------------------------------------------------------------ release, locations */

int esc_ref_release(esc_client *c, const esc_ref *ref, esc_status *st)
{
    esc_status local;
    if (!st)
        st = &local; /* the helpers read the status back */
    esc_owner *o = esc_owner_peek(c);
    if (o)
        esc_owner_forget(o, ref->id);
    Escher__GetLocationsReply *r = NULL;
    int rc = get_locations(c, ref->id, 0, &r, st);
    if (rc != ESC_OK)
        return rc;
    for (size_t i = 0; i < r->n_addresses; i++) {
        esc_status one = {0};
        int code = free_at(c, r->addresses[i], ref->id, &one);
        if (code != ESC_OK && rc == ESC_OK) {
            rc = code;
            if (st)
                *st = one;
        }
    }
    protobuf_c_message_free_unpacked(&r->base, NULL);
    return rc == ESC_OK ? esc_status_set(st, ESC_OK, NULL) : rc;
}

static char **copy_strings(char **v, size_t n)
{
    char **out = esc_xcalloc(n + 1, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = esc_xstrdup(v[i]);
    return out;
}

int esc_ref_locations(esc_client *c, const esc_ref *ref, esc_object_locations **out,
                      esc_status *st)
{
    esc_status local;
    if (!st)
        st = &local; /* the helpers read the status back */
    *out = NULL;
    Escher__GetLocationsReply *r = NULL;
    int rc = get_locations(c, ref->id, 0, &r, st);
    if (rc != ESC_OK)
        return rc;
    esc_object_locations *l = esc_xcalloc(1, sizeof *l);
    l->size = r->size;
    l->is_error = r->is_error;
    l->n = r->n_node_ids < r->n_addresses ? r->n_node_ids : r->n_addresses;
    l->node_ids = copy_strings(r->node_ids, l->n);
    l->addresses = copy_strings(r->addresses, l->n);
    protobuf_c_message_free_unpacked(&r->base, NULL);
    *out = l;
    return ESC_OK;
}

void esc_object_locations_free(esc_object_locations *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->node_ids[i]);
        free(l->addresses[i]);
    }
    free(l->node_ids);
    free(l->addresses);
    free(l);
}

int esc_object_store_stats_get(esc_client *c, const char *node_id,
                               esc_object_store_stats *out, esc_status *st)
{
    esc_status local;
    if (!st)
        st = &local; /* the helpers read the status back */
    char address[300];
    int rc = esc_client_raylet_address(c, node_id, address, sizeof address, st);
    if (rc != ESC_OK)
        return rc;
    Escher__ObjectStoreStatsRequest req = ESCHER__OBJECT_STORE_STATS_REQUEST__INIT;
    ProtobufCMessage *m = NULL;
    rc = store_call(c, esc_client_raylet_channel(c, address), &ESC_M_OBJECT_STORE_STATS,
                    &req.base, &m, st);
    if (rc != ESC_OK)
        return rc;
    const Escher__ObjectStoreStatsReply *r = (const Escher__ObjectStoreStatsReply *)m;
    *out = (esc_object_store_stats){r->capacity, r->used, r->objects, r->pulled_bytes};
    protobuf_c_message_free_unpacked(m, NULL);
    return ESC_OK;
}
