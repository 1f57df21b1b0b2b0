/* task_logs.c: a task's captured stdout and stderr, read from this machine's files.
 *
 * A worker writes task-<id>.out/.err into its raylet's --log-dir: SESSION/logs/tasks/
 * for raylets started by `escher start`, /tmp/escher/logs/raylet-<pid>/ by default.
 * There is no RPC that serves logs: a task that ran on another machine has its logs
 * there, and these functions only say that they are not here. */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../session.h"

static bool has_log(const char *dir, const char *task_id)
{
    char path[PATH_MAX];
    return cli_pathf(path, sizeof path, "%s/task-%s.out", dir, task_id) &&
           access(path, F_OK) == 0;
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

/* Copies fd from its current offset to the end onto out. Returns 0, or -1 with errno. */
static int copy_fd(int fd, FILE *out)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -1 : fflush(out);
        if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
            return -1;
    }
}

static int open_log(const char *dir, const char *task_id, const char *ext)
{
    char path[PATH_MAX];
    if (!cli_pathf(path, sizeof path, "%s/task-%s.%s", dir, task_id, ext)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(path, O_RDONLY | O_CLOEXEC);
}

int cli_task_log_print(const char *dir, const char *task_id, const char *ext, FILE *out)
{
    int fd = open_log(dir, task_id, ext);
    if (fd < 0)
        return cli_fail("cannot open %s/task-%s.%s: %s", dir, task_id, ext, strerror(errno));
    int rc = copy_fd(fd, out);
    int err = errno;
    close(fd);
    return rc == 0 ? CLI_EXIT_OK : cli_fail("cannot copy the log: %s", strerror(err));
}

/* ------------------------------------------------------------------ following */

void cli_tail_init(cli_tail *t, const char *session_dir, const char *task_id)
{
    t->session_dir = session_dir;
    t->task_id = task_id;
    t->dir[0] = '\0';
    t->fd[0] = t->fd[1] = -1;
}

bool cli_tail_pump(cli_tail *t)
{
    if (!t->dir[0] && !cli_task_logs_find(t->session_dir, t->task_id, t->dir, sizeof t->dir))
        return false;
    static const char *ext[2] = {"out", "err"};
    FILE *to[2] = {stdout, stderr};
    for (int i = 0; i < 2; i++) {
        /* The worker creates .out, then .err: the second may lag the first. */
        if (t->fd[i] < 0)
            t->fd[i] = open_log(t->dir, t->task_id, ext[i]);
        if (t->fd[i] >= 0)
            copy_fd(t->fd[i], to[i]);
    }
    return true;
}

void cli_tail_close(cli_tail *t)
{
    for (int i = 0; i < 2; i++)
        if (t->fd[i] >= 0)
            close(t->fd[i]);
    t->fd[0] = t->fd[1] = -1;
}
