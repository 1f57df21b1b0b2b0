/* test_qty.c: fixed-point quantities: parsing, formatting, saturating addition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "qty.h"

/* Parses text and checks it succeeds with the expected value and bounded flag. */
static void expect_parse(const char *text, int64_t want)
{
    int64_t q = 12345;
    bool unb = true;
    assert_int_equal(esc_qty_parse(text, &q, &unb), 0);
    assert_true(q == want);
    assert_false(unb);
}

static void expect_reject(const char *text)
{
    int64_t q = 777;
    bool unb = true;
    assert_int_equal(esc_qty_parse(text, &q, &unb), -1);
    /* A failed parse leaves the outputs alone. */
    assert_true(q == 777);
    assert_true(unb);
}

static void test_parse_valid(void **state)
{
    (void)state;
    expect_parse("3", 30000);
    expect_parse("0", 0);
    expect_parse("-0", 0);
    expect_parse("0.25", 2500);
    expect_parse("-1.5", -15000);
    expect_parse("+2", 20000);
    expect_parse(".5", 5000);
    expect_parse("0.0001", 1);
    expect_parse("1.2345", 12345);
    expect_parse("0.3", 3000);    /* exact, unlike a trip through double */
    expect_parse("007", 70000);
}

static void test_parse_invalid(void **state)
{
    (void)state;
    expect_reject("1e3");
    expect_reject("");
    expect_reject("-");
    expect_reject(".");
    expect_reject("5.");
    expect_reject("1.23456");     /* more than 4 decimals */
    expect_reject("1.00000");
    expect_reject(" 1");
    expect_reject("1 ");
    expect_reject("1,5");
    expect_reject("abc");
    expect_reject("--1");
    expect_reject("1.2.3");
    expect_reject("-inf");
    expect_reject("Inf");
    expect_reject("0x10");
    assert_int_equal(esc_qty_parse(NULL, &(int64_t){0}, NULL), -1);
}

static void test_parse_inf(void **state)
{
    (void)state;
    int64_t q = 99;
    bool unb = false;
    assert_int_equal(esc_qty_parse("inf", &q, &unb), 0);
    assert_true(unb);
    assert_true(q == 0);
    /* Without a place to report unboundedness, "inf" can not be accepted. */
    assert_int_equal(esc_qty_parse("inf", &q, NULL), -1);
    /* A plain number may be parsed without the flag. */
    assert_int_equal(esc_qty_parse("2", &q, NULL), 0);
    assert_true(q == 20000);
}

static void test_parse_range(void **state)
{
    (void)state;
    char buf[64];
    int64_t q;
    /* The largest accepted value formats and parses back exactly. */
    esc_qty_format(ESC_QTY_MAX, buf, sizeof buf);
    assert_int_equal(esc_qty_parse(buf, &q, NULL), 0);
    assert_true(q == ESC_QTY_MAX);
    esc_qty_format(-ESC_QTY_MAX, buf, sizeof buf);
    assert_int_equal(esc_qty_parse(buf, &q, NULL), 0);
    assert_true(q == -ESC_QTY_MAX);
    /* One unit past it is out of range, fraction or whole part. */
    esc_qty_format(ESC_QTY_MAX + 1, buf, sizeof buf);
    expect_reject(buf);
    esc_qty_format(ESC_QTY_MAX + ESC_QTY_SCALE, buf, sizeof buf);
    expect_reject(buf);
    expect_reject("99999999999999999999999999");
    expect_reject("-99999999999999999999999999.5");
}

static void test_format(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(esc_qty_format(30000, buf, sizeof buf), "3");
    assert_string_equal(esc_qty_format(2500, buf, sizeof buf), "0.25");
    assert_string_equal(esc_qty_format(-15000, buf, sizeof buf), "-1.5");
    assert_string_equal(esc_qty_format(0, buf, sizeof buf), "0");
    assert_string_equal(esc_qty_format(1, buf, sizeof buf), "0.0001");
    assert_string_equal(esc_qty_format(-1, buf, sizeof buf), "-0.0001");
    assert_string_equal(esc_qty_format(10010, buf, sizeof buf), "1.001");
    assert_string_equal(esc_qty_format(INT64_MIN, buf, sizeof buf), "-922337203685477.5808");
    assert_string_equal(esc_qty_format(INT64_MAX, buf, sizeof buf), "922337203685477.5807");
    /* A short buffer is truncated, never overrun. */
    char small[4] = {'x', 'x', 'x', 'x'};
    esc_qty_format(123456, small, 3);
    assert_string_equal(small, "12");
    assert_int_equal(small[3], 'x');
}

/* Deterministic generator so a failure reproduces. */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_format_parse_roundtrip(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    char buf[32];
    for (int i = 0; i < 20000; i++) {
        int64_t q = (int64_t)(next_rand(&seed) % (uint64_t)(2 * ESC_QTY_MAX + 1)) - ESC_QTY_MAX;
        if (i % 2)
            q %= 1000000;    /* small values exercise the fraction digits */
        int64_t back;
        assert_int_equal(esc_qty_parse(esc_qty_format(q, buf, sizeof buf), &back, NULL), 0);
        assert_true(back == q);
    }
}

static void test_to_double(void **state)
{
    (void)state;
    assert_true(esc_qty_to_double(2500) == 0.25);
    assert_true(esc_qty_to_double(-15000) == -1.5);
    assert_true(esc_qty_to_double(0) == 0.0);
}

static void test_add_saturates(void **state)
{
    (void)state;
    assert_true(esc_qty_add(10000, 2500) == 12500);
    assert_true(esc_qty_add(10000, -25000) == -15000);
    assert_true(esc_qty_add(ESC_QTY_MAX, 1) == ESC_QTY_MAX);
    assert_true(esc_qty_add(-ESC_QTY_MAX, -1) == -ESC_QTY_MAX);
    assert_true(esc_qty_add(ESC_QTY_MAX, ESC_QTY_MAX) == ESC_QTY_MAX);
    /* Inputs outside the range do not overflow either. */
    assert_true(esc_qty_add(INT64_MAX, INT64_MAX) == ESC_QTY_MAX);
    assert_true(esc_qty_add(INT64_MIN, INT64_MIN) == -ESC_QTY_MAX);
    assert_true(esc_qty_add(INT64_MAX, INT64_MIN) == 0);
    assert_true(esc_qty_add(ESC_QTY_MAX, -ESC_QTY_MAX) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_parse_invalid),
        cmocka_unit_test(test_parse_inf),
        cmocka_unit_test(test_parse_range),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_parse_roundtrip),
        cmocka_unit_test(test_to_double),
        cmocka_unit_test(test_add_saturates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
