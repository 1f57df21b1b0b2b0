/* accounting.c: the node's authoritative resource table.
 *
 * Names are interned; slots[id] holds the state of resource id. A slot is "present"
 * when the resource has a row: physical, ephemeral and live, or ephemeral, deleted
 * and still held. order[] lists the present ids in creation order, which is the
 * listing order (stable between mutations, as the header promises).
 *
 * Choices the header leaves open, made so that replaying the log and loading a
 * registry snapshot give the same table (the GCS registry must follow the same rules):
 *  - capacities are kept canonical: an unbounded row has total 0, and a row deleted
 *    while held has total 0 and is bounded (it admits nothing anyway);
 *  - SET clamps its value into [0, ESC_QTY_MAX]; a snapshot's totals are states, not
 *    SETs, and are loaded as they are (a registry total may be negative after ADDs);
 *  - ADD on an absent or deleted resource is SET of max(delta, 0), as if it were new;
 *    ADD on a live bounded resource adds without clamping at 0, so deltas commute and
 *    concurrent writers never lose each other's updates (a negative total only means
 *    nothing is admitted); ADD on an unbounded resource leaves it unbounded; ADD with
 *    the unbounded flag makes the resource unbounded;
 *  - DELETE of an absent resource is a no-op (returns 0);
 *  - log ops and snapshots may only name ephemeral resources, "<ns>/<name>" with both
 *    parts valid: a name without a namespace is a static custom resource, which is
 *    physical (names.h); ops on anything else return -1 and change nothing;
 *  - requests must have 0 < qty <= ESC_QTY_MAX, else they never fit; repeated names in
 *    one request are summed, so a request can not slip past capacity by splitting;
 *  - op->node_id is not checked here: the raylet routes only its own node's ops;
 *  - carving (backed rows) is lazy: an op or snapshot only marks what a row needs, then
 *    carve_pending walks order[] (creation order), so pending rows are served oldest
 *    first whatever path changed them. A row that does not fit does not block a later
 *    one that does (no head-of-line blocking; a big gang can wait behind small ones).
 *    When physical capacity suffices for every row, a replayed log and a snapshot give
 *    the same table; under contention which pending row is carved first may differ
 *    (a snapshot has no history), and both keep every invariant.
 * Running out of memory aborts: a dropped log op would silently corrupt the table that
 * admission relies on, which is worse than a crash the raylet restarts from. */
#include "accounting.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity.h"
#include "intern.h"
#include "names.h"
#include "qty.h"
#include "xalloc.h"

/* One physical resource backing a row: its slot id and the quantity per unit. */
typedef struct {
    int32_t id;
    int64_t per_unit;
} backing_ent;

typedef struct {
    int64_t total;
    int64_t held;
    backing_ent *backing; /* backed ephemeral row: malloc'd; else NULL */
    size_t nbacking;
    int64_t carved;     /* backed: capacity units carved; physical: part of held carved */
    bool pending;       /* backed and carved < carve_want() */
    uint64_t mark;      /* reset epoch that last listed this name in a snapshot */
    size_t pos;         /* index in order[] while present */
    bool present;
    bool unbounded;
    bool deleted;
    bool physical;
    int64_t need;       /* scratch of check(): the quantity a request asks of this row */
    uint64_t need_mark; /* the check() that last wrote need */
} slot;

struct accounting {
    esc_intern *names;
    slot *slots;        /* indexed by interned id; slots past nslots are absent */
    size_t nslots;
    int32_t *order;     /* present ids, in creation order */
    size_t norder;
    size_t order_cap;
    uint64_t epoch;     /* bumped by each accounting_reset_ephemeral */
    uint64_t checks;    /* numbers each check(), to mark its scratch sums */
    uint64_t version;
    size_t npending;    /* rows with pending set: carve_pending is free when 0 */
};

accounting *accounting_new(void)
{
    accounting *a = esc_xcalloc(1, sizeof *a);
    a->names = esc_intern_new();
    if (a->names == NULL) {
        free(a);
        return NULL;
    }
    return a;
}

void accounting_free(accounting *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->nslots; i++)
        free(a->slots[i].backing);
    esc_intern_free(a->names);
    free(a->slots);
    free(a->order);
    free(a);
}

