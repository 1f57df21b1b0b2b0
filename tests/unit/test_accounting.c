/* test_accounting.c: the node's resource accounting (raylet/accounting.c).
 *
 * Covers the semantics fixed by DESIGN.md and accounting.h: shrink below held,
 * delete while held, present-with-zero vs absent, unbounded, ordered ADD deltas,
 * physical names, log replay against a registry snapshot, and a randomized check
 * that admission never exceeds capacity; backed resources (carving physical capacity,
 * pending until it is free, giving it back on shrink, delete and release). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "accounting.h"
#include "qty.h"

#define U(x) ((int64_t)(x) * ESC_QTY_SCALE) /* whole units in fixed point */

/* ---- helpers ---- */

static int op_full(accounting *a, Escher__OpKind kind, const char *name, int64_t value,
                   bool unbounded)
{
    Escher__LogOp op = ESCHER__LOG_OP__INIT;
    op.kind = kind;
    op.node_id = "n1";
    op.name = (char *)name;
    op.value = value;
    op.unbounded = unbounded;
    return accounting_apply(a, &op);
}

static void set(accounting *a, const char *name, int64_t v)
{
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_SET, name, v, false), 0);
}

static void add(accounting *a, const char *name, int64_t d)
{
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_ADD, name, d, false), 0);
}

static void del(accounting *a, const char *name)
{
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_DELETE, name, 0, false), 0);
}

/* A SET carrying a backing of one physical name (or two with name2). */
static int set_backed2(accounting *a, const char *name, int64_t v, const char *b1, int64_t q1,
                       const char *b2, int64_t q2)
{
    Escher__Amount x = ESCHER__AMOUNT__INIT, y = ESCHER__AMOUNT__INIT;
    Escher__Amount *bk[2] = {&x, &y};
    x.name = (char *)b1;
    x.value = q1;
    y.name = (char *)b2;
    y.value = q2;
    Escher__LogOp op = ESCHER__LOG_OP__INIT;
    op.kind = ESCHER__OP_KIND__OP_SET;
    op.node_id = "n1";
    op.name = (char *)name;
    op.value = v;
    op.backing = bk;
    op.n_backing = b2 ? 2 : 1;
    return accounting_apply(a, &op);
}

static int set_backed(accounting *a, const char *name, int64_t v, const char *b, int64_t q)
{
    return set_backed2(a, name, v, b, q, NULL, 0);
}

/* The row of name, which must be present. */
static accounting_row row_of(const accounting *a, const char *name)
{
    accounting_row r;
    memset(&r, 0, sizeof r);
    assert_true(accounting_get(a, name, &r));
    assert_string_equal(r.name, name);
    return r;
}

static bool fits1(const accounting *a, const char *name, int64_t q)
{
    accounting_req r = {.name = name, .qty = q};
    return accounting_fits(a, &r, 1);
}

static bool feasible1(const accounting *a, const char *name, int64_t q)
{
    accounting_req r = {.name = name, .qty = q};
    return accounting_feasible(a, &r, 1);
}

static bool acquire1(accounting *a, const char *name, int64_t q)
{
    accounting_req r = {.name = name, .qty = q};
    return accounting_acquire(a, &r, 1);
}

static void release1(accounting *a, const char *name, int64_t q)
{
    accounting_req r = {.name = name, .qty = q};
    accounting_release(a, &r, 1);
}

/* True when some listed row has this name. */
static bool listed(const accounting *a, const char *name)
{
    accounting_row r;
    for (size_t i = 0; i < accounting_count(a); i++) {
        assert_true(accounting_row_at(a, i, &r));
        if (strcmp(r.name, name) == 0)
            return true;
    }
    return false;
}

/* xorshift64: deterministic, so a failing seed reproduces. */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int64_t rnd_range(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd(s) % (uint64_t)(hi - lo + 1));
}

/* ---- basic lifecycle ---- */

static void test_create(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    assert_int_equal(accounting_count(a), 0);
    assert_false(accounting_get(a, "j/a", NULL));
    set(a, "j/a", U(2));
    accounting_row r = row_of(a, "j/a");
    assert_true(r.total == U(2));
    assert_true(r.held == 0);
    assert_false(r.unbounded || r.deleted || r.physical);
    assert_int_equal(accounting_count(a), 1);
    assert_true(accounting_row_at(a, 0, &r));
    assert_string_equal(r.name, "j/a");
    assert_false(accounting_row_at(a, 1, &r));
    assert_true(fits1(a, "j/a", U(2)));
    assert_false(fits1(a, "j/a", U(2) + 1));
    assert_true(acquire1(a, "j/a", 15000));
    assert_true(row_of(a, "j/a").held == 15000);
    assert_false(acquire1(a, "j/a", 5001));
    assert_true(acquire1(a, "j/a", 5000));
    assert_false(fits1(a, "j/a", 1));

    /* ADD on an absent resource creates it with the delta, clamped at 0. */
    add(a, "j/b", 2500);
    assert_true(row_of(a, "j/b").total == 2500);
    add(a, "j/c", -U(5));
    r = row_of(a, "j/c");
    assert_true(r.total == 0);
    assert_false(r.deleted);
    /* SET clamps a negative capacity to 0 as well. */
    set(a, "j/d", -U(1));
    assert_true(row_of(a, "j/d").total == 0);
    assert_int_equal(accounting_count(a), 4);
    accounting_free(a);
    accounting_free(NULL);
}

