/* test_token_file.c: reading a secret file (runtime/token_file.h): trimmed, non-empty,
 * bounded, printable. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "token_file.h"

static char path[64];

static int make_file(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/esc_token_test.XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static int remove_file(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void write_file(const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* The file holding text (len bytes) reads as want. */
static void expect_token(const char *text, size_t len, const char *want)
{
    write_file(text, len);
    char err[256] = "";
    char *t = esc_token_file_read(path, err, sizeof err);
    assert_non_null(t);
    assert_string_equal(t, want);
    assert_string_equal(err, "");
    free(t);
}

/* The file holding text (len bytes) is refused with errno e and an error naming it. */
static void expect_refused(const void *text, size_t len, int e)
{
    write_file(text, len);
    char err[256] = "";
    errno = 0;
    assert_null(esc_token_file_read(path, err, sizeof err));
    assert_int_equal(errno, e);
    assert_non_null(strstr(err, path));
    assert_null(strchr(err, '\n'));
}

static void test_trailing_space(void **state)
{
    (void)state;
    expect_token("abc123 ", 7, "abc123");
    expect_token("abc123\t \n", 9, "abc123");
    expect_token("  abc123", 8, "abc123");
}

static void test_crlf(void **state)
{
    (void)state;
    expect_token("abc123\r\n", 8, "abc123");
    expect_token("\r\nabc123\r\n\r\n", 12, "abc123");
}

static void test_empty(void **state)
{
    (void)state;
    expect_refused("", 0, ENODATA);
    expect_refused(" \r\n\t\n", 5, ENODATA);
}

static void test_too_long(void **state)
{
    (void)state;
    char buf[ESC_TOKEN_FILE_MAX + 2];
    memset(buf, 'a', sizeof buf);
    /* Exactly the maximum, with a newline: accepted, not truncated. */
    buf[ESC_TOKEN_FILE_MAX] = '\n';
    write_file(buf, ESC_TOKEN_FILE_MAX + 1);
    char err[256];
    char *t = esc_token_file_read(path, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(strlen(t), ESC_TOKEN_FILE_MAX);
    free(t);
    /* One byte more: refused, never cut to fit. */
    memset(buf, 'a', sizeof buf);
    expect_refused(buf, ESC_TOKEN_FILE_MAX + 1, EMSGSIZE);
    /* A very large file. */
    size_t big = 100000;
    char *huge = malloc(big);
    assert_non_null(huge);
    memset(huge, 'b', big);
    expect_refused(huge, big, EMSGSIZE);
    free(huge);
}

static void test_binary_junk(void **state)
{
    (void)state;
    expect_refused("abc\0def", 7, EINVAL);
    expect_refused("abc\x01" "def", 7, EINVAL);
    expect_refused("abc\xff\xfe", 5, EINVAL);
    expect_refused("line1\nline2\n", 12, EINVAL);
    expect_refused("ab\x1b[0mcd", 8, EINVAL);
}

static void test_missing_file(void **state)
{
    (void)state;
    unlink(path);
    char err[256] = "";
    errno = 0;
    assert_null(esc_token_file_read(path, err, sizeof err));
    assert_int_equal(errno, ENOENT);
    assert_non_null(strstr(err, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_trailing_space, make_file, remove_file),
        cmocka_unit_test_setup_teardown(test_crlf, make_file, remove_file),
        cmocka_unit_test_setup_teardown(test_empty, make_file, remove_file),
        cmocka_unit_test_setup_teardown(test_too_long, make_file, remove_file),
        cmocka_unit_test_setup_teardown(test_binary_junk, make_file, remove_file),
        cmocka_unit_test_setup_teardown(test_missing_file, make_file, remove_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
