/* esl_queues.c: priority and weighted fair queues on present-with-zero resources
 * (esl.h). The thread is the only writer of the queue resources' capacities; submitters
 * only count tasks in and wake it. The thread blocks on one waker (client_internal.h):
 * the owner pokes it when results come (one of its tasks may have ended), submitters
 * and the stop poke it too; it never wakes for a period. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "escher/esl.h"
#include "esl_internal.h"
#include "ids.h"
#include "xalloc.h"

#define APPLY_WAIT_MS 5000

typedef struct {
    esc_ref **out;              /* its tasks not ended yet (the first return of each) */
    size_t n, cap;
} queue;

struct esl_queues {
    esc_client *c;
    char *name;
    size_t nq;
    double *weights;            /* NULL: strict priority */
    unsigned slots;
    queue *q;
    int64_t *set;               /* the capacities last set, per queue (-1: none yet) */
    pthread_mutex_t mu;         /* the queues and stop */
    esc_waker wake;             /* poked: a task came in, or stop */
    bool stop;
    pthread_t thread;
};

static void queue_name(const esl_queues *qs, size_t i, char *out, size_t len)
{
    snprintf(out, len, "%s_%zu", qs->name, i);
}

/* The capacity each queue should have now (the policy, see esl.h). */
static void wanted(const esl_queues *qs, int64_t *cap)
{
    double sum = 0;
    bool first = true;
    for (size_t i = 0; i < qs->nq; i++) {
        cap[i] = 0;
        if (!qs->q[i].n)
            continue;
        if (!qs->weights) {
            cap[i] = first ? ESC_QTY(1) * qs->slots : 0;
            first = false;
        } else {
            sum += qs->weights[i];
        }
    }
    for (size_t i = 0; qs->weights && i < qs->nq; i++) {
        if (!qs->q[i].n || qs->weights[i] <= 0)
            continue;
        int64_t share = (int64_t)(qs->slots * qs->weights[i] / sum);
        cap[i] = ESC_QTY(1) * (share < 1 ? 1 : share);
    }
}

/* Sets the capacities that changed, on every alive node, in one batch, and waits until
 * the nodes apply it. Called unlocked. */
static void apply(esl_queues *qs, const int64_t *cap)
{
    esc_batch *b = esc_batch_new();
    esc_target all = ESC_ALL_NODES;
    for (size_t i = 0; i < qs->nq; i++) {
        if (cap[i] == qs->set[i])
            continue;
        char name[128];
        queue_name(qs, i, name, sizeof name);
        esc_batch_set(b, name, cap[i], &all);
    }
    uint64_t seq = 0;
    if (esc_batch_size(b) && esc_batch_commit(qs->c, b, &seq, NULL) == ESC_OK) {
        esc_wait_applied(qs->c, seq, NULL, 0, APPLY_WAIT_MS, NULL);
        memcpy(qs->set, cap, qs->nq * sizeof *cap);
    }
    esc_batch_free(b);
}

/* Waits until one of the tasks ended, or the waker was poked since ext was read; forgets
 * the tasks that ended. Called unlocked. */
static void reap(esl_queues *qs, uint64_t ext)
{
    pthread_mutex_lock(&qs->mu);
    size_t total = 0;
    for (size_t i = 0; i < qs->nq; i++)
        total += qs->q[i].n;
    const esc_ref **all = esc_xcalloc(total + 1, sizeof *all);
    size_t k = 0;
    for (size_t i = 0; i < qs->nq; i++)
        for (size_t j = 0; j < qs->q[i].n; j++)
            all[k++] = qs->q[i].out[j];
    pthread_mutex_unlock(&qs->mu);
    bool *ready = esc_xcalloc(total + 1, sizeof *ready);
    size_t nready = 0;
    if (total)
        esc_wait_woken(qs->c, all, total, 1, -1, &qs->wake, ext, ready, &nready, NULL);
    pthread_mutex_lock(&qs->mu);
    /* Only this thread removes, and submitters only append: the first `total` entries,
     * in the same order, are the ones waited for. */
    k = 0;
    for (size_t i = 0; i < qs->nq; i++) {
        queue *q = &qs->q[i];
        size_t kept = 0, had = q->n;
        for (size_t j = 0; j < had; j++) {
            bool waited = k < total && all[k] == q->out[j];
            if (waited && ready[k])
                esc_ref_free(q->out[j]);
            else
                q->out[kept++] = q->out[j];
            k += waited;
        }
        q->n = kept;
    }
    pthread_mutex_unlock(&qs->mu);
    free(all);
    free(ready);
}

static void *queues_main(void *arg)
{
    esl_queues *qs = arg;
    int64_t *cap = esc_xcalloc(qs->nq, sizeof *cap);
    for (;;) {
        /* Read before the queues are: a poke after this is seen by the wait below. */
        uint64_t ext;
        uint64_t gen = esc_waker_gen(&qs->wake, &ext);
        pthread_mutex_lock(&qs->mu);
        bool stop = qs->stop;
        wanted(qs, cap);
        bool change = memcmp(cap, qs->set, qs->nq * sizeof *cap) != 0;
        bool busy = false;
        for (size_t i = 0; i < qs->nq; i++)
            busy |= qs->q[i].n > 0;
        pthread_mutex_unlock(&qs->mu);
        if (stop)
            break;
        if (change)
            apply(qs, cap);
        /* With tasks out: until one ends or a poke; idle: until a poke (only submits and
         * the stop poke it then: it does not listen to the owner). A capacity that could
         * not be set is set again at the next event. */
        if (busy)
            reap(qs, ext);
        else
            esc_waker_wait(&qs->wake, gen, UINT64_MAX);
    }
    free(cap);
    return NULL;
}