static void test_update_while_held(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    set(a, "j/a", U(4));
    assert_true(acquire1(a, "j/a", U(3)));
    set(a, "j/a", U(5));    /* grow: holders keep their share */
    accounting_row r = row_of(a, "j/a");
    assert_true(r.total == U(5) && r.held == U(3));
    assert_true(fits1(a, "j/a", U(2)));
    assert_false(fits1(a, "j/a", 25000));
    add(a, "j/a", -U(2));   /* shrink to exactly held */
    r = row_of(a, "j/a");
    assert_true(r.total == U(3) && r.held == U(3));
    assert_false(fits1(a, "j/a", 1));
    assert_true(feasible1(a, "j/a", U(3)));
    release1(a, "j/a", U(3));
    r = row_of(a, "j/a");
    assert_true(r.total == U(3) && r.held == 0);
    assert_true(acquire1(a, "j/a", U(3)));
    accounting_free(a);
}

static void test_shrink_below_held(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    set(a, "j/a", U(4));
    for (int i = 0; i < 4; i++)
        assert_true(acquire1(a, "j/a", U(1)));
    set(a, "j/a", U(1));    /* shrink never preempts */
    accounting_row r = row_of(a, "j/a");
    assert_true(r.total == U(1) && r.held == U(4));
    assert_true(r.total - r.held == -U(3));    /* available is negative */
    assert_false(fits1(a, "j/a", 1));
    assert_false(acquire1(a, "j/a", 1));
    assert_true(feasible1(a, "j/a", U(1)));    /* it will fit once holders leave */
    assert_false(feasible1(a, "j/a", U(1) + 1));

    release1(a, "j/a", U(1));    /* available -2 */
    assert_false(acquire1(a, "j/a", 1));
    release1(a, "j/a", U(1));    /* available -1 */
    assert_false(acquire1(a, "j/a", 1));
    release1(a, "j/a", U(1));    /* available 0: still nothing */
    assert_true(row_of(a, "j/a").held == U(1));
    assert_false(acquire1(a, "j/a", 1));
    release1(a, "j/a", U(1));    /* available 1 */
    assert_true(row_of(a, "j/a").held == 0);
    assert_true(acquire1(a, "j/a", U(1)));
    assert_false(acquire1(a, "j/a", 1));
    accounting_free(a);
}

static void test_delete_while_held(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    set(a, "j/a", U(2));
    set(a, "j/other", U(1));
    assert_true(acquire1(a, "j/a", U(1)));
    assert_true(acquire1(a, "j/a", U(1)));
    del(a, "j/a");
    accounting_row r = row_of(a, "j/a");
    assert_true(r.deleted);
    assert_true(r.held == U(2));
    assert_true(listed(a, "j/a"));
    assert_false(fits1(a, "j/a", 1));
    assert_false(feasible1(a, "j/a", 1));
    assert_false(acquire1(a, "j/a", 1));

    release1(a, "j/a", U(1));
    r = row_of(a, "j/a");    /* one holder left: the row stays */
    assert_true(r.deleted && r.held == U(1));
    assert_false(acquire1(a, "j/a", 1));
    release1(a, "j/a", U(1));
    assert_false(accounting_get(a, "j/a", NULL));    /* last release removes it */
    assert_false(listed(a, "j/a"));
    assert_int_equal(accounting_count(a), 1);
    assert_true(listed(a, "j/other"));

    /* Deleting something nobody holds removes it at once. */
    del(a, "j/other");
    assert_int_equal(accounting_count(a), 0);
    /* Deleting an absent resource is a no-op. */
    del(a, "j/never");
    assert_int_equal(accounting_count(a), 0);
    accounting_free(a);
}

static void test_recreate_while_held(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    set(a, "j/a", U(2));
    assert_true(acquire1(a, "j/a", U(2)));
    del(a, "j/a");
    set(a, "j/a", U(3));    /* revive: the old holders still count */
    accounting_row r = row_of(a, "j/a");
    assert_false(r.deleted);
    assert_true(r.total == U(3) && r.held == U(2));
    assert_true(fits1(a, "j/a", U(1)));
    assert_false(fits1(a, "j/a", U(1) + 1));
    release1(a, "j/a", U(2));
    r = row_of(a, "j/a");    /* live again, so the last release does not remove it */
    assert_true(r.held == 0 && !r.deleted);
    assert_true(acquire1(a, "j/a", U(3)));

    /* ADD revives too, as if the resource were new: the old capacity is gone. */
    del(a, "j/a");
    add(a, "j/a", U(4));
    r = row_of(a, "j/a");
    assert_false(r.deleted);
    assert_true(r.total == U(4) && r.held == U(3));
    assert_true(acquire1(a, "j/a", U(1)));
    assert_false(acquire1(a, "j/a", 1));
    accounting_free(a);
}

static void test_zero_vs_absent(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    set(a, "j/queue", 0);
    /* Present with zero: listed, but nothing fits and nothing ever could. */
    accounting_row r = row_of(a, "j/queue");
    assert_true(r.total == 0 && !r.deleted);
    assert_true(listed(a, "j/queue"));
    assert_false(fits1(a, "j/queue", 1));
    assert_false(feasible1(a, "j/queue", 1));
    assert_false(acquire1(a, "j/queue", 1));
    /* Absent: not listed, and also waits. */
    assert_false(accounting_get(a, "j/absent", NULL));
    assert_false(listed(a, "j/absent"));
    assert_false(fits1(a, "j/absent", 1));
    assert_false(feasible1(a, "j/absent", 1));
    assert_false(acquire1(a, "j/absent", 1));
    assert_int_equal(accounting_count(a), 1);
    /* Capacity added to the queue lets one request in. */
    add(a, "j/queue", U(1));
    assert_true(feasible1(a, "j/queue", U(1)));
    assert_true(acquire1(a, "j/queue", U(1)));
    assert_false(acquire1(a, "j/queue", 1));
    /* A request naming an absent resource fails as a whole. */
    set(a, "j/b", U(1));
    accounting_req both[2] = {{"j/b", 1, 0}, {"j/absent", 1, 0}};
    assert_false(accounting_fits(a, both, 2));
    assert_false(accounting_acquire(a, both, 2));
    assert_true(row_of(a, "j/b").held == 0);    /* nothing partially held */
    accounting_free(a);
}

