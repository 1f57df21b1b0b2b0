/* cmd_list.c: `escher list KIND [--job ID] [--state S] [--node ID] [--limit N] [--json]`:
 * the state API (libescher's esc_list_*, docs/observability.md) as aligned columns or
 * one JSON document. */
#include "cli.h"
#include "xalloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: escher list nodes|jobs|resources|tasks|actors|objects [--job ID] [--state S]\n"
    "                   [--node ID] [--limit N] [--json]\n"
    "       escher list events [...]   the event history: the same as escher events\n"
    "\n"
    "Lists the cluster's state as rows. Nodes, jobs and resources come from the GCS;\n"
    "tasks, actors and objects from every alive node's raylet (one call per node).\n"
    "\n"
    "  --job ID    only rows of that job (resources: owned by it; not for nodes)\n"
    "  --state S   only rows in state S (any case):\n"
    "                nodes      ALIVE, DRAINING, DEAD\n"
    "                jobs       RUNNING, FINISHED, FAILED\n"
    "                resources  PHYSICAL, EPHEMERAL\n"
    "                tasks      QUEUED, WAITING_FOR_ARGS, RUNNING, FINISHED, FAILED\n"
    "                actors     STARTING, ALIVE, RESTARTING, DEAD\n"
    "                objects    SEALED, UNSEALED\n"
    "  --node ID   only rows of that node (not for jobs)\n"
    "  --limit N   at most N rows (0: the default, 1000); a cut list says so\n"
    "  --json      one JSON document: {\"kind\", \"total\", \"truncated\", \"unreachable\",\n"
    "              \"rows\": [...]}; times in wall-clock milliseconds, sizes in bytes\n";

/* ------------------------------------------------------------------ a table of text */

#define MAX_COLS 10

typedef struct {
    size_t ncols;
    const char *head[MAX_COLS];
    char **cells; /* nrows * ncols, owned */
    size_t nrows, cap;
} table;

static void table_init(table *t, size_t ncols, ...)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    va_list ap;
    va_start(ap, ncols);
    for (size_t i = 0; i < ncols; i++)
        t->head[i] = va_arg(ap, const char *);
    va_end(ap);
}

/* Adds a row of ncols strings (copied). */
static void table_row(table *t, ...)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 32;
        t->cells = esc_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
    }
    va_list ap;
    va_start(ap, t);
    for (size_t i = 0; i < t->ncols; i++) {
        const char *s = va_arg(ap, const char *);
        t->cells[t->nrows * t->ncols + i] = esc_xstrdup(s ? s : "");
    }
    va_end(ap);
    t->nrows++;
}

static void table_free(table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

/* Prints the header and the rows, each column as wide as its widest cell; frees. */
static void table_print(table *t)
{
    size_t w[MAX_COLS];
    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = strlen(t->head[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            size_t len = strlen(t->cells[r * t->ncols + c]);
            w[c] = len > w[c] ? len : w[c];
        }
    }
    for (size_t r = 0; r <= t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = r == 0 ? t->head[c] : t->cells[(r - 1) * t->ncols + c];
            bool last = c + 1 == t->ncols;
            if (last)
                fputs(s, stdout);
            else
                printf("%-*s  ", (int)w[c], s);
        }
        putchar('\n');
    }
    table_free(t);
}

/* ------------------------------------------------------------------ cells */

/* Wall-clock milliseconds as UTC "HH:MM:SS.mmm" (today's) or "-" when 0. */
static const char *fmt_time(uint64_t ms, char *buf, size_t len)
{
    if (!ms)
        return "-";
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03uZ", day, (unsigned)(ms % 1000));
    return buf;
}

/* "CPU=1,GPU=0.5" (quantities as status shows them, without units). */
static const char *fmt_amounts(const esc_amount *a, size_t n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && at < len; i++) {
        char q[48];
        cli_fmt_qty(a[i].name, a[i].value, a[i].unbounded, false, q, sizeof q);
        at += (size_t)snprintf(buf + at, len - at, "%s%s=%s", i ? "," : "", a[i].name, q);
    }
    return n ? buf : "-";
}

static json_t *amounts_json(const esc_amount *a, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, a[i].name, cli_json_qty(a[i].value, a[i].unbounded));
    return o;
}