int esl_queues_new(esc_client *c, const char *name, size_t nqueues, const double *weights,
                   unsigned slots, esl_queues **out, esc_status *st)
{
    *out = NULL;
    if (nqueues == 0 || slots == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "queues need at least one queue and slot");
    for (size_t i = 0; weights && i < nqueues; i++)
        if (!(weights[i] >= 0))
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "weight %zu is negative", i);
    esl_queues *qs = esc_xcalloc(1, sizeof *qs);
    qs->c = c;
    qs->name = esc_xstrdup(name);
    qs->nq = nqueues;
    qs->slots = slots;
    qs->q = esc_xcalloc(nqueues, sizeof *qs->q);
    qs->set = esc_xcalloc(nqueues, sizeof *qs->set);
    if (weights) {
        qs->weights = esc_xmalloc(nqueues * sizeof *qs->weights);
        memcpy(qs->weights, weights, nqueues * sizeof *weights);
    }
    /* Present with zero everywhere before any task can ask. */
    esc_batch *b = esc_batch_new();
    esc_target all = ESC_ALL_NODES;
    for (size_t i = 0; i < nqueues; i++) {
        char qn[128];
        queue_name(qs, i, qn, sizeof qn);
        esc_batch_set(b, qn, 0, &all);
    }
    uint64_t seq = 0;
    int rc = esc_batch_commit(c, b, &seq, st);
    esc_batch_free(b);
    if (rc == ESC_OK)
        esc_wait_applied(c, seq, NULL, 0, APPLY_WAIT_MS, NULL);
    pthread_mutex_init(&qs->mu, NULL);
    esc_waker_init(&qs->wake);
    if (rc != ESC_OK || pthread_create(&qs->thread, NULL, queues_main, qs) != 0) {
        qs->stop = true;
        esl_queues_free(qs);
        return rc != ESC_OK ? rc : esc_status_set(st, ESC_INTERNAL, "no thread");
    }
    *out = qs;
    return ESC_OK;
}

int esl_queues_submit(esl_queues *qs, size_t q, const esc_task_spec *spec, esc_ref **refs,
                      esc_status *st)
{
    if (q >= qs->nq)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "no queue %zu", q);
    char qn[128], full[300];
    queue_name(qs, q, qn, sizeof qn);
    snprintf(full, sizeof full, "%s/%s", esc_client_namespace(qs->c), qn);
    esc_amount *res = esc_xcalloc(spec->nresources + 1, sizeof *res);
    if (spec->nresources)
        memcpy(res, spec->resources, spec->nresources * sizeof *res);
    res[spec->nresources] = (esc_amount){.name = full, .value = ESC_QTY(1)};
    esc_task_spec s = *spec;
    s.resources = res;
    s.nresources = spec->nresources + 1;
    int rc = esc_task_submit(qs->c, &s, refs, NULL, st);
    free(res);
    if (rc != ESC_OK)
        return rc;
    pthread_mutex_lock(&qs->mu);
    queue *qq = &qs->q[q];
    if (qq->n == qq->cap) {
        qq->cap = qq->cap ? qq->cap * 2 : 16;
        qq->out = esc_xrealloc(qq->out, qq->cap * sizeof *qq->out);
    }
    qq->out[qq->n++] = esc_ref_from_id(esc_ref_id(refs[0]));
    pthread_mutex_unlock(&qs->mu);
    esc_waker_poke(&qs->wake);
    return ESC_OK;
}

void esl_queues_free(esl_queues *qs)
{
    if (!qs)
        return;
    pthread_mutex_lock(&qs->mu);
    bool started = !qs->stop;
    qs->stop = true;
    pthread_mutex_unlock(&qs->mu);
    esc_waker_poke(&qs->wake);
    if (started)
        pthread_join(qs->thread, NULL);
    /* Where present only: a node that joined since the last capacity change lacks
     * the queues, and a delete on all nodes would then delete nothing. */
    char (*qn)[128] = esc_xcalloc(qs->nq + 1, sizeof *qn);
    const char **names = esc_xcalloc(qs->nq + 1, sizeof *names);
    for (size_t i = 0; i < qs->nq; i++) {
        queue_name(qs, i, qn[i], sizeof qn[i]);
        names[i] = qn[i];
        for (size_t j = 0; j < qs->q[i].n; j++)
            esc_ref_free(qs->q[i].out[j]);
        free(qs->q[i].out);
    }
    esl_delete_present(qs->c, names, qs->nq);
    free(names);
    free(qn);
    esc_waker_destroy(&qs->wake);
    pthread_mutex_destroy(&qs->mu);
    free(qs->q);
    free(qs->set);
    free(qs->weights);
    free(qs->name);
    free(qs);
}
