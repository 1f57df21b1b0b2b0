/* cmd_events.c: `escher events`: the cluster's event history (esc_list_events), and with
 * --follow the entries made after it, as they come (docs/observability.md, "Event
 * history: escher events").
 *
 * --follow asks ListEvents for the entries after the last id it printed every
 * FOLLOW_PERIOD_MS rather than riding the Subscribe watch stream: the history holds
 * entries that are no log events (drains, task failures), which that stream never
 * carries, and a single call per period costs the GCS one look at its ring. SIGINT and
 * SIGTERM are blocked and waited for with sigtimedwait as the period's sleep, so an
 * interrupt ends the command between two calls: exit 0, output complete. */
#include "cli.h"
#include "xalloc.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FOLLOW_PERIOD_MS 200
#define PAGE 1000 /* ListEvents' most per answer */

static const char usage[] =
    "usage: escher events [--follow] [--kind K[,K...]] [--job ID] [--node ID] [--since ID]\n"
    "                     [--limit N] [--json]\n"
    "\n"
    "Shows the cluster's event history, oldest first: nodes joining, draining and dying,\n"
    "jobs starting and ending, every resource change (its log seq, writer and target\n"
    "nodes), tasks failing and retrying. One line per event: UTC time, the history's id,\n"
    "the resource log's seq (\"-\" when the event is not a log entry), kind, fields.\n"
    "\n"
    "  --follow      after the history, print new events as they happen until interrupted\n"
    "  --kind K      only these kinds (comma-separated): node_added, node_draining,\n"
    "                node_dead, job_started, job_ended, resources, task_failed,\n"
    "                task_retried, task_events_dropped\n"
    "  --job ID      only events of this job (for resources: written by it)\n"
    "  --node ID     only events of this node, or changing a resource on it\n"
    "  --since ID    only events after history id ID\n"
    "  --limit N     only the newest N of the history selected (--follow then goes on)\n"
    "  --json        one JSON object per line: {\"id\", \"time_ms\", \"kind\", \"seq\", ...}\n";

typedef struct {
    esc_history_kind kinds[ESC_HIST_KINDS];
    size_t nkinds;
    const char *job, *node;
    uint64_t since;
    long long limit; /* 0: no limit */
    bool json, follow;
} events_opts;

/* ------------------------------------------------------------------ formatting */

static void fmt_time(uint64_t ms, char *out, size_t len)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%03uZ", day, (unsigned)(ms % 1000));
}

static void print_ops(const esc_history_event *e)
{
    if (!e->ops_total)
        printf(" none");
    for (size_t i = 0; i < e->nops; i++) {
        const esc_history_op *o = &e->ops[i];
        char q[48];
        const char *v = cli_fmt_qty(o->name, o->value, o->unbounded, false, q, sizeof q);
        if (!strcmp(o->op, "delete"))
            printf(" delete %s@%s", o->name, o->node_id);
        else if (!strcmp(o->op, "add"))
            printf(" add %s%s%s@%s", o->name, o->value < 0 ? "" : "+", v, o->node_id);
        else
            printf(" set %s=%s@%s", o->name, v, o->node_id);
    }
    if (e->ops_total > e->nops)
        printf(" (+%zu more)", (size_t)(e->ops_total - e->nops));
}

static void print_fields(const esc_history_event *e)
{
    switch (e->kind) {
    case ESC_HIST_NODE_ADDED:
        printf(" node=%s address=%s host=%s", e->node_id, e->address, e->hostname);
        break;
    case ESC_HIST_NODE_DRAINING:
        printf(" node=%s", e->node_id);
        break;
    case ESC_HIST_NODE_DEAD:
        printf(" node=%s removed:", e->node_id);
        print_ops(e);
        break;
    case ESC_HIST_JOB_STARTED:
        printf(" job=%s ns=%s entrypoint=\"%s\"", e->job_id, e->namespace_, e->entrypoint);
        break;
    case ESC_HIST_JOB_ENDED:
        printf(" job=%s ns=%s state=%s removed:", e->job_id, e->namespace_, e->job_state);
        print_ops(e);
        break;
    case ESC_HIST_RESOURCES:
        printf(" writer=%s ns=%s", *e->job_id ? e->job_id : "(hidden)", e->namespace_);
        if (*e->entrypoint)
            printf(" (%s)", e->entrypoint);
        putchar(':');
        print_ops(e);
        break;
    case ESC_HIST_TASK_FAILED:
    case ESC_HIST_TASK_RETRIED:
        printf(" task=%s name=%s job=%s node=%s attempt=%u max_retries=%u error=\"%s\"",
               e->task_id, e->task_name, e->job_id, e->node_id, e->attempt, e->max_retries,
               e->error);
        break;
    case ESC_HIST_TASK_EVENTS_DROPPED:
        printf(" dropped=%" PRIu64, e->dropped);
        break;
    }
}