static json_t *strings_json(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static const char *yes(bool b)
{
    return b ? "yes" : "no";
}

/* ------------------------------------------------------------------ output */

typedef struct {
    const char *kind;
    bool json;
    json_t *rows; /* --json: the rows built so far */
    table t;
} out_ctx;

/* The end of a list: JSON's document, or the table with a cut marker and warnings. */
static int finish(out_ctx *o, const esc_list_info *info, size_t n)
{
    for (size_t i = 0; i < info->nunreachable; i++)
        cli_warn("node %s did not answer: its rows are missing", info->unreachable[i]);
    if (o->json) {
        table_free(&o->t);
        json_t *doc = json_object();
        json_object_set_new(doc, "kind", json_string(o->kind));
        json_object_set_new(doc, "total", json_integer((json_int_t)info->total));
        json_object_set_new(doc, "truncated", json_boolean(info->truncated));
        json_object_set_new(doc, "unreachable", strings_json(info->unreachable,
                                                             info->nunreachable));
        json_object_set_new(doc, "rows", o->rows);
        o->rows = NULL; /* the document's now */
        return cli_json_print(doc);
    }
    table_print(&o->t);
    json_decref(o->rows);
    o->rows = NULL;
    if (info->truncated)
        printf("(cut: showing %zu of %zu %s; raise --limit to see more)\n", n, info->total,
               o->kind);
    return CLI_EXIT_OK;
}

static int list_nodes(esc_client *c, const esc_list_filter *f, out_ctx *o, esc_status *st)
{
    esc_node_table *l;
    int rc = esc_list_nodes(c, f, &l, st);
    if (rc != ESC_OK)
        return rc;
    table_init(&o->t, 5, "NODE", "STATE", "ADDRESS", "APPLIED_SEQ", "LABELS");
    for (size_t i = 0; i < l->n; i++) {
        const esc_node_status *n = l->nodes[i];
        char seq[32], labels[512] = "";
        snprintf(seq, sizeof seq, "%" PRIu64, n->applied_seq);
        json_t *lj = json_object();
        for (size_t k = 0, at = 0; k < n->nlabels; k++) {
            json_object_set_new(lj, n->labels[k].key, json_string(n->labels[k].value));
            if (at < sizeof labels)
                at += (size_t)snprintf(labels + at, sizeof labels - at, "%s%s=%s", k ? "," : "",
                                       n->labels[k].key, n->labels[k].value);
        }
        if (o->json)
            json_array_append_new(o->rows, json_pack("{s:s, s:s, s:s, s:I, s:o}", "node_id",
                                                     n->id, "state", n->state, "address",
                                                     n->address, "applied_seq",
                                                     (json_int_t)n->applied_seq, "labels", lj));
        else
            json_decref(lj);
        table_row(&o->t, n->id, n->state, n->address, seq, *labels ? labels : "-");
    }
    rc = finish(o, &l->info, l->n);
    esc_node_table_free(l);
    return rc == CLI_EXIT_OK ? ESC_OK : -1;
}

static int list_resources(esc_client *c, const esc_list_filter *f, out_ctx *o, esc_status *st)
{
    esc_resource_table *l;
    int rc = esc_list_resources(c, f, &l, st);
    if (rc != ESC_OK)
        return rc;
    table_init(&o->t, 7, "NODE", "NAME", "TOTAL", "HELD", "AVAILABLE", "NAMESPACE", "OWNER");
    for (size_t i = 0; i < l->n; i++) {
        const esc_resource_info *r = l->rows[i].res;
        char tot[48], held[48], av[48];
        cli_fmt_qty(r->name, r->total, r->unbounded, false, tot, sizeof tot);
        cli_fmt_qty(r->name, r->held, false, false, held, sizeof held);
        cli_fmt_qty(r->name, r->available, r->unbounded, false, av, sizeof av);
        const char *ns = r->ephemeral && r->namespace_ ? r->namespace_ : "-";
        const char *owner = !r->ephemeral ? "-" : r->owner && *r->owner ? r->owner : "detached";
        if (o->json)
            json_array_append_new(
                o->rows, json_pack("{s:s, s:s, s:o, s:o, s:o, s:b, s:s, s:s}", "node_id",
                                   l->rows[i].node_id, "name", r->name, "total",
                                   cli_json_qty(r->total, r->unbounded), "held",
                                   cli_json_qty(r->held, false), "available",
                                   cli_json_qty(r->available, r->unbounded), "ephemeral",
                                   r->ephemeral, "namespace", r->ephemeral ? ns : "", "owner",
                                   r->ephemeral && r->owner ? r->owner : ""));
        table_row(&o->t, l->rows[i].node_id, r->name, tot, held, av, ns, owner);
    }
    rc = finish(o, &l->info, l->n);
    esc_resource_table_free(l);
    return rc == CLI_EXIT_OK ? ESC_OK : -1;
}

static int list_jobs(esc_client *c, const esc_list_filter *f, out_ctx *o, esc_status *st)
{
    esc_job_table *l;
    int rc = esc_list_jobs_filtered(c, f, &l, st);
    if (rc != ESC_OK)
        return rc;
    table_init(&o->t, 6, "JOB", "STATE", "NAMESPACE", "START", "END", "ENTRYPOINT");
    for (size_t i = 0; i < l->n; i++) {
        const esc_job_info *j = &l->jobs[i];
        char a[40], b[40];
        if (o->json)
            json_array_append_new(
                o->rows, json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:I}", "job_id", j->id,
                                   "state", j->state, "namespace", j->namespace_, "start_ms",
                                   (json_int_t)j->start_ms, "end_ms", (json_int_t)j->end_ms,
                                   "entrypoint", j->entrypoint, "driver_pid",
                                   (json_int_t)j->driver_pid));
        table_row(&o->t, j->id, j->state, j->namespace_, fmt_time(j->start_ms, a, sizeof a),
                  fmt_time(j->end_ms, b, sizeof b), *j->entrypoint ? j->entrypoint : "-");
    }
    rc = finish(o, &l->info, l->n);
    esc_job_table_free(l);
    return rc == CLI_EXIT_OK ? ESC_OK : -1;
}

