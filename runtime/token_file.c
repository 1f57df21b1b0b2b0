/* token_file.c: reading a secret from a file: trimmed, non-empty, bounded, printable. */
#include "token_file.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What is read of a file at most: a secret of the largest size with room for blank
 * lines around it; a file longer than this is refused as too long. */
#define READ_MAX (ESC_TOKEN_FILE_MAX + 1024)

static int is_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

char *esc_token_parse(const char *text, size_t len, const char *what, char *err,
                      size_t errlen)
{
    const unsigned char *s = (const unsigned char *)text;
    while (len > 0 && is_blank(*s)) {
        s++;
        len--;
    }
    while (len > 0 && is_blank(s[len - 1]))
        len--;
    if (len == 0) {
        snprintf(err, errlen, "%s is empty", what);
        errno = ENODATA;
        return NULL;
    }
    if (len > ESC_TOKEN_FILE_MAX) {
        snprintf(err, errlen, "%s holds %zu bytes, more than the %d a secret may have", what,
                 len, ESC_TOKEN_FILE_MAX);
        errno = EMSGSIZE;
        return NULL;
    }
    for (size_t i = 0; i < len; i++)
        if (s[i] < 0x20 || s[i] > 0x7e) {
            snprintf(err, errlen, "%s holds a byte that is not printable (0x%02x at offset %zu)",
                     what, s[i], i);
            errno = EINVAL;
            return NULL;
        }
    char *out = esc_xmalloc(len + 1);
    memcpy(out, s, len);
    out[len] = '\0';
    return out;
}

char *esc_token_file_read(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    char buf[READ_MAX + 1];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, sizeof buf - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            snprintf(err, errlen, "cannot read %s: %s", path, strerror(e));
            close(fd);
            memset(buf, 0, len);
            errno = e;
            return NULL;
        }
        if (n == 0 || (len += (size_t)n) == sizeof buf)
            break;
    }
    close(fd);
    char what[512];
    snprintf(what, sizeof what, "%.480s", path);
    char *tok;
    if (len > READ_MAX) {
        snprintf(err, errlen, "%s is longer than %d bytes, more than a secret may have",
                 what, READ_MAX);
        errno = EMSGSIZE;
        tok = NULL;
    } else {
        tok = esc_token_parse(buf, len, what, err, errlen);
    }
    int e = errno;
    memset(buf, 0, len);
    errno = e;
    return tok;
}
