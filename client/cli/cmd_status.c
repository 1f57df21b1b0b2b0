/* cmd_status.c: `escher status [--json] [--watch [SECONDS]]`: the cluster's totals,
 * nodes (the head marked), and per node each resource's total, held and available, with
 * owner and namespace of ephemeral resources. */
#include "cli.h"
#include "xalloc.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: escher status [--json] [--watch [SECONDS]]\n"
    "\n"
    "Shows the cluster's totals (each resource summed over the alive nodes), then every\n"
    "node (id, address, state; the head marked) with its labels, each resource's total,\n"
    "held and available, and the tasks waiting there with the resources they miss;\n"
    "ephemeral resources appear under their full name \"<namespace>/<name>\" with their\n"
    "owner (a job id, or \"detached\") and namespace.\n"
    "\n"
    "  --json     print {\"seq\": N, \"totals\": {NAME: {\"total\", \"held\", \"available\",\n"
    "             \"nodes\"}}, \"nodes\": [{\"id\", \"address\", \"state\", \"head\",\n"
    "             \"resources\": {NAME: {\"total\", \"held\", \"available\"[, \"owner\",\n"
    "             \"namespace\"]}}}]}; numbers are decimals, an unbounded capacity is \"inf\"\n"
    "  --watch [SECONDS]  redraw every SECONDS (default 2, 0.1..3600) until interrupted\n"
    "             (Ctrl-C: exit 0); with --json, one document per line each time\n";

/* ------------------------------------------------------------------ totals */

/* One resource summed over the alive nodes. */
typedef struct {
    const char *name;   /* borrowed from the status */
    int64_t total, held, available;
    bool unbounded;
    unsigned nodes;
} total_row;

static int total_cmp(const void *a, const void *b)
{
    return strcmp(((const total_row *)a)->name, ((const total_row *)b)->name);
}

static total_row *find_total(total_row *rows, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].name, name))
            return &rows[i];
    return NULL;
}

/* Every resource name of the alive and draining nodes, summed, in name order. */
static total_row *cluster_totals(const esc_cluster_status *s, size_t *n)
{
    size_t cap = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        cap += s->nodes[i].nresources;
    total_row *rows = esc_xcalloc(cap + 1, sizeof *rows);
    *n = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *nd = &s->nodes[i];
        if (!strcmp(nd->state, "DEAD"))
            continue;
        for (size_t k = 0; k < nd->nresources; k++) {
            const esc_resource_info *r = &nd->resources[k];
            if (r->deleted)
                continue;
            total_row *t = find_total(rows, *n, r->name);
            if (!t)
                *(t = &rows[(*n)++]) = (total_row){.name = r->name};
            t->total += r->total;
            t->held += r->held;
            t->available += r->available;
            t->unbounded |= r->unbounded;
            t->nodes++;
        }
    }
    qsort(rows, *n, sizeof *rows, total_cmp);
    return rows;
}

/* ------------------------------------------------------------------ JSON */

static json_t *resource_json(const esc_resource_info *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "total", cli_json_qty(r->total, r->unbounded));
    json_object_set_new(o, "held", cli_json_qty(r->held, false));
    json_object_set_new(o, "available", cli_json_qty(r->available, r->unbounded));
    if (r->ephemeral) {
        json_object_set_new(o, "owner", json_string(r->owner ? r->owner : ""));
        json_object_set_new(o, "namespace", json_string(r->namespace_ ? r->namespace_ : ""));
    }
    if (r->deleted)
        json_object_set_new(o, "deleted", json_true());
    return o;
}

static json_t *demand_json(const esc_demand *d)
{
    json_t *shape = json_object();
    for (size_t i = 0; i < d->nshape; i++)
        json_object_set_new(shape, d->shape[i].name, cli_json_qty(d->shape[i].value, false));
    json_t *missing = json_array();
    for (size_t i = 0; i < d->nmissing; i++)
        json_array_append_new(missing, json_string(d->missing[i]));
    json_t *o = json_object();
    json_object_set_new(o, "shape", shape);
    json_object_set_new(o, "count", json_integer(d->count));
    json_object_set_new(o, "infeasible", json_boolean(d->infeasible));
    json_object_set_new(o, "missing", missing);
    return o;
}

