/* res_args.c: parsing `escher resource`'s arguments (res_args.h). */
#include "res_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qty.h"
#include "xalloc.h"

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
    if (a->nlabels == RES_MAX_WHERE)
        return cli_usage("--where takes at most %d labels", RES_MAX_WHERE);
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
            if (*nwhere == RES_MAX_WHERE)
                return cli_usage("--where takes at most %d resources", RES_MAX_WHERE);
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
        a->where_copy = esc_xstrdup(a->where);
        rc = parse_items(a, a->where_copy, false, &n);
    }
    if (rc == 0 && a->where_label) {
        a->label_copy = esc_xstrdup(a->where_label);
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

int res_args_parse(res_args *a, int argc, char **argv, const char *usage)
{
    const cli_opt opts[] = {
        {"--node", &a->node, NULL},       {"--where", &a->where, NULL},
        {"--where-label", &a->where_label, NULL},
        {"--num-nodes", &a->num_nodes, NULL}, {"--all-nodes", NULL, &a->all_nodes},
        {"--namespace", &a->ns, NULL},    {"--no-wait", NULL, &a->no_wait},
        {"--json", NULL, &a->json},       {NULL, NULL, NULL},
    };
    int rc = cli_parse(argc, argv, opts, a->pos, 3, &a->npos, usage);
    if (rc == 0 && a->ns && !esc_name_valid(a->ns))
        rc = cli_usage("invalid namespace \"%s\"", a->ns);
    return rc;
}

int res_args_write(res_args *a, const char *verb, int64_t *q, bool *unbounded)
{
    bool is_delete = !strcmp(verb, "delete");
    int want = is_delete ? 1 : 2;
    if (a->npos != want)
        return cli_usage(is_delete ? "usage: escher resource delete NAME [TARGET]"
                                   : "usage: escher resource %s NAME QTY [TARGET]",
                         verb);
    if (a->json)
        return cli_usage("--json goes with `escher resource list`");
    *q = 0;
    *unbounded = false;
    int rc = parse_name(a, a->pos[0]);
    if (rc == 0 && !is_delete)
        rc = parse_qty(a->pos[1], !strcmp(verb, "set"), q, unbounded);
    if (rc == 0)
        rc = parse_target(a);
    return rc;
}

void res_args_free(res_args *a)
{
    free(a->where_copy);
    free(a->label_copy);
    a->where_copy = a->label_copy = NULL;
}
