/* strmap.h: a string-keyed hash map (open addressing, linear probing, tombstones).
 * Keys are copied; values are opaque pointers owned by the caller. Not thread-safe. */
#ifndef ESC_STRMAP_H
#define ESC_STRMAP_H

#include <stddef.h>

typedef struct esc_strmap esc_strmap;

esc_strmap *esc_strmap_new(void);
/* Frees the map and its key copies, not the values. */
void esc_strmap_free(esc_strmap *m);

/* Sets m[key] = value; returns the previous value or NULL. */
void *esc_strmap_put(esc_strmap *m, const char *key, void *value);
/* Returns m[key] or NULL. */
void *esc_strmap_get(const esc_strmap *m, const char *key);
/* Removes key; returns its value or NULL. */
void *esc_strmap_del(esc_strmap *m, const char *key);
size_t esc_strmap_count(const esc_strmap *m);

/* Iteration: *pos starts at 0; returns 1 with *key and *value for the next entry, 0 at the
 * end. Deleting the entry just returned is allowed; other mutations are not. */
int esc_strmap_next(const esc_strmap *m, size_t *pos, const char **key, void **value);

#endif
