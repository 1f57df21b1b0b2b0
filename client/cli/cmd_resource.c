/* cmd_resource.c: `escher resource set|add|delete|list`, over the SDK's calls.
 *
 * A CLI call is a short-lived, detached job: what it creates outlives the call and lives
 * in --namespace (default "default") until `escher resource delete` removes it. */
#include "cli.h"
#include "res_args.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: escher resource set NAME QTY [TARGET] [--namespace NS] [--no-wait]\n"
    "       escher resource add NAME DELTA [TARGET] [--namespace NS] [--no-wait]\n"
    "       escher resource delete NAME [TARGET] [--namespace NS] [--no-wait]\n"
    "       escher resource list [--namespace NS] [--json]\n"
    "\n"
    "NAME is a short name (A-Z a-z 0-9 _ . -, at most 64) in NS, or a full name NS/NAME.\n"
    "QTY is a decimal with at most 4 decimals (\"2\", \"0.25\") or \"inf\"; DELTA may be\n"
    "negative (\"-0.5\").\n"
    "\n"
    "TARGET (default: this machine's node):\n"
    "  --node ID                     one node\n"
    "  --where RES=QTY,... [--num-nodes K]\n"
    "                                K nodes (default 1) with RES=QTY,... available;\n"
    "                                short ephemeral names there are in NS\n"
    "  --where KEY=VALUE,... [--num-nodes K]\n"
    "                                an item whose value is not a quantity is a label\n"
    "                                (escher start --labels): every alive node carrying\n"
    "                                all the labels (and any RES=QTY of the list\n"
    "                                available), or K of them; delete removes the copies\n"
    "                                on every such node\n"
    "  --where-label KEY=VALUE,...   labels only, whatever the values look like\n"
    "  --all-nodes                   every alive node\n"
    "\n"
    "  --namespace NS  the namespace (default \"default\"; for list: all)\n"
    "  --no-wait       return once committed, without waiting for the nodes to apply it\n"
    "  --json          (list) print {\"seq\": N, \"resources\": [{\"node\", \"name\",\n"
    "                  \"namespace\", \"owner\", \"total\", \"held\", \"available\"}]}\n";

/* How long a write waits for the nodes to apply it, so that `escher status` right after
 * shows the change; a slow node only earns a warning, the write itself succeeded. */
#define APPLY_WAIT_MS 5000

/* ------------------------------------------------------------------ writes */

static const char *target_text(const esc_target *t, char *buf, size_t len)
{
    switch (t->kind) {
    case ESC_TARGET_NODE:
        snprintf(buf, len, "node %s", t->node_id);
        break;
    case ESC_TARGET_SELECTOR:
        snprintf(buf, len, "%u node%s matching --where", t->num_nodes,
                 t->num_nodes == 1 ? "" : "s");
        break;
    case ESC_TARGET_ALL:
        snprintf(buf, len, "all nodes");
        break;
    case ESC_TARGET_LABELS:
        if (t->num_nodes)
            snprintf(buf, len, "%u node%s with the labels", t->num_nodes,
                     t->num_nodes == 1 ? "" : "s");
        else
            snprintf(buf, len, "every node with the labels");
        break;
    default:
        snprintf(buf, len, "the local node");
    }
    return buf;
}

/* Waits until every alive node applied seq; a timeout is only a warning. */
static void wait_applied(esc_client *c, uint64_t seq)
{
    esc_status st;
    if (esc_wait_applied(c, seq, NULL, 0, APPLY_WAIT_MS, &st) != ESC_OK)
        cli_warn("committed as seq %" PRIu64 " but not yet applied everywhere: %s: %s", seq,
                 esc_status_name(st.code), st.message);
}

/* Runs one write; verb is "set", "add" or "delete". */
static int do_write(esc_client *c, const res_args *a, const char *verb, int64_t q,
                    bool unbounded)
{
    esc_status st;
    uint64_t seq = 0;
    int rc;
    if (!strcmp(verb, "set"))
        rc = unbounded ? esc_resource_set_unbounded(c, a->name, &a->target, &seq, &st)
                       : esc_resource_set(c, a->name, q, &a->target, &seq, &st);
    else if (!strcmp(verb, "add"))
        rc = esc_resource_add(c, a->name, q, &a->target, &seq, &st);
    else
        rc = esc_resource_delete(c, a->name, &a->target, &seq, &st);
    if (rc != ESC_OK)
        return cli_status_fail(&st);
    if (!a->no_wait)
        wait_applied(c, seq);
    char qbuf[48], tbuf[256];
    cli_fmt_qty(NULL, q, unbounded, false, qbuf, sizeof qbuf);
    const char *what = !strcmp(verb, "set") ? "set to " : !strcmp(verb, "add") ? "changed by "
                                                                                : "deleted";
    printf("%s/%s %s%s on %s (seq %" PRIu64 ")\n", esc_client_namespace(c), a->name, what,
           strcmp(verb, "delete") ? qbuf : "", target_text(&a->target, tbuf, sizeof tbuf), seq);
    return CLI_EXIT_OK;
}