static json_t *node_json(const esc_node_status *n)
{
    json_t *res = json_object();
    for (size_t i = 0; i < n->nresources; i++)
        json_object_set_new(res, n->resources[i].name, resource_json(&n->resources[i]));
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(n->id));
    json_object_set_new(o, "address", json_string(n->address));
    json_object_set_new(o, "state", json_string(n->state));
    json_object_set_new(o, "head", json_boolean(n->head));
    json_object_set_new(o, "resources", res);
    json_object_set_new(o, "cpu_shares", json_pack("{s:b, s:s}", "enforced",
                                                   n->cpu_shares_enforced, "detail",
                                                   n->cpu_shares ? n->cpu_shares : ""));
    json_t *labels = json_object();
    for (size_t i = 0; i < n->nlabels; i++)
        json_object_set_new(labels, n->labels[i].key, json_string(n->labels[i].value));
    json_object_set_new(o, "labels", labels);
    /* Only when tasks wait: an idle node keeps the six keys of the documented shape. */
    if (n->ndemand) {
        json_t *demand = json_array();
        for (size_t i = 0; i < n->ndemand; i++)
            json_array_append_new(demand, demand_json(&n->demand[i]));
        json_object_set_new(o, "demand", demand);
    }
    return o;
}

/* Every actor's published state, in ids order ("actors" of the JSON form). */
typedef struct {
    char **ids;
    size_t n;
    esc_actor_info *info;
} actor_list;

static void actors_read(esc_client *c, actor_list *l)
{
    memset(l, 0, sizeof *l);
    if (esc_actor_list(c, &l->ids, &l->n, NULL) != ESC_OK)
        return; /* status shows the nodes all the same */
    l->info = esc_xcalloc(l->n + 1, sizeof *l->info);
    for (size_t i = 0; i < l->n; i++)
        esc_actor_info_of(c, l->ids[i], &l->info[i], NULL);
}

static void actors_free(actor_list *l)
{
    esc_kv_keys_free(l->ids, l->n);
    free(l->info);
}

static json_t *actor_json(const char *id, const esc_actor_info *a)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "state", json_string(esc_actor_state_name(a->state)));
    json_object_set_new(o, "restarts", json_integer(a->restarts));
    json_object_set_new(o, "max_restarts", json_integer(a->max_restarts));
    json_object_set_new(o, "node", json_string(a->node_id));
    json_object_set_new(o, "why", json_string(a->why));
    return o;
}

/* The running jobs that granted their namespace (esc_namespace_grant) or names in it
 * (esc_namespace_grant_prefix). */
typedef struct {
    esc_job_info *jobs;
    size_t n;
} grant_list;

static bool has_grants(const esc_job_info *j)
{
    return (j->ngrants || j->nprefix_grants) && !strcmp(j->state, "RUNNING");
}

/* One grant entry: the jobs granted one prefix of j's namespace ("" the whole). */
typedef void (*grant_entry_fn)(void *ud, const esc_job_info *j, const char *prefix,
                               char *const *to, size_t n);

/* Calls fn for j's whole grants, then once per prefix (first-granted order) with every
 * job that holds it: one entry per (owner, prefix), as the table and JSON show them. */
static void grant_entries(const esc_job_info *j, grant_entry_fn fn, void *ud)
{
    if (j->ngrants)
        fn(ud, j, "", j->grants, j->ngrants);
    char **to = esc_xcalloc(j->nprefix_grants + 1, sizeof *to);
    for (size_t i = 0; i < j->nprefix_grants; i++) {
        const char *p = j->prefix_grants[i].prefix;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = !strcmp(j->prefix_grants[k].prefix, p);
        size_t n = 0;
        for (size_t k = i; k < j->nprefix_grants && !seen; k++)
            if (!strcmp(j->prefix_grants[k].prefix, p))
                to[n++] = j->prefix_grants[k].job_id;
        if (n)
            fn(ud, j, p, to, n);
    }
    free(to);
}

