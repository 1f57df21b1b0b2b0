/* procs.c: pid files of a session (format in procs.h) and stopping their processes,
 * which are identified exactly, never by name. */
#include "procs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ids.h"
#include "xalloc.h"

#define POLL_MS 20
#define KILL_WAIT_MS 2000

/* ------------------------------------------------------------------ /proc */

typedef struct {
    char state;                 /* R, S, D, Z, X, ... */
    long pgrp;
    unsigned long long start;   /* field 22: start time, clock ticks since boot */
} stat_info;

/* Fields of /proc/pid/stat; false when unreadable (no such process). */
static bool proc_stat(pid_t pid, stat_info *out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: fields 3.. follow
     * the last ')'. Skipped: ppid, session, tty_nr, tpgid, flags, minflt, cminflt,
     * majflt, cmajflt, utime, stime, cutime, cstime, priority, nice, num_threads,
     * itrealvalue. */
    const char *paren = strrchr(buf, ')');
    return paren && sscanf(paren + 1,
                           " %c %*d %ld %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d"
                           " %*d %*d %*d %llu",
                           &out->state, &out->pgrp, &out->start) == 3;
}

/* The executable of pid as the kernel names it (with " (deleted)" when the file was
 * replaced since); false when unreadable (gone, a zombie, another user's). */
static bool proc_exe(pid_t pid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, out, len - 1);
    if (n <= 0)
        return false;
    out[n] = '\0';
    return true;
}

#define DELETED_SUFFIX " (deleted)"

