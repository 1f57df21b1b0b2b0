/* storage_memory.c: the embedded store, one hash table per table name.
 *
 * Both levels (table name -> table, key -> value) use the same open-addressing
 * map with linear probing and backward-shift deletion, so there are no
 * tombstones and a lookup never scans more than one cluster.
 *
 * Commit is all-or-nothing by construction: the only thing that can fail is
 * allocation, so every allocation happens in a prepare phase (create missing
 * tables, grow each table enough for all of the batch's puts) before the first
 * visible change; the apply phase then moves the batch's key and value buffers
 * into the tables and cannot fail. Empty tables left behind by a failed prepare
 * are invisible (a scan of an empty table and of an absent one both return 0).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage_backend.h"
#include "xalloc.h"

typedef struct {
    char *key; /* NULL: empty slot */
    void *val; /* value bytes, or a mem_table* in the table-name map */
    size_t len;
    uint64_t hash;
} mem_slot;

typedef struct {
    mem_slot *slots;
    size_t cap; /* 0 or a power of two */
    size_t count;
} mem_map;

typedef struct {
    mem_map entries;
    size_t pending_puts; /* used only during a commit's prepare phase */
} mem_table;

typedef struct {
    esc_storage base;
    mem_map tables;
} mem_store;

/* ---- map ---- */

/* FNV-1a: short keys, no adversarial input (keys come from the GCS itself). */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* Index of key's slot, or of the empty slot where it would go. cap must be > 0. */
static size_t map_probe(const mem_map *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)h & mask;
    while (m->slots[i].key != NULL &&
           (m->slots[i].hash != h || strcmp(m->slots[i].key, key) != 0))
        i = (i + 1) & mask;
    return i;
}

static mem_slot *map_find(const mem_map *m, const char *key)
{
    if (m->count == 0)
        return NULL;
    mem_slot *s = &m->slots[map_probe(m, key, hash_str(key))];
    return s->key != NULL ? s : NULL;
}

/* Keeps the load factor at or below 3/4 so probes stay short. */
static int map_fits(size_t cap, size_t n)
{
    return cap != 0 && n <= cap / 4 * 3;
}

static int map_rehash(mem_map *m, size_t cap)
{
    mem_slot *slots = esc_xcalloc(cap, sizeof(*slots));
    mem_map grown = { slots, cap, m->count };
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i].key != NULL)
            grown.slots[map_probe(&grown, m->slots[i].key, m->slots[i].hash)] = m->slots[i];
    }
    free(m->slots);
    *m = grown;
    return 0;
}

/* Makes room for `extra` more keys, so that inserting them cannot fail. */
static int map_reserve(mem_map *m, size_t extra)
{
    if (extra > SIZE_MAX / 2 - m->count)
        return -1;
    size_t need = m->count + extra;
    if (map_fits(m->cap, need))
        return 0;
    size_t cap = m->cap ? m->cap : 16;
    while (!map_fits(cap, need)) {
        if (cap > SIZE_MAX / 2 / sizeof(mem_slot))
            return -1;
        cap *= 2;
    }
    return map_rehash(m, cap);
}

/* Inserts a key known to be absent; room must have been reserved. */
static mem_slot *map_insert_reserved(mem_map *m, char *key, void *val, size_t len)
{
    uint64_t h = hash_str(key);
    mem_slot *s = &m->slots[map_probe(m, key, h)];
    *s = (mem_slot){ key, val, len, h };
    m->count++;
    return s;
}

/* Backward-shift deletion: pull later members of the cluster into the hole
 * when their home slot does not lie strictly between the hole and them. */
static void map_remove(mem_map *m, mem_slot *s)
{
    size_t mask = m->cap - 1;
    size_t hole = (size_t)(s - m->slots);
    size_t i = hole;
    for (;;) {
        i = (i + 1) & mask;
        if (m->slots[i].key == NULL)
            break;
        size_t home = (size_t)m->slots[i].hash & mask;
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole] = (mem_slot){ 0 };
    m->count--;
}

/* ---- tables ---- */

static void table_free(mem_table *t)
{
    for (size_t i = 0; i < t->entries.cap; i++) {
        free(t->entries.slots[i].key);
        free(t->entries.slots[i].val);
    }
    free(t->entries.slots);
    free(t);
}

static mem_table *table_find(const mem_store *ms, const char *name)
{
    mem_slot *s = map_find(&ms->tables, name);
    return s != NULL ? s->val : NULL;
}

