/* intern.h: resource names interned to small integers, per process.
 *
 * The first name interned gets id 0, the next 1, and so on; ids are never reused,
 * so they index flat arrays. Not thread-safe: one table per owning thread.
 */
#ifndef ESC_INTERN_H
#define ESC_INTERN_H

#include <stdint.h>

typedef struct esc_intern esc_intern;

/* Creates an empty table; the caller frees it with esc_intern_free. */
esc_intern *esc_intern_new(void);
void esc_intern_free(esc_intern *t);

/* Returns the id of name, adding it if new (the table copies the string). */
int32_t esc_intern_id(esc_intern *t, const char *name);

/* Returns the id of name, or -1 when it was never interned. */
int32_t esc_intern_find(const esc_intern *t, const char *name);

/* Returns the name of id (owned by the table), or NULL when id is unknown. */
const char *esc_intern_name(const esc_intern *t, int32_t id);

/* Number of names interned so far. */
int32_t esc_intern_count(const esc_intern *t);

#endif
