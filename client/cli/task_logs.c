/* task_logs.c: a task's captured stdout and stderr, read from this machine's files.
 *
 * A worker keeps its tasks' output in worker-<id>.out and .err in its raylet's
 * --log-dir (SESSION/logs/tasks/ for raylets started by `escher start`,
 * /tmp/escher/logs/raylet-<pid>/ by default) and, before each task, appends the record
 * "<task_id> <out offset> <err offset> <unix ms>" to worker-<id>.idx. A task's output is
 * the part of the capture files from its record's offsets to the next record's (or to
 * the end, for the last task of the worker, which may still run). A retried task has
 * one such part per attempt; they are printed in the order the attempts started.
 *
 * There is no RPC that serves logs: a task that ran on another machine has its logs
 * there, and these functions only say that they are not here. */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../session.h"

/* One attempt of a task: its part of the capture files next to idx. end -1: up to the
 * end of the file (nothing ran after it on that worker yet). */
typedef struct {
    char idx[PATH_MAX];
    off_t start[2], end[2]; /* [0] stdout, [1] stderr */
    long long ms;
} attempt;

typedef struct {
    attempt *v;
    size_t n, cap;
} attempts;

static void attempts_add(attempts *a, const char *idx, long long out, long long err,
                         long long ms)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 4;
        a->v = realloc(a->v, a->cap * sizeof *a->v);
    }
    attempt *t = &a->v[a->n++];
    snprintf(t->idx, sizeof t->idx, "%s", idx);
    t->start[0] = (off_t)out;
    t->start[1] = (off_t)err;
    t->end[0] = t->end[1] = -1;
    t->ms = ms;
}

/* Adds the task's attempts recorded in one index file. */
static void scan_index(const char *path, const char *task_id, attempts *a)
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

static int by_start(const void *x, const void *y)
{
    const attempt *a = x, *b = y;
    return (a->ms > b->ms) - (a->ms < b->ms);
}

/* The task's attempts in dir, in the order they started. */
static void find_attempts(const char *dir, const char *task_id, attempts *a)
{
    char pattern[PATH_MAX];
    glob_t gl;
    if (!cli_pathf(pattern, sizeof pattern, "%s/worker-*.idx", dir) ||
        glob(pattern, GLOB_NOSORT, NULL, &gl) != 0)
        return;
    for (size_t i = 0; i < gl.gl_pathc; i++)
        scan_index(gl.gl_pathv[i], task_id, a);
    globfree(&gl);
    if (a->n > 1)
        qsort(a->v, a->n, sizeof *a->v, by_start);
}

static bool has_log(const char *dir, const char *task_id)
{
    attempts a = {0};
    find_attempts(dir, task_id, &a);
    free(a.v);
    return a.n > 0;
}

/* The first directory matching pattern that holds the task's logs. */
static bool find_in_glob(const char *pattern, const char *task_id, char *dir, size_t len)
{
    glob_t gl;
    bool found = false;
    if (glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &gl) == 0)
        for (size_t i = 0; i < gl.gl_pathc && !found; i++)
            if (has_log(gl.gl_pathv[i], task_id))
                found = cli_pathf(dir, len, "%s", gl.gl_pathv[i]);
    globfree(&gl);
    return found;
}

bool cli_task_logs_find(const char *session_dir, const char *task_id, char *dir, size_t len)
{
    char own[PATH_MAX];
    if (cli_pathf(own, sizeof own, "%s/logs/tasks", esc_session_dir(session_dir)) &&
        has_log(own, task_id))
        return cli_pathf(dir, len, "%s", own);
    return find_in_glob(ESC_SESSION_ROOT "/session_*/logs/tasks", task_id, dir, len) ||
           find_in_glob(ESC_SESSION_ROOT "/logs/*", task_id, dir, len);
}

/* ------------------------------------------------------------------ copying */

