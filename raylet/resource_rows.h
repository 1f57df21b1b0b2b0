/* resource_rows.h: a copy of the accounting table as protobuf ResourceState rows (resource_rows.c). */
#ifndef RAYLET_RESOURCE_ROWS_H
#define RAYLET_RESOURCE_ROWS_H

#include <stddef.h>

#include "accounting.h"
#include "gcs.pb-c.h"

/* A copy of the accounting table as protobuf rows, in one allocation: free() it. */
typedef struct {
    size_t n;
    Escher__ResourceState **rows;
    size_t cap;                  /* bytes allocated */
} resource_rows;

/* Copies the table. reuse (may be NULL, taken over) is an earlier copy whose memory is
 * used again when big enough: a big table then costs no fresh pages per copy. */
resource_rows *resource_rows_build(const accounting *a, resource_rows *reuse);

#endif