static void grant_json(void *ud, const esc_job_info *j, const char *prefix, char *const *to,
                       size_t n)
{
    json_t *arr = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(arr, json_string(to[k]));
    json_t *o = json_object();
    json_object_set_new(o, "namespace", json_string(j->namespace_));
    json_object_set_new(o, "owner", json_string(j->id));
    json_object_set_new(o, "prefix", json_string(prefix));
    json_object_set_new(o, "granted_to", arr);
    json_array_append_new(ud, o);
}

static json_t *grants_json(const grant_list *gl)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < gl->n; i++)
        if (has_grants(&gl->jobs[i]))
            grant_entries(&gl->jobs[i], grant_json, arr);
    return arr;
}

static json_t *totals_json(const esc_cluster_status *s)
{
    size_t n = 0;
    total_row *rows = cluster_totals(s, &n);
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, rows[i].name,
                            json_pack("{s:o, s:o, s:o, s:I}", "total",
                                      cli_json_qty(rows[i].total, rows[i].unbounded), "held",
                                      cli_json_qty(rows[i].held, false), "available",
                                      cli_json_qty(rows[i].available, rows[i].unbounded),
                                      "nodes", (json_int_t)rows[i].nodes));
    free(rows);
    return o;
}

static int print_json(const esc_cluster_status *s, const actor_list *l, const grant_list *gl)
{
    json_t *nodes = json_array();
    for (size_t i = 0; i < s->nnodes; i++)
        json_array_append_new(nodes, node_json(&s->nodes[i]));
    json_t *root = json_object();
    json_object_set_new(root, "seq", json_integer((json_int_t)s->seq));
    json_object_set_new(root, "totals", totals_json(s));
    json_object_set_new(root, "nodes", nodes);
    /* Only when there are actors: a cluster without keeps the documented two keys. */
    if (l->n) {
        json_t *actors = json_array();
        for (size_t i = 0; i < l->n; i++)
            json_array_append_new(actors, actor_json(l->ids[i], &l->info[i]));
        json_object_set_new(root, "actors", actors);
    }
    json_t *grants = grants_json(gl);
    if (json_array_size(grants)) /* only when some job granted its namespace */
        json_object_set_new(root, "grants", grants);
    else
        json_decref(grants);
    return cli_json_print(root);
}

/* ------------------------------------------------------------------ table */

static int name_width(const esc_node_status *n)
{
    int w = (int)strlen("RESOURCE");
    for (size_t i = 0; i < n->nresources; i++) {
        int l = (int)strlen(n->resources[i].name);
        w = l > w ? l : w;
    }
    return w;
}

static void print_resource_row(const esc_resource_info *r, int w)
{
    char t[48], h[48], a[48];
    cli_fmt_qty(r->name, r->total, r->unbounded, true, t, sizeof t);
    cli_fmt_qty(r->name, r->held, false, true, h, sizeof h);
    cli_fmt_qty(r->name, r->available, r->unbounded, true, a, sizeof a);
    printf("  %-*s %12s %12s %12s", w, r->name, t, h, a);
    if (r->ephemeral)
        printf("  %-16s %s", r->owner && r->owner[0] ? r->owner : "detached",
               r->namespace_ ? r->namespace_ : "");
    if (r->deleted)
        printf("  (deleted, held until released)");
    putchar('\n');
}

/* "3 tasks want {CPU: 1, ns/x: 2}  infeasible: missing ns/x" */
static void print_demand(const esc_demand *d)
{
    printf("  %u task%s waiting for {", d->count, d->count == 1 ? "" : "s");
    for (size_t i = 0; i < d->nshape; i++) {
        char q[48];
        cli_fmt_qty(d->shape[i].name, d->shape[i].value, false, true, q, sizeof q);
        printf("%s%s: %s", i ? ", " : "", d->shape[i].name, q);
    }
    printf("}");
    if (d->infeasible)
        printf("  infeasible");
    for (size_t i = 0; i < d->nmissing; i++)
        printf("%s%s", i ? ", " : ": missing ", d->missing[i]);
    putchar('\n');
}

