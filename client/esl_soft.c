/* esl_soft.c: soft constraints (OR) by withdrawing and resubmitting (esl.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "escher/esl.h"
#include "xalloc.h"

struct esl_soft {
    esc_client *c;
    esc_prepared *task;
    esl_request *prefs;         /* copies */
    size_t nprefs;
    int wait_ms;
    esc_ref *probe;             /* the task's first return: it tells when the task ended */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t decided_cv;
    bool decided;
    size_t chosen;
};

static bool ended(esl_soft *s, int wait_ms)
{
    const esc_ref *refs[1] = {s->probe};
    bool ready[1] = {false};
    size_t n = 0;
    return esc_wait(s->c, refs, 1, 1, wait_ms, ready, &n, NULL) == ESC_OK && n == 1;
}

/* After the window of preference i: true when the task stays where it is (it started,
 * ended, or cannot be withdrawn), false when it was withdrawn. One withdraw settles it:
 * it follows the task along its forwards, and a raylet whose forward of the task is not
 * answered yet holds the withdraw until it is (raylet/task_spill.c), so the task is never
 * missed "on its way". NOT_FOUND then means it waits nowhere: it ended (its end is on
 * its way here), or its node died and the raylet runs it again or finds it ended; either
 * way it is not this preference's to move. */
static bool stays(esl_soft *s)
{
    if (ended(s, 0))
        return true;
    esc_status st;
    return esc_task_withdraw(s->c, s->probe, &st) != ESC_OK;
}

static void decide(esl_soft *s, size_t i)
{
    pthread_mutex_lock(&s->mu);
    s->chosen = i;
    s->decided = true;
    pthread_cond_broadcast(&s->decided_cv);
    pthread_mutex_unlock(&s->mu);
}

static void *soft_main(void *arg)
{
    esl_soft *s = arg;
    for (size_t i = 0; i < s->nprefs; i++) {
        esc_status st;
        if (esc_prepared_submit(s->c, s->task, s->prefs[i].v, s->prefs[i].n, &st) != ESC_OK ||
            i + 1 == s->nprefs || ended(s, s->wait_ms) || stays(s)) {
            decide(s, i);
            return NULL;
        }
    }
    decide(s, s->nprefs ? s->nprefs - 1 : 0);
    return NULL;
}

int esl_soft_submit(esc_client *c, const esc_task_spec *spec, const esl_request *prefs,
                    size_t nprefs, int wait_ms, esc_ref **refs, esl_soft **out,
                    esc_status *st)
{
    *out = NULL;
    if (nprefs == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "no preference given");
    esc_prepared *task = esc_task_prepare(c, spec, refs, st);
    if (!task)
        return st ? st->code : ESC_INVALID_ARGUMENT;
    esl_soft *s = esc_xcalloc(1, sizeof *s);
    s->c = c;
    s->task = task;
    s->wait_ms = wait_ms > 0 ? wait_ms : 0;
    s->nprefs = nprefs;
    s->prefs = esc_xcalloc(nprefs, sizeof *s->prefs);
    for (size_t i = 0; i < nprefs; i++)
        for (size_t k = 0; k < prefs[i].n; k++)
            esl_request_add(&s->prefs[i], prefs[i].v[k].name, prefs[i].v[k].value);
    s->probe = esc_ref_from_id(esc_ref_id(refs[0]));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->decided_cv, NULL);
    if (pthread_create(&s->thread, NULL, soft_main, s) != 0)
        abort(); /* no thread: nothing else in the client would work either */
    *out = s;
    return esc_status_set(st, ESC_OK, NULL);
}

size_t esl_soft_chosen(esl_soft *s)
{
    pthread_mutex_lock(&s->mu);
    while (!s->decided)
        pthread_cond_wait(&s->decided_cv, &s->mu);
    size_t i = s->chosen;
    pthread_mutex_unlock(&s->mu);
    return i;
}

void esl_soft_free(esl_soft *s)
{
    if (!s)
        return;
    pthread_join(s->thread, NULL);
    for (size_t i = 0; i < s->nprefs; i++)
        esl_request_clear(&s->prefs[i]);
    free(s->prefs);
    esc_ref_free(s->probe);
    esc_prepared_free(s->task);
    pthread_cond_destroy(&s->decided_cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