static void test_unbounded(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_SET, "j/inf", U(1), true), 0);
    accounting_row r = row_of(a, "j/inf");
    assert_true(r.unbounded);
    assert_true(r.total == 0);    /* value ignored when unbounded */
    for (int i = 0; i < 100; i++)
        assert_true(acquire1(a, "j/inf", ESC_QTY_MAX));
    assert_true(feasible1(a, "j/inf", ESC_QTY_MAX));
    add(a, "j/inf", -U(1000));    /* a delta leaves it unbounded */
    assert_true(row_of(a, "j/inf").unbounded);
    assert_true(acquire1(a, "j/inf", U(7)));
    /* Bounded again: the huge holds now block admission. */
    set(a, "j/inf", U(10));
    r = row_of(a, "j/inf");
    assert_false(r.unbounded);
    assert_false(fits1(a, "j/inf", 1));
    assert_true(feasible1(a, "j/inf", U(10)));
    /* ADD with the unbounded flag makes a bounded resource unbounded. */
    set(a, "j/b", U(1));
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_ADD, "j/b", U(1), true), 0);
    assert_true(row_of(a, "j/b").unbounded);
    assert_true(acquire1(a, "j/b", U(1000)));
    accounting_free(a);
}

/* Shuffles ops[] with a seeded Fisher-Yates. */
static void shuffle(int64_t *v, size_t n, uint64_t *seed)
{
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(rnd(seed) % (i + 1));
        int64_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static void test_add_accumulates(void **state)
{
    (void)state;
    enum { NPLUS = 1000, NMINUS = 500 };
    static int64_t deltas[NPLUS + NMINUS];
    for (size_t i = 0; i < NPLUS + NMINUS; i++)
        deltas[i] = i < NPLUS ? U(1) : -U(1);
    uint64_t seed = 42;
    for (int round = 0; round < 3; round++) {
        accounting *a = accounting_new();
        set(a, "j/c", 0);
        if (round == 1) {
            /* Worst case: all decrements first drive the total negative. */
            int64_t tmp[NPLUS + NMINUS];
            for (size_t i = 0; i < NPLUS + NMINUS; i++)
                tmp[i] = i < NMINUS ? -U(1) : U(1);
            memcpy(deltas, tmp, sizeof tmp);
        } else if (round == 2) {
            shuffle(deltas, NPLUS + NMINUS, &seed);
        }
        for (size_t i = 0; i < NPLUS + NMINUS; i++)
            add(a, "j/c", deltas[i]);
        assert_true(row_of(a, "j/c").total == U(500));
        accounting_free(a);
    }
    /* Fractional deltas are exact in fixed point. */
    accounting *a = accounting_new();
    set(a, "j/f", 0);
    for (int i = 0; i < 10; i++)
        add(a, "j/f", 1000);    /* 0.1 */
    assert_true(row_of(a, "j/f").total == U(1));
    /* While the total is negative nothing is admitted. */
    add(a, "j/f", -U(3));
    assert_true(row_of(a, "j/f").total == -U(2));
    assert_false(fits1(a, "j/f", 1));
    assert_false(feasible1(a, "j/f", 1));
    accounting_free(a);
}

static void test_physical_immune(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    accounting_set_physical(a, "CPU", U(8), false);
    accounting_set_physical(a, "GPU", 5000, false);
    accounting_set_physical(a, "node:n1", U(1), false);
    accounting_set_physical(a, "ssd", U(2), false);    /* static custom, no namespace */
    accounting_set_physical(a, "x/static", U(3), false); /* physical because set so */
    const char *phys[] = {"CPU", "GPU", "node:n1", "ssd", "x/static"};
    const int64_t want[] = {U(8), 5000, U(1), U(2), U(3)};
    assert_true(acquire1(a, "GPU", 2500));
    uint64_t v = accounting_version(a);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_SET, phys[i], U(99), false), -1);
        assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_ADD, phys[i], U(1), true), -1);
        assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_DELETE, phys[i], 0, false), -1);
        accounting_row r = row_of(a, phys[i]);
        assert_true(r.physical && !r.unbounded && !r.deleted);
        assert_true(r.total == want[i]);
    }
    /* Physical names the table has never seen are refused too. */
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_SET, "memory", U(1), false), -1);
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_ADD, "node:other", U(1), false), -1);
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_SET, "object_store_memory", 1, false), -1);
    assert_false(accounting_get(a, "memory", NULL));
    assert_false(accounting_get(a, "node:other", NULL));
    /* As are names that are not "<ns>/<name>". */
    const char *bad[] = {"", "plain", "a/b/c", "/x", "x/", ".a/b", "a/.b", "a b/c"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_SET, bad[i], U(1), false), -1);
        assert_false(accounting_get(a, bad[i], NULL));
    }
    assert_int_equal(accounting_apply(a, NULL), -1);
    assert_int_equal(op_full(a, (Escher__OpKind)7, "j/a", U(1), false), -1);
    assert_false(accounting_get(a, "j/a", NULL));
    assert_true(accounting_version(a) == v);    /* nothing changed */
    assert_int_equal(accounting_count(a), 5);

    /* A snapshot can neither set nor delete physical rows. */
    const char *names[] = {"CPU", "j/e"};
    const int64_t totals[] = {U(1), U(1)};
    const bool unb[] = {false, false};
    accounting_reset_ephemeral(a, names, totals, unb, 2);
    assert_true(row_of(a, "CPU").total == U(8));
    accounting_reset_ephemeral(a, NULL, NULL, NULL, 0);
    assert_false(accounting_get(a, "j/e", NULL));
    for (size_t i = 0; i < 5; i++)
        assert_true(row_of(a, phys[i]).total == want[i]);
    assert_true(row_of(a, "GPU").held == 2500);
    /* The raylet itself may still change physical capacity. */
    accounting_set_physical(a, "GPU", U(1), false);
    assert_true(fits1(a, "GPU", 7500));
    assert_false(fits1(a, "GPU", 7501));
    accounting_free(a);
}

