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
 * Physical resources are set with esc_acct_set_physical and can not be changed by log ops.
 * Not thread-safe: owned by the raylet's event-loop thread.
 */
#ifndef ESC_ACCOUNTING_H
#define ESC_ACCOUNTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.pb-c.h"

typedef struct esc_acct esc_acct;

/* One entry of a request vector. */
typedef struct {
    const char *name;
    int64_t qty;          /* fixed point, > 0 */
    /* 0, or the table's id of name + 1 (esc_acct_resolve): a request checked many times
     * (a task with a thousand resources) then skips the name lookups. */
    int32_t slot;
} esc_acct_req;

/* One row of the table as seen from outside. */
typedef struct {
    const char *name;     /* owned by the table; valid until the next mutation */
    int64_t total;
    int64_t held;
    bool unbounded;
    bool deleted;         /* deleted while held */
    bool physical;
} esc_acct_row;

esc_acct *esc_acct_new(void);
void esc_acct_free(esc_acct *a);

/* Sets a physical (or static custom) resource; those are immune to log ops. */
void esc_acct_set_physical(esc_acct *a, const char *name, int64_t total, bool unbounded);

/* Applies one log op (SET / ADD / DELETE) to an ephemeral resource. ADD on an absent
 * resource creates it with the delta as capacity (clamped at 0 from below). Returns 0,
 * or -1 when the op targets a physical name (ignored). */
int esc_acct_apply(esc_acct *a, const Escher__LogOp *op);

/* Replaces every ephemeral resource by the given registry rows of this node (a snapshot):
 * names present get their capacity, ephemeral names absent are deleted (with the
 * delete-while-held rule). */
void esc_acct_reset_ephemeral(esc_acct *a, const char *const *names, const int64_t *totals,
                              const bool *unbounded, size_t n);

/* Fills the slot of each entry whose name the table knows (ids are never reused, so it
 * stays right for this table; names unknown yet are looked up each time). */
void esc_acct_resolve(const esc_acct *a, esc_acct_req *req, size_t n);

/* True when every requested quantity fits now (present, not deleted, and
 * unbounded or qty <= available). */
bool esc_acct_fits(const esc_acct *a, const esc_acct_req *req, size_t n);

/* True when the request could ever fit on this node as it is configured now
 * (every name present, not deleted, and qty <= total or unbounded). */
bool esc_acct_feasible(const esc_acct *a, const esc_acct_req *req, size_t n);

/* Holds the request if it fits: returns true and adds to held. */
bool esc_acct_acquire(esc_acct *a, const esc_acct_req *req, size_t n);

/* Releases what an earlier successful acquire of the same request held. A deleted
 * resource whose held drops to 0 is removed. */
void esc_acct_release(esc_acct *a, const esc_acct_req *req, size_t n);

/* Number of rows, and row i (0 <= i < count), in a stable order between mutations. */
size_t esc_acct_count(const esc_acct *a);
bool esc_acct_row_at(const esc_acct *a, size_t i, esc_acct_row *row);

/* Looks up one resource by name. Returns false when absent. */
bool esc_acct_get(const esc_acct *a, const char *name, esc_acct_row *row);

/* A counter bumped by every mutation; lets callers know whether to re-report. */
uint64_t esc_acct_version(const esc_acct *a);

#endif
