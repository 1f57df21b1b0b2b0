/* bench_tasks.c: the task functions of bench/tasks (libescher_bench_tasks.so). */
#include <stddef.h>
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
    long ms = 0;
    for (size_t i = 0; i < len && ((const char *)arg)[i] >= '0' && ((const char *)arg)[i] <= '9'; i++)
        ms = ms * 10 + (((const char *)arg)[i] - '0');
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
    return 0;
}
