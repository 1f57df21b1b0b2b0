/* tasks.c: the task library of a live Cilantro tenant (libcilantro_live.so), loaded by
 * escher-worker; it links no escher library (the worker provides the SDK).
 *
 *   cil_work  (arg: decimal microseconds): burns exactly that much CPU time of its own
 *             thread doing floating-point arithmetic. CPU time, not wall time: under a
 *             CPU quota of q CPUs a request of W us takes about W/q us of wall time,
 *             which is what the tenant's latency and throughput measure.
 *   cil_where: "<node id> <pid>", for the tenant to match actors to nodes and for tests
 *             to read the worker's CPU time in /proc.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <escher/task.h>

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

ESC_TASK(cil_work)
{
    (void)ctx;
    char num[32] = {0};
    memcpy(num, arg, len < sizeof num - 1 ? len : sizeof num - 1);
    double us = strtod(num, NULL);
    double end = thread_cpu_us() + (us > 0 ? us : 0);
    volatile double x = 1.0; /* volatile: the work is not optimized away */
    while (thread_cpu_us() < end)
        for (int i = 0; i < 2000; i++)
            x = x * 1.0000001 + 1e-9;
    return esc_buf_printf(ret, "%.0f", us);
}

ESC_TASK(cil_where)
{
    (void)ctx;
    (void)arg;
    (void)len;
    const char *node = getenv("ESCHER_NODE_ID");
    return esc_buf_printf(ret, "%s %ld", node ? node : "", (long)getpid());
}
