/* strmap.c: open addressing with linear probing; deleted slots keep a tombstone so
 * probe chains stay intact, and the table is rebuilt when tombstones pile up. */
#include "strmap.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char tombstone;

typedef struct {
    char *key;   /* NULL: empty; &tombstone: deleted */
    void *value;
    uint64_t hash;
} slot;

struct esc_strmap {
    slot *slots;
    size_t cap;   /* power of two */
    size_t count;
    size_t used;  /* count + tombstones */
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

esc_strmap *esc_strmap_new(void)
{
    esc_strmap *m = esc_xcalloc(1, sizeof *m);
    m->cap = 16;
    m->slots = esc_xcalloc(m->cap, sizeof *m->slots);
    return m;
}

void esc_strmap_free(esc_strmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key && m->slots[i].key != &tombstone)
            free(m->slots[i].key);
    free(m->slots);
    free(m);
}

/* Index of key's slot, or of the first free slot on its probe chain when absent. */
static size_t find_slot(const esc_strmap *m, const char *key, uint64_t h, int *found)
{
    size_t mask = m->cap - 1, i = h & mask, free_at = SIZE_MAX;
    for (;;) {
        slot *s = &m->slots[i];
        if (!s->key) {
            *found = 0;
            return free_at != SIZE_MAX ? free_at : i;
        }
        if (s->key == &tombstone) {
            if (free_at == SIZE_MAX)
                free_at = i;
        } else if (s->hash == h && strcmp(s->key, key) == 0) {
            *found = 1;
            return i;
        }
        i = (i + 1) & mask;
    }
}

static void rehash(esc_strmap *m, size_t newcap)
{
    slot *old = m->slots;
    size_t oldcap = m->cap;
    m->slots = esc_xcalloc(newcap, sizeof *m->slots);
    m->cap = newcap;
    m->used = m->count;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].key || old[i].key == &tombstone)
            continue;
        int found;
        size_t j = find_slot(m, old[i].key, old[i].hash, &found);
        m->slots[j] = old[i];
    }
    free(old);
}

void *esc_strmap_put(esc_strmap *m, const char *key, void *value)
{
    if ((m->used + 1) * 4 >= m->cap * 3)
        rehash(m, m->count * 2 + 1 >= m->cap / 2 ? m->cap * 2 : m->cap);
    uint64_t h = hash_str(key);
    int found;
    size_t i = find_slot(m, key, h, &found);
    if (found) {
        void *prev = m->slots[i].value;
        m->slots[i].value = value;
        return prev;
    }
    if (!m->slots[i].key)
        m->used++;
    m->slots[i] = (slot){esc_xstrdup(key), value, h};
    m->count++;
    return NULL;
}

void *esc_strmap_get(const esc_strmap *m, const char *key)
{
    int found;
    size_t i = find_slot(m, key, hash_str(key), &found);
    return found ? m->slots[i].value : NULL;
}

void *esc_strmap_del(esc_strmap *m, const char *key)
{
    int found;
    size_t i = find_slot(m, key, hash_str(key), &found);
    if (!found)
        return NULL;
    void *v = m->slots[i].value;
    free(m->slots[i].key);
    m->slots[i].key = &tombstone;
    m->slots[i].value = NULL;
    m->count--;
    return v;
}

size_t esc_strmap_count(const esc_strmap *m)
{
    return m->count;
}

int esc_strmap_next(const esc_strmap *m, size_t *pos, const char **key, void **value)
{
    for (size_t i = *pos; i < m->cap; i++) {
        if (m->slots[i].key && m->slots[i].key != &tombstone) {
            *key = m->slots[i].key;
            *value = m->slots[i].value;
            *pos = i + 1;
            return 1;
        }
    }
    *pos = m->cap;
    return 0;
}
