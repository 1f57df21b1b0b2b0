/* stale_sockets.c: see stale_sockets.h. */
#include "stale_sockets.h"
#include "user_dirs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
/* The pid in "raylet-<pid>.sock"; 0 when the name has another form. */
static pid_t owner_pid(const char *name)
{
    const char *digits = name + strlen("raylet-");
    if (strncmp(name, "raylet-", strlen("raylet-")) != 0 || *digits < '1' || *digits > '9')
        return 0;
    char *end;
    errno = 0;
    long pid = strtol(digits, &end, 10);
    if (errno || pid <= 0 || pid > INT_MAX || strcmp(end, ".sock") != 0)
        return 0;
    return (pid_t)pid;
}

/* No process has this pid (EPERM means one does, another user's). */
static bool pid_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

static bool stale(const char *dir, const char *name, char *path, size_t len)
{
    pid_t pid = owner_pid(name);
    if (pid == 0 || pid == getpid())
        return false;
    int n = snprintf(path, len, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= len)
        return false;
    struct stat st;
    return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid() &&
           pid_gone(pid);
}

size_t esc_remove_stale_sockets(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[PATH_MAX];
        if (!stale(dir, e->d_name, path, sizeof path))
            continue;
        if (unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

const char *esc_socket_dir(void)
{
    static char dir[64];
    if (!dir[0]) {
        char base[48];
        snprintf(dir, sizeof dir, "%s/sockets", esc_user_tmp_dir(base, sizeof base));
    }
    return dir;
}
