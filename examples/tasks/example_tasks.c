/* example_tasks.c: the task functions the examples run (libescher_example_tasks.so). */
#include <stdint.h>
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
        const char *a = esc_task_arg(ctx, i, &n);
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
