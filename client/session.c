/* session.c: locating the session directory and reading its small files. */
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Session files hold one short line (an address, a token, an id); anything larger is
 * not one of ours. */
#define SESSION_FILE_MAX 4096

const char *esc_session_dir(const char *explicit_dir)
{
    if (explicit_dir && *explicit_dir)
        return explicit_dir;
    const char *env = getenv("ESCHER_SESSION_DIR");
    if (env && *env)
        return env;
    return ESC_SESSION_LATEST;
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
    char *buf = malloc(SESSION_FILE_MAX + 1);
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
