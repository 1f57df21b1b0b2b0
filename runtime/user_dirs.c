/* user_dirs.c: see user_dirs.h. */
#include "user_dirs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *esc_user_tmp_dir(char *out, size_t len)
{
    snprintf(out, len, "/tmp/escher-%u", (unsigned)getuid());
    return out;
}

const char *esc_runtime_root(char *out, size_t len)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
        access(xdg, W_OK | X_OK) == 0) {
        int n = snprintf(out, len, "%s/escher", xdg);
        if (n > 0 && (size_t)n < len)
            return out;
    }
    return esc_user_tmp_dir(out, len);
}

int esc_user_dir_make(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(path, &st) != 0) {
        snprintf(err, errlen, "cannot inspect %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022)) {
        snprintf(err, errlen,
                 "%s is not a directory of yours that only you can write to; remove it or "
                 "set XDG_RUNTIME_DIR",
                 path);
        return -1;
    }
    return 0;
}
