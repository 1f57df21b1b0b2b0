/* session.c: locating the session directory and reading its small files. */
#include "session.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "token_file.h"
#include "user_dirs.h"
#include "xalloc.h"

/* Session files hold one short line (an address, a token, an id); anything larger is
 * not one of ours. */
#define SESSION_FILE_MAX 4096

/* Field 22 of /proc/PID/stat (start time in ticks); 0 when the process is gone or a
 * zombie. */
static unsigned long long start_ticks(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parens */
    if (!p || p[1] != ' ' || p[2] == 'Z')
        return 0;
    p += 2; /* field 3 */
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return p ? strtoull(p, NULL, 10) : 0;
}

bool esc_session_is_live(const char *dir)
{
    char pids[4096];
    if (!esc_session_path(dir, "pids", pids, sizeof pids))
        return false;
    DIR *d = opendir(pids);
    if (!d)
        return false;
    bool live = false;
    struct dirent *e;
    while (!live && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".pid") != 0)
            continue;
        char name[512];
        snprintf(name, sizeof name, "pids/%s", e->d_name);
        char *text = esc_session_read(dir, name);
        long pid = 0;
        unsigned long long ticks = 0;
        if (text && sscanf(text, "%ld %llu", &pid, &ticks) == 2 && pid > 0)
            live = ticks != 0 && start_ticks(pid) == ticks;
        free(text);
    }
    closedir(d);
    return live;
}

const char *esc_session_newest(char *out, size_t len)
{
    char root[4096];
    esc_runtime_root(root, sizeof root);
    DIR *d = opendir(root);
    if (!d)
        return NULL;
    struct timespec best = {0, 0};
    bool found = false, best_head = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char dir[4096], pids[4096];
        struct stat st;
        if (snprintf(dir, sizeof dir, "%s/%s", root, e->d_name) >= (int)sizeof dir ||
            !esc_session_path(dir, "pids", pids, sizeof pids) || lstat(dir, &st) != 0 ||
            !S_ISDIR(st.st_mode) || st.st_uid != getuid() || stat(pids, &st) != 0)
            continue;
        /* A head's session (it started a GCS) goes before a node that joined, so a
         * second raylet on the head's machine leaves `escher stop` and `status` aimed
         * at the head; among equals the newest wins: the pids/ directory changes when
         * the session's daemons start. */
        char gcs_pid[4096];
        bool head = esc_session_path(pids, "gcs.pid", gcs_pid, sizeof gcs_pid) &&
                    access(gcs_pid, F_OK) == 0;
        bool newer = st.st_mtim.tv_sec > best.tv_sec ||
                     (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec > best.tv_nsec);
        bool better = !found || (head && !best_head) || (head == best_head && newer);
        if (better && esc_session_is_live(dir) && strlen(dir) < len) {
            best = st.st_mtim;
            best_head = head;
            found = true;
            snprintf(out, len, "%s", dir);
        }
    }
    closedir(d);
    return found ? out : NULL;
}

const char *esc_session_dir(const char *explicit_dir)
{
    if (explicit_dir && *explicit_dir)
        return explicit_dir;
    const char *env = getenv("ESCHER_SESSION_DIR");
    if (env && *env)
        return env;
    static __thread char found[4096];
    if (esc_session_newest(found, sizeof found))
        return found;
    return esc_runtime_root(found, sizeof found);
}

char *esc_session_path(const char *dir, const char *name, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= outlen) ? NULL : out;
}

char *esc_session_read(const char *dir, const char *name)
{
    char path[4096];
    if (!esc_session_path(dir, name, path, sizeof path)) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = esc_xmalloc(SESSION_FILE_MAX + 1);
    size_t n = fread(buf, 1, SESSION_FILE_MAX, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
                     buf[n - 1] == '\t'))
        n--;
    if (n == 0) {
        free(buf);
        errno = ENODATA;
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

char *esc_session_read_secret(const char *dir, const char *name, char *err, size_t errlen)
{
    char path[4096];
    if (!esc_session_path(dir, name, path, sizeof path)) {
        snprintf(err, errlen, "session path %s/%s is too long", dir, name);
        errno = ENAMETOOLONG;
        return NULL;
    }
    return esc_token_file_read(path, err, errlen);
}