/* A resolved request skips name lookups but means the same: a row deleted and created
 * again is found through the slot, a name unknown at resolve time is found once it
 * exists, and a deleted row refuses admission. */
static void test_resolved_requests(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    set(a, "j/a", U(2));
    accounting_req r[2] = {{.name = "j/a", .qty = U(1)}, {.name = "j/later", .qty = U(1)}};
    accounting_resolve(a, r, 2);
    assert_true(r[0].slot > 0);
    assert_int_equal(r[1].slot, 0);       /* not interned yet: looked up by name */
    assert_false(accounting_fits(a, r, 2));
    set(a, "j/later", U(1));
    assert_true(accounting_acquire(a, r, 2));
    assert_false(accounting_fits(a, r, 2)); /* j/later is full */
    accounting_release(a, r, 2);
    assert_int_equal(row_of(a, "j/a").held, 0);
    del(a, "j/a");
    assert_false(accounting_fits(a, r, 1)); /* the slot's row is gone */
    set(a, "j/a", U(1));
    assert_true(accounting_acquire(a, r, 1)); /* the same name again: the same slot */
    assert_int_equal(row_of(a, "j/a").held, U(1));
    accounting_release(a, r, 1);
    accounting_free(a);
}

static void test_request_vectors(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    set(a, "j/a", 15000);
    set(a, "j/b", U(1));
    /* The same name twice is summed: 1 + 1 > 1.5. */
    accounting_req dup[2] = {{"j/a", U(1), 0}, {"j/a", U(1), 0}};
    assert_false(accounting_fits(a, dup, 2));
    assert_false(accounting_feasible(a, dup, 2));
    assert_false(accounting_acquire(a, dup, 2));
    set(a, "j/a", U(2));
    accounting_req mixed[3] = {{"j/a", U(1), 0}, {"j/b", U(1), 0}, {"j/a", U(1), 0}};
    assert_true(accounting_acquire(a, mixed, 3));
    assert_true(row_of(a, "j/a").held == U(2));
    assert_true(row_of(a, "j/b").held == U(1));
    accounting_release(a, mixed, 3);
    assert_true(row_of(a, "j/a").held == 0);
    assert_true(row_of(a, "j/b").held == 0);
    /* Quantities must be positive and in range. */
    assert_false(fits1(a, "j/a", 0));
    assert_false(fits1(a, "j/a", -1));
    assert_false(acquire1(a, "j/a", -U(5)));
    set(a, "j/inf", 0);
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_SET, "j/inf", 0, true), 0);
    assert_false(fits1(a, "j/inf", ESC_QTY_MAX + 1));
    accounting_req nul = {NULL, 1, 0};
    assert_false(accounting_fits(a, &nul, 1));
    /* The empty request always fits. */
    assert_true(accounting_fits(a, NULL, 0));
    assert_true(accounting_acquire(a, NULL, 0));
    /* A release of what was never held can not make capacity appear. */
    release1(a, "j/b", U(5));
    assert_true(row_of(a, "j/b").held == 0);
    assert_true(acquire1(a, "j/b", U(1)));
    assert_false(acquire1(a, "j/b", 1));
    accounting_free(a);
}

static void test_version_and_order(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    uint64_t v0 = accounting_version(a);
    set(a, "j/a", U(1));
    set(a, "j/b", U(1));
    set(a, "j/c", U(1));
    uint64_t v1 = accounting_version(a);
    assert_true(v1 > v0);
    /* Reads and no-op writes leave the version alone. */
    (void)fits1(a, "j/a", 1);
    (void)row_of(a, "j/a");
    set(a, "j/a", U(1));
    del(a, "j/zzz");
    assert_false(acquire1(a, "j/a", U(2)));
    assert_true(accounting_version(a) == v1);
    assert_true(acquire1(a, "j/a", 1));
    assert_true(accounting_version(a) > v1);
    uint64_t v2 = accounting_version(a);
    release1(a, "j/a", 1);
    assert_true(accounting_version(a) > v2);

    /* Rows list in creation order; a removal keeps the others in order. */
    accounting_row r;
    del(a, "j/b");
    set(a, "j/d", U(1));
    const char *want[] = {"j/a", "j/c", "j/d"};
    assert_int_equal(accounting_count(a), 3);
    for (size_t i = 0; i < 3; i++) {
        assert_true(accounting_row_at(a, i, &r));
        assert_string_equal(r.name, want[i]);
    }
    accounting_free(a);
}

