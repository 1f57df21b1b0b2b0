/* resource_rows.c: a copy of the accounting table as protobuf ResourceState rows, built
 * on the loop thread and read by others (the report thread, RPC replies). One block
 * holds the pointer array, the rows and their names, so a copy costs one pass over the
 * table and at most one allocation; the report thread hands finished blocks back for
 * reuse, because touching fresh pages costs more than the copy on a big table. */
#include "resource_rows.h"
#include "xalloc.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

resource_rows *resource_rows_build(const accounting *a, resource_rows *reuse)
{
    size_t n = accounting_count(a);
    size_t names = 0;
    accounting_row row;
    for (size_t i = 0; i < n; i++)
        if (accounting_row_at(a, i, &row))
            names += strlen(row.name) + 1;
    size_t head = sizeof(resource_rows);
    head = (head + alignof(max_align_t) - 1) / alignof(max_align_t) * alignof(max_align_t);
    size_t ptrs = n * sizeof(Escher__ResourceState *);
    size_t states = n * sizeof(Escher__ResourceState);
    size_t need = head + ptrs + states + names + 1;
    char *mem = (char *)reuse;
    size_t cap = reuse ? reuse->cap : 0;
    if (cap < need) {
        free(reuse);
        cap = need + need / 4; /* room to grow before the next allocation */
        mem = esc_xmalloc(cap);
    }
    resource_rows *r = (resource_rows *)mem;
    r->cap = cap;
    r->rows = (Escher__ResourceState **)(mem + head);
    Escher__ResourceState *st = (Escher__ResourceState *)(mem + head + ptrs);
    char *p = mem + head + ptrs + states;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!accounting_row_at(a, i, &row))
            continue;
        size_t len = strlen(row.name) + 1;
        memcpy(p, row.name, len);
        Escher__ResourceState init = ESCHER__RESOURCE_STATE__INIT;
        st[k] = init;
        st[k].name = p;
        st[k].total = row.total;
        st[k].held = row.held;
        st[k].unbounded = row.unbounded;
        st[k].deleted = row.deleted;
        st[k].backed = row.backed;
        st[k].pending = row.pending;
        st[k].carved = row.carved;
        r->rows[k] = &st[k];
        p += len;
        k++;
    }
    r->n = k;
    return r;
}
