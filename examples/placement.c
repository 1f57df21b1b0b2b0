/* placement.c: places tasks with ephemeral resources, without any scheduler policy.
 *
 * Creates a resource "lane" of capacity 2 on one node chosen by a selector, then submits
 * 6 tasks that each request one "lane": they all run on that node (spilled there when
 * submitted elsewhere), at most 2 at a time. Run against a cluster: `escher start
 * --head` (and more nodes with `escher start --address ...`), then `placement`. */
#include <stdlib.h>

#include "example_common.h"

static int run_wave(esc_client *c, const char *lib, const char *lane, int count)
{
    esc_amount need[] = {{.name = lane, .value = ESC_QTY(1)}};
    esc_task_spec spec = {.library = lib, .symbol = "where", .resources = need, .nresources = 1};
    esc_ref *refs[16];
    esc_status st;
    for (int i = 0; i < count; i++)
        if (esc_task_submit(c, &spec, &refs[i], NULL, &st) != ESC_OK)
            return example_fail("placement", "submit", &st);
    for (int i = 0; i < count; i++) {
        void *v = NULL;
        size_t len;
        if (esc_get(c, refs[i], 30000, &v, &len, &st) != ESC_OK)
            return example_fail("placement", "get", &st);
        printf("  task %d ran on node %s\n", i, (char *)v);
        free(v);
        esc_ref_free(refs[i]);
    }
    return 0;
}

int main(void)
{
    char lib[3100];
    example_library(lib, sizeof lib);
    esc_client *c;
    esc_status st;
    esc_connect_opts opts = {.namespace_ = "placement"};
    if (esc_connect(&opts, &c, &st) != ESC_OK)
        return example_fail("placement", "connect", &st);
    esc_amount cpu[] = {{.name = "CPU", .value = ESC_QTY(1)}};
    esc_target pick = {.kind = ESC_TARGET_SELECTOR, .where = cpu, .nwhere = 1, .num_nodes = 1};
    uint64_t seq;
    if (esc_resource_set(c, "lane", ESC_QTY(2), &pick, &seq, &st) != ESC_OK ||
        esc_wait_applied(c, seq, NULL, 0, 5000, &st) != ESC_OK)
        return example_fail("placement", "create lane", &st);
    printf("lane (capacity 2) created; 6 tasks that each need one lane:\n");
    int rc = run_wave(c, lib, "placement/lane", 6);
    esc_disconnect(c); /* the job ends: its lane goes with it */
    return rc;
}