static int list_tasks(esc_client *c, const esc_list_filter *f, out_ctx *o, esc_status *st)
{
    esc_task_table *l;
    int rc = esc_list_tasks(c, f, &l, st);
    if (rc != ESC_OK)
        return rc;
    table_init(&o->t, 9, "TASK", "JOB", "NAME", "STATE", "NODE", "RESOURCES", "RETRIES",
               "START", "END");
    for (size_t i = 0; i < l->n; i++) {
        const esc_task_row *t = &l->rows[i];
        char res[512], retries[32], a[40], b[40];
        snprintf(retries, sizeof retries, "%u/%u", t->attempt, t->max_retries);
        if (o->json)
            json_array_append_new(
                o->rows,
                json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:i, s:i, s:I, s:I}", "task_id",
                          t->task_id, "job_id", t->job_id, "name", t->name, "state", t->state,
                          "node_id", t->node_id, "actor_id", t->actor_id, "resources",
                          amounts_json(t->resources, t->nresources), "retries",
                          (int)t->attempt, "max_retries", (int)t->max_retries, "start_ms",
                          (json_int_t)t->start_ms, "end_ms", (json_int_t)t->end_ms));
        table_row(&o->t, t->task_id, t->job_id, *t->name ? t->name : "-", t->state, t->node_id,
                  fmt_amounts(t->resources, t->nresources, res, sizeof res), retries,
                  fmt_time(t->start_ms, a, sizeof a), fmt_time(t->end_ms, b, sizeof b));
    }
    rc = finish(o, &l->info, l->n);
    esc_task_table_free(l);
    return rc == CLI_EXIT_OK ? ESC_OK : -1;
}

static int list_actors(esc_client *c, const esc_list_filter *f, out_ctx *o, esc_status *st)
{
    esc_actor_table *l;
    int rc = esc_list_actors(c, f, &l, st);
    if (rc != ESC_OK)
        return rc;
    table_init(&o->t, 9, "ACTOR", "JOB", "NAME", "STATE", "NODE", "RESOURCES", "PENDING",
               "RUNNING", "RESTARTS");
    for (size_t i = 0; i < l->n; i++) {
        const esc_actor_row *a = &l->rows[i];
        char res[512], p[16], r[16], rs[16];
        snprintf(p, sizeof p, "%u", a->pending_calls);
        snprintf(r, sizeof r, "%u", a->running_calls);
        snprintf(rs, sizeof rs, "%u", a->restarts);
        if (o->json)
            json_array_append_new(
                o->rows, json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:i, s:i, s:i}", "actor_id",
                                   a->actor_id, "job_id", a->job_id, "name", a->name, "state",
                                   a->state, "node_id", a->node_id, "resources",
                                   amounts_json(a->resources, a->nresources), "pending_calls",
                                   (int)a->pending_calls, "running_calls",
                                   (int)a->running_calls, "restarts", (int)a->restarts));
        table_row(&o->t, a->actor_id, a->job_id, *a->name ? a->name : "-", a->state, a->node_id,
                  fmt_amounts(a->resources, a->nresources, res, sizeof res), p, r, rs);
    }
    rc = finish(o, &l->info, l->n);
    esc_actor_table_free(l);
    return rc == CLI_EXIT_OK ? ESC_OK : -1;
}

