/* object_store.c: the node's in-memory object store (object_store.h).
 *
 * An index (id -> entry) holds every live object; unsealed ones are also on a list, so
 * expiring partial puts costs what is unsealed, not what is stored. The capacity is
 * checked when an object is created, against the whole size it announces, so a put that
 * does not fit fails on its first chunk instead of after most of its bytes arrived.
 * An entry charges its data size plus its error text to `used`. */
#include "object_store.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "strmap.h"
#include "xalloc.h"

struct object_entry {
    object_entry *prev_unsealed, *next_unsealed;
    char *id;
    char *job_id;
    char *error;
    char *origin;         /* the node that can make it again (TaskSpec.origin); NULL none */
    uint8_t *data;
    uint64_t size;
    uint64_t written;     /* bytes written so far, all before this offset */
    uint64_t charge;      /* bytes counted in used */
    uint64_t touched_ms;  /* last write, for expiry */
    bool is_error;
    bool sealed;
    bool indexed;         /* false once freed while pinned */
    int pins;
};

struct object_store {
    esc_strmap *index;
    object_entry *unsealed;
    uint64_t capacity;
    uint64_t used;
    uint64_t partial_timeout_ms;
    uint32_t nunsealed;
};

object_store *object_store_new(uint64_t capacity, uint64_t partial_timeout_ms)
{
    object_store *s = esc_xcalloc(1, sizeof *s);
    s->index = esc_strmap_new();
    s->capacity = capacity;
    s->partial_timeout_ms = partial_timeout_ms;
    return s;
}

static void entry_destroy(object_entry *e)
{
    free(e->id);
    free(e->job_id);
    free(e->error);
    free(e->origin);
    free(e->data);
    free(e);
}

static void unsealed_unlink(object_store *s, object_entry *e)
{
    if (e->prev_unsealed)
        e->prev_unsealed->next_unsealed = e->next_unsealed;
    else
        s->unsealed = e->next_unsealed;
    if (e->next_unsealed)
        e->next_unsealed->prev_unsealed = e->prev_unsealed;
    e->prev_unsealed = e->next_unsealed = NULL;
    s->nunsealed--;
}

static void seal(object_store *s, object_entry *e)
{
    e->sealed = true;
    unsealed_unlink(s, e);
}

/* Takes e out of the index; its memory goes now, or with its last pin. */
static void entry_remove(object_store *s, object_entry *e)
{
    esc_strmap_del(s->index, e->id);
    e->indexed = false;
    if (!e->sealed)
        unsealed_unlink(s, e);
    if (e->pins > 0)
        return;
    s->used -= e->charge;
    entry_destroy(e);
}

void object_store_free(object_store *s)
{
    if (!s)
        return;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(s->index, &pos, &k, &v))
        entry_destroy(v);
    esc_strmap_free(s->index);
    free(s);
}

static int full(const object_store *s, uint64_t want, esc_status *st)
{
    return esc_status_set(st, ESC_RESOURCE_EXHAUSTED,
                          "object store full (used %" PRIu64 " of %" PRIu64
                          " bytes; this object needs %" PRIu64 ")",
                          s->used, s->capacity, want);
}

static int check_create(const object_store *s, const char *id, const char *job_id,
                        uint64_t charge, esc_status *st)
{
    if (!esc_object_id_valid(id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "invalid object id (1-79 of A-Z a-z 0-9 _ . -)");
    if (job_id && *job_id && !esc_name_valid(job_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "invalid job id");
    if (esc_strmap_get(s->index, id))
        return esc_status_set(st, ESC_ALREADY_EXISTS, "object %s already exists", id);
    if (charge > s->capacity || s->used > s->capacity - charge)
        return full(s, charge, st);
    return ESC_OK;
}

int object_store_create(object_store *s, const char *id, const char *job_id, uint64_t size,
                        bool is_error, const char *error, uint64_t now_ms, esc_status *st)
{
    size_t elen = is_error && error ? strlen(error) : 0;
    if (elen > OBJECT_ERROR_MAX)
        elen = OBJECT_ERROR_MAX;
    if (size > UINT64_MAX - elen)
        return full(s, UINT64_MAX, st);
    int rc = check_create(s, id, job_id, size + elen, st);
    if (rc != ESC_OK)
        return rc;
    uint8_t *data = NULL;
    /* A size a peer chose (within the capacity, which may exceed this host's memory): a
     * refusal, not the daemon's out-of-memory abort (xalloc.h). */
    if (size > 0 && !(data = malloc((size_t)size)))
        return full(s, size + elen, st); /* the capacity was too generous for this host */
    object_entry *e = esc_xcalloc(1, sizeof *e);
    e->id = esc_xstrdup(id);
    e->job_id = esc_xstrdup(job_id ? job_id : "");
    e->error = esc_xstrndup(is_error && error ? error : "", elen);
    e->data = data;
    e->size = size;
    e->charge = size + elen;
    e->is_error = is_error;
    e->touched_ms = now_ms;
    e->indexed = true;
    esc_strmap_put(s->index, e->id, e);
    s->used += e->charge;
    e->next_unsealed = s->unsealed;
    if (s->unsealed)
        s->unsealed->prev_unsealed = e;
    s->unsealed = e;
    s->nunsealed++;
    if (size == 0)
        seal(s, e);
    return esc_status_set(st, ESC_OK, NULL);
}

int object_store_write(object_store *s, const char *id, uint64_t offset, const void *data,
                       size_t len, uint64_t now_ms, bool *sealed, esc_status *st)
{
    *sealed = false;
    object_entry *e = id ? esc_strmap_get(s->index, id) : NULL;
    if (!e)
        return esc_status_set(st, ESC_NOT_FOUND, "no object %s being written", id ? id : "");
    if (e->sealed)
        return esc_status_set(st, ESC_FAILED_PRECONDITION, "object %s is sealed", id);
    if (offset > e->size || len > e->size - offset)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "chunk [%" PRIu64 ", +%zu) past the end of object %s (%" PRIu64
                              " bytes)",
                              offset, len, id, e->size);
    if (offset + len <= e->written && offset < e->written) {
        e->touched_ms = now_ms; /* a repeat: the bytes are there already */
        return esc_status_set(st, ESC_OK, NULL);
    }
    if (offset != e->written)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "chunk at offset %" PRIu64 " of object %s, expected %" PRIu64,
                              offset, id, e->written);
    if (len)
        memcpy(e->data + offset, data, len);
    e->written += len;
    e->touched_ms = now_ms;
    if (e->written == e->size) {
        seal(s, e);
        *sealed = true;
    }
    return esc_status_set(st, ESC_OK, NULL);
}