/* ---- slots and rows ---- */

/* Interns name and makes sure slots[id] exists (new slots start absent). */
static int32_t slot_id(accounting *a, const char *name)
{
    int32_t id = esc_intern_id(a->names, name);
    if (id < 0) {
        fprintf(stderr, "escher: accounting out of memory\n");
        abort();
    }
    if ((size_t)id >= a->nslots) {
        size_t n = a->nslots ? a->nslots * 2 : 16;
        while (n <= (size_t)id)
            n *= 2;
        a->slots = esc_xrealloc(a->slots, n * sizeof *a->slots);
        memset(a->slots + a->nslots, 0, (n - a->nslots) * sizeof *a->slots);
        a->nslots = n;
    }
    return id;
}

/* The id of name's present row, or -1; never interns, so it works on a const table. */
static int32_t row_id(const accounting *a, const char *name)
{
    int32_t id = esc_intern_find(a->names, name);
    if (id < 0 || (size_t)id >= a->nslots || !a->slots[id].present)
        return -1;
    return id;
}

/* The row of a request entry, through its resolved slot when it has one. */
static int32_t req_row(const accounting *a, const accounting_req *r)
{
    if (r->slot <= 0)
        return row_id(a, r->name);
    int32_t id = r->slot - 1;
    return (size_t)id < a->nslots && a->slots[id].present ? id : -1;
}

int64_t accounting_backed_physical(const accounting *a, const accounting_req *req, size_t n,
                                   const char *phys)
{
    int32_t pid = a ? row_id(a, phys) : -1;
    int64_t sum = 0;
    for (size_t i = 0; pid >= 0 && i < n; i++) {
        int32_t id = req_row(a, &req[i]);
        const slot *s = id >= 0 ? &a->slots[id] : NULL;
        for (size_t k = 0; s && k < s->nbacking; k++)
            if (s->backing[k].id == pid) {
                int64_t v = 0;
                esc_backing_amount(req[i].qty, s->backing[k].per_unit, &v);
                sum = esc_qty_add(sum, v);
            }
    }
    return sum;
}

void accounting_resolve(const accounting *a, accounting_req *req, size_t n)
{
    for (size_t i = 0; a && i < n; i++) {
        int32_t id = req[i].name ? esc_intern_find(a->names, req[i].name) : -1;
        req[i].slot = id >= 0 ? id + 1 : 0;
    }
}

static void row_add(accounting *a, int32_t id)
{
    if (a->norder == a->order_cap) {
        a->order_cap = a->order_cap ? a->order_cap * 2 : 16;
        a->order = esc_xrealloc(a->order, a->order_cap * sizeof *a->order);
    }
    slot *s = &a->slots[id];
    memset(s, 0, sizeof *s);
    s->present = true;
    s->pos = a->norder;
    a->order[a->norder++] = id;
}

/* Removes the row, keeping the others in their relative order. */
static void row_remove(accounting *a, int32_t id)
{
    free(a->slots[id].backing);
    size_t pos = a->slots[id].pos;
    memmove(a->order + pos, a->order + pos + 1, (a->norder - pos - 1) * sizeof *a->order);
    a->norder--;
    for (size_t i = pos; i < a->norder; i++)
        a->slots[a->order[i]].pos = i;
    memset(&a->slots[id], 0, sizeof a->slots[id]);
}

/* A snapshot of the observable state of a slot, to tell whether an op changed it. */
static slot observe(const accounting *a, int32_t id)
{
    slot s = {0};
    if (id >= 0 && (size_t)id < a->nslots && a->slots[id].present) {
        s = a->slots[id];
        s.pos = 0;
        s.mark = 0;
    }
    return s;
}

static bool same(const slot *x, const slot *y)
{
    return x->present == y->present && x->total == y->total && x->held == y->held &&
           x->unbounded == y->unbounded && x->deleted == y->deleted &&
           x->physical == y->physical && x->carved == y->carved &&
           x->pending == y->pending && x->nbacking == y->nbacking;
}

static int64_t clamp_capacity(int64_t v)
{
    if (v < 0)
        return 0;
    return v > ESC_QTY_MAX ? ESC_QTY_MAX : v;
}


