/* admission.c: see admission.h. */
#include "admission.h"

#include <stdbool.h>
#include <stdlib.h>

struct admission {
    admission_entry *head, *tail;
    size_t n;
    uint64_t pass;
};

admission *admission_new(void)
{
    admission *q = calloc(1, sizeof *q);
    if (!q)
        abort(); /* the raylet's out-of-memory policy */
    return q;
}

void admission_free(admission *q)
{
    free(q);
}

void admission_push(admission *q, admission_entry *e)
{
    e->next = NULL;
    e->prev = q->tail;
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
    q->n++;
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
}

size_t admission_count(const admission *q)
{
    return q->n;
}

admission_entry *admission_first(const admission *q)
{
    return q->head;
}

void admission_reexamine(admission *q)
{
    uint64_t pass = ++q->pass;
    /* Entries queued during the pass (a task placed back here) wait for the next one. */
    admission_entry *last = q->tail;
    admission_entry *e = q->head;
    while (e) {
        admission_entry *next = e->next;
        bool end = e == last;
        e->try_fn(e, pass);
        if (end)
            break;
        e = next;
    }
}
