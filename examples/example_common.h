/* example_common.h: what the examples share: the path of their task library (built next
 * to them: build/examples/tasks/libescher_example_tasks.so) and error reporting. */
#ifndef EXAMPLE_COMMON_H
#define EXAMPLE_COMMON_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "escher/escher.h"

/* The task library: $ESCHER_EXAMPLE_TASKS, else tasks/ next to this program. */
static inline void example_library(char *out, size_t len)
{
    const char *env = getenv("ESCHER_EXAMPLE_TASKS");
    if (env) {
        snprintf(out, len, "%s", env);
        return;
    }
    char self[3000];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    snprintf(out, len, "%s/tasks/libescher_example_tasks.so", self);
}

static inline int example_fail(const char *prog, const char *what, const esc_status *st)
{
    fprintf(stderr, "%s: %s: %s: %s\n", prog, what, esc_status_name(st->code), st->message);
    return 1;
}

#endif
