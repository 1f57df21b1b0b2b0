/* daemon.c: locating and spawning the escher daemons. */
#include "daemon.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int try_path(char *out, size_t len, const char *dir, const char *sub, const char *name)
{
    int n = sub ? snprintf(out, len, "%s/%s/%s", dir, sub, name)
                : snprintf(out, len, "%s/%s", dir, name);
    return n > 0 && (size_t)n < len && access(out, X_OK) == 0 ? 0 : -1;
}

static int search_path(const char *name, char *out, size_t len)
{
    const char *env = getenv("PATH");
    if (!env)
        return -1;
    char *copy = esc_xstrdup(env), *save = NULL;
    int rc = -1;
    for (char *d = strtok_r(copy, ":", &save); d && rc != 0; d = strtok_r(NULL, ":", &save))
        rc = try_path(out, len, *d ? d : ".", NULL, name);
    free(copy);
    return rc;
}

int cli_daemon_find(const char *name, const char *subdir, char *out, size_t len)
{
    const char *bin_dir = getenv("ESCHER_BIN_DIR");
    if (bin_dir && *bin_dir && try_path(out, len, bin_dir, subdir, name) == 0)
        return 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        const char *dir = dirname(exe);
        char up[PATH_MAX];
        snprintf(up, sizeof up, "%s/..", dir);
        if (try_path(out, len, dir, NULL, name) == 0 || try_path(out, len, up, subdir, name) == 0)
            return 0;
    }
    return search_path(name, out, len);
}

/* In the child: session, descriptors and signals as a daemon wants them, then exec.
 * A failed exec sends its errno down report_fd (close-on-exec: a successful exec
 * closes it, which is how the parent learns that the daemon is running). */
static void exec_child(char *const argv[], int log_fd, int report_fd)
{
    setsid();
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0)
        dup2(in, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv);
    int err = errno;
    dprintf(STDERR_FILENO, "escher: cannot run %s: %s\n", argv[0], strerror(err));
    ssize_t sent = write(report_fd, &err, sizeof err); /* nothing to do if it fails */
    (void)sent;
    _exit(127);
}

/* Waits until the child exec'd (the pipe closes) or reported why not. Returns 0, or
 * the exec's errno. */
static int wait_exec(int report_fd)
{
    int err = 0;
    ssize_t n;
    while ((n = read(report_fd, &err, sizeof err)) < 0 && errno == EINTR)
        ;
    return n == (ssize_t)sizeof err ? err : 0;
}

/* Records the exec'd child in p and its pid file. The pid file is written only after
 * the exec so that /proc/PID/exe names the daemon, not this CLI; until we reap the
 * child its /proc entry stays, even when it has already exited. */
static int record(pid_t pid, const char *exe, cli_proc *p)
{
    if (cli_proc_identify(p, pid, exe) != 0) {
        errno = ESRCH;
        return -1;
    }
    return cli_pidfile_write(p);
}

pid_t cli_daemon_spawn(char *const argv[], const char *log_path, cli_proc *p)
{
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
        return -1;
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        int saved = errno;
        close(log_fd);
        errno = saved;
        return -1;
    }
    fflush(NULL); /* nothing buffered may be written twice by the child */
    pid_t pid = fork();
    if (pid == 0)
        exec_child(argv, log_fd, report[1]);
    int saved = errno;
    close(log_fd);
    close(report[1]);
    int exec_err = pid > 0 ? wait_exec(report[0]) : 0;
    close(report[0]);
    if (pid < 0 || exec_err) {
        if (pid > 0)
            waitpid(pid, NULL, 0); /* it exits at once: no zombie left behind */
        errno = pid < 0 ? saved : exec_err;
        return -1;
    }
    p->pid = pid;
    if (record(pid, argv[0], p) != 0) {
        saved = errno;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        errno = saved;
        return -1;
    }
    return pid;
}

const char *cli_last_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return buf;
    char line[1024];
    bool error_seen = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        /* The reason a daemon failed is its last error; the lines after it (shutting
         * down, ...) say less. */
        bool error = strstr(line, " ERROR ") != NULL;
        if (line[0] && (error || !error_seen))
            snprintf(buf, len, "%s", line);
        error_seen |= error;
    }
    fclose(f);
    return buf;
}
