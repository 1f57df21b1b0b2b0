/* files.c: the raylet's small files: reading the token, writing the node id file. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKEN_FILE_MAX 4096

char *files_read_token(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot read token file %s: %s", path, strerror(errno));
        return NULL;
    }
    char buf[TOKEN_FILE_MAX + 1];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, TOKEN_FILE_MAX - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "cannot read token file %s: %s", path, strerror(errno));
            close(fd);
            return NULL;
        }
        if (n == 0 || (len += (size_t)n) == TOKEN_FILE_MAX)
            break;
    }
    close(fd);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
                       buf[len - 1] == '\t'))
        len--;
    buf[len] = 0;
    if (len == 0 || strchr(buf, '\n')) {
        snprintf(err, errlen, "token file %s is empty or not one line", path);
        return NULL;
    }
    char *tok = strdup(buf);
    memset(buf, 0, sizeof buf);
    return tok;
}

int files_write_atomic(const char *path, const char *content)
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t len = strlen(content), off = 0;
    while (off < len) {
        ssize_t n = write(fd, content + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            errno = e;
            return -1;
        }
        off += (size_t)n;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}