static int list_objects(esc_client *c, const esc_list_filter *f, out_ctx *o, esc_status *st)
{
    esc_object_table *l;
    int rc = esc_list_objects(c, f, &l, st);
    if (rc != ESC_OK)
        return rc;
    table_init(&o->t, 8, "OBJECT", "JOB", "SIZE_BYTES", "NODES", "SEALED", "PINNED",
               "SPILLED", "ERROR");
    for (size_t i = 0; i < l->n; i++) {
        const esc_object_row *x = &l->rows[i];
        char size[32], nodes[512] = "";
        snprintf(size, sizeof size, "%" PRIu64, x->size);
        for (size_t k = 0, at = 0; k < x->nnodes && at < sizeof nodes; k++)
            at += (size_t)snprintf(nodes + at, sizeof nodes - at, "%s%s", k ? "," : "",
                                   x->node_ids[k]);
        if (o->json)
            json_array_append_new(
                o->rows, json_pack("{s:s, s:s, s:I, s:o, s:b, s:b, s:b, s:b}", "object_id",
                                   x->object_id, "job_id", x->job_id, "size_bytes",
                                   (json_int_t)x->size, "node_ids",
                                   strings_json(x->node_ids, x->nnodes), "sealed", x->sealed,
                                   "pinned", x->pinned, "spilled", x->spilled, "is_error",
                                   x->is_error));
        table_row(&o->t, x->object_id, *x->job_id ? x->job_id : "-", size, nodes,
                  yes(x->sealed), yes(x->pinned), yes(x->spilled), yes(x->is_error));
    }
    rc = finish(o, &l->info, l->n);
    esc_object_table_free(l);
    return rc == CLI_EXIT_OK ? ESC_OK : -1;
}

/* ------------------------------------------------------------------ command */

typedef int (*list_fn)(esc_client *, const esc_list_filter *, out_ctx *, esc_status *);

static const struct {
    const char *kind;
    list_fn fn;
} kinds[] = {
    {"nodes", list_nodes},   {"jobs", list_jobs},     {"resources", list_resources},
    {"tasks", list_tasks},   {"actors", list_actors}, {"objects", list_objects},
};

static list_fn find_kind(const char *kind)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i].kind, kind))
            return kinds[i].fn;
    return NULL;
}

int cmd_list_state(const cli_globals *g, int argc, char **argv)
{
    /* The history has its own options (--follow, --kind, --since): one command. */
    if (argc > 0 && !strcmp(argv[0], "events"))
        return cmd_events(g, argc - 1, argv + 1);
    bool json = false;
    const char *job = NULL, *state = NULL, *node = NULL, *limit = NULL;
    const cli_opt opts[] = {{"--job", &job, NULL},     {"--state", &state, NULL},
                            {"--node", &node, NULL},   {"--limit", &limit, NULL},
                            {"--json", NULL, &json},   {NULL, NULL, NULL}};
    const char *pos[1];
    int npos;
    int rc = cli_parse(argc, argv, opts, pos, 1, &npos, usage);
    if (rc != 0)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    if (npos != 1)
        return cli_usage("list wants what to list: nodes, jobs, resources, tasks, actors, "
                         "objects or events (escher list --help)");
    list_fn fn = find_kind(pos[0]);
    if (!fn)
        return cli_usage("cannot list \"%s\": one of nodes, jobs, resources, tasks, actors, "
                         "objects, events",
                         pos[0]);
    long long n = 0;
    if (limit && (rc = cli_parse_uint("--limit", limit, 1000000, &n)) != 0)
        return rc;
    esc_list_filter f = {job, state, node, (size_t)n};
    esc_client *c;
    if ((rc = cli_connect_reader(g, &c)) != CLI_EXIT_OK)
        return rc;
    out_ctx o = {.kind = pos[0], .json = json, .rows = json_array()};
    esc_status st = {0};
    rc = fn(c, &f, &o, &st);
    esc_disconnect(c);
    if (rc == ESC_OK)
        return CLI_EXIT_OK;
    json_decref(o.rows);
    if (rc < 0)
        return CLI_EXIT_FAIL;
    /* A filter the kind does not take, or a state it does not have: a usage error. */
    return st.code == ESC_INVALID_ARGUMENT ? cli_usage("%s", st.message) : cli_status_fail(&st);
}