static void test_reset_ephemeral(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    accounting_set_physical(a, "CPU", U(4), false);
    set(a, "j/keep", U(1));
    set(a, "j/gone", U(1));
    set(a, "j/held", U(2));
    set(a, "j/revive", U(2));
    assert_true(acquire1(a, "j/held", U(1)));
    assert_true(acquire1(a, "j/revive", U(2)));
    del(a, "j/revive");
    const char *names[] = {"j/keep", "j/new", "j/revive", "j/unb", "bad name"};
    const int64_t totals[] = {U(3), U(2), U(5), U(9), U(1)};
    const bool unb[] = {false, false, false, true, false};
    accounting_reset_ephemeral(a, names, totals, unb, 5);
    assert_true(row_of(a, "j/keep").total == U(3));
    assert_true(row_of(a, "j/new").total == U(2));
    accounting_row r = row_of(a, "j/revive");
    assert_true(!r.deleted && r.total == U(5) && r.held == U(2));
    r = row_of(a, "j/unb");
    assert_true(r.unbounded && r.total == 0);
    assert_false(accounting_get(a, "j/gone", NULL));
    assert_false(accounting_get(a, "bad name", NULL));
    r = row_of(a, "j/held");    /* unlisted but held: deleted, kept for its holder */
    assert_true(r.deleted && r.held == U(1));
    assert_false(fits1(a, "j/held", 1));
    assert_true(row_of(a, "CPU").total == U(4));
    assert_int_equal(accounting_count(a), 6);
    uint64_t v = accounting_version(a);
    accounting_reset_ephemeral(a, names, totals, unb, 5);    /* same snapshot: no change */
    assert_true(accounting_version(a) == v);
    release1(a, "j/held", U(1));
    assert_false(accounting_get(a, "j/held", NULL));
    accounting_free(a);
}

/* ---- log replay equals state ---- */

#define NNAMES 6
static const char *const replay_names[NNAMES] = {"j/a", "j/b", "j/c", "k/a", "k/q", "d/x"};

/* The GCS registry's view of one node, kept by the test independently of the table. */
typedef struct {
    bool exists;
    int64_t total;
    bool unbounded;
    bool backed;      /* backed by REPLAY_BACKING CPU per unit */
} reg_row;

/* Names 1 and 4 are backed in the backed variant of the replay test. */
#define REPLAY_BACKING 5000
static bool replay_backed_name(size_t i) { return i == 1 || i == 4; }

static int64_t clamp0(int64_t v) { return v < 0 ? 0 : v; }

/* The registry's backing rule (gcs/registry.c): a backed SET backs a new row; a row
 * created otherwise is unbacked; an unbounded capacity has no backing. */
static void reg_apply_backing(reg_row *r, Escher__OpKind kind, bool backed_op, bool unb)
{
    if (!r->exists)
        r->backed = kind == ESCHER__OP_KIND__OP_SET && backed_op;
    if (unb)
        r->backed = false;
}

static void reg_apply(reg_row *r, Escher__OpKind kind, int64_t value, bool unbounded)
{
    if (kind == ESCHER__OP_KIND__OP_DELETE) {
        r->exists = false;
        r->backed = false;
        return;
    }
    if (kind == ESCHER__OP_KIND__OP_SET || !r->exists) {
        /* SET, or ADD creating: capacity from the value, at least 0. */
        r->exists = true;
        r->unbounded = unbounded;
        r->total = unbounded ? 0 : clamp0(value);
    } else if (r->unbounded || unbounded) {
        r->unbounded = true;
        r->total = 0;
    } else {
        r->total += value;
    }
}

/* Rebuilds t from the registry with accounting_reset_ephemeral. */
static void reset_from(accounting *t, const reg_row *reg)
{
    const char *names[NNAMES];
    int64_t totals[NNAMES];
    bool unb[NNAMES];
    accounting_backing bk[NNAMES];
    static Escher__Amount cpu = {PROTOBUF_C_MESSAGE_INIT(&escher__amount__descriptor), "CPU",
                                 REPLAY_BACKING, false};
    static Escher__Amount *cpu_v[1] = {&cpu};
    size_t n = 0;
    for (size_t i = 0; i < NNAMES; i++) {
        if (!reg[i].exists)
            continue;
        names[n] = replay_names[i];
        totals[n] = reg[i].total;
        unb[n] = reg[i].unbounded;
        bk[n] = reg[i].backed ? (accounting_backing){cpu_v, 1} : (accounting_backing){NULL, 0};
        n++;
    }
    accounting_reset_ephemeral_backed(t, names, totals, unb, bk, n);
}

/* Both tables list exactly the same rows with the same values. */
static void assert_same_rows(const accounting *x, const accounting *y)
{
    assert_int_equal(accounting_count(x), accounting_count(y));
    for (size_t i = 0; i < accounting_count(x); i++) {
        accounting_row rx, ry;
        assert_true(accounting_row_at(x, i, &rx));
        assert_true(accounting_get(y, rx.name, &ry));
        assert_true(rx.total == ry.total);
        assert_true(rx.held == ry.held);
        assert_int_equal(rx.unbounded, ry.unbounded);
        assert_int_equal(rx.deleted, ry.deleted);
        assert_int_equal(rx.physical, ry.physical);
        assert_int_equal(rx.backed, ry.backed);
        assert_int_equal(rx.pending, ry.pending);
        assert_true(rx.carved == ry.carved);
    }
}

/* The table agrees with the registry: live rows exactly where the registry has rows. */
static void assert_matches_registry(const accounting *t, const reg_row *reg)
{
    for (size_t i = 0; i < NNAMES; i++) {
        accounting_row r;
        bool present = accounting_get(t, replay_names[i], &r);
        if (!reg[i].exists) {
            assert_true(!present || (r.deleted && r.held > 0));
            continue;
        }
        assert_true(present);
        assert_false(r.deleted);
        assert_int_equal(r.unbounded, reg[i].unbounded);
        assert_true(r.total == reg[i].total);
    }
}

/* Same setup on a table: physical CPU, every name at 5, holds on the first three. In
 * the backed variant names 1 and 4 are backed by CPU, and CPU is large enough for every
 * carve (under contention the carve order may differ; see accounting.c). */
