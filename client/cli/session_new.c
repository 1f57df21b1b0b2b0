/* session_new.c: making, cleaning and linking session directories. */
#include "session_new.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../session.h"
#include "cli.h"
#include "ids.h"
#include "procs.h"
#include "user_dirs.h"

/* Files of a previous run that would mislead readiness checks or clients. */
static const char *const stale_files[] = {"token", "daemon_key", "operator", "gcs.port",
                                          "node_id", "gcs_address", "raylet_address",
                                          "gcs.metrics_port", "raylet.metrics_port",
                                          "gcs.dashboard_port"};

bool cli_session_live(const char *dir)
{
    char real[PATH_MAX];
    if (!realpath(dir, real))
        return false;
    cli_proc *procs;
    size_t n;
    if (cli_procs_load(real, &procs, &n) != 0)
        return false;
    bool live = false;
    for (size_t i = 0; i < n && !live; i++)
        live = cli_proc_running(&procs[i]);
    free(procs);
    return live;
}

/* mkdir -p, the last component with mode. */
static int make_dirs(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, mode) != 0 && errno != EEXIST ? -1 : 0;
}

static void remove_stale(const char *dir)
{
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof stale_files / sizeof stale_files[0]; i++)
        if (esc_session_path(dir, stale_files[i], path, sizeof path))
            unlink(path);
    cli_proc *procs;
    size_t n;
    if (cli_procs_load(dir, &procs, &n) == 0)
        for (size_t i = 0; i < n; i++)
            unlink(procs[i].pidfile);
    free(procs);
}

static int make_subdir(const char *dir, const char *sub)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return cli_fail("cannot create %s: %s", path, strerror(errno));
    return CLI_EXIT_OK;
}

int cli_session_create(const char *dir, char *out, size_t len, bool *created)
{
    char fresh[PATH_MAX], root[PATH_MAX], err[PATH_MAX + 160];
    *created = false;
    if (!dir) {
        /* The user's own runtime root (made 0700, checked to be the user's). */
        if (esc_user_dir_make(esc_runtime_root(root, sizeof root), err, sizeof err) != 0)
            return cli_fail("%s", err);
        if (!cli_pathf(fresh, sizeof fresh, "%s/session_%llu_%d", root,
                       (unsigned long long)esc_wall_ms(), (int)getpid()))
            return cli_fail("runtime directory path too long: %s", root);
        dir = fresh;
    }
    if (cli_session_live(dir))
        return cli_fail("a session is already running in %s (stop it with `escher stop "
                        "--session-dir %s`)",
                        dir, dir);
    /* The session directory holds the token: only its owner may look inside. */
    struct stat st;
    *created = stat(dir, &st) != 0;
    if (make_dirs(dir, 0700) != 0)
        return cli_fail("cannot create session directory %s: %s", dir, strerror(errno));
    if (!realpath(dir, out) || strlen(out) >= len)
        return cli_fail("cannot resolve session directory %s: %s", dir, strerror(errno));
    remove_stale(out);
    int rc = make_subdir(out, "pids");
    return rc ? rc : make_subdir(out, "logs");
}

int cli_session_write_secret(const char *dir, const char *name, const char *token)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    /* O_EXCL: never write a secret through a file (or link) someone else put there. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return cli_fail("cannot create %s: %s", path, strerror(errno));
    size_t n = strlen(token);
    ssize_t w = write(fd, token, n);
    int err = errno;
    if (close(fd) != 0 || w != (ssize_t)n)
        return cli_fail("cannot write %s: %s", path, strerror(err));
    return CLI_EXIT_OK;
}

int cli_session_write(const char *dir, const char *name, const char *content)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fputs(content, f);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

/* rm -r of what a failed start made; nothing in it is followed through a link. */
static void remove_tree(int parent, const char *name)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        DIR *d = fdopendir(fd);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, ".."))
                remove_tree(fd, e->d_name);
        if (d)
            closedir(d);
        else
            close(fd);
        unlinkat(parent, name, AT_REMOVEDIR);
        return;
    }
    unlinkat(parent, name, 0);
}

void cli_session_discard(const char *dir, bool created)
{
    if (created) {
        remove_tree(AT_FDCWD, dir);
        return;
    }
    /* A directory that was there before keeps what was in it; only the files this
     * start wrote go. */
    remove_stale(dir);
}
