/* esl_monitor.c: see esl_monitor.h. */
#include "esl_monitor.h"

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

static struct timespec after_ms(int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static void *monitor_main(void *arg)
{
    esl_monitor *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        pthread_mutex_unlock(&m->mu);
        m->step(m->ud);
        pthread_mutex_lock(&m->mu);
        struct timespec until = after_ms(m->period_ms);
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
