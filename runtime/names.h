/* names.h: validation of resource names and namespaces.
 *
 * A short name or a namespace: 1..64 chars of [A-Za-z0-9_.-], not starting with '.'.
 * An ephemeral resource's full name is "<namespace>/<short>".
 * Physical names are set only by raylets: CPU, GPU, memory, object_store_memory and
 * anything starting with "node:". Static custom resources given to a raylet by flag
 * are short names without a namespace and are also physical (not writable).
 */
#ifndef ESC_NAMES_H
#define ESC_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define ESC_NAME_MAX 64
#define ESC_FULLNAME_MAX (2 * ESC_NAME_MAX + 2)

/* True when s is a valid short name or namespace. */
bool esc_name_valid(const char *s);

/* True when s is a valid object id: 1..ESC_OBJECT_ID_MAX-1 (ids.h) chars of
 * [A-Za-z0-9_.-], not starting with '.' (random hex for puts, the task id and the
 * return's index for task returns). */
bool esc_object_id_valid(const char *s);

/* True when s is a physical resource name (CPU, GPU, memory, object_store_memory, node:*). */
bool esc_name_is_physical(const char *s);

/* Writes "<ns>/<name>" into out (at least ESC_FULLNAME_MAX bytes). Returns 0, or -1
 * when either part is invalid. */
int esc_name_join(const char *ns, const char *name, char *out, size_t outlen);

/* Splits a full name at its '/' into ns and name (each ESC_NAME_MAX+1 bytes).
 * Returns 0, or -1 when full is not "<valid ns>/<valid name>". */
int esc_name_split(const char *full, char *ns, char *name);

#endif