/* ---- backed rows: carving physical capacity ---- */

/* The capacity a backed row must have carved: its capacity, and never less than its
 * holders hold (their units stay backed until they release). */
static int64_t carve_want(const slot *s)
{
    int64_t live = s->deleted || s->unbounded || s->total < 0 ? 0 : s->total;
    return live > s->held ? live : s->held;
}

/* What a backed row admits against: only its carved units. */
static int64_t usable_total(const slot *s)
{
    if (s->nbacking == 0 || s->physical)
        return s->total;
    return s->total < s->carved ? s->total : s->carved;
}

/* Physical quantity of backing entry k for `units` of capacity. */
static int64_t phys_of(const slot *s, size_t k, int64_t units)
{
    int64_t v;
    esc_backing_amount(units, s->backing[k].per_unit, &v);
    return v;
}

static void set_pending(accounting *a, slot *s, bool pending)
{
    if (s->pending == pending)
        return;
    s->pending = pending;
    if (pending)
        a->npending++;
    else
        a->npending--;
}

/* Gives back the physical quantity of carved units above `to`. */
static void uncarve_to(accounting *a, slot *s, int64_t to)
{
    for (size_t k = 0; k < s->nbacking; k++) {
        int64_t d = phys_of(s, k, s->carved) - phys_of(s, k, to);
        slot *p = &a->slots[s->backing[k].id];
        p->held = p->held > d ? p->held - d : 0;
        p->carved = p->carved > d ? p->carved - d : 0;
    }
    s->carved = to;
}

/* Carves up to `to` units if every physical row has room for its part: all or
 * nothing, so a half-carved backing never holds physical capacity hostage. */
static bool carve_to(accounting *a, slot *s, int64_t to)
{
    for (size_t k = 0; k < s->nbacking; k++) {
        const slot *p = &a->slots[s->backing[k].id];
        int64_t d = phys_of(s, k, to) - phys_of(s, k, s->carved);
        if (!p->present || !p->physical || p->deleted)
            return false;
        if (!p->unbounded && p->total - p->held < d)
            return false;
    }
    for (size_t k = 0; k < s->nbacking; k++) {
        slot *p = &a->slots[s->backing[k].id];
        int64_t d = phys_of(s, k, to) - phys_of(s, k, s->carved);
        p->held = esc_qty_add(p->held, d);
        p->carved = esc_qty_add(p->carved, d);
    }
    s->carved = to;
    return true;
}

/* Gives back at once what a row no longer needs; marks it pending when it needs more
 * (carve_pending takes it, in row order). */
static void mark_carve(accounting *a, int32_t id)
{
    slot *s = &a->slots[id];
    if (s->nbacking == 0)
        return;
    int64_t want = carve_want(s);
    if (want < s->carved)
        uncarve_to(a, s, want);
    set_pending(a, s, s->carved < want);
}

/* Carves every pending row that fits now, oldest first. Returns true when one did. */
static bool carve_pending(accounting *a)
{
    bool changed = false;
    for (size_t i = 0; a->npending > 0 && i < a->norder; i++) {
        slot *s = &a->slots[a->order[i]];
        if (!s->pending)
            continue;
        if (carve_to(a, s, carve_want(s))) {
            set_pending(a, s, false);
            changed = true;
        }
    }
    if (changed)
        a->version++;
    return changed;
}

/* Gives the whole carve back and forgets the backing (before a row goes, or changes
 * its backing). */
static void drop_backing(accounting *a, int32_t id)
{
    slot *s = &a->slots[id];
    uncarve_to(a, s, 0);
    set_pending(a, s, false);
    free(s->backing);
    s->backing = NULL;
    s->nbacking = 0;
}

/* Reads a backing vector: every name a physical row, each once, 0 < qty <= max.
 * Returns 0 with *out (malloc'd, NULL when n == 0), or -1. */
