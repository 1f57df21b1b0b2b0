/* admission.c: see admission.h.
 *
 * Besides the list of every entry, the queue keeps classes: the entries of one alike key
 * (or one entry on its own), oldest first. The classes are kept sorted by the arrival of
 * their oldest entry, so walking the classes and, in each, its entries from the oldest
 * tries entries in arrival order across classes; when a class's oldest entry leaves, the
 * class moves back to the place of its next one. */
#include "admission.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "xalloc.h"

struct admission_class {
    admission_class *prev, *next;   /* sorted by first->seq */
    admission_entry *first, *last;
    char *key;                      /* NULL: one entry on its own */
    bool dead;                      /* emptied during a pass: freed at its end */
};

struct admission {
    admission_entry *head, *tail;
    size_t n;
    uint64_t pass, seq;
    admission_class *classes, *classes_tail;
    esc_strmap *alike;              /* key -> its class */
    bool in_pass;
    admission_class *graveyard;     /* classes emptied during the pass (linked by next) */
};

admission *admission_new(void)
{
    admission *q = esc_xcalloc(1, sizeof *q);
    q->alike = esc_strmap_new();
    return q;
}

void admission_free(admission *q)
{
    esc_strmap_free(q->alike);
    free(q);
}

/* ------------------------------------------------------------ classes */

static void class_unlink(admission *q, admission_class *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        q->classes = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        q->classes_tail = c->prev;
    c->prev = c->next = NULL;
}

/* Puts c after `after` (NULL: first). */
static void class_link_after(admission *q, admission_class *c, admission_class *after)
{
    c->prev = after;
    c->next = after ? after->next : q->classes;
    if (c->next)
        c->next->prev = c;
    else
        q->classes_tail = c;
    if (after)
        after->next = c;
    else
        q->classes = c;
}

/* c's oldest entry changed to a later one: move c back past the classes whose oldest
 * came before it. */
static void class_resort(admission *q, admission_class *c)
{
    admission_class *after = c->next;
    if (!after || after->first->seq > c->first->seq)
        return;
    while (after->next && after->next->first->seq < c->first->seq)
        after = after->next;
    class_unlink(q, c);
    class_link_after(q, c, after);
}

/* During a pass the class stays allocated until the pass ends: the pass still compares
 * the class it tried against the queue after the try (see admission_reexamine). */
static void class_free(admission *q, admission_class *c)
{
    class_unlink(q, c);
    if (c->key) {
        esc_strmap_del(q->alike, c->key);
        free(c->key);
        c->key = NULL;
    }
    if (q->in_pass) {
        c->dead = true;
        c->next = q->graveyard;
        q->graveyard = c;
    } else {
        free(c);
    }
}

/* ------------------------------------------------------------ entries */

static void push(admission *q, admission_entry *e, admission_class *c)
{
    e->next = NULL;
    e->prev = q->tail;
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
    q->n++;
    e->seq = q->seq++;
    e->cls = c;
    e->alike_next = NULL;
    e->alike_prev = c->last;
    if (c->last)
        c->last->alike_next = e;
    else
        c->first = e;
    c->last = e;
    if (c->first == e) /* a new class, or one that was empty: the newest of all */
        class_link_after(q, c, q->classes_tail);
}

static admission_class *class_new(const char *key)
{
    admission_class *c = esc_xcalloc(1, sizeof *c);
    if (key)
        c->key = esc_xstrdup(key);
    return c;
}

void admission_push(admission *q, admission_entry *e)
{
    push(q, e, class_new(NULL));
}

void admission_push_alike(admission *q, admission_entry *e, const char *alike)
{
    admission_class *c = esc_strmap_get(q->alike, alike);
    if (!c) {
        c = class_new(alike);
        esc_strmap_put(q->alike, alike, c);
    }
    push(q, e, c);
}

void admission_remove(admission *q, admission_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        q->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        q->tail = e->prev;
    e->prev = e->next = NULL;
    q->n--;
    admission_class *c = e->cls;
    bool was_first = c->first == e;
    if (e->alike_prev)
        e->alike_prev->alike_next = e->alike_next;
    else
        c->first = e->alike_next;
    if (e->alike_next)
        e->alike_next->alike_prev = e->alike_prev;
    else
        c->last = e->alike_prev;
    e->alike_prev = e->alike_next = NULL;
    e->cls = NULL;
    if (!c->first)
        class_free(q, c);
    else if (was_first)
        class_resort(q, c);
}

size_t admission_count(const admission *q)
{
    return q->n;
}

admission_entry *admission_first(const admission *q)
{
    return q->head;
}

/* The classes before `done` (and it) are finished for this pass: each has its oldest
 * entry staying, or one queued during the pass. The next to try is the one after it:
 * a class whose entry left was moved back to its new place (or emptied), so it comes
 * again in its turn. The entry itself is not read after its try: its kind may have
 * freed it; the class (kept until the pass ends) says whether it stayed. */
void admission_reexamine(admission *q)
{
    uint64_t pass = ++q->pass;
    uint64_t limit = q->seq; /* entries queued during the pass wait for the next one */
    admission_class *done = NULL;
    q->in_pass = true;
    for (;;) {
        admission_class *c = done ? done->next : q->classes;
        if (!c)
            break;
        admission_entry *e = c->first;
        uint64_t seq = e->seq;
        if (seq >= limit) {
            done = c;
            continue;
        }
        e->try_fn(e, pass);
        if (!c->dead && c->first->seq == seq)
            done = c; /* stayed */
    }
    q->in_pass = false;
    while (q->graveyard) {
        admission_class *c = q->graveyard;
        q->graveyard = c->next;
        free(c);
    }
}
