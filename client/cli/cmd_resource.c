/* cmd_resource.c: `escher resource set|add|delete|list`, over the SDK's calls.
 *
 * A CLI call is a short-lived, detached job: what it creates outlives the call and lives
 * in --namespace (default "default") until `escher resource delete` removes it. */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "qty.h"

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
#define MAX_WHERE 32

typedef struct {
    const char *node, *where, *where_label, *num_nodes, *ns;
    bool all_nodes, no_wait, json;
    const char *pos[3];
    int npos;
    /* derived */
    char ns_buf[ESC_NAME_MAX + 1], name_buf[ESC_NAME_MAX + 1];
    const char *name;
    esc_target target;
    esc_amount where_amounts[MAX_WHERE];
    esc_label where_labels[MAX_WHERE];
    size_t nlabels;
    char *where_copy, *label_copy; /* own the strings of where_amounts, where_labels */
} res_args;

/* ------------------------------------------------------------------ parsing */

static int parse_qty(const char *text, bool allow_inf, int64_t *q, bool *unbounded)
{
    bool unb = false;
    if (esc_qty_parse(text, q, &unb) != 0 || (unb && !allow_inf))
        return cli_usage("invalid quantity \"%s\": a decimal with at most 4 decimals%s", text,
                         allow_inf ? ", or inf" : "");
    if (unbounded)
        *unbounded = unb;
    return 0;
}

static int add_label(res_args *a, char *key, const char *value)
{
    if (a->nlabels == MAX_WHERE)
        return cli_usage("--where takes at most %d labels", MAX_WHERE);
    a->where_labels[a->nlabels++] = (esc_label){key, value};
    return 0;
}

/* "CPU=1,GPU=0.5,zone=a" into a->where_amounts (quantities) and a->where_labels (any
 * other value); labels_only: every item is a label (--where-label). */
static int parse_items(res_args *a, char *list, bool labels_only, size_t *nwhere)
{
    const char *flag = labels_only ? "--where-label" : "--where";
    char *save = NULL;
    size_t items = 0;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok)
            return cli_usage("%s wants %s,..., not \"%s\"", flag,
                             labels_only ? "KEY=VALUE" : "RES=QTY or KEY=VALUE", tok);
        *eq = '\0';
        items++;
        int64_t q;
        bool unb = false;
        int rc;
        if (!labels_only && esc_qty_parse(eq + 1, &q, &unb) == 0 && !unb) {
            if (*nwhere == MAX_WHERE)
                return cli_usage("--where takes at most %d resources", MAX_WHERE);
            a->where_amounts[(*nwhere)++] = (esc_amount){tok, q, false};
            continue;
        }
        if ((rc = add_label(a, tok, eq + 1)) != 0)
            return rc;
    }
    if (items == 0)
        return cli_usage("%s wants %s,...", flag, labels_only ? "KEY=VALUE" : "RES=QTY");
    return 0;
}

static int parse_where(res_args *a)
{
    size_t n = 0;
    int rc = 0;
    if (a->where) {
        a->where_copy = strdup(a->where);
        rc = parse_items(a, a->where_copy, false, &n);
    }
    if (rc == 0 && a->where_label) {
        a->label_copy = strdup(a->where_label);
        rc = parse_items(a, a->label_copy, true, &n);
    }
    if (rc != 0)
        return rc;
    if (a->nlabels)
        a->target = (esc_target){.kind = ESC_TARGET_LABELS, .where = a->where_amounts,
                                 .nwhere = n, .labels = a->where_labels,
                                 .nlabels = a->nlabels};
    else
        a->target = (esc_target){.kind = ESC_TARGET_SELECTOR, .where = a->where_amounts,
                                 .nwhere = n, .num_nodes = 1};
    return 0;
}

static int parse_target(res_args *a)
{
    bool where = a->where || a->where_label;
    int given = (a->node != NULL) + where + a->all_nodes;
    if (given > 1)
        return cli_usage("give at most one of --node, --where and --all-nodes");
    if (a->num_nodes && !where)
        return cli_usage("--num-nodes goes with --where");
    a->target = ESC_LOCAL;
    if (a->node)
        a->target = ESC_NODE(a->node);
    if (a->all_nodes)
        a->target = ESC_ALL_NODES;
    if (!where)
        return 0;
    int rc = parse_where(a);
    if (rc == 0 && a->num_nodes) {
        long long k;
        if ((rc = cli_parse_uint("--num-nodes", a->num_nodes, 1000000, &k)) == 0 && k == 0)
            rc = cli_usage("--num-nodes must be at least 1");
        a->target.num_nodes = (unsigned)k;
    }
    return rc;
}

/* NAME may be "ns/name": then its namespace must agree with --namespace, if given. */
static int parse_name(res_args *a, const char *text)
{
    a->name = text;
    if (!strchr(text, '/')) {
        a->ns = a->ns ? a->ns : "default";
        return 0;
    }
    /* The same status and exit code as a bad short name refused by the SDK. */
    if (esc_name_split(text, a->ns_buf, a->name_buf) != 0)
        return cli_fail("%s: invalid resource name \"%s\": NAME or NAMESPACE/NAME, each 1-64 "
                        "characters of A-Z a-z 0-9 _ . -",
                        esc_status_name(ESC_INVALID_ARGUMENT), text);
    if (a->ns && strcmp(a->ns, a->ns_buf) != 0)
        return cli_usage("%s is not in namespace %s", text, a->ns);
    a->ns = a->ns_buf;
    a->name = a->name_buf;
    return 0;
}

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
    bool is_delete = !strcmp(verb, "delete");
    int want = is_delete ? 1 : 2;
    if (a->npos != want)
        return cli_usage(is_delete ? "usage: escher resource delete NAME [TARGET]"
                                   : "usage: escher resource %s NAME QTY [TARGET]",
                         verb);
    if (a->json)
        return cli_usage("--json goes with `escher resource list`");
    int64_t q = 0;
    bool unbounded = false;
    int rc = parse_name(a, a->pos[0]);
    if (rc == 0 && !is_delete)
        rc = parse_qty(a->pos[1], !strcmp(verb, "set"), &q, &unbounded);
    if (rc == 0)
        rc = parse_target(a);
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
    const cli_opt opts[] = {
        {"--node", &a.node, NULL},       {"--where", &a.where, NULL},
        {"--where-label", &a.where_label, NULL},
        {"--num-nodes", &a.num_nodes, NULL}, {"--all-nodes", NULL, &a.all_nodes},
        {"--namespace", &a.ns, NULL},    {"--no-wait", NULL, &a.no_wait},
        {"--json", NULL, &a.json},       {NULL, NULL, NULL},
    };
    int rc = cli_parse(argc - 1, argv + 1, opts, a.pos, 3, &a.npos, usage);
    if (rc == 0 && a.ns && !esc_name_valid(a.ns))
        rc = cli_usage("invalid namespace \"%s\"", a.ns);
    if (rc == 0) {
        if (!strcmp(verb, "list"))
            rc = cmd_list(g, &a);
        else if (!strcmp(verb, "set") || !strcmp(verb, "add") || !strcmp(verb, "delete"))
            rc = cmd_write(g, &a, verb);
        else
            rc = cli_usage("unknown resource command \"%s\" (set, add, delete, list)", verb);
    }
    free(a.where_copy);
    free(a.label_copy);
    return rc == CLI_HELP ? CLI_EXIT_OK : rc;
}
