/* fanout.c: fans out N tasks and gathers their results.
 *
 * Submits square(i) for i = 1..N (all at once: submission does not wait), then a sum
 * task whose arguments are the N return references (the worker gets their values), and
 * reads the total, checking it against n(n+1)(2n+1)/6. Run against a cluster:
 * `escher start --head`, then `fanout [N]`. */
#include <stdlib.h>

#include "example_common.h"

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100;
    if (n < 1 || n > 100000) {
        fprintf(stderr, "usage: fanout [N (1..100000)]\n");
        return 2;
    }
    char lib[3100];
    example_library(lib, sizeof lib);
    esc_client *c;
    esc_status st;
    if (esc_connect(NULL, &c, &st) != ESC_OK)
        return example_fail("fanout", "connect", &st);

    esc_ref **squares = calloc((size_t)n, sizeof *squares);
    esc_task_arg *args = calloc((size_t)n, sizeof *args);
    char text[32];
    int rc = ESC_OK;
    for (long i = 0; i < n && rc == ESC_OK; i++) {
        snprintf(text, sizeof text, "%ld", i + 1);
        esc_task_arg a = {.data = text, .len = strlen(text)};
        esc_task_spec spec = {.library = lib, .symbol = "square", .args = &a, .nargs = 1};
        rc = esc_task_submit(c, &spec, &squares[i], NULL, &st);
        args[i].ref = squares[i];
    }
    esc_ref *total = NULL;
    if (rc == ESC_OK) {
        esc_task_spec sum = {.library = lib, .symbol = "sum", .args = args, .nargs = (size_t)n};
        rc = esc_task_submit(c, &sum, &total, NULL, &st);
    }
    void *value = NULL;
    size_t len = 0;
    if (rc == ESC_OK)
        rc = esc_get(c, total, 60000, &value, &len, &st);
    long long want = (long long)n * (n + 1) * (2 * n + 1) / 6;
    if (rc == ESC_OK)
        printf("sum of squares 1..%ld = %s (expected %lld): %s\n", n, (char *)value, want,
               atoll(value) == want ? "ok" : "WRONG");
    int exit_code = rc == ESC_OK && atoll(value) == want ? 0 : 1;
    if (rc != ESC_OK)
        example_fail("fanout", "tasks", &st);
    free(value);
    for (long i = 0; i < n; i++)
        esc_ref_free(squares[i]);
    esc_ref_free(total);
    free(squares);
    free(args);
    esc_disconnect(c);
    return exit_code;
}
