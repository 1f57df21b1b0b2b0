/* fuzz_util.h: helpers shared by the libFuzzer targets (tests/fuzz/fuzz_*.c). */
#ifndef ESC_FUZZ_UTIL_H
#define ESC_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (an embedded NUL ends it early, as it would in a
 * file read with the C string functions). Never NULL. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* The input as a file that the code under test opens by path: a memfd (nothing touches
 * the disk, and nothing is left behind) named by /proc/self/fd/N in path (64 bytes).
 * Returns the fd, which the caller closes. */
static inline int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0)
            abort();
        off += (size_t)n;
    }
    if (lseek(fd, 0, SEEK_SET) != 0)
        abort();
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

/* An invariant of the code under test failed: abort, which libFuzzer reports as a crash
 * and keeps the input. */
#define FUZZ_CHECK(cond)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);      \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

#endif
