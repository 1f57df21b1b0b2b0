/* example_tasks.c: the task functions the examples run (libescher_example_tasks.so). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escher/task.h"

/* Squares the decimal integer in its argument; returns the result as decimal text. */
ESC_TASK(square)
{
    (void)ctx;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    long long x = atoll(buf);
    return esc_buf_printf(ret, "%lld", x * x);
}

/* Sums the decimal integers of all its arguments. */
ESC_TASK(sum)
{
    (void)arg;
    (void)len;
    long long total = 0;
    for (size_t i = 0; i < esc_task_num_args(ctx); i++) {
        size_t n;
        const char *a = esc_task_arg_at(ctx, i, &n);
        char buf[32] = {0};
        memcpy(buf, a, n < sizeof buf - 1 ? n : sizeof buf - 1);
        total += atoll(buf);
    }
    return esc_buf_printf(ret, "%lld", total);
}

/* Returns the id of the node it ran on. */
ESC_TASK(where)
{
    (void)ctx;
    (void)arg;
    (void)len;
    const char *node = getenv("ESCHER_NODE_ID");
    return esc_buf_printf(ret, "%s", node ? node : "?");
}

/* The state of an account actor: lives in its worker between calls. */
static long long balance;

/* Opens the account with the balance in its argument (decimal; empty: 0). */
ESC_TASK(account_open)
{
    (void)ctx;
    (void)ret;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    balance = atoll(buf);
    return 0;
}

/* Adds the (signed) amount in its argument; refuses to go below zero (returns 1: the
 * call fails and the balance is unchanged). Returns the new balance. */
ESC_TASK(account_apply)
{
    (void)ctx;
    char buf[32] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    long long amount = atoll(buf);
    if (balance + amount < 0)
        return 1;
    balance += amount;
    return esc_buf_printf(ret, "%lld", balance);
}

/* ---------------------------------------------------------------- word count */

/* A chunk of text for MapReduce: its argument is "<seed> <bytes>"; returns that many
 * bytes of words drawn (deterministically from the seed) from a 64-word vocabulary. */
ESC_TASK(wc_chunk)
{
    (void)ctx;
    char buf[64] = {0};
    memcpy(buf, arg, len < sizeof buf - 1 ? len : sizeof buf - 1);
    unsigned long long seed = 0, bytes = 0;
    if (sscanf(buf, "%llu %llu", &seed, &bytes) != 2 || bytes > (1ull << 30))
        return 2;
    char *text = malloc(bytes + 16);
    if (!text)
        return 3;
    size_t off = 0;
    uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
    while (off < bytes) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int w = (int)((x >> 33) % 64);
        off += (size_t)snprintf(text + off, 16, "w%02d ", w);
    }
    int rc = esc_buf_append(ret, text, bytes);
    free(text);
    return rc;
}

/* Counts the words of its argument (a chunk): returns 64 counts "c0 c1 ... c63". */
ESC_TASK(wc_map)
{
    (void)ctx;
    long long counts[64] = {0};
    const char *p = arg, *end = p + len;
    while (p < end) {
        if (*p == 'w' && p + 2 < end && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' &&
            p[2] <= '9') {
            int w = (p[1] - '0') * 10 + (p[2] - '0');
            if (w < 64)
                counts[w]++;
            p += 3;
        } else {
            p++;
        }
    }
    for (int i = 0; i < 64; i++)
        if (esc_buf_printf(ret, "%lld%s", counts[i], i < 63 ? " " : "") != 0)
            return 3;
    return 0;
}