static int parse_backing(accounting *a, Escher__Amount *const *v, size_t n, backing_ent **out)
{
    *out = NULL;
    if (n == 0)
        return 0;
    backing_ent *b = esc_xrealloc(NULL, n * sizeof *b);
    for (size_t i = 0; i < n; i++) {
        int32_t id = v[i] && v[i]->name ? row_id(a, v[i]->name) : -1;
        bool ok = id >= 0 && a->slots[id].physical && !v[i]->unbounded && v[i]->value > 0 &&
                  v[i]->value <= ESC_QTY_MAX;
        for (size_t k = 0; ok && k < i; k++)
            ok = b[k].id != id;
        if (!ok) {
            free(b);
            return -1;
        }
        b[i] = (backing_ent){id, v[i]->value};
    }
    *out = b;
    return 0;
}

static bool same_backing(const slot *s, const backing_ent *b, size_t n)
{
    if (s->nbacking != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s->backing[i].id != b[i].id || s->backing[i].per_unit != b[i].per_unit)
            return false;
    return true;
}

/* Gives row id the backing b (taking it) unless it has it already; a new backing
 * starts with nothing carved. */
static void adopt_backing(accounting *a, int32_t id, backing_ent *b, size_t n)
{
    if (same_backing(&a->slots[id], b, n)) {
        free(b);
        return;
    }
    drop_backing(a, id);
    a->slots[id].backing = b;
    a->slots[id].nbacking = n;
}

/* ---- ephemeral changes ---- */

/* Log ops may only touch "<ns>/<name>" names that are not rows set as physical. */
static bool ephemeral_writable(const accounting *a, const char *name)
{
    char ns[ESC_NAME_MAX + 1], short_name[ESC_NAME_MAX + 1];
    if (name == NULL || esc_name_is_physical(name))
        return false;
    if (esc_name_split(name, ns, short_name) != 0)
        return false;
    int32_t id = row_id(a, name);
    return id < 0 || !a->slots[id].physical;
}

/* Gives a row its capacity, reviving a deleted row with its holders still counted.
 * total must already be in range. */
static void put_capacity(accounting *a, int32_t id, int64_t total, bool unbounded)
{
    slot *s = &a->slots[id];
    if (!s->present)
        row_add(a, id);
    s->deleted = false;
    s->unbounded = unbounded;
    s->total = unbounded ? 0 : total;
}

/* SET and ADD follow the rule shared with the GCS registry (capacity.h); a row deleted
 * while held counts as absent there, so an ADD revives it as if it were new. */
static void apply_capacity_op(accounting *a, int32_t id, int op, int64_t value, bool unbounded)
{
    slot *s = &a->slots[id];
    esc_capacity cap = {.present = s->present && !s->deleted, .unbounded = s->unbounded,
                        .total = s->total};
    esc_capacity_apply(&cap, op, value, unbounded);
    put_capacity(a, id, cap.total, cap.unbounded);
}

/* DELETE: gone at once when nobody holds it, else kept (admitting nothing) until the
 * last holder releases. */
static void do_delete(accounting *a, int32_t id)
{
    slot *s = &a->slots[id];
    if (!s->present)
        return;
    if (s->held == 0) {
        drop_backing(a, id);
        row_remove(a, id);
        return;
    }
    s->deleted = true;
    s->unbounded = false;
    s->total = 0;
    mark_carve(a, id);
}

/* The backing a SET or ADD leaves on row id (called after the capacity change; fresh:
 * the row was absent or deleted before it): a fresh row takes the op's, possibly none;
 * a live one keeps its own unless a SET names another. An unbounded capacity can not
 * be carved, so it has none. */
static void apply_backing(accounting *a, int32_t id, const Escher__LogOp *op, bool fresh,
                          backing_ent *b)
{
    if (fresh || (op->kind == ESCHER__OP_KIND__OP_SET && op->n_backing > 0))
        adopt_backing(a, id, b, op->n_backing);
    else
        free(b);
    if (a->slots[id].unbounded)
        drop_backing(a, id);
}

