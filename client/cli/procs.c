/* procs.c: pid files of a session and stopping their processes, never by name. */
#include "procs.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ids.h"

#define POLL_MS 20
#define KILL_WAIT_MS 2000

static bool read_pid(const char *path, pid_t *pid)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    long v = 0;
    int ok = fscanf(f, "%ld", &v);
    fclose(f);
    *pid = (pid_t)v;
    return ok == 1 && v > 1;
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
        if (!read_pid(p.pidfile, &p.pid)) {
            unlink(p.pidfile);
            continue;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 4;
            *out = realloc(*out, cap * sizeof **out);
        }
        (*out)[(*n)++] = p;
    }
    closedir(d);
    return 0;
}

/* State letter and process group of pid from /proc/pid/stat; false when unreadable. */
static bool proc_stat(pid_t pid, char *state, long *pgrp)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the command name may hold spaces */
    long ppid;
    return paren && sscanf(paren + 1, " %c %ld %ld", state, &ppid, pgrp) == 3;
}

/* A zombie still answers kill(pid, 0) but is gone for every purpose here (and init
 * may take a while to reap one whose parent has exited). */
static bool is_zombie(pid_t pid)
{
    char state;
    long pgrp;
    return proc_stat(pid, &state, &pgrp) && (state == 'Z' || state == 'X');
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
        char state;
        long pgrp;
        if (*end == '\0' && pid > 0 && proc_stat((pid_t)pid, &state, &pgrp))
            live = pgrp == pgid && state != 'Z' && state != 'X';
    }
    closedir(d);
    return live;
}

/* Does /proc/pid/cmdline mention s? True when it can not be read (no /proc, another
 * user's process): the pid file is then all there is to go by. */
static bool cmdline_mentions(pid_t pid, const char *s)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[n] = '\0';
    return strstr(buf, s) != NULL;
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

bool cli_proc_running(pid_t pid, const char *session_dir)
{
    return exists(pid) && cmdline_mentions(pid, session_dir);
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

size_t cli_procs_stop(const cli_proc *procs, size_t n, const char *session_dir, double grace_s,
                      bool force, bool report)
{
    bool *live = calloc(n + 1, sizeof *live);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        live[i] = cli_proc_running(procs[i].pid, session_dir);
        if (live[i]) {
            signal_proc(procs[i].pid, force ? SIGKILL : SIGTERM);
            count++;
        } else if (report) {
            printf(exists(procs[i].pid) ? "%s: pid %d is not this session's process; left alone\n"
                                        : "%s (pid %d) was not running\n",
                   procs[i].name, (int)procs[i].pid);
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
        unlink(procs[i].pidfile);
    }
    /* SIGKILL is not instant either: return only once they are gone. */
    wait_gone(procs, live, n, esc_now_ms() + KILL_WAIT_MS);
    free(live);
    return count;
}
