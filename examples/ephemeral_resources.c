/* ephemeral_resources.c: a driver that shapes its cluster with ephemeral resources.
 *
 * It creates a resource on every node and a pair of "lane" resources on two nodes in one
 * atomic batch, waits until every raylet admits against them, grows and shrinks them with
 * deltas, prints what the cluster reports, and ends; the job's resources go with it.
 * Run it against a running cluster: `escher start --head`, then `ephemeral_resources`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escher/escher.h"

static int fail(const char *what, const esc_status *st)
{
    fprintf(stderr, "ephemeral_resources: %s: %s: %s\n", what, esc_status_name(st->code),
            st->message);
    return 1;
}

static void print_status(esc_client *c, const char *ns)
{
    esc_cluster_status *s = NULL;
    esc_status st;
    if (esc_get_cluster_status(c, &s, &st) != ESC_OK) {
        fail("status", &st);
        return;
    }
    printf("cluster applied up to seq %llu\n", (unsigned long long)s->seq);
    for (size_t n = 0; n < s->nnodes; n++) {
        for (size_t r = 0; r < s->nodes[n].nresources; r++) {
            const esc_resource_info *ri = &s->nodes[n].resources[r];
            if (!ri->namespace_ || strcmp(ri->namespace_, ns) != 0)
                continue;
            printf("  node %s  %-24s total %.4g  held %.4g  available %.4g\n", s->nodes[n].id,
                   ri->name, ri->total / 1e4, ri->held / 1e4, ri->available / 1e4);
        }
    }
    esc_cluster_status_free(s);
}

int main(void)
{
    esc_client *c;
    esc_status st;
    esc_connect_opts opts = {.namespace_ = "example"};
    if (esc_connect(&opts, &c, &st) != ESC_OK)
        return fail("connect", &st);
    printf("job %s in namespace %s\n", esc_client_job_id(c), esc_client_namespace(c));

    /* One atomic batch: a per-node token everywhere and two lanes on CPU nodes. */
    esc_batch *b = esc_batch_new();
    esc_target all = ESC_ALL_NODES;
    esc_amount cpu[] = {{.name = "CPU", .value = ESC_QTY(1)}};
    esc_target cpu_node = {.kind = ESC_TARGET_SELECTOR, .where = cpu, .nwhere = 1, .num_nodes = 1};
    esc_batch_set(b, "token", ESC_QTY(1), &all);
    esc_batch_set(b, "lane", ESC_QTY(2), &cpu_node);
    uint64_t seq;
    int rc = esc_batch_commit(c, b, &seq, &st);
    esc_batch_free(b);
    if (rc != ESC_OK)
        return fail("batch", &st);
    if (esc_wait_applied(c, seq, NULL, 0, 5000, &st) != ESC_OK)
        return fail("wait_applied", &st);
    printf("created (seq %llu)\n", (unsigned long long)seq);
    print_status(c, "example");

    /* Deltas: concurrent writers could do this too without losing updates. */
    if (esc_resource_add(c, "token", ESC_QTY(0.5), &all, &seq, &st) != ESC_OK ||
        esc_wait_applied(c, seq, NULL, 0, 5000, &st) != ESC_OK)
        return fail("add", &st);
    printf("grown by 0.5 (seq %llu)\n", (unsigned long long)seq);
    print_status(c, "example");

    if (esc_resource_delete(c, "token", &all, &seq, &st) != ESC_OK ||
        esc_wait_applied(c, seq, NULL, 0, 5000, &st) != ESC_OK)
        return fail("delete", &st);
    printf("deleted token (seq %llu); lane goes when the job ends\n", (unsigned long long)seq);
    esc_disconnect(c);
    return 0;
}
