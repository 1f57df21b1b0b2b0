/* admission.h: the node's one queue of work waiting to be admitted.
 *
 * Lease requests (lease_service.c) and tasks (task_manager.c) that do not fit when they
 * arrive wait here together, in arrival order. When a log entry is applied or something
 * is released (raylet_changed), the raylet re-examines the queue once per loop turn, in
 * FIFO order: each entry is tried in its turn by its own kind (a lease is granted if it
 * fits; a task runs if it fits, or goes to another node), and one that does not fit does
 * not block those behind it. So the earlier of a lease and a task that want the same
 * capacity gets it first, whatever their kinds.
 *
 * Entries pushed with the same `alike` key are ones whose kind promises that when one
 * stays in its turn, every later one of that key would stay too (tasks asking for the
 * same resources, from the same sender, at the same hop: task_manager.c). A pass tries
 * such a run of entries only until one stays, so it costs the entries that leave plus
 * one per key, not one per entry: a million queued tasks of one shape cost one try per
 * pass, not a million (docs/benchmarks.md, "Scale"). Loop thread only. */
#ifndef RAYLET_ADMISSION_H
#define RAYLET_ADMISSION_H

#include <stddef.h>
#include <stdint.h>

typedef struct admission admission;
typedef struct admission_entry admission_entry;
typedef struct admission_class admission_class;

/* Tries e in its turn of re-examination number pass (a new number per pass, so a kind
 * can keep what it learned during one pass). It may remove e (admission_remove) and
 * push it again, and nothing else. */
typedef void (*admission_try_fn)(admission_entry *e, uint64_t pass);

/* Embedded in what waits (first member, so the owner casts back). */
struct admission_entry {
    admission_entry *prev, *next;     /* every entry, oldest first */
    admission_try_fn try_fn;          /* also tells the entry's kind */
    /* The queue's own (admission.c): the entry's class and its place in it. */
    admission_class *cls;
    admission_entry *alike_prev, *alike_next;
    uint64_t seq;
};

admission *admission_new(void);
/* Frees the queue; its entries belong to their kinds, which must have removed them. */
void admission_free(admission *q);

/* Queues e last; e->try_fn must be set. An entry on its own: always tried in its turn. */
void admission_push(admission *q, admission_entry *e);
/* Queues e last among the entries of key alike (see above; the key is copied). */
void admission_push_alike(admission *q, admission_entry *e, const char *alike);
void admission_remove(admission *q, admission_entry *e);
size_t admission_count(const admission *q);

/* The oldest entry (NULL when empty); entries link through ->next. */
admission_entry *admission_first(const admission *q);

/* Tries the entries queued before the pass, oldest first, except those behind one of
 * their key that stayed. */
void admission_reexamine(admission *q);

#endif