static void print_totals(const esc_cluster_status *s)
{
    size_t n = 0;
    total_row *rows = cluster_totals(s, &n);
    int w = (int)strlen("RESOURCE");
    for (size_t i = 0; i < n; i++)
        w = (int)strlen(rows[i].name) > w ? (int)strlen(rows[i].name) : w;
    printf("\ntotals (alive nodes)\n  %-*s %12s %12s %12s  %s\n", w, "RESOURCE", "TOTAL", "HELD",
           "AVAILABLE", "NODES");
    for (size_t i = 0; i < n; i++) {
        char t[48], h[48], a[48];
        cli_fmt_qty(rows[i].name, rows[i].total, rows[i].unbounded, true, t, sizeof t);
        cli_fmt_qty(rows[i].name, rows[i].held, false, true, h, sizeof h);
        cli_fmt_qty(rows[i].name, rows[i].available, rows[i].unbounded, true, a, sizeof a);
        printf("  %-*s %12s %12s %12s  %u\n", w, rows[i].name, t, h, a, rows[i].nodes);
    }
    free(rows);
}

static void print_node(const esc_node_status *n)
{
    printf("\nnode %s%s  %s  %s  applied seq %" PRIu64 "\n", n->id, n->head ? " (head)" : "",
           n->address, n->state, n->applied_seq);
    printf("  CPU shares %s (%s)\n", n->cpu_shares_enforced ? "enforced" : "not enforced",
           n->cpu_shares && *n->cpu_shares ? n->cpu_shares : "not reported");
    if (n->nlabels) {
        printf("  labels");
        for (size_t i = 0; i < n->nlabels; i++)
            printf("%s%s=%s", i ? "," : " ", n->labels[i].key, n->labels[i].value);
        putchar('\n');
    }
    int w = name_width(n);
    printf("  %-*s %12s %12s %12s  %-16s %s\n", w, "RESOURCE", "TOTAL", "HELD", "AVAILABLE",
           "OWNER", "NAMESPACE");
    for (size_t i = 0; i < n->nresources; i++)
        print_resource_row(&n->resources[i], w);
    if (n->ndemand)
        printf("  pending:\n");
    for (size_t i = 0; i < n->ndemand; i++)
        print_demand(&n->demand[i]);
}

/* Live actors one per line; dead ones counted (--json lists them all). */
static void print_actors(const actor_list *l)
{
    size_t dead = 0, live = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->info[i].state == ESC_ACTOR_DEAD) {
            dead++;
            continue;
        }
        if (!live++)
            printf("\nactors\n  %-32s %-10s %8s  %s\n", "ACTOR", "STATE", "RESTARTS", "NODE");
        const esc_actor_info *a = &l->info[i];
        printf("  %-32s %-10s %4u/%-3u  %s\n", l->ids[i], esc_actor_state_name(a->state),
               a->restarts, a->max_restarts, a->node_id);
    }
    if (dead)
        printf("%s%zu dead actor%s (escher status --json lists them)\n", live ? "" : "\n",
               dead, dead == 1 ? "" : "s");
}

static void grant_row(void *ud, const esc_job_info *j, const char *prefix, char *const *to,
                      size_t n)
{
    size_t *shown = ud;
    if (!(*shown)++)
        printf("\ngrants\n  %-24s %-16s %-16s %s\n", "NAMESPACE", "OWNER", "PREFIX",
               "GRANTED TO");
    printf("  %-24s %-16s %-16s", j->namespace_, j->id, *prefix ? prefix : "(all)");
    for (size_t k = 0; k < n; k++)
        printf("%s%s", k ? ", " : " ", to[k]);
    putchar('\n');
}

static void print_grants(const grant_list *gl)
{
    size_t shown = 0;
    for (size_t i = 0; i < gl->n; i++)
        if (has_grants(&gl->jobs[i]))
            grant_entries(&gl->jobs[i], grant_row, &shown);
}

