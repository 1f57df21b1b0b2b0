/* bench_tasks.c: the task functions of bench/tasks (libescher_bench_tasks.so). */
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
