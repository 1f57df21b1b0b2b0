/* accounting.h: the authoritative local accounting of one node.
 *
 * Per resource: total, held (by running tasks and actors, through leases), and
 * available = total - held. Semantics fixed by the design:
 *  - present-with-capacity-0 differs from absent: both make a request wait, but only
 *    a present resource appears in listings;
 *  - a shrink below held never preempts: available goes negative and nothing new is
 *    admitted until holders release;
 *  - delete while held: the resource stops admitting at once and disappears from the
 *    table once its holders have released; re-creating it (set/add) revives it with
 *    its current holders still counted;
 *  - unbounded capacity admits any request;
 *  - no node is ever allocated past its capacity: acquire only succeeds when every
 *    requested quantity is <= available (or the resource is unbounded).
 * Physical resources are set with accounting_set_physical and can not be changed by log ops.
 *
 * Backed ephemeral resources (a SET carrying LogOp.backing: physical quantities per unit
 * of capacity) carve their capacity out of the node's physical rows: the carved
 * physical quantity counts in those rows' held (and in their `carved`), so it is
 * counted once, and the backed row admits only what is carved. A carve is
 * all-or-nothing over the backing vector; one that does not fit leaves the row
 * `pending` (a new row then has usable capacity 0) and is retried, in row order, by
 * every change that could free physical capacity (a release, a shrink, a delete), in
 * the same call, before the caller admits anything else. Shrinks and deletes give
 * the backing back at once, except for units still held, which stay carved until
 * their holders release.
 * Not thread-safe: owned by the raylet's event-loop thread.
 */
#ifndef ESC_ACCOUNTING_H
#define ESC_ACCOUNTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.pb-c.h"

typedef struct accounting accounting;

/* One entry of a request vector. */
typedef struct {
    const char *name;
    int64_t qty;          /* fixed point, > 0 */
    /* 0, or the table's id of name + 1 (accounting_resolve): a request checked many times
     * (a task with a thousand resources) then skips the name lookups. */
    int32_t slot;
} accounting_req;

/* One row of the table as seen from outside. */
typedef struct {
    const char *name;     /* owned by the table; valid until the next mutation */
    int64_t total;
    int64_t held;
    bool unbounded;
    bool deleted;         /* deleted while held */
    bool physical;
    bool backed;          /* ephemeral with a backing */
    bool pending;         /* backed and not all of its capacity carved yet */
    /* Backed: capacity units carved (total above is min(capacity, carved)).
     * Physical: the part of held that backs ephemeral resources. */
    int64_t carved;
} accounting_row;

/* The backing of one snapshot row (registry entry): physical per unit of capacity. */
typedef struct {
    Escher__Amount *const *v;
    size_t n;
} accounting_backing;

accounting *accounting_new(void);
void accounting_free(accounting *a);

/* Sets a physical (or static custom) resource; those are immune to log ops. */
void accounting_set_physical(accounting *a, const char *name, int64_t total, bool unbounded);

/* Applies one log op (SET / ADD / DELETE) to an ephemeral resource. ADD on an absent
 * resource creates it with the delta as capacity (clamped at 0 from below). A SET with a
 * backing makes the row backed by it (a SET or ADD without one keeps the row's backing;
 * creating or reviving a deleted row takes the op's backing, possibly none). Returns 0,
 * or -1 when the op targets a physical name or its backing is malformed (a name that
 * is not a physical row of this table, a repeated name, a quantity <= 0 or unbounded);
 * then nothing changes. */
int accounting_apply(accounting *a, const Escher__LogOp *op);

/* Replaces every ephemeral resource by the given registry rows of this node (a snapshot):
 * names present get their capacity, ephemeral names absent are deleted (with the
 * delete-while-held rule). */
void accounting_reset_ephemeral(accounting *a, const char *const *names, const int64_t *totals,
                              const bool *unbounded, size_t n);

/* accounting_reset_ephemeral with each row's backing (backing may be NULL: none). A row
 * whose backing differs from the table's gives its old carve back and carves anew.
 * Rows with a malformed backing are loaded unbacked. */
void accounting_reset_ephemeral_backed(accounting *a, const char *const *names,
                                     const int64_t *totals, const bool *unbounded,
                                     const accounting_backing *backing, size_t n);

/* Fills the slot of each entry whose name the table knows (ids are never reused, so it
 * stays right for this table; names unknown yet are looked up each time). */
void accounting_resolve(const accounting *a, accounting_req *req, size_t n);

/* How much of physical resource phys the backed rows of req stand for: the sum of each
 * entry's units times its row's backing of phys per unit (0 for unbacked rows and absent
 * names). A task holding units of a GPU-backed resource uses that many GPUs' instances. */
int64_t accounting_backed_physical(const accounting *a, const accounting_req *req, size_t n,
                                   const char *phys);

/* True when every requested quantity fits now (present, not deleted, and
 * unbounded or qty <= available). */
bool accounting_fits(const accounting *a, const accounting_req *req, size_t n);

/* True when the request could ever fit on this node as it is configured now
 * (every name present, not deleted, and qty <= total or unbounded; a backed row counts
 * its whole capacity, carved or not). */
bool accounting_feasible(const accounting *a, const accounting_req *req, size_t n);

/* Holds the request if it fits: returns true and adds to held. */
bool accounting_acquire(accounting *a, const accounting_req *req, size_t n);

/* Releases what an earlier successful acquire of the same request held. A deleted
 * resource whose held drops to 0 is removed (giving its backing back). Pending backed
 * rows are then carved when the freed physical capacity lets them. */
void accounting_release(accounting *a, const accounting_req *req, size_t n);

/* Number of rows, and row i (0 <= i < count), in a stable order between mutations. */
size_t accounting_count(const accounting *a);
bool accounting_row_at(const accounting *a, size_t i, accounting_row *row);

/* Looks up one resource by name. Returns false when absent. */
bool accounting_get(const accounting *a, const char *name, accounting_row *row);

/* A counter bumped by every mutation; lets callers know whether to re-report. */
uint64_t accounting_version(const accounting *a);

#endif
