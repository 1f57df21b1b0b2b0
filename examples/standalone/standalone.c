/* standalone.c: an application of the installed escher SDK (docs/deploy.md, "Installing the
 * SDK"). It builds against an installed prefix only: CMakeLists.txt (find_package) or
 * Makefile (pkg-config), never the source tree.
 *
 * Connects to the local cluster (`escher start --head` first), creates an ephemeral
 * resource "slot" with 2 units on every node, runs square(1..3) from the task library
 * libstandalone_tasks.so with one slot each, prints the results and their sum, runs a
 * task that uses the SDK itself (its namespace: the job's), and disconnects (the job
 * ends; its resource goes with it).
 *
 * Usage: standalone [TASK_LIBRARY]   (default: libstandalone_tasks.so next to this program) */
#define _POSIX_C_SOURCE 200809L /* readlink */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <escher/escher.h>

#define NTASKS 3

static int fail(const char *what, const esc_status *st)
{
    fprintf(stderr, "standalone: %s: %s: %s\n", what, esc_status_name(st->code), st->message);
    return 1;
}

/* The task library: argv[1], else libstandalone_tasks.so next to this executable (a
 * worker dlopens it, so the path must be absolute). */
static void task_library(int argc, char **argv, char *out, size_t len)
{
    if (argc > 1) {
        snprintf(out, len, "%s", argv[1]);
        return;
    }
    char self[2048];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    snprintf(out, len, "%s/libstandalone_tasks.so", n > 0 ? self : ".");
}

int main(int argc, char **argv)
{
    char lib[4096];
    task_library(argc, argv, lib, sizeof lib);

    esc_client *c;
    esc_status st;
    esc_connect_opts opts = {.namespace_ = "standalone"};
    if (esc_connect(&opts, &c, &st) != ESC_OK)
        return fail("connect", &st);

    /* 2 slots on every node; once applied, every raylet admits tasks against them. */
    esc_target all = ESC_ALL_NODES;
    uint64_t seq;
    if (esc_resource_set(c, "slot", ESC_QTY(2), &all, &seq, &st) != ESC_OK ||
        esc_wait_applied(c, seq, NULL, 0, 10000, &st) != ESC_OK) {
        int rc = fail("resource set", &st);
        esc_disconnect(c);
        return rc;
    }
    char slot[256];
    snprintf(slot, sizeof slot, "%s/slot", esc_client_namespace(c));
    printf("resource %s: 2 per node\n", slot);

    esc_amount need[] = {{.name = slot, .value = ESC_QTY(1)}};
    esc_ref *refs[NTASKS] = {0};
    char text[NTASKS][16];
    int rc = ESC_OK;
    for (int i = 0; i < NTASKS && rc == ESC_OK; i++) {
        snprintf(text[i], sizeof text[i], "%d", i + 1);
        esc_task_arg arg = {.data = text[i], .len = strlen(text[i])};
        esc_task_spec spec = {.library = lib, .symbol = "square", .args = &arg, .nargs = 1,
                              .resources = need, .nresources = 1};
        rc = esc_task_submit(c, &spec, &refs[i], NULL, &st);
    }
    long long sum = 0;
    for (int i = 0; i < NTASKS && rc == ESC_OK; i++) {
        void *value = NULL;
        size_t len = 0;
        rc = esc_get(c, refs[i], 30000, &value, &len, &st);
        if (rc == ESC_OK) {
            printf("square(%d) = %s\n", i + 1, (char *)value);
            sum += atoll(value);
        }
        free(value);
    }
    if (rc == ESC_OK)
        printf("sum = %lld\n", sum);

    /* A task that uses the SDK itself (esc_task_client): its worker loads libescher.so. */
    esc_ref *ns_ref = NULL;
    bool ns_ok = false;
    if (rc == ESC_OK) {
        esc_task_spec spec = {.library = lib, .symbol = "namespace"};
        rc = esc_task_submit(c, &spec, &ns_ref, NULL, &st);
    }
    if (rc == ESC_OK) {
        void *value = NULL;
        size_t len = 0;
        rc = esc_get(c, ns_ref, 30000, &value, &len, &st);
        if (rc == ESC_OK) {
            printf("a task's namespace = %s\n", (char *)value);
            ns_ok = strcmp(value, esc_client_namespace(c)) == 0;
        }
        free(value);
    }
    esc_ref_free(ns_ref);
    if (rc != ESC_OK)
        fail("tasks", &st);
    for (int i = 0; i < NTASKS; i++)
        esc_ref_free(refs[i]);
    esc_disconnect(c);
    return rc == ESC_OK && sum == 14 && ns_ok ? 0 : 1;
}