static int print_table(const esc_cluster_status *s, const actor_list *l, const grant_list *gl)
{
    printf("cluster: %zu node%s, applied seq %" PRIu64 " (committed %" PRIu64 ")\n",
           s->nnodes, s->nnodes == 1 ? "" : "s", s->seq, s->committed_seq);
    print_totals(s);
    for (size_t i = 0; i < s->nnodes; i++)
        print_node(&s->nodes[i]);
    print_actors(l);
    print_grants(gl);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------ command */

/* One look at the cluster, printed. */
static int show(esc_client *c, bool json)
{
    int rc;
    esc_cluster_status *s = NULL;
    esc_status st;
    actor_list actors = {0};
    grant_list grants = {0};
    if (esc_get_cluster_status(c, &s, &st) != ESC_OK) {
        rc = cli_status_fail(&st);
    } else {
        actors_read(c, &actors);
        if (esc_list_jobs(c, &grants.jobs, &grants.n, NULL) != ESC_OK)
            grants.n = 0; /* status shows the nodes all the same */
        rc = json ? print_json(s, &actors, &grants) : print_table(s, &actors, &grants);
    }
    esc_jobs_free(grants.jobs, grants.n);
    actors_free(&actors);
    esc_cluster_status_free(s);
    return rc;
}

/* --watch's interval: SECONDS (0.1..3600), or the default when the next word is another
 * option or absent. Returns the words it took (0 or 1), or -1 after a usage error. */
static int watch_interval(int argc, char **argv, int i, double *secs)
{
    *secs = 2;
    if (i + 1 >= argc || argv[i + 1][0] == '-')
        return 0;
    char *end;
    double v = strtod(argv[i + 1], &end);
    if (*end || !(v >= 0.1 && v <= 3600)) {
        cli_usage("--watch wants seconds between 0.1 and 3600, not \"%s\"", argv[i + 1]);
        return -1;
    }
    *secs = v;
    return 1;
}

/* The signals that end a watch. */
static void watch_signals(sigset_t *sigs)
{
    sigemptyset(sigs);
    sigaddset(sigs, SIGINT);
    sigaddset(sigs, SIGTERM);
}

/* Redraws until SIGINT or SIGTERM (exit 0), blocked (by cmd_status, before any thread
 * exists) and waited for as the sleep so an interrupt never cuts a table in half; a failed
 * look ends it (exit 1). */
static int watch(esc_client *c, bool json, double secs)
{
    sigset_t sigs;
    watch_signals(&sigs);
    const struct timespec period = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    for (;;) {
        if (!json && isatty(STDOUT_FILENO))
            printf("\033[H\033[2J"); /* home and clear, as watch(1) */
        else if (!json)
            printf("\n"); /* a file or a pipe: tables one after the other */
        int rc = show(c, json);
        fflush(stdout);
        if (rc != CLI_EXIT_OK)
            return rc;
        if (sigtimedwait(&sigs, NULL, &period) >= 0)
            return CLI_EXIT_OK;
    }
}

int cmd_status(const cli_globals *g, int argc, char **argv)
{
    bool json = false, watching = false;
    double secs = 2;
    /* --watch takes an optional value, which cli_parse's options cannot: taken out here. */
    char **rest = esc_xcalloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--watch") != 0) {
            rest[nrest++] = argv[i];
            continue;
        }
        int took = watch_interval(argc, argv, i, &secs);
        if (took < 0) {
            free(rest);
            return CLI_EXIT_USAGE;
        }
        watching = true;
        i += took;
    }
    const cli_opt opts[] = {{"--json", NULL, &json}, {NULL, NULL, NULL}};
    const char *pos[1];
    int npos;
    int rc = cli_parse(nrest, rest, opts, pos, 0, &npos, usage);
    free(rest);
    if (rc != 0)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    if (watching) {
        /* Blocked before connecting: the client's threads inherit the mask, so a SIGINT
         * cannot land on one of them and kill the process with the default action. */
        sigset_t sigs;
        watch_signals(&sigs);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    }
    esc_client *c;
    if ((rc = cli_connect_reader(g, &c)) != CLI_EXIT_OK)
        return rc;
    rc = watching ? watch(c, json, secs) : show(c, json);
    esc_disconnect(c);
    return rc;
}