int cli_proc_identify(cli_proc *p, pid_t pid, const char *fallback_exe)
{
    stat_info st;
    if (!proc_stat(pid, &st))
        return -1;
    p->pid = pid;
    p->start_ticks = st.start;
    if (!proc_exe(pid, p->exe, sizeof p->exe) &&
        !(fallback_exe && realpath(fallback_exe, p->exe)))
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ pid files */

int cli_pidfile_write(const cli_proc *p)
{
    if (strchr(p->exe, '\n') || p->exe[0] != '/') {
        errno = EINVAL; /* would not read back as one line */
        return -1;
    }
    char tmp[PATH_MAX + 8];
    if (!cli_pathf(tmp, sizeof tmp, "%s.tmp", p->pidfile)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%d %llu %s\n", (int)p->pid, p->start_ticks, p->exe);
    if (fclose(f) != 0 || rename(tmp, p->pidfile) != 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return 0;
}

/* A decimal of digits only (no sign, no spaces) up to max; advances *s. */
static bool parse_decimal(const char **s, unsigned long long max, unsigned long long *out)
{
    const char *c = *s;
    unsigned long long v = 0;
    if (*c < '0' || *c > '9')
        return false;
    for (; *c >= '0' && *c <= '9'; c++) {
        unsigned d = (unsigned)(*c - '0');
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *s = c;
    *out = v;
    return true;
}

static int malformed(cli_proc *p, const char *why)
{
    p->malformed = true;
    snprintf(p->why, sizeof p->why, "%s", why);
    return 1;
}

/* Parses "PID START_TICKS EXE\n" (len bytes of text; more: the file goes on). */
static int parse_pidfile(cli_proc *p, const char *text, size_t len, bool more)
{
    if (more || strlen(text) != len)
        return malformed(p, "too long or not text");
    if (len == 0 || text[len - 1] != '\n')
        return malformed(p, "not one line ending in a newline");
    if (memchr(text, '\n', len - 1))
        return malformed(p, "more than one line");
    unsigned long long pid, start;
    const char *c = text;
    if (!parse_decimal(&c, INT_MAX, &pid) || pid <= 1 || *c++ != ' ')
        return malformed(p, "no valid pid first");
    if (!parse_decimal(&c, ULLONG_MAX, &start) || *c++ != ' ')
        return malformed(p, "no start time (clock ticks) after the pid");
    size_t exe_len = (size_t)(text + len - 1 - c);
    if (*c != '/' || exe_len >= sizeof p->exe)
        return malformed(p, "no absolute executable path after the start time");
    p->pid = (pid_t)pid;
    p->start_ticks = start;
    memcpy(p->exe, c, exe_len);
    p->exe[exe_len] = '\0';
    return 0;
}

int cli_pidfile_read(cli_proc *p)
{
    FILE *f = fopen(p->pidfile, "r");
    if (!f)
        return -1;
    char buf[PATH_MAX + 64];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    buf[n] = '\0';
    return parse_pidfile(p, buf, n, more);
}

/* "gcs.pid" -> "escher-gcs"; false when the name does not end in ".pid". */
static bool proc_name(const char *file, char *out, size_t len)
{
    size_t l = strlen(file);
    if (l <= 4 || strcmp(file + l - 4, ".pid") != 0)
        return false;
    return cli_pathf(out, len, "escher-%.*s", (int)(l - 4), file);
}

int cli_procs_load(const char *dir, cli_proc **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/pids", dir);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    size_t cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        cli_proc p = {0};
        if (!proc_name(e->d_name, p.name, sizeof p.name))
            continue;
        if (!cli_pathf(p.pidfile, sizeof p.pidfile, "%s/%s", path, e->d_name))
            continue;
        if (cli_pidfile_read(&p) < 0)
            continue; /* gone meanwhile (a concurrent stop) */
        if (*n == cap) {
            cap = cap ? 2 * cap : 4;
            *out = esc_xrealloc(*out, cap * sizeof **out);
        }
        (*out)[(*n)++] = p;
    }
    closedir(d);
    return 0;
}

/* ------------------------------------------------------------------ liveness */

/* A zombie still answers kill(pid, 0) but is gone for every purpose here (and init
 * may take a while to reap one whose parent has exited). */
static bool is_zombie(pid_t pid)
{
    stat_info st;
    return proc_stat(pid, &st) && (st.state == 'Z' || st.state == 'X');
}

/* Does process group pgid have a member that is not a zombie? kill(-pgid, 0) alone
 * also counts zombies, so /proc is scanned when it says yes. */
static bool group_has_live_member(pid_t pgid)
{
    if (kill(-pgid, 0) != 0)
        return false;
    DIR *d = opendir("/proc");
    if (!d)
        return true;
    bool live = false;
    for (struct dirent *e; !live && (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        stat_info st;
        if (*end == '\0' && pid > 0 && proc_stat((pid_t)pid, &st))
            live = st.pgrp == pgid && st.state != 'Z' && st.state != 'X';
    }
    closedir(d);
    return live;
}

/* Is pid's executable the recorded one? The kernel appends " (deleted)" when the file
 * was replaced (a rebuild) after the exec; that is still the process we started. */
static bool exe_matches(pid_t pid, const char *exe)
{
    char now[PATH_MAX + 16];
    if (!proc_exe(pid, now, sizeof now))
        return false;
    size_t l = strlen(exe);
    return strncmp(now, exe, l) == 0 && (now[l] == '\0' || !strcmp(now + l, DELETED_SUFFIX));
}

/* Reaps pid if it is our child (escher start --block); harmless otherwise. */
static void reap(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, WNOHANG) < 0 && errno == EINTR)
        ;
}

/* A process that exists, as opposed to one whose pid file is stale. */
static bool exists(pid_t pid)
{
    reap(pid);
    return (kill(pid, 0) == 0 || errno == EPERM) && !is_zombie(pid);
}

bool cli_proc_running(const cli_proc *p)
{
    if (p->malformed || !exists(p->pid))
        return false;
    stat_info st;
    return proc_stat(p->pid, &st) && st.start == p->start_ticks && exe_matches(p->pid, p->exe);
}

/* Our daemons lead their own process group (setsid), and workers they fork stay in
 * it; a process that does not lead a group is signalled alone. */
static void signal_proc(pid_t pid, int sig)
{
    if (getpgid(pid) == pid)
        kill(-pid, sig);
    else
        kill(pid, sig);
}

/* The group of pid, or pid alone, still has a live member. */
static bool group_alive(pid_t pid)
{
    reap(pid);
    if (kill(pid, 0) == 0 && !is_zombie(pid))
        return true;
    return group_has_live_member(pid);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits until none of the flagged processes is alive or the deadline passes. */
static void wait_gone(const cli_proc *procs, const bool *live, size_t n, uint64_t deadline)
{
    for (;;) {
        bool any = false;
        for (size_t i = 0; i < n && !any; i++)
            any = live[i] && group_alive(procs[i].pid);
        if (!any || esc_now_ms() >= deadline)
            return;
        sleep_ms(POLL_MS);
    }
}

/* One line for a process that was not stopped: gone, or its pid is another's now. */
static void report_stale(const cli_proc *p)
{
    if (exists(p->pid))
        printf("%s: pid file is stale (pid %d is now another process, left alone); removed "
               "it\n", p->name, (int)p->pid);
    else
        printf("%s (pid %d) was not running\n", p->name, (int)p->pid);
}

size_t cli_procs_stop(const cli_proc *procs, size_t n, double grace_s, bool force,
                      bool report)
{
    bool *live = esc_xcalloc(n + 1, sizeof *live);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        live[i] = cli_proc_running(&procs[i]);
        if (live[i]) {
            signal_proc(procs[i].pid, force ? SIGKILL : SIGTERM);
            count++;
        } else if (report && !procs[i].malformed) {
            report_stale(&procs[i]);
        }
    }
    if (!force)
        wait_gone(procs, live, n, esc_now_ms() + (uint64_t)(grace_s * 1000));
    for (size_t i = 0; i < n; i++) {
        bool late = !force && live[i] && group_alive(procs[i].pid);
        if (late)
            signal_proc(procs[i].pid, SIGKILL);
        if (live[i] && report)
            printf("stopped %s (pid %d)%s\n", procs[i].name, (int)procs[i].pid,
                   force ? " with SIGKILL" : late ? " with SIGKILL after the grace period" : "");
        if (!procs[i].malformed)
            unlink(procs[i].pidfile);
    }
    /* SIGKILL is not instant either: return only once they are gone. */
    wait_gone(procs, live, n, esc_now_ms() + KILL_WAIT_MS);
    free(live);
    return count;
}