static int cmd_write(const cli_globals *g, res_args *a, const char *verb)
{
    int64_t q;
    bool unbounded;
    int rc = res_args_write(a, verb, &q, &unbounded);
    if (rc != 0)
        return rc;
    esc_client *c;
    if ((rc = cli_connect(g, a->ns, &c)) != CLI_EXIT_OK)
        return rc;
    rc = do_write(c, a, verb, q, unbounded);
    esc_disconnect(c);
    return rc;
}

/* ------------------------------------------------------------------ list */

static json_t *row_json(const esc_node_status *n, const esc_resource_info *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "node", json_string(n->id));
    json_object_set_new(o, "name", json_string(r->name));
    json_object_set_new(o, "namespace", json_string(r->namespace_ ? r->namespace_ : ""));
    json_object_set_new(o, "owner", json_string(r->owner ? r->owner : ""));
    json_object_set_new(o, "total", cli_json_qty(r->total, r->unbounded));
    json_object_set_new(o, "held", cli_json_qty(r->held, false));
    json_object_set_new(o, "available", cli_json_qty(r->available, r->unbounded));
    return o;
}

static void print_row(const esc_node_status *n, const esc_resource_info *r)
{
    char t[48], h[48], av[48];
    printf("%-16s  %-32s %10s %10s %10s  %s\n", n->id, r->name,
           cli_fmt_qty(r->name, r->total, r->unbounded, true, t, sizeof t),
           cli_fmt_qty(r->name, r->held, false, true, h, sizeof h),
           cli_fmt_qty(r->name, r->available, r->unbounded, true, av, sizeof av),
           r->owner && r->owner[0] ? r->owner : "detached");
}

static bool listed(const res_args *a, const esc_resource_info *r)
{
    return r->ephemeral && (!a->ns || (r->namespace_ && !strcmp(a->ns, r->namespace_)));
}

static int print_list(const res_args *a, const esc_cluster_status *s)
{
    json_t *rows = a->json ? json_array() : NULL;
    size_t count = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        for (size_t j = 0; j < s->nodes[i].nresources; j++) {
            const esc_resource_info *r = &s->nodes[i].resources[j];
            if (!listed(a, r))
                continue;
            if (rows)
                json_array_append_new(rows, row_json(&s->nodes[i], r));
            else if (count++ == 0)
                printf("%-16s  %-32s %10s %10s %10s  %s\n", "NODE", "NAME", "TOTAL", "HELD",
                       "AVAILABLE", "OWNER");
            if (!rows)
                print_row(&s->nodes[i], r);
        }
    if (rows) {
        json_t *root = json_object();
        json_object_set_new(root, "seq", json_integer((json_int_t)s->seq));
        json_object_set_new(root, "resources", rows);
        return cli_json_print(root);
    }
    if (count == 0)
        printf("no ephemeral resources%s%s\n", a->ns ? " in namespace " : "", a->ns ? a->ns : "");
    return CLI_EXIT_OK;
}

static int cmd_list(const cli_globals *g, res_args *a)
{
    if (a->npos != 0)
        return cli_usage("usage: escher resource list [--namespace NS] [--json]");
    if (a->node || a->where || a->where_label || a->all_nodes || a->num_nodes)
        return cli_usage("`escher resource list` takes no target");
    esc_client *c;
    int rc = cli_connect(g, NULL, &c);
    if (rc != CLI_EXIT_OK)
        return rc;
    esc_cluster_status *s = NULL;
    esc_status st;
    rc = esc_get_cluster_status(c, &s, &st) == ESC_OK ? print_list(a, s) : cli_status_fail(&st);
    esc_cluster_status_free(s);
    esc_disconnect(c);
    return rc;
}

/* ------------------------------------------------------------------ command */

int cmd_resource(const cli_globals *g, int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("usage: escher resource set|add|delete|list ... (see --help)");
    const char *verb = argv[0];
    if (!strcmp(verb, "-h") || !strcmp(verb, "--help")) {
        fputs(usage, stdout);
        return CLI_EXIT_OK;
    }
    res_args a = {0};
    int rc = res_args_parse(&a, argc - 1, argv + 1, usage);
    if (rc == 0) {
        if (!strcmp(verb, "list"))
            rc = cmd_list(g, &a);
        else if (!strcmp(verb, "set") || !strcmp(verb, "add") || !strcmp(verb, "delete"))
            rc = cmd_write(g, &a, verb);
        else
            rc = cli_usage("unknown resource command \"%s\" (set, add, delete, list)", verb);
    }
    res_args_free(&a);
    return rc == CLI_HELP ? CLI_EXIT_OK : rc;
}
