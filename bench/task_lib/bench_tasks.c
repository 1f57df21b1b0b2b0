/* bench_tasks.c: the task functions of bench/tasks (libescher_bench_tasks.so). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escher/task.h"

/* Does nothing: the cost measured is the runtime's. */
ESC_TASK(noop)
{
    (void)ctx;
    (void)arg;
    (void)len;
    (void)ret;
    return 0;
}

/* Sleeps the milliseconds in its argument (decimal text): a task that holds its slot. */
ESC_TASK(sleep_ms)
{
    (void)ctx;
    (void)ret;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    long ms = atol(buf);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
    return 0;
}

/* A gang member of bench/gang: returns the wall-clock microsecond at which it started
 * (CLOCK_REALTIME, comparable across the processes of one machine), then sleeps the
 * milliseconds in its argument so that the members of one gang overlap. */
ESC_TASK(gang_member)
{
    (void)ctx;
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    long ms = atol(buf);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
    return esc_buf_printf(ret, "%lld", (long long)t0.tv_sec * 1000000 + t0.tv_nsec / 1000);
}