int accounting_apply(accounting *a, const Escher__LogOp *op)
{
    if (a == NULL || op == NULL || !ephemeral_writable(a, op->name))
        return -1;
    backing_ent *b = NULL;
    if (op->n_backing > 0 && (op->kind != ESCHER__OP_KIND__OP_SET || op->unbounded ||
                              parse_backing(a, op->backing, op->n_backing, &b) != 0))
        return -1;
    int32_t id;
    if (op->kind == ESCHER__OP_KIND__OP_DELETE) {
        if ((id = row_id(a, op->name)) < 0)
            return 0;    /* not interned just to delete nothing */
    } else if (op->kind == ESCHER__OP_KIND__OP_SET || op->kind == ESCHER__OP_KIND__OP_ADD) {
        id = slot_id(a, op->name);
    } else {
        return -1;
    }
    slot before = observe(a, id);
    if (op->kind == ESCHER__OP_KIND__OP_DELETE) {
        do_delete(a, id);
    } else {
        bool fresh = !a->slots[id].present || a->slots[id].deleted;
        apply_capacity_op(a, id, (int)op->kind, op->value, op->unbounded);
        apply_backing(a, id, op, fresh, b);
        mark_carve(a, id);
    }
    slot after = observe(a, id);
    /* Physical rows change with a carve too: compare the carve as well. */
    if (!same(&before, &after) || before.carved != after.carved)
        a->version++;
    carve_pending(a);
    return 0;
}

/* Loads the snapshot's rows (reviving deleted ones) and marks them with this epoch. */
static bool reset_set_listed(accounting *a, const char *const *names, const int64_t *totals,
                             const bool *unbounded, const accounting_backing *backing,
                             size_t n)
{
    bool changed = false;
    for (size_t i = 0; i < n; i++) {
        if (!ephemeral_writable(a, names[i]))
            continue;
        int32_t id = slot_id(a, names[i]);
        slot before = observe(a, id);
        backing_ent *b = NULL;
        size_t nb = backing ? backing[i].n : 0;
        if (nb > 0 && parse_backing(a, backing[i].v, nb, &b) != 0)
            nb = 0;
        /* A registry total is a state, not a SET: it may be negative after ADDs,
         * and is loaded as is (only clamped into +-ESC_QTY_MAX by esc_qty_add) so
         * the table matches one built from the log. */
        int64_t total = esc_qty_add(totals ? totals[i] : 0, 0);
        put_capacity(a, id, total, unbounded ? unbounded[i] : false);
        adopt_backing(a, id, b, nb);
        if (a->slots[id].unbounded)
            drop_backing(a, id);
        mark_carve(a, id);
        a->slots[id].mark = a->epoch;
        slot after = observe(a, id);
        changed |= !same(&before, &after);
    }
    return changed;
}

/* Deletes every live ephemeral row the snapshot did not list. */
static bool reset_delete_unlisted(accounting *a)
{
    bool changed = false;
    /* Walk ids, not order[]: deleting rewrites order[]. */
    for (size_t id = 0; id < a->nslots; id++) {
        slot *s = &a->slots[id];
        if (!s->present || s->physical || s->deleted || s->mark == a->epoch)
            continue;
        do_delete(a, (int32_t)id);
        changed = true;
    }
    return changed;
}

void accounting_reset_ephemeral_backed(accounting *a, const char *const *names,
                                     const int64_t *totals, const bool *unbounded,
                                     const accounting_backing *backing, size_t n)
{
    if (a == NULL || (names == NULL && n > 0))
        return;
    a->epoch++;
    bool changed = reset_set_listed(a, names, totals, unbounded, backing, n);
    changed |= reset_delete_unlisted(a);
    /* Carves last, so what the deletes gave back is there to take. */
    changed |= carve_pending(a);
    if (changed)
        a->version++;
}

void accounting_reset_ephemeral(accounting *a, const char *const *names, const int64_t *totals,
                              const bool *unbounded, size_t n)
{
    accounting_reset_ephemeral_backed(a, names, totals, unbounded, NULL, n);
}

void accounting_set_physical(accounting *a, const char *name, int64_t total, bool unbounded)
{
    if (a == NULL || name == NULL)
        return;
    int32_t id = slot_id(a, name);
    slot before = observe(a, id);
    slot *s = &a->slots[id];
    if (!s->present)
        row_add(a, id);
    s->physical = true;
    s->deleted = false;
    s->unbounded = unbounded;
    s->total = unbounded ? 0 : clamp_capacity(total);
    slot after = observe(a, id);
    if (!same(&before, &after))
        a->version++;
    carve_pending(a);
}