static mem_table *table_get_or_create(mem_store *ms, const char *name)
{
    mem_table *t = table_find(ms, name);
    if (t != NULL)
        return t;
    t = esc_xcalloc(1, sizeof(*t));
    char *key = esc_xstrdup(name);
    if (map_reserve(&ms->tables, 1) != 0) {
        free(t);
        free(key);
        return NULL;
    }
    map_insert_reserved(&ms->tables, key, t, 0);
    return t;
}

/* ---- commit ---- */

static void clear_pending(mem_store *ms, const esc_storage_batch *b)
{
    for (size_t i = 0; i < b->count; i++) {
        mem_table *t = table_find(ms, b->ops[i].table);
        if (t != NULL)
            t->pending_puts = 0;
    }
}

/* Allocates everything the apply phase will need; changes nothing visible. */
static int commit_prepare(mem_store *ms, const esc_storage_batch *b)
{
    for (size_t i = 0; i < b->count; i++) {
        if (b->ops[i].kind != ESC_STORAGE_OP_PUT)
            continue;
        mem_table *t = table_get_or_create(ms, b->ops[i].table);
        if (t == NULL) {
            clear_pending(ms, b);
            return -1;
        }
        t->pending_puts++;
    }
    int rc = 0;
    for (size_t i = 0; i < b->count && rc == 0; i++) {
        mem_table *t = table_find(ms, b->ops[i].table);
        if (t != NULL && t->pending_puts > 0) {
            rc = map_reserve(&t->entries, t->pending_puts);
            t->pending_puts = 0;
        }
    }
    clear_pending(ms, b);
    return rc;
}

/* Moves the op's buffers into the table (the batch frees whatever is left). */
static void apply_put(mem_table *t, esc_storage_op *op)
{
    mem_slot *s = map_find(&t->entries, op->key);
    if (s != NULL) {
        free(s->val);
        s->val = op->value;
        s->len = op->len;
    } else {
        map_insert_reserved(&t->entries, op->key, op->value, op->len);
        op->key = NULL;
    }
    op->value = NULL;
}

static void apply_del(mem_table *t, const esc_storage_op *op)
{
    mem_slot *s = t != NULL ? map_find(&t->entries, op->key) : NULL;
    if (s == NULL)
        return;
    free(s->key);
    free(s->val);
    map_remove(&t->entries, s);
}

static int mem_commit(esc_storage *st, esc_storage_batch *b, char *err, size_t errlen)
{
    mem_store *ms = (mem_store *)st;
    if (commit_prepare(ms, b) != 0) {
        esc_storage_seterr(err, errlen, "memory storage: commit failed: out of memory");
        return -1;
    }
    for (size_t i = 0; i < b->count; i++) {
        esc_storage_op *op = &b->ops[i];
        mem_table *t = table_find(ms, op->table);
        if (op->kind == ESC_STORAGE_OP_PUT)
            apply_put(t, op);
        else
            apply_del(t, op);
    }
    return 0;
}

/* ---- reads ---- */

static int mem_get(esc_storage *st, const char *table, const char *key, void **value,
                   size_t *len)
{
    mem_table *t = table_find((mem_store *)st, table);
    mem_slot *s = t != NULL ? map_find(&t->entries, key) : NULL;
    if (s == NULL)
        return 0;
    void *copy = esc_xmalloc(s->len ? s->len : 1);
    memcpy(copy, s->val, s->len);
    *value = copy;
    *len = s->len;
    return 1;
}

/* fn must not write to the store: a commit could rehash the table under us. */
static long mem_scan(esc_storage *st, const char *table, esc_storage_scan_fn fn, void *ud)
{
    mem_table *t = table_find((mem_store *)st, table);
    if (t == NULL)
        return 0;
    long n = 0;
    for (size_t i = 0; i < t->entries.cap; i++) {
        const mem_slot *s = &t->entries.slots[i];
        if (s->key == NULL)
            continue;
        if (fn != NULL)
            fn(ud, s->key, s->val, s->len);
        n++;
    }
    return n;
}

/* ---- lifecycle ---- */

static void mem_close(esc_storage *st)
{
    mem_store *ms = (mem_store *)st;
    for (size_t i = 0; i < ms->tables.cap; i++) {
        if (ms->tables.slots[i].key == NULL)
            continue;
        free(ms->tables.slots[i].key);
        table_free(ms->tables.slots[i].val);
    }
    free(ms->tables.slots);
    free(ms);
}

static const esc_storage_vtable mem_vtable = {
    .durable = 0,
    .close = mem_close,
    .commit = mem_commit,
    .get = mem_get,
    .scan = mem_scan,
};

esc_storage *esc_storage_memory_open(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    mem_store *ms = esc_xcalloc(1, sizeof(*ms));
    ms->base.vt = &mem_vtable;
    return &ms->base;
}
