/* capacity.h: the one rule for how a log op changes an ephemeral resource's capacity.
 *
 * Both the GCS registry and each raylet's accounting apply log ops through this
 * function, so a table rebuilt from a registry snapshot equals one built from the log:
 *  - SET: capacity becomes value clamped into [0, ESC_QTY_MAX] (or unbounded);
 *  - ADD on an absent resource: a SET of max(delta, 0);
 *  - ADD on a live bounded resource: total + delta, saturating but not clamped at 0,
 *    so deltas commute and concurrent writers never lose updates (a negative total
 *    just admits nothing); the GCS refuses an ADD that would saturate, so the
 *    saturation only guards a table against a log it did not write;
 *  - ADD on an unbounded resource, or an ADD flagged unbounded: unbounded;
 *  - DELETE: absent.
 * An unbounded capacity always has total 0, so equal states compare equal.
 */
#ifndef ESC_CAPACITY_H
#define ESC_CAPACITY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool present;
    bool unbounded;
    int64_t total;
} esc_capacity;

typedef enum { ESC_CAP_SET = 0, ESC_CAP_ADD = 1, ESC_CAP_DELETE = 2 } esc_cap_op;

/* Applies one op to *c (op values match the proto's OpKind). Returns 0, or -1 for an
 * unknown op (then *c is unchanged). */
int esc_capacity_apply(esc_capacity *c, int op, int64_t value, bool unbounded);

/* Backed resources: the physical quantity that `units` of capacity (fixed point, < 0
 * counts as 0) carve at `per_unit` (fixed point, > 0) physical per unit, rounded up so
 * that a carve never takes less than it backs. Returns -1 when the product is above
 * ESC_QTY_MAX (then *out is ESC_QTY_MAX), else 0. The GCS refuses such a backing and
 * the raylet uses the same arithmetic, so both agree on every carve. */
int esc_backing_amount(int64_t units, int64_t per_unit, int64_t *out);

#endif