int object_store_put(object_store *s, const char *id, const char *job_id, const void *data,
                     size_t len, bool is_error, const char *error, esc_status *st)
{
    int rc = object_store_create(s, id, job_id, len, is_error, error, 0, st);
    if (rc != ESC_OK || len == 0)
        return rc;
    bool sealed;
    return object_store_write(s, id, 0, data, len, 0, &sealed, st);
}

bool object_store_set_origin(object_store *s, const char *id, const char *origin)
{
    object_entry *e = esc_strmap_get(s->index, id);
    if (!e || !origin || !*origin)
        return false;
    free(e->origin);
    e->origin = esc_xstrdup(origin);
    return true;
}

static void fill_view(const object_entry *e, object_view *out)
{
    out->origin = e->origin ? e->origin : "";
    out->id = e->id;
    out->job_id = e->job_id;
    out->data = e->data;
    out->size = e->size;
    out->is_error = e->is_error;
    out->error = e->error;
}

bool object_store_get(const object_store *s, const char *id, object_view *out)
{
    const object_entry *e = id ? esc_strmap_get(s->index, id) : NULL;
    if (!e || !e->sealed)
        return false;
    fill_view(e, out);
    return true;
}

bool object_store_peek(const object_store *s, const char *id, object_view *out, bool *sealed)
{
    const object_entry *e = id ? esc_strmap_get(s->index, id) : NULL;
    if (sealed)
        *sealed = e && e->sealed;
    if (e && out)
        fill_view(e, out);
    return e != NULL;
}

object_entry *object_store_pin(object_store *s, const char *id, object_view *out)
{
    object_entry *e = id ? esc_strmap_get(s->index, id) : NULL;
    if (!e || !e->sealed)
        return NULL;
    e->pins++;
    fill_view(e, out);
    return e;
}

void object_store_unpin(object_store *s, object_entry *e)
{
    if (--e->pins > 0 || e->indexed)
        return;
    s->used -= e->charge;
    entry_destroy(e);
}

bool object_store_delete(object_store *s, const char *id, bool *was_sealed)
{
    object_entry *e = id ? esc_strmap_get(s->index, id) : NULL;
    if (was_sealed)
        *was_sealed = e && e->sealed;
    if (!e)
        return false;
    entry_remove(s, e);
    return true;
}

size_t object_store_delete_job(object_store *s, const char *job_id)
{
    if (!job_id || !*job_id)
        return 0;
    size_t pos = 0, n = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(s->index, &pos, &k, &v)) {
        object_entry *e = v;
        if (strcmp(e->job_id, job_id) == 0) {
            entry_remove(s, e); /* deleting the entry just returned is allowed */
            n++;
        }
    }
    return n;
}

size_t object_store_expire(object_store *s, uint64_t now_ms)
{
    size_t n = 0;
    object_entry *e = s->unsealed;
    while (e) {
        object_entry *next = e->next_unsealed;
        if (now_ms >= e->touched_ms && now_ms - e->touched_ms >= s->partial_timeout_ms) {
            entry_remove(s, e);
            n++;
        }
        e = next;
    }
    return n;
}

void object_store_each_sealed(const object_store *s,
                              void (*fn)(void *ud, const object_view *v), void *ud)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(s->index, &pos, &k, &v)) {
        const object_entry *e = v;
        if (!e->sealed)
            continue;
        object_view view;
        fill_view(e, &view);
        fn(ud, &view);
    }
}

void object_store_each(const object_store *s, void (*fn)(void *ud, const object_row *row),
                       void *ud)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(s->index, &pos, &k, &v)) {
        const object_entry *e = v;
        object_row row = {e->id, e->job_id, e->size, e->sealed, e->pins > 0, e->is_error};
        fn(ud, &row);
    }
}

void object_store_get_stats(const object_store *s, object_store_stats *out)
{
    out->capacity = s->capacity;
    out->used = s->used;
    out->objects = (uint32_t)esc_strmap_count(s->index);
    out->unsealed = s->nunsealed;
}