static accounting *replay_table(reg_row *reg, bool backed)
{
    accounting *t = accounting_new();
    accounting_set_physical(t, "CPU", backed ? U(100000) : U(4), false);
    for (size_t i = 0; i < NNAMES; i++) {
        bool b = backed && replay_backed_name(i);
        reg[i] = (reg_row){true, U(5), false, b};
        if (b)
            assert_int_equal(set_backed(t, replay_names[i], U(5), "CPU", REPLAY_BACKING), 0);
        else
            set(t, replay_names[i], U(5));
    }
    for (size_t i = 0; i < 3; i++)
        assert_true(acquire1(t, replay_names[i], U(2)));
    return t;
}

static void random_op(uint64_t *seed, Escher__OpKind *kind, int64_t *value, bool *unb)
{
    uint64_t k = rnd(seed) % 10;
    *kind = k < 3 ? ESCHER__OP_KIND__OP_SET
                  : k < 8 ? ESCHER__OP_KIND__OP_ADD : ESCHER__OP_KIND__OP_DELETE;
    *value = rnd_range(seed, -40000, 60000);
    *unb = rnd(seed) % 12 == 0;
}

/* A backed SET where the GCS would take one: on a backed name, bounded, and on a row
 * that is absent or backed already (another backing on a live row is refused). */
static bool use_backing(const reg_row *r, size_t which, Escher__OpKind kind, bool unb,
                        bool backed)
{
    return backed && replay_backed_name(which) && kind == ESCHER__OP_KIND__OP_SET && !unb &&
           (!r->exists || r->backed);
}

/* Backed names stay backed: they are created by backed SETs and never made unbounded.
 * Changing the backing of a row that is deleted but still held (re-creating it
 * otherwise) gives the held units' carve back at once, and a snapshot can not know a
 * deleted row's old backing: that case is history, outside what the property claims
 * (docs/resources.md). */
static void keep_backed(const reg_row *r, Escher__OpKind *kind, bool *unb)
{
    *unb = false;
    if (*kind == ESCHER__OP_KIND__OP_ADD && !r->exists)
        *kind = ESCHER__OP_KIND__OP_SET;
}

static void replay_one_seed(uint64_t seed, bool backed)
{
    reg_row reg[NNAMES], unused[NNAMES];
    accounting *stepped = replay_table(reg, backed);   /* gets every log op */
    accounting *tracked = replay_table(unused, backed); /* reset from the registry after each op */
    for (int step = 0; step < 400; step++) {
        size_t which = (size_t)(rnd(&seed) % NNAMES);
        Escher__OpKind kind;
        int64_t value;
        bool unb;
        random_op(&seed, &kind, &value, &unb);
        if (backed && replay_backed_name(which))
            keep_backed(&reg[which], &kind, &unb);
        bool bop = use_backing(&reg[which], which, kind, unb, backed);
        if (bop)
            assert_int_equal(set_backed(stepped, replay_names[which], value < 0 ? 0 : value,
                                        "CPU", REPLAY_BACKING), 0);
        else
            assert_int_equal(op_full(stepped, kind, replay_names[which], value, unb), 0);
        if (bop && value < 0)
            value = 0;
        reg_apply_backing(&reg[which], kind, bop, unb);
        reg_apply(&reg[which], kind, value, unb);
        reset_from(tracked, reg);
        assert_matches_registry(stepped, reg);
        assert_same_rows(stepped, tracked);
        assert_same_rows(tracked, stepped);
    }
    /* A table rebuilt once from the final snapshot agrees too. */
    reg_row fresh_reg[NNAMES];
    accounting *rebuilt = replay_table(fresh_reg, backed);
    reset_from(rebuilt, reg);
    assert_same_rows(stepped, rebuilt);
    assert_same_rows(rebuilt, stepped);
    /* And after the holders leave, all three still agree. */
    accounting *tables[3] = {stepped, tracked, rebuilt};
    for (size_t t = 0; t < 3; t++)
        for (size_t i = 0; i < 3; i++)
            release1(tables[t], replay_names[i], U(2));
    assert_same_rows(stepped, rebuilt);
    assert_same_rows(rebuilt, tracked);
    assert_same_rows(tracked, stepped);
    assert_matches_registry(stepped, reg);
    for (size_t t = 0; t < 3; t++)
        accounting_free(tables[t]);
}

static void test_replay_equals_snapshot(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 25; seed++)
        replay_one_seed(seed * 0x9e3779b97f4a7c15ull, false);
}

/* The same with backed rows: totals, backings, carves and the physical held they take
 * agree between a replayed log and a snapshot. */
static void test_replay_equals_snapshot_backed(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 25; seed++)
        replay_one_seed(seed * 0x9e3779b97f4a7c15ull, true);
}


/* ---- backed resources ---- */

static int64_t held_of(const accounting *a, const char *name)
{
    return row_of(a, name).held;
}

static void test_backed_carve_and_return(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    accounting_set_physical(a, "CPU", U(8), false);
    assert_int_equal(set_backed(a, "j/g", U(4), "CPU", U(1)), 0);
    accounting_row g = row_of(a, "j/g"), cpu = row_of(a, "CPU");
    assert_true(g.backed && !g.pending);
    assert_true(g.total == U(4) && g.carved == U(4));
    assert_true(cpu.held == U(4) && cpu.carved == U(4));
    assert_false(fits1(a, "CPU", U(5)));     /* the carve is gone from CPU */
    assert_true(fits1(a, "CPU", U(4)));
    assert_true(acquire1(a, "j/g", U(1)));
    assert_true(held_of(a, "CPU") == U(4)); /* holding the gang takes no more CPU */
    del(a, "j/g");                          /* held: only the held unit stays carved */
    assert_true(row_of(a, "j/g").deleted);
    assert_true(held_of(a, "CPU") == U(1));
    release1(a, "j/g", U(1));
    assert_false(listed(a, "j/g"));
    cpu = row_of(a, "CPU");
    assert_true(cpu.held == 0 && cpu.carved == 0);
    accounting_free(a);
}

