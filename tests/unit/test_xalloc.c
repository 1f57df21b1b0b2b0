/* test_xalloc.c: the out-of-memory policy (runtime/xalloc.h): an allocation that cannot
 * be made aborts the process with exactly one line on stderr naming the process and
 * the size; an overflowing count times size is refused the same way; ordinary sizes
 * (0 included) work. The SDK's checked buffers (esc_buf) return -1 instead. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "escher/task.h"
#include "log.h"
#include "xalloc.h"

/* Runs fn in a child whose stderr is a pipe; returns its wait status and what it wrote. */
static int in_child(void (*fn)(void), char *out, size_t len)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        esc_log_init("test-xalloc", ESC_LOG_INFO);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t n;
    while (got < len - 1 && (n = read(fds[0], out + got, len - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static volatile size_t huge = (size_t)1 << 62; /* volatile: not folded by the compiler */

static void alloc_huge(void)
{
    free(esc_xmalloc(huge));
}

static void calloc_overflow(void)
{
    free(esc_xcalloc(huge, 8));
}

static void realloc_huge(void)
{
    free(esc_xrealloc(NULL, huge));
}

static void assert_aborted_with_one_line(int status, const char *text, const char *size)
{
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    const char *line = strstr(text, "test-xalloc: out of memory (allocating ");
    assert_non_null(line);
    assert_non_null(strstr(line, size));
    assert_non_null(strchr(line, '\n'));
    assert_null(strstr(strchr(line, '\n') + 1, "out of memory")); /* once */
    /* Nothing else but what a sanitizer's allocator says of the refused request (its
     * "WARNING: AddressSanitizer failed to allocate" line). */
    for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
        assert_true(l == line || strstr(l, "Sanitizer") == l + strlen("WARNING: ") ||
                    !strncmp(l, "==", 2));
        if (!strchr(l, '\n'))
            break;
    }
}

static void test_huge_aborts(void **state)
{
    (void)state;
    char text[512];
    int status = in_child(alloc_huge, text, sizeof text);
    assert_aborted_with_one_line(status, text, "4611686018427387904 bytes");
    status = in_child(realloc_huge, text, sizeof text);
    assert_aborted_with_one_line(status, text, "4611686018427387904 bytes");
}

static void test_calloc_overflow_aborts(void **state)
{
    (void)state;
    char text[512];
    int status = in_child(calloc_overflow, text, sizeof text);
    assert_aborted_with_one_line(status, text, "18446744073709551615 bytes");
}

static void test_ordinary_sizes(void **state)
{
    (void)state;
    char *p = esc_xmalloc(0);
    assert_non_null(p);
    free(p);
    int *v = esc_xcalloc(16, sizeof *v);
    for (int i = 0; i < 16; i++)
        assert_int_equal(v[i], 0);
    v = esc_xrealloc(v, 1024 * sizeof *v);
    v[1023] = 7;
    free(v);
    char *s = esc_xstrdup("escher");
    assert_string_equal(s, "escher");
    free(s);
    s = esc_xstrndup("escher", 3);
    assert_string_equal(s, "esc");
    free(s);
}

/* A buffer the caller sizes fails with -1 and stays as it was. */
static void test_sdk_buffer_returns_error(void **state)
{
    (void)state;
    esc_task_ctx *ctx = esc_task_ctx_new("t", "j", 0, NULL, NULL, 1);
    esc_buf *b = esc_task_return(ctx, 0);
    assert_int_equal(esc_buf_set(b, "abc", 3), 0);
    assert_int_equal(esc_buf_append(b, "x", huge), -1);
    assert_int_equal(esc_buf_set(b, "x", huge), -1);
    assert_int_equal(esc_buf_len(b), 3);
    assert_memory_equal(esc_buf_data(b), "abc", 3);
    esc_task_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_aborts),
        cmocka_unit_test(test_calloc_overflow_aborts),
        cmocka_unit_test(test_ordinary_sizes),
        cmocka_unit_test(test_sdk_buffer_returns_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
