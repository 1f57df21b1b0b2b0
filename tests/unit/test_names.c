/* test_names.c: name validation, physical names, join/split, and name interning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "intern.h"
#include "names.h"

static void test_valid(void **state)
{
    (void)state;
    assert_true(esc_name_valid("a"));
    assert_true(esc_name_valid("gpu_slots"));
    assert_true(esc_name_valid("job-12.ns_A"));
    assert_true(esc_name_valid("0"));
    assert_true(esc_name_valid("a."));
    char max[ESC_NAME_MAX + 2];
    memset(max, 'x', ESC_NAME_MAX);
    max[ESC_NAME_MAX] = '\0';
    assert_true(esc_name_valid(max));
    max[ESC_NAME_MAX] = 'x';
    max[ESC_NAME_MAX + 1] = '\0';
    assert_false(esc_name_valid(max));    /* 65 chars */
}

static void test_invalid(void **state)
{
    (void)state;
    assert_false(esc_name_valid(NULL));
    assert_false(esc_name_valid(""));
    assert_false(esc_name_valid(".hidden"));
    assert_false(esc_name_valid("a/b"));
    assert_false(esc_name_valid("a b"));
    assert_false(esc_name_valid("node:1"));
    assert_false(esc_name_valid("x*"));
    assert_false(esc_name_valid("caf\xc3\xa9"));
}

static void test_physical(void **state)
{
    (void)state;
    assert_true(esc_name_is_physical("CPU"));
    assert_true(esc_name_is_physical("GPU"));
    assert_true(esc_name_is_physical("memory"));
    assert_true(esc_name_is_physical("object_store_memory"));
    assert_true(esc_name_is_physical("node:10.0.0.1"));
    assert_true(esc_name_is_physical("node:"));
    assert_false(esc_name_is_physical("cpu"));
    assert_false(esc_name_is_physical("CPUs"));
    assert_false(esc_name_is_physical("ns/CPU"));
    assert_false(esc_name_is_physical("node"));
    assert_false(esc_name_is_physical("xnode:1"));
    assert_false(esc_name_is_physical(NULL));
}

static void test_join(void **state)
{
    (void)state;
    char out[ESC_FULLNAME_MAX];
    assert_int_equal(esc_name_join("job1", "slots", out, sizeof out), 0);
    assert_string_equal(out, "job1/slots");
    assert_int_equal(esc_name_join("", "slots", out, sizeof out), -1);
    assert_int_equal(esc_name_join("a/b", "slots", out, sizeof out), -1);
    assert_int_equal(esc_name_join("ns", ".x", out, sizeof out), -1);
    assert_int_equal(esc_name_join(NULL, "x", out, sizeof out), -1);
    /* Two maximal parts fit ESC_FULLNAME_MAX exactly with the slash and NUL. */
    char p[ESC_NAME_MAX + 1];
    memset(p, 'p', ESC_NAME_MAX);
    p[ESC_NAME_MAX] = '\0';
    assert_int_equal(esc_name_join(p, p, out, sizeof out), 0);
    assert_int_equal(strlen(out), 2 * ESC_NAME_MAX + 1);
    /* A buffer too small fails rather than truncating. */
    char small[5];
    assert_int_equal(esc_name_join("ab", "cd", small, sizeof small), -1);
    assert_int_equal(esc_name_join("ab", "c", small, sizeof small), 0);
    assert_string_equal(small, "ab/c");
}

static void test_split(void **state)
{
    (void)state;
    char ns[ESC_NAME_MAX + 1], name[ESC_NAME_MAX + 1];
    assert_int_equal(esc_name_split("job1/slots", ns, name), 0);
    assert_string_equal(ns, "job1");
    assert_string_equal(name, "slots");
    assert_int_equal(esc_name_split("noslash", ns, name), -1);
    assert_int_equal(esc_name_split("/x", ns, name), -1);
    assert_int_equal(esc_name_split("x/", ns, name), -1);
    assert_int_equal(esc_name_split("a/b/c", ns, name), -1);
    assert_int_equal(esc_name_split("a/.b", ns, name), -1);
    assert_int_equal(esc_name_split(".a/b", ns, name), -1);
    assert_int_equal(esc_name_split("CPU", ns, name), -1);
    /* Join then split round-trips at the maximum length. */
    char full[ESC_FULLNAME_MAX], p[ESC_NAME_MAX + 1];
    memset(p, 'q', ESC_NAME_MAX);
    p[ESC_NAME_MAX] = '\0';
    assert_int_equal(esc_name_join(p, "z", full, sizeof full), 0);
    assert_int_equal(esc_name_split(full, ns, name), 0);
    assert_string_equal(ns, p);
    assert_string_equal(name, "z");
    /* A part one char too long is rejected. */
    char longer[ESC_NAME_MAX + 4];
    memset(longer, 'q', ESC_NAME_MAX + 1);
    strcpy(longer + ESC_NAME_MAX + 1, "/z");
    assert_int_equal(esc_name_split(longer, ns, name), -1);
    strcpy(longer, "z/");
    memset(longer + 2, 'q', ESC_NAME_MAX + 1);
    longer[ESC_NAME_MAX + 3] = '\0';
    assert_int_equal(esc_name_split(longer, ns, name), -1);
}

static void test_intern_basic(void **state)
{
    (void)state;
    esc_intern *t = esc_intern_new();
    assert_non_null(t);
    assert_int_equal(esc_intern_count(t), 0);
    assert_int_equal(esc_intern_find(t, "CPU"), -1);
    assert_int_equal(esc_intern_id(t, "CPU"), 0);
    assert_int_equal(esc_intern_id(t, "GPU"), 1);
    assert_int_equal(esc_intern_id(t, "CPU"), 0);
    assert_int_equal(esc_intern_find(t, "GPU"), 1);
    assert_int_equal(esc_intern_count(t), 2);
    assert_string_equal(esc_intern_name(t, 1), "GPU");
    assert_null(esc_intern_name(t, 2));
    assert_null(esc_intern_name(t, -1));
    assert_int_equal(esc_intern_id(t, NULL), -1);
    assert_int_equal(esc_intern_find(t, NULL), -1);
    /* The table keeps its own copy of the string. */
    char buf[8] = "mem";
    int32_t id = esc_intern_id(t, buf);
    strcpy(buf, "zzz");
    assert_string_equal(esc_intern_name(t, id), "mem");
    assert_int_equal(esc_intern_find(t, "mem"), id);
    assert_int_equal(esc_intern_find(t, "zzz"), -1);
    esc_intern_free(t);
    esc_intern_free(NULL);
}

/* Many names force several rehashes; ids stay dense, stable and distinct. */
static void test_intern_growth(void **state)
{
    (void)state;
    enum { N = 20000 };
    esc_intern *t = esc_intern_new();
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "ns/r%d", i);
        assert_int_equal(esc_intern_id(t, name), i);
    }
    assert_int_equal(esc_intern_count(t), N);
    for (int i = N - 1; i >= 0; i--) {
        snprintf(name, sizeof name, "ns/r%d", i);
        assert_int_equal(esc_intern_find(t, name), i);
        assert_int_equal(esc_intern_id(t, name), i);
        assert_string_equal(esc_intern_name(t, i), name);
    }
    assert_int_equal(esc_intern_count(t), N);
    assert_int_equal(esc_intern_find(t, "ns/r20000"), -1);
    assert_int_equal(esc_intern_id(t, ""), N);    /* the empty string is a name too */
    esc_intern_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_physical),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_intern_basic),
        cmocka_unit_test(test_intern_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