static void test_backed_pending_until_release(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    accounting_set_physical(a, "CPU", U(4), false);
    assert_true(acquire1(a, "CPU", U(3)));             /* a running task */
    assert_int_equal(set_backed(a, "j/g", U(2), "CPU", U(1)), 0);
    accounting_row g = row_of(a, "j/g");
    assert_true(g.pending && g.total == 0 && g.carved == 0);
    assert_true(held_of(a, "CPU") == U(3));            /* nothing half carved */
    assert_false(fits1(a, "j/g", U(1)));
    assert_true(feasible1(a, "j/g", U(2)));            /* it will fit once carved */
    uint64_t v = accounting_version(a);
    release1(a, "CPU", U(3));
    assert_true(accounting_version(a) > v);
    g = row_of(a, "j/g");
    assert_true(!g.pending && g.total == U(2));
    assert_true(held_of(a, "CPU") == U(2));            /* carved before anyone else */
    assert_false(fits1(a, "CPU", U(3)));
    /* Two pending rows: the oldest that fits is carved first. */
    assert_int_equal(set_backed(a, "j/h", U(2), "CPU", U(1)), 0);
    assert_int_equal(set_backed(a, "j/k", U(1), "CPU", U(1)), 0);
    assert_false(row_of(a, "j/h").pending);
    assert_true(row_of(a, "j/k").pending);
    del(a, "j/g");
    assert_false(row_of(a, "j/k").pending);
    assert_true(held_of(a, "CPU") == U(3));
    accounting_free(a);
}

static void test_backed_shrink_keeps_held(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    accounting_set_physical(a, "CPU", U(8), false);
    assert_int_equal(set_backed(a, "j/g", U(4), "CPU", ESC_QTY_SCALE / 2), 0);
    assert_true(held_of(a, "CPU") == U(2));
    assert_true(acquire1(a, "j/g", U(3)));
    set(a, "j/g", U(1));                     /* shrink below held: held units stay */
    assert_true(row_of(a, "j/g").backed);    /* a plain set keeps the backing */
    assert_true(held_of(a, "CPU") == 15000);
    release1(a, "j/g", U(3));
    assert_true(held_of(a, "CPU") == 5000);
    add(a, "j/g", U(3));                     /* grow: carved again */
    assert_true(held_of(a, "CPU") == U(2));
    assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_SET, "j/g", 0, true), 0);
    assert_false(row_of(a, "j/g").backed);   /* unbounded can not be backed */
    assert_true(held_of(a, "CPU") == 0);
    accounting_free(a);
}

static void test_backed_all_or_nothing(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    accounting_set_physical(a, "CPU", U(4), false);
    accounting_set_physical(a, "memory", U(100), false);
    assert_int_equal(set_backed2(a, "j/g", U(2), "CPU", U(1), "memory", U(60)), 0);
    assert_true(row_of(a, "j/g").pending);
    assert_true(held_of(a, "CPU") == 0 && held_of(a, "memory") == 0);
    set(a, "j/g", U(1));
    assert_false(row_of(a, "j/g").pending);
    assert_true(held_of(a, "CPU") == U(1) && held_of(a, "memory") == U(60));
    accounting_free(a);
}

static void test_backed_malformed(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    accounting_set_physical(a, "CPU", U(4), false);
    set(a, "j/x", U(1));
    uint64_t v = accounting_version(a);
    assert_int_equal(set_backed(a, "j/g", U(1), "GPU", U(1)), -1);     /* unknown */
    assert_int_equal(set_backed(a, "j/g", U(1), "j/x", U(1)), -1);     /* not physical */
    assert_int_equal(set_backed(a, "j/g", U(1), "CPU", 0), -1);        /* zero */
    assert_int_equal(set_backed(a, "j/g", U(1), "CPU", -U(1)), -1);    /* negative */
    assert_int_equal(set_backed2(a, "j/g", U(1), "CPU", 1, "CPU", 1), -1); /* twice */
    assert_false(listed(a, "j/g"));
    assert_true(accounting_version(a) == v);
    accounting_free(a);
}

static void test_backed_keeps_backing(void **state)
{
    (void)state;
    accounting *a = accounting_new();
    accounting_set_physical(a, "CPU", U(8), false);
    assert_int_equal(set_backed(a, "j/g", U(2), "CPU", U(1)), 0);
    assert_true(acquire1(a, "j/g", U(1)));
    del(a, "j/g");
    /* Re-created with the same backing while held: the held unit stays carved. */
    assert_int_equal(set_backed(a, "j/g", U(3), "CPU", U(1)), 0);
    assert_true(held_of(a, "CPU") == U(3));
    release1(a, "j/g", U(1));
    assert_true(held_of(a, "CPU") == U(3));
    del(a, "j/g");
    assert_true(held_of(a, "CPU") == 0);
    /* An ADD creating a row makes it unbacked. */
    add(a, "j/g", U(2));
    assert_false(row_of(a, "j/g").backed);
    assert_true(held_of(a, "CPU") == 0);
    accounting_free(a);
}

/* ---- randomized admission invariant ---- */

#define INV_NAMES 4
static const char *const inv_names[INV_NAMES] = {"j/a", "j/b", "j/c", "CPU"};

typedef struct {
    accounting_req req[3];
    size_t n;
} lease;

/* What acquire must answer, from the rows as listed: every distinct name present,
 * live, and unbounded or with the summed quantity within total - held. */
static bool expected_fit(const accounting *a, const lease *l)
{
    for (size_t i = 0; i < l->n; i++) {
        int64_t need = 0;
        for (size_t j = 0; j < l->n; j++)
            if (strcmp(l->req[j].name, l->req[i].name) == 0)
                need += l->req[j].qty;
        accounting_row r;
        if (!accounting_get(a, l->req[i].name, &r) || r.deleted)
            return false;
        if (!r.unbounded && need > r.total - r.held)
            return false;
    }
    return true;
}