static void print_line(const esc_history_event *e)
{
    char t[64], seq[24] = "-";
    fmt_time(e->time_ms, t, sizeof t);
    if (e->seq)
        snprintf(seq, sizeof seq, "%" PRIu64, e->seq);
    printf("%s  id=%" PRIu64 "  seq=%s  %s", t, e->id, seq, esc_history_kind_name(e->kind));
    print_fields(e);
    putchar('\n');
}

static void set_str(json_t *o, const char *key, const char *v)
{
    json_object_set_new(o, key, json_string(v));
}

static json_t *ops_json(const esc_history_event *e)
{
    json_t *a = json_array();
    for (size_t i = 0; i < e->nops; i++) {
        const esc_history_op *o = &e->ops[i];
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o}", "op", o->op, "node",
                                           o->node_id, "name", o->name, "value",
                                           cli_json_qty(o->value, o->unbounded)));
    }
    return a;
}

static void json_fields(json_t *o, const esc_history_event *e)
{
    switch (e->kind) {
    case ESC_HIST_NODE_ADDED:
        set_str(o, "address", e->address);
        set_str(o, "hostname", e->hostname);
        /* fall through */
    case ESC_HIST_NODE_DRAINING:
        set_str(o, "node", e->node_id);
        break;
    case ESC_HIST_TASK_EVENTS_DROPPED:
        json_object_set_new(o, "dropped", json_integer((json_int_t)e->dropped));
        break;
    case ESC_HIST_NODE_DEAD:
        set_str(o, "node", e->node_id);
        json_object_set_new(o, "ops", ops_json(e));
        json_object_set_new(o, "ops_total", json_integer(e->ops_total));
        break;
    case ESC_HIST_JOB_STARTED:
    case ESC_HIST_JOB_ENDED:
    case ESC_HIST_RESOURCES:
        set_str(o, e->kind == ESC_HIST_RESOURCES ? "writer" : "job", e->job_id);
        set_str(o, "namespace", e->namespace_);
        if (e->kind != ESC_HIST_JOB_ENDED)
            set_str(o, "entrypoint", e->entrypoint);
        if (e->kind == ESC_HIST_JOB_STARTED)
            break;
        if (e->kind == ESC_HIST_JOB_ENDED)
            set_str(o, "state", e->job_state);
        json_object_set_new(o, "ops", ops_json(e));
        json_object_set_new(o, "ops_total", json_integer(e->ops_total));
        break;
    case ESC_HIST_TASK_FAILED:
    case ESC_HIST_TASK_RETRIED:
        set_str(o, "task", e->task_id);
        set_str(o, "name", e->task_name);
        set_str(o, "job", e->job_id);
        set_str(o, "node", e->node_id);
        json_object_set_new(o, "attempt", json_integer(e->attempt));
        json_object_set_new(o, "max_retries", json_integer(e->max_retries));
        set_str(o, "error", e->error);
        break;
    }
}

static int print_json_line(const esc_history_event *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer((json_int_t)e->id));
    json_object_set_new(o, "time_ms", json_integer((json_int_t)e->time_ms));
    set_str(o, "kind", esc_history_kind_name(e->kind));
    json_object_set_new(o, "seq", json_integer((json_int_t)e->seq));
    json_fields(o, e);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s)
        return CLI_EXIT_FAIL;
    puts(s);
    free(s);
    return CLI_EXIT_OK;
}

static void print_event(const events_opts *o, const esc_history_event *e)
{
    if (o->json)
        print_json_line(e);
    else
        print_line(e);
}

/* ------------------------------------------------------------------ listing */

/* The pages listed, kept until the newest --limit of them are printed. */
typedef struct {
    esc_history_event *ev;
    size_t n;
} page_buf;

typedef struct {
    page_buf *v;
    size_t n, cap;
} pages;

static void pages_add(pages *p, esc_history_event *ev, size_t n)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->v = esc_xrealloc(p->v, p->cap * sizeof *p->v);
    }
    p->v[p->n++] = (page_buf){ev, n};
}

/* Prints the newest `limit` events of the pages (0: all), then frees them. */
static void pages_print(pages *p, const events_opts *o)
{
    size_t total = 0;
    for (size_t i = 0; i < p->n; i++)
        total += p->v[i].n;
    size_t skip = o->limit && total > (size_t)o->limit ? total - (size_t)o->limit : 0;
    for (size_t i = 0; i < p->n; i++) {
        for (size_t k = 0; k < p->v[i].n; k++) {
            if (skip) {
                skip--;
                continue;
            }
            print_event(o, &p->v[i].ev[k]);
        }
        esc_history_free(p->v[i].ev, p->v[i].n);
    }
    free(p->v);
    *p = (pages){0};
    fflush(stdout);
}

/* One ListEvents after *after, added to out. Moves *after on to the newest id the GCS
 * looked at (a filtered page may hold nothing); *more: the page was full. */
