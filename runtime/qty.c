/* qty.c: parsing, formatting and saturating arithmetic of fixed-point quantities.
 *
 * Parsing is hand-written rather than built on strtod because a double can not
 * represent most decimal fractions exactly: "0.3" must become exactly 3000. */
#include "qty.h"

#include <stdio.h>
#include <string.h>

#define QTY_DECIMALS 4

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Accumulates the integer part into *whole; -1 when it alone exceeds ESC_QTY_MAX. */
static int parse_whole(const char **p, int64_t *whole, int *ndigits)
{
    const int64_t limit = ESC_QTY_MAX / ESC_QTY_SCALE;
    int64_t v = 0;
    int n = 0;
    for (; is_digit(**p); (*p)++, n++) {
        v = v * 10 + (**p - '0');
        if (v > limit)        /* checked every digit so v * 10 never overflows */
            return -1;
    }
    *whole = v;
    *ndigits = n;
    return 0;
}

/* Reads 1..4 fraction digits, scaled to 1/10000 units; -1 on none or too many. */
static int parse_frac(const char **p, int64_t *frac)
{
    int64_t v = 0;
    int n = 0;
    for (; is_digit(**p); (*p)++, n++) {
        if (n == QTY_DECIMALS)
            return -1;
        v = v * 10 + (**p - '0');
    }
    if (n == 0)
        return -1;
    for (; n < QTY_DECIMALS; n++)
        v *= 10;
    *frac = v;
    return 0;
}

/* Grammar: [+-] ( digits [ '.' 1-4 digits ] | '.' 1-4 digits ) | "inf".
 * No whitespace, no exponent. On failure the outputs are left untouched. */
int esc_qty_parse(const char *text, int64_t *out, bool *unbounded)
{
    if (text == NULL || out == NULL)
        return -1;
    if (strcmp(text, "inf") == 0) {
        if (unbounded == NULL)    /* the caller has nowhere to put "unbounded" */
            return -1;
        *out = 0;
        *unbounded = true;
        return 0;
    }
    const char *p = text;
    bool neg = false;
    if (*p == '+' || *p == '-')
        neg = (*p++ == '-');
    int64_t whole = 0, frac = 0;
    int nwhole = 0;
    if (parse_whole(&p, &whole, &nwhole) != 0)
        return -1;
    if (*p == '.') {
        p++;
        if (parse_frac(&p, &frac) != 0)
            return -1;
    } else if (nwhole == 0) {
        return -1;
    }
    if (*p != '\0')
        return -1;
    int64_t q = whole * ESC_QTY_SCALE + frac;
    if (q > ESC_QTY_MAX)
        return -1;
    *out = neg ? -q : q;
    if (unbounded != NULL)
        *unbounded = false;
    return 0;
}

char *esc_qty_format(int64_t q, char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return buf;
    /* Work on the magnitude as unsigned so INT64_MIN formats too. */
    uint64_t mag = q < 0 ? (uint64_t)0 - (uint64_t)q : (uint64_t)q;
    uint64_t whole = mag / (uint64_t)ESC_QTY_SCALE;
    unsigned frac = (unsigned)(mag % (uint64_t)ESC_QTY_SCALE);
    const char *sign = q < 0 ? "-" : "";
    if (frac == 0) {
        snprintf(buf, len, "%s%llu", sign, (unsigned long long)whole);
        return buf;
    }
    int digits = QTY_DECIMALS;
    while (frac % 10 == 0) {    /* shortest form: drop trailing zeros */
        frac /= 10;
        digits--;
    }
    snprintf(buf, len, "%s%llu.%0*u", sign, (unsigned long long)whole, digits, frac);
    return buf;
}

double esc_qty_to_double(int64_t q)
{
    return (double)q / (double)ESC_QTY_SCALE;
}

static int64_t clamp_qty(int64_t v)
{
    if (v > ESC_QTY_MAX)
        return ESC_QTY_MAX;
    if (v < -ESC_QTY_MAX)
        return -ESC_QTY_MAX;
    return v;
}

/* Inputs are clamped first: two values within +-ESC_QTY_MAX (INT64_MAX / 4) sum
 * without overflow, so the result only needs one more clamp. */
int64_t esc_qty_add(int64_t a, int64_t b)
{
    return clamp_qty(clamp_qty(a) + clamp_qty(b));
}