static size_t name_index(const char *name)
{
    for (size_t i = 0; i < INV_NAMES; i++)
        if (strcmp(inv_names[i], name) == 0)
            return i;
    fail_msg("unknown name %s", name);
    return 0;
}

static void try_acquire(accounting *a, uint64_t *seed, lease *leases, size_t *nleases,
                        int64_t *held)
{
    lease l;
    memset(&l, 0, sizeof l); /* no slots resolved */
    l.n = 1 + (size_t)(rnd(seed) % 3);
    for (size_t i = 0; i < l.n; i++) {
        l.req[i].name = inv_names[rnd(seed) % INV_NAMES];    /* repeats allowed */
        l.req[i].qty = rnd_range(seed, 1, 30000);
    }
    accounting_row before[INV_NAMES];
    bool was[INV_NAMES];
    for (size_t i = 0; i < INV_NAMES; i++)
        was[i] = accounting_get(a, inv_names[i], &before[i]);
    bool expect = expected_fit(a, &l);
    bool got = accounting_acquire(a, l.req, l.n);
    assert_int_equal(got, expect);
    if (!got)
        return;
    for (size_t i = 0; i < l.n; i++)
        held[name_index(l.req[i].name)] += l.req[i].qty;
    for (size_t i = 0; i < INV_NAMES; i++) {
        accounting_row r;
        if (!was[i] || before[i].unbounded || !accounting_get(a, inv_names[i], &r))
            continue;
        /* Whatever a successful acquire added stays within capacity. */
        if (r.held > before[i].held)
            assert_true(r.held <= r.total);
    }
    if (*nleases < 64)
        leases[(*nleases)++] = l;
    else    /* no room to remember it: hand it straight back */
        for (size_t i = 0; i < l.n; i++) {
            accounting_release(a, &l.req[i], 1);
            held[name_index(l.req[i].name)] -= l.req[i].qty;
        }
}

static void release_random(accounting *a, uint64_t *seed, lease *leases, size_t *nleases,
                           int64_t *held)
{
    if (*nleases == 0)
        return;
    size_t k = (size_t)(rnd(seed) % *nleases);
    accounting_release(a, leases[k].req, leases[k].n);
    for (size_t i = 0; i < leases[k].n; i++)
        held[name_index(leases[k].req[i].name)] -= leases[k].req[i].qty;
    leases[k] = leases[--(*nleases)];
}

static void change_capacity(accounting *a, uint64_t *seed)
{
    const char *name = inv_names[rnd(seed) % INV_NAMES];
    uint64_t k = rnd(seed) % 10;
    if (strcmp(name, "CPU") == 0) {
        accounting_set_physical(a, name, rnd_range(seed, 0, 60000), false);
    } else if (k < 5) {
        set(a, name, rnd_range(seed, 0, 60000));    /* often a shrink below held */
    } else if (k < 8) {
        add(a, name, rnd_range(seed, -30000, 20000));
    } else if (k < 9) {
        del(a, name);
    } else {
        assert_int_equal(op_full(a, ESCHER__OP_KIND__OP_SET, name, 0, true), 0);
    }
}

/* The table's held equals what the test's own leases hold, and rows exist while held. */
static void check_held(const accounting *a, const int64_t *held)
{
    for (size_t i = 0; i < INV_NAMES; i++) {
        accounting_row r;
        if (accounting_get(a, inv_names[i], &r))
            assert_true(r.held == held[i]);
        else
            assert_true(held[i] == 0);
    }
}

static void test_random_admission_invariant(void **state)
{
    (void)state;
    for (uint64_t s = 1; s <= 20; s++) {
        uint64_t seed = s * 0xd1b54a32d192ed03ull;
        accounting *a = accounting_new();
        accounting_set_physical(a, "CPU", U(4), false);
        set(a, "j/a", U(3));
        set(a, "j/b", U(1));
        lease leases[64];
        size_t nleases = 0;
        int64_t held[INV_NAMES] = {0};
        for (int step = 0; step < 3000; step++) {
            uint64_t k = rnd(&seed) % 10;
            if (k < 5)
                try_acquire(a, &seed, leases, &nleases, held);
            else if (k < 8)
                release_random(a, &seed, leases, &nleases, held);
            else
                change_capacity(a, &seed);
            check_held(a, held);
        }
        while (nleases > 0)
            release_random(a, &seed, leases, &nleases, held);
        check_held(a, held);
        accounting_free(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create),
        cmocka_unit_test(test_update_while_held),
        cmocka_unit_test(test_shrink_below_held),
        cmocka_unit_test(test_delete_while_held),
        cmocka_unit_test(test_recreate_while_held),
        cmocka_unit_test(test_zero_vs_absent),
        cmocka_unit_test(test_unbounded),
        cmocka_unit_test(test_add_accumulates),
        cmocka_unit_test(test_physical_immune),
        cmocka_unit_test(test_request_vectors),
        cmocka_unit_test(test_resolved_requests),
        cmocka_unit_test(test_version_and_order),
        cmocka_unit_test(test_reset_ephemeral),
        cmocka_unit_test(test_replay_equals_snapshot),
        cmocka_unit_test(test_replay_equals_snapshot_backed),
        cmocka_unit_test(test_backed_carve_and_return),
        cmocka_unit_test(test_backed_pending_until_release),
        cmocka_unit_test(test_backed_shrink_keeps_held),
        cmocka_unit_test(test_backed_all_or_nothing),
        cmocka_unit_test(test_backed_malformed),
        cmocka_unit_test(test_backed_keeps_backing),
        cmocka_unit_test(test_random_admission_invariant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
