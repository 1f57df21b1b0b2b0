/* log_index.c: a task's attempts in this node's log folder (log_index.h). */
#include "log_index.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void attempts_add(log_attempts *a, const char *idx, long long out, long long err,
                         long long ms)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 4;
        a->v = esc_xrealloc(a->v, a->cap * sizeof *a->v);
    }
    log_attempt *t = &a->v[a->n++];
    snprintf(t->idx, sizeof t->idx, "%s", idx);
    t->start[0] = (off_t)out;
    t->start[1] = (off_t)err;
    t->end[0] = t->end[1] = -1;
    t->ms = ms;
}

/* Adds the task's attempts recorded in one index file. */
static void scan_file(const char *path, const char *task_id, log_attempts *a)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[512], id[256];
    long long out, err, ms;
    ssize_t open = -1; /* the attempt whose end is the next record */
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%255s %lld %lld %lld", id, &out, &err, &ms) != 4)
            continue;
        if (open >= 0) {
            a->v[open].end[0] = (off_t)out;
            a->v[open].end[1] = (off_t)err;
            open = -1;
        }
        if (!strcmp(id, task_id)) {
            attempts_add(a, path, out, err, ms);
            open = (ssize_t)a->n - 1;
        }
    }
    fclose(f);
}

/* Start time, then file and offset: a total order, so attempts keep their places from
 * one scan to the next (a reader's positions are kept by place). */
static int by_start(const void *x, const void *y)
{
    const log_attempt *a = x, *b = y;
    if (a->ms != b->ms)
        return (a->ms > b->ms) - (a->ms < b->ms);
    int c = strcmp(a->idx, b->idx);
    return c ? c : (a->start[0] > b->start[0]) - (a->start[0] < b->start[0]);
}

void log_index_scan(const char *dir, const char *task_id, log_attempts *a)
{
    a->n = 0;
    char pattern[PATH_MAX];
    glob_t gl;
    if ((size_t)snprintf(pattern, sizeof pattern, "%s/worker-*.idx", dir) >= sizeof pattern ||
        glob(pattern, GLOB_NOSORT, NULL, &gl) != 0)
        return;
    for (size_t i = 0; i < gl.gl_pathc; i++)
        scan_file(gl.gl_pathv[i], task_id, a);
    globfree(&gl);
    if (a->n > 1)
        qsort(a->v, a->n, sizeof *a->v, by_start);
}

void log_index_rescan(const char *task_id, log_attempts *a)
{
    size_t n = a->n;
    char (*files)[PATH_MAX] = esc_xmalloc((n + 1) * sizeof *files);
    size_t nfiles = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < nfiles && !seen; k++)
            seen = !strcmp(files[k], a->v[i].idx);
        if (!seen)
            memcpy(files[nfiles++], a->v[i].idx, PATH_MAX);
    }
    a->n = 0;
    for (size_t k = 0; k < nfiles; k++)
        scan_file(files[k], task_id, a);
    free(files);
    if (a->n > 1)
        qsort(a->v, a->n, sizeof *a->v, by_start);
}

void log_attempts_free(log_attempts *a)
{
    free(a->v);
    *a = (log_attempts){0};
}

int log_index_open_capture(const log_attempt *a, int which)
{
    char path[PATH_MAX];
    size_t n = strlen(a->idx);
    if (n < 4 || (size_t)snprintf(path, sizeof path, "%.*s.%s", (int)(n - 4), a->idx,
                                  which ? "err" : "out") >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(path, O_RDONLY | O_CLOEXEC);
}
