/* admission.h: the node's one queue of work waiting to be admitted.
 *
 * Lease requests (lease_service.c) and tasks (task_manager.c) that do not fit when they
 * arrive wait here together, in arrival order. When a log entry is applied or something
 * is released (raylet_changed), the raylet re-examines the queue once per loop turn, in
 * FIFO order: each entry is tried in its turn by its own kind (a lease is granted if it
 * fits; a task runs if it fits, or goes to another node), and one that does not fit does
 * not block those behind it. So the earlier of a lease and a task that want the same
 * capacity gets it first, whatever their kinds. Loop thread only. */
#ifndef RAYLET_ADMISSION_H
#define RAYLET_ADMISSION_H

#include <stddef.h>
#include <stdint.h>

typedef struct admission admission;
typedef struct admission_entry admission_entry;

/* Tries e in its turn of re-examination number pass (a new number per pass, so a kind
 * can keep what it learned during one pass). It may remove e (admission_remove), and
 * nothing else. */
typedef void (*admission_try_fn)(admission_entry *e, uint64_t pass);

/* Embedded in what waits (first member, so the owner casts back). */
struct admission_entry {
    admission_entry *prev, *next;
    admission_try_fn try_fn;     /* also tells the entry's kind */
};

admission *admission_new(void);
/* Frees the queue; its entries belong to their kinds, which must have removed them. */
void admission_free(admission *q);

/* Queues e last; e->try_fn must be set. */
void admission_push(admission *q, admission_entry *e);
void admission_remove(admission *q, admission_entry *e);
size_t admission_count(const admission *q);

/* The oldest entry (NULL when empty); entries link through ->next. */
admission_entry *admission_first(const admission *q);

/* Tries every entry once, oldest first. */
void admission_reexamine(admission *q);

#endif
