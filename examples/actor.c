/* actor.c: an actor keeps state between calls and runs them in order.
 *
 * Creates an account actor holding one CPU for its life, sends it deposits and
 * withdrawals without waiting (calls of one caller run in the order made), reads every
 * balance back, shows that an overdraft fails as an error object, then kills the actor.
 * Run against a cluster: `escher start --head`, then `actor`. */
#include <stdlib.h>

#include "example_common.h"

static esc_ref *apply(esc_client *c, esc_actor *a, const char *amount)
{
    esc_task_arg arg = {.data = amount, .len = strlen(amount)};
    esc_ref *r = NULL;
    esc_status st;
    if (esc_actor_call(c, a, "account_apply", &arg, 1, 1, &r, &st) != ESC_OK) {
        example_fail("actor", "call", &st);
        exit(1);
    }
    return r;
}

int main(void)
{
    char lib[3100];
    example_library(lib, sizeof lib);
    esc_client *c;
    esc_status st;
    if (esc_connect(NULL, &c, &st) != ESC_OK)
        return example_fail("actor", "connect", &st);
    esc_amount cpu[] = {{.name = "CPU", .value = ESC_QTY(1)}};
    esc_actor_spec spec = {.name = "account", .library = lib, .init_symbol = "account_open",
                           .resources = cpu, .nresources = 1};
    esc_actor *a;
    if (esc_actor_create(c, &spec, &a, &st) != ESC_OK)
        return example_fail("actor", "create", &st);
    const char *moves[] = {"100", "-30", "45", "-200", "-15"};
    esc_ref *refs[5];
    for (int i = 0; i < 5; i++)
        refs[i] = apply(c, a, moves[i]);
    int rc = 0;
    for (int i = 0; i < 5; i++) {
        void *v = NULL;
        size_t len;
        int code = esc_get(c, refs[i], 30000, &v, &len, &st);
        if (code == ESC_OK)
            printf("  %5s -> balance %s\n", moves[i], (char *)v);
        else if (code == ESC_ABORTED)
            printf("  %5s -> refused (%s)\n", moves[i], st.message);
        else
            rc = example_fail("actor", "get", &st);
        free(v);
        esc_ref_free(refs[i]);
    }
    if (esc_actor_kill(c, a, &st) != ESC_OK)
        rc = example_fail("actor", "kill", &st);
    else
        printf("actor %s killed; its CPU is free again\n", esc_actor_id(a));
    esc_actor_free(a);
    esc_disconnect(c);
    return rc;
}
