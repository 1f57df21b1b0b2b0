/* esl_monitor.c: see esl_monitor.h. */
#include "esl_monitor.h"

#include "ids.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct esl_monitor {
    void (*step)(void *ud);
    void *ud;
    int period_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    pthread_t thread;
};


static void *monitor_main(void *arg)
{
    esl_monitor *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        pthread_mutex_unlock(&m->mu);
        m->step(m->ud);
        pthread_mutex_lock(&m->mu);
        struct timespec until = esc_time_after_ms(CLOCK_REALTIME, (uint64_t)m->period_ms);
        while (!m->stop && pthread_cond_timedwait(&m->cv, &m->mu, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

esl_monitor *esl_monitor_start(void (*step)(void *ud), void *ud, int period_ms)
{
    esl_monitor *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->step = step;
    m->ud = ud;
    m->period_ms = period_ms;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    if (pthread_create(&m->thread, NULL, monitor_main, m) != 0) {
        pthread_cond_destroy(&m->cv);
        pthread_mutex_destroy(&m->mu);
        free(m);
        return NULL;
    }
    return m;
}

void esl_monitor_stop(esl_monitor *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
