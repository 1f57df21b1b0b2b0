/* intern.c: string interning with an open-addressing hash table.
 *
 * names[] holds the strings in id order, so id -> name is an array index. The hash
 * table (linear probing, power-of-two size, at most half full) maps name -> id;
 * a slot holds an id, or -1 when empty. Names are never removed, so no tombstones. */
#include "intern.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define INITIAL_SLOTS 16

struct esc_intern {
    char **names;       /* names[id], owned */
    int32_t count;
    int32_t names_cap;
    int32_t *slots;     /* hash table of ids, -1 = empty */
    uint32_t nslots;    /* power of two */
};

/* FNV-1a: short strings, few of them; quality is plenty for linear probing. */
static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static int32_t *slots_alloc(uint32_t n)
{
    int32_t *s = esc_xmalloc(n * sizeof *s);
    for (uint32_t i = 0; i < n; i++)
        s[i] = -1;
    return s;
}

esc_intern *esc_intern_new(void)
{
    esc_intern *t = esc_xcalloc(1, sizeof *t);
    t->slots = slots_alloc(INITIAL_SLOTS);
    t->nslots = INITIAL_SLOTS;
    return t;
}

void esc_intern_free(esc_intern *t)
{
    if (t == NULL)
        return;
    for (int32_t i = 0; i < t->count; i++)
        free(t->names[i]);
    free(t->names);
    free(t->slots);
    free(t);
}

/* Returns the slot holding name, or the empty slot where it would go. */
static uint32_t probe(const esc_intern *t, const char *name)
{
    uint32_t mask = t->nslots - 1;
    uint32_t i = hash_str(name) & mask;
    while (t->slots[i] >= 0 && strcmp(t->names[t->slots[i]], name) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Doubles the table and reinserts every id; ids themselves do not change. */
static int grow_slots(esc_intern *t)
{
    if (t->nslots > UINT32_MAX / 2)
        return -1;
    uint32_t n = t->nslots * 2;
    int32_t *s = slots_alloc(n);
    free(t->slots);
    t->slots = s;
    t->nslots = n;
    for (int32_t id = 0; id < t->count; id++)
        t->slots[probe(t, t->names[id])] = id;
    return 0;
}

static int grow_names(esc_intern *t)
{
    if (t->names_cap > INT32_MAX / 2)
        return -1;
    int32_t cap = t->names_cap ? t->names_cap * 2 : 16;
    t->names = esc_xrealloc(t->names, (size_t)cap * sizeof *t->names);
    t->names_cap = cap;
    return 0;
}

/* Makes room for one more name, keeping the load factor at most 1/2. */
static int reserve_one(esc_intern *t)
{
    if (t->count == INT32_MAX)
        return -1;
    if (t->count == t->names_cap && grow_names(t) != 0)
        return -1;
    if ((uint32_t)(t->count + 1) * 2 > t->nslots && grow_slots(t) != 0)
        return -1;
    return 0;
}

/* Returns -1 for a NULL name or when memory runs out (the table is unchanged). */
int32_t esc_intern_id(esc_intern *t, const char *name)
{
    if (t == NULL || name == NULL)
        return -1;
    int32_t id = t->slots[probe(t, name)];
    if (id >= 0)
        return id;
    if (reserve_one(t) != 0)
        return -1;
    size_t len = strlen(name) + 1;
    char *copy = esc_xmalloc(len);
    memcpy(copy, name, len);
    id = t->count++;
    t->names[id] = copy;
    t->slots[probe(t, name)] = id;    /* probe again: growing moved the slots */
    return id;
}

int32_t esc_intern_find(const esc_intern *t, const char *name)
{
    if (t == NULL || name == NULL)
        return -1;
    return t->slots[probe(t, name)];
}

const char *esc_intern_name(const esc_intern *t, int32_t id)
{
    if (t == NULL || id < 0 || id >= t->count)
        return NULL;
    return t->names[id];
}

int32_t esc_intern_count(const esc_intern *t)
{
    return t ? t->count : 0;
}