/* Opens the capture file (which 0: .out, 1: .err) next to an index file. */
static int open_capture(const char *idx, int which)
{
    char path[PATH_MAX];
    size_t n = strlen(idx);
    if (n < 4 || !cli_pathf(path, sizeof path, "%.*s.%s", (int)(n - 4), idx,
                            which ? "err" : "out")) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Copies fd from *pos up to end (-1: its current end) onto out, moving *pos. Returns 0,
 * or -1 with errno. */
static int copy_range(int fd, off_t *pos, off_t end, FILE *out)
{
    char buf[65536];
    for (;;) {
        size_t want = sizeof buf;
        if (end >= 0) {
            if (*pos >= end)
                break;
            if ((off_t)want > end - *pos)
                want = (size_t)(end - *pos);
        }
        ssize_t n = pread(fd, buf, want, *pos);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
            return -1;
        *pos += n;
    }
    return fflush(out);
}

int cli_task_log_print(const char *dir, const char *task_id, const char *ext, FILE *out)
{
    int which = strcmp(ext, "err") == 0;
    attempts a = {0};
    find_attempts(dir, task_id, &a);
    if (!a.n)
        return cli_fail("no logs of task %s in %s", task_id, dir);
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < a.n && rc == CLI_EXIT_OK; i++) {
        int fd = open_capture(a.v[i].idx, which);
        off_t pos = a.v[i].start[which];
        if (fd < 0)
            rc = cli_fail("cannot open the capture file next to %s: %s", a.v[i].idx,
                          strerror(errno));
        else if (copy_range(fd, &pos, a.v[i].end[which], out) != 0)
            rc = cli_fail("cannot copy the log: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    free(a.v);
    return rc;
}

/* ------------------------------------------------------------------ following */

void cli_tail_init(cli_tail *t, const char *session_dir, const char *task_id)
{
    memset(t, 0, sizeof *t);
    t->session_dir = session_dir;
    t->task_id = task_id;
    t->fd[0] = t->fd[1] = -1;
    t->end[0] = t->end[1] = -1;
}

/* Finds the task's first attempt and opens its capture files there. */
static bool tail_start(cli_tail *t)
{
    char dir[PATH_MAX];
    if (!cli_task_logs_find(t->session_dir, t->task_id, dir, sizeof dir))
        return false;
    attempts a = {0};
    find_attempts(dir, t->task_id, &a);
    bool ok = a.n > 0;
    if (ok) {
        snprintf(t->idx, sizeof t->idx, "%s", a.v[0].idx);
        for (int i = 0; i < 2; i++) {
            t->pos[i] = a.v[0].start[i];
            t->fd[i] = open_capture(t->idx, i);
        }
    }
    free(a.v);
    return ok;
}

/* Learns where the followed attempt ends, once its worker has started the next task. */
static void tail_refresh_end(cli_tail *t)
{
    if (t->end[0] >= 0)
        return;
    attempts a = {0};
    scan_index(t->idx, t->task_id, &a);
    for (size_t k = 0; k < a.n; k++) {
        if (a.v[k].start[0] == t->pos_start[0] && a.v[k].start[1] == t->pos_start[1]) {
            t->end[0] = a.v[k].end[0];
            t->end[1] = a.v[k].end[1];
        }
    }
    free(a.v);
}

bool cli_tail_pump(cli_tail *t)
{
    if (!t->idx[0]) {
        if (!tail_start(t))
            return false;
        t->pos_start[0] = t->pos[0];
        t->pos_start[1] = t->pos[1];
    }
    /* Sizes first, then the index: a next task's record is written before its output,
     * so output inside these sizes that is not ours shows up as our attempt's end. */
    off_t size[2] = {-1, -1};
    struct stat sb;
    for (int i = 0; i < 2; i++)
        if (t->fd[i] >= 0 && fstat(t->fd[i], &sb) == 0)
            size[i] = sb.st_size;
    tail_refresh_end(t);
    FILE *to[2] = {stdout, stderr};
    for (int i = 0; i < 2; i++)
        if (t->fd[i] >= 0 && size[i] >= 0)
            copy_range(t->fd[i], &t->pos[i], t->end[i] >= 0 ? t->end[i] : size[i], to[i]);
    return true;
}

void cli_tail_close(cli_tail *t)
{
    for (int i = 0; i < 2; i++)
        if (t->fd[i] >= 0)
            close(t->fd[i]);
    t->fd[0] = t->fd[1] = -1;
}