static int list_page(esc_client *c, const events_opts *o, uint64_t *after, pages *out,
                     bool *more, esc_history_page *info)
{
    esc_history_filter f = {.after_id = *after, .limit = PAGE, .kinds = o->kinds,
                            .nkinds = o->nkinds, .node_id = o->node, .job_id = o->job};
    esc_history_event *ev;
    size_t n;
    esc_status st;
    if (esc_list_events(c, &f, &ev, &n, info, &st) != ESC_OK)
        return cli_status_fail(&st);
    *more = n == PAGE;
    *after = *more ? ev[n - 1].id : info->last_id;
    pages_add(out, ev, n);
    return CLI_EXIT_OK;
}

/* The history selected, printed (the newest --limit). *after: the last id seen. */
static int list_history(esc_client *c, const events_opts *o, uint64_t *after)
{
    pages p = {0};
    bool more = true;
    esc_history_page info = {0};
    int rc = CLI_EXIT_OK;
    *after = o->since;
    while (more && rc == CLI_EXIT_OK)
        rc = list_page(c, o, after, &p, &more, &info);
    if (rc == CLI_EXIT_OK && o->since && o->since + 1 < info.first_id)
        cli_warn("events before id %" PRIu64 " were cut at the history's bound (%u)",
                 info.first_id, info.bound);
    pages_print(&p, rc == CLI_EXIT_OK ? o : &(events_opts){.limit = 0, .json = o->json});
    return rc;
}

/* New events until SIGINT or SIGTERM (exit 0), a call failing (exit 1). */
static int follow(esc_client *c, const events_opts *o, uint64_t after)
{
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    const struct timespec period = {0, FOLLOW_PERIOD_MS * 1000000L};
    for (;;) {
        if (sigtimedwait(&sigs, NULL, &period) >= 0)
            return CLI_EXIT_OK;
        pages p = {0};
        bool more = true;
        esc_history_page info = {0};
        uint64_t before = after;
        while (more) {
            int rc = list_page(c, o, &after, &p, &more, &info);
            if (rc != CLI_EXIT_OK) {
                pages_print(&p, &(events_opts){.json = o->json});
                return rc;
            }
        }
        if (info.first_id > before + 1 && before)
            cli_warn("fell behind: events %" PRIu64 "..%" PRIu64 " were cut at the bound",
                     before + 1, info.first_id - 1);
        pages_print(&p, &(events_opts){.json = o->json});
    }
}

/* ------------------------------------------------------------------ options */

static int parse_kinds(const char *text, events_opts *o)
{
    char *copy = esc_xstrdup(text);
    int rc = 0;
    for (char *save, *k = strtok_r(copy, ",", &save); k && !rc; k = strtok_r(NULL, ",", &save)) {
        esc_history_kind kind;
        if (!esc_history_kind_parse(k, &kind))
            rc = cli_usage("unknown event kind \"%s\" (see escher events --help)", k);
        else if (o->nkinds < ESC_HIST_KINDS)
            o->kinds[o->nkinds++] = kind;
    }
    if (!rc && !o->nkinds)
        rc = cli_usage("--kind wants at least one kind (see escher events --help)");
    free(copy);
    return rc;
}

static int parse_opts(int argc, char **argv, events_opts *o)
{
    const char *kind = NULL, *since = NULL, *limit = NULL;
    const cli_opt opts[] = {{"--follow", NULL, &o->follow}, {"--json", NULL, &o->json},
                            {"--kind", &kind, NULL},         {"--job", &o->job, NULL},
                            {"--node", &o->node, NULL},      {"--since", &since, NULL},
                            {"--limit", &limit, NULL},       {NULL, NULL, NULL}};
    const char *pos[1];
    int npos;
    int rc = cli_parse(argc, argv, opts, pos, 0, &npos, usage);
    if (rc)
        return rc;
    long long v;
    if (kind && (rc = parse_kinds(kind, o)))
        return rc;
    if (since) {
        if ((rc = cli_parse_uint("--since", since, INT64_MAX, &v)))
            return rc;
        o->since = (uint64_t)v;
    }
    if (limit) {
        if ((rc = cli_parse_uint("--limit", limit, 100000000, &v)))
            return rc;
        if (!v)
            return cli_usage("--limit wants at least 1");
        o->limit = v;
    }
    if ((o->job && !*o->job) || (o->node && !*o->node))
        return cli_usage("--job and --node want an id");
    return 0;
}

int cmd_events(const cli_globals *g, int argc, char **argv)
{
    events_opts o = {0};
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    esc_client *c;
    if ((rc = cli_connect_reader(g, &c)) != CLI_EXIT_OK)
        return rc;
    /* Blocked once connected (a connection that waits for a GCS stays interruptible)
     * and before anything is listed: an interrupt during the history is then taken by
     * the first wait of --follow, never kills the process mid-line. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    if (o.follow)
        sigprocmask(SIG_BLOCK, &sigs, NULL);
    uint64_t after = 0;
    rc = list_history(c, &o, &after);
    if (rc == CLI_EXIT_OK && o.follow)
        rc = follow(c, &o, after);
    esc_disconnect(c);
    return rc;
}
