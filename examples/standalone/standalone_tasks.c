/* standalone_tasks.c: the task functions standalone.c runs (libstandalone_tasks.so). Built
 * with the installed headers and linked with nothing of escher: escher-worker, which loads
 * it, provides the esc_buf_* and esc_task_* functions, and loads libescher.so for the
 * escher.h calls of a task that uses the SDK (namespace below). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <escher/escher.h>
#include <escher/task.h>

/* Squares the decimal integer in its argument; returns it as decimal text. */
ESC_TASK(square)
{
    (void)ctx;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    long long x = atoll(buf);
    return esc_buf_printf(ret, "%lld", x * x);
}

/* Uses the SDK from inside a task: returns the namespace of the job it runs for. */
ESC_TASK(namespace)
{
    (void)arg;
    (void)len;
    esc_client *c;
    esc_status st;
    if (esc_task_client(ctx, &c, &st) != ESC_OK) {
        fprintf(stderr, "esc_task_client: %s\n", st.message); /* the task's log */
        return 1;
    }
    return esc_buf_printf(ret, "%s", esc_client_namespace(c));
}
