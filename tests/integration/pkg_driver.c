/* pkg_driver.c: a job's entrypoint for test_packages. It joins its job (ESCHER_JOB_ID),
 * submits `echo ARG` from LIBRARY (a path relative to the job's package) requesting
 * RESOURCE=1, and exits 0 when the result is ARG, else 1 with the reason on stderr.
 *
 * Usage: pkg_driver LIBRARY RESOURCE ARG */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escher/escher.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: pkg_driver LIBRARY RESOURCE ARG\n");
        return 2;
    }
    esc_client *c;
    esc_status st;
    if (esc_connect(NULL, &c, &st) != ESC_OK) {
        fprintf(stderr, "pkg_driver: connect: %s\n", st.message);
        return 1;
    }
    esc_amount res = {.name = argv[2], .value = ESC_QTY(1)};
    esc_task_arg arg = {.data = argv[3], .len = strlen(argv[3])};
    esc_task_spec spec = {.library = argv[1], .symbol = "echo", .resources = &res,
                          .nresources = 1, .args = &arg, .nargs = 1};
    esc_ref *ref = NULL;
    void *v = NULL;
    size_t len = 0;
    int rc = esc_task_submit(c, &spec, &ref, NULL, &st);
    if (rc == ESC_OK)
        rc = esc_get(c, ref, 60000, &v, &len, &st);
    bool ok = rc == ESC_OK && len == strlen(argv[3]) && !memcmp(v, argv[3], len);
    if (!ok)
        fprintf(stderr, "pkg_driver: %s: %s\n", esc_status_name(rc),
                rc == ESC_OK ? "unexpected value" : st.message);
    free(v);
    esc_ref_free(ref);
    esc_disconnect(c);
    return ok ? 0 : 1;
}
