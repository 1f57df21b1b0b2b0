/* xalloc.c: see xalloc.h. */
#include "xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

void esc_out_of_memory(size_t size)
{
    /* No stdio buffer, no allocation: formatted on the stack, written in one call. */
    char line[256];
    int n = snprintf(line, sizeof line, "%s: out of memory (allocating %zu bytes)\n",
                     esc_log_process(), size);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w; /* nothing left to tell a failed write with */
    abort();
}

void *esc_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        esc_out_of_memory(size);
    return p;
}

void *esc_xcalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        esc_out_of_memory(SIZE_MAX); /* n * size does not fit a size_t */
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        esc_out_of_memory(n * size);
    return p;
}

void *esc_xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q)
        esc_out_of_memory(size);
    return q;
}

char *esc_xstrdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *d = esc_xmalloc(len);
    memcpy(d, s, len);
    return d;
}

char *esc_xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = esc_xmalloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}