/* ---- admission ---- */

static bool req_valid(const accounting_req *r)
{
    return r->name != NULL && r->qty > 0 && r->qty <= ESC_QTY_MAX;
}

/* The common check of fits and feasible: each name present, live and, unless
 * unbounded, with its summed quantity within the limit (available or total). Repeated
 * names are summed in per-row scratch fields, so a request of n names costs O(n): those
 * fields are invisible state, which is why the const table may write them. */
static bool check(const accounting *ca, const accounting_req *req, size_t n, bool against_total)
{
    if (ca == NULL || (req == NULL && n > 0))
        return false;
    accounting *a = (accounting *)ca;
    uint64_t mark = ++a->checks;
    for (size_t i = 0; i < n; i++) {
        if (!req_valid(&req[i]))
            return false;
        int32_t id = req_row(a, &req[i]);
        if (id < 0 || a->slots[id].deleted)
            return false;
        slot *s = &a->slots[id];
        if (s->need_mark != mark) {
            s->need_mark = mark;
            s->need = 0;
        }
        s->need = esc_qty_add(s->need, req[i].qty);
    }
    for (size_t i = 0; i < n; i++) {
        const slot *s = &a->slots[req_row(a, &req[i])];
        int64_t limit = against_total ? s->total : usable_total(s) - s->held;
        if (!s->unbounded && s->need > limit)
            return false;
    }
    return true;
}

bool accounting_fits(const accounting *a, const accounting_req *req, size_t n)
{
    return check(a, req, n, false);
}

bool accounting_feasible(const accounting *a, const accounting_req *req, size_t n)
{
    return check(a, req, n, true);
}

bool accounting_acquire(accounting *a, const accounting_req *req, size_t n)
{
    if (!accounting_fits(a, req, n))
        return false;
    for (size_t i = 0; i < n; i++) {
        int32_t id = req_row(a, &req[i]);    /* fits guarantees the row */
        a->slots[id].held = esc_qty_add(a->slots[id].held, req[i].qty);
    }
    if (n > 0)
        a->version++;
    return true;
}

void accounting_release(accounting *a, const accounting_req *req, size_t n)
{
    if (a == NULL || req == NULL)
        return;
    bool changed = false;
    for (size_t i = 0; i < n; i++) {
        int32_t id = req_valid(&req[i]) ? req_row(a, &req[i]) : -1;
        if (id < 0)
            continue;    /* never acquired: nothing to give back */
        slot *s = &a->slots[id];
        /* Clamp at 0 so a caller's double release can not fake free capacity. */
        s->held = s->held > req[i].qty ? s->held - req[i].qty : 0;
        if (s->deleted && s->held == 0) {
            drop_backing(a, id);
            row_remove(a, id);
        } else {
            mark_carve(a, id);
        }
        changed = true;
    }
    if (changed)
        a->version++;
    /* Before the caller admits anything: what was freed goes to pending carves first. */
    carve_pending(a);
}

/* ---- listing ---- */

static void fill_row(const accounting *a, int32_t id, accounting_row *row)
{
    const slot *s = &a->slots[id];
    row->name = esc_intern_name(a->names, id);
    row->total = usable_total(s);
    row->held = s->held;
    row->unbounded = s->unbounded;
    row->deleted = s->deleted;
    row->physical = s->physical;
    row->backed = s->nbacking > 0;
    row->pending = s->pending;
    row->carved = s->carved;
}

size_t accounting_count(const accounting *a)
{
    return a ? a->norder : 0;
}

bool accounting_row_at(const accounting *a, size_t i, accounting_row *row)
{
    if (a == NULL || row == NULL || i >= a->norder)
        return false;
    fill_row(a, a->order[i], row);
    return true;
}

bool accounting_get(const accounting *a, const char *name, accounting_row *row)
{
    int32_t id = (a != NULL && name != NULL) ? row_id(a, name) : -1;
    if (id < 0)
        return false;
    if (row != NULL)
        fill_row(a, id, row);
    return true;
}

uint64_t accounting_version(const accounting *a)
{
    return a ? a->version : 0;
}
