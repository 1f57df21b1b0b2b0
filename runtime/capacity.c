/* capacity.c: see capacity.h for the rule and why it is shared. */
#include "capacity.h"

#include "qty.h"

static int64_t clamp_capacity(int64_t v)
{
    if (v < 0)
        return 0;
    return v > ESC_QTY_MAX ? ESC_QTY_MAX : v;
}

static void set_capacity(esc_capacity *c, int64_t value, bool unbounded)
{
    c->present = true;
    c->unbounded = unbounded;
    c->total = unbounded ? 0 : clamp_capacity(value);
}

int esc_capacity_apply(esc_capacity *c, int op, int64_t value, bool unbounded)
{
    switch (op) {
    case ESC_CAP_SET:
        set_capacity(c, value, unbounded);
        return 0;
    case ESC_CAP_ADD:
        if (!c->present)
            set_capacity(c, value, unbounded);
        else if (c->unbounded || unbounded)
            set_capacity(c, 0, true);
        else
            c->total = esc_qty_add(c->total, value);
        return 0;
    case ESC_CAP_DELETE:
        *c = (esc_capacity){0};
        return 0;
    default:
        return -1;
    }
}

int esc_backing_amount(int64_t units, int64_t per_unit, int64_t *out)
{
    if (units <= 0 || per_unit <= 0) {
        *out = 0;
        return 0;
    }
    __int128 p = (__int128)units * per_unit;
    p = (p + ESC_QTY_SCALE - 1) / ESC_QTY_SCALE;
    if (p > ESC_QTY_MAX) {
        *out = ESC_QTY_MAX;
        return -1;
    }
    *out = (int64_t)p;
    return 0;
}
