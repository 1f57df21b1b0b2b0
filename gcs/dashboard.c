/* dashboard.c: the web dashboard served by the GCS (docs/observability.md, "Dashboard").
 *
 * One HTTP server (runtime/http_server.c) on the GCS loop: the page's files from the
 * dashboard folder, JSON built from the tables (dashboard_json.c) and one event stream
 * fed from gcs_broadcast, the same events that `escher events` and esc_subscribe follow.
 * Every request needs the cluster token: a first visit with ?token=T is answered with
 * an HttpOnly, SameSite=Strict cookie (a hash of the token, not the token) and a
 * redirect to the same path without the token; API calls carry that cookie or
 * "Authorization: Bearer T". Anything else gets 401 and nothing more. */
#include "dashboard.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_server.h"
#include "ids.h"
#include "log.h"
#include "names.h"
#include "secret.h"
#include "xalloc.h"

/* Where the page's files are: the build tree's (CMake passes the source folder) and the
 * installed copy relative to the program's folder. */
#ifndef ESCHER_DASHBOARD_SOURCE_DIR
#define ESCHER_DASHBOARD_SOURCE_DIR "dashboard"
#endif
#ifndef ESCHER_DASHBOARD_FROM_BIN
#define ESCHER_DASHBOARD_FROM_BIN "../share/escher/dashboard"
#endif

#define COOKIE_NAME "escher_dashboard"
#define EVENTS_KEPT 200   /* events a newly opened page is shown */

typedef struct dash_stream {
    esc_http_sse *st;
    struct dash_stream *next;
} dash_stream;

struct gcs_dash {
    gcs *g;
    esc_http_server *http;
    char dir[PATH_MAX];        /* the page's files; "" when none were found */
    char cookie[65];           /* the cookie's value: SHA-256 of a label and the token */
    esc_strmap *history;       /* registry key -> gcs_dash_history */
    char *events[EVENTS_KEPT]; /* the last events as JSON text, circular */
    size_t ev_start, ev_len;
    dash_stream *streams;
};

/* ------------------------------------------------------------------ history */

const gcs_dash_history *gcs_dashboard_history(const gcs *g, const char *key)
{
    return g->dash ? esc_strmap_get(g->dash->history, key) : NULL;
}

/* Records the capacity each op's row has after ev (applied before the broadcast); a
 * row that is gone takes its history with it, so the map stays as small as the
 * registry. */
static void record_history(gcs_dash *d, const Escher__Event *ev, uint64_t wall)
{
    char key[ESC_FULLNAME_MAX + 48];
    for (size_t i = 0; i < ev->n_ops; i++) {
        gcs_registry_key(ev->ops[i]->node_id, ev->ops[i]->name, key, sizeof key);
        const Escher__RegistryEntry *row = esc_strmap_get(d->g->registry, key);
        gcs_dash_history *h = esc_strmap_get(d->history, key);
        if (!row) {
            free(esc_strmap_del(d->history, key));
            continue;
        }
        if (!h) {
            h = esc_xcalloc(1, sizeof *h);
            esc_strmap_put(d->history, key, h);
        }
        size_t k = (h->start + h->len) % GCS_DASH_HISTORY;
        if (h->len == GCS_DASH_HISTORY)
            h->start = (h->start + 1) % GCS_DASH_HISTORY;
        else
            h->len++;
        h->t_ms[k] = wall;
        h->seq[k] = ev->seq;
        h->value[k] = row->total;
        h->unbounded[k] = row->unbounded;
    }
}

/* ------------------------------------------------------------------ events */

static void send_all(gcs_dash *d, const char *event, const char *data)
{
    for (dash_stream *s = d->streams; s; s = s->next)
        esc_http_sse_send(s->st, event, data);
}

static void keep_event(gcs_dash *d, char *text)
{
    if (d->ev_len == EVENTS_KEPT) {
        free(d->events[d->ev_start]);
        d->events[d->ev_start] = text;
        d->ev_start = (d->ev_start + 1) % EVENTS_KEPT;
    } else {
        d->events[(d->ev_start + d->ev_len++) % EVENTS_KEPT] = text;
    }
}

void gcs_dashboard_event(gcs *g, const Escher__Event *ev)
{
    gcs_dash *d = g->dash;
    if (!d || ev->kind == ESCHER__EVENT_KIND__EV_SNAPSHOT)
        return;
    uint64_t wall = esc_wall_ms();
    json_t *j = gcs_dash_event(ev, wall);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text)
        return;
    /* Availability reports come often and are not history: they only tell the page to
     * read the nodes again. */
    if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_LOAD) {
        send_all(d, "load", text);
        free(text);
        return;
    }
    record_history(d, ev, wall);
    send_all(d, "event", text);
    keep_event(d, text);
}

/* ------------------------------------------------------------------ the token */

/* The cookie stands for the token without being it: it opens the dashboard and nothing
 * else (a stolen cookie is not a cluster token). */
static void cookie_value(const char *token, char out[65])
{
    size_t n = strlen(token) + 32;
    char *s = esc_xmalloc(n);
    snprintf(s, n, "escher-dashboard\n%s", token);
    esc_sha256_hex(s, out);
    memset(s, 0, n);
    free(s);
}

static bool authorized(const gcs_dash *d, const esc_http_req *r)
{
    const char *c = esc_http_cookie(r, COOKIE_NAME);
    if (c && esc_secret_equal(c, strlen(c), d->cookie))
        return true;
    const char *a = esc_http_header(r, "Authorization");
    if (a && !strncmp(a, "Bearer ", 7))
        return esc_secret_equal(a + 7, strlen(a + 7), d->g->cfg.token);
    return false;
}

static void unauthorized(esc_http_req *r)
{
    esc_http_reply_text(r, 401, "401 unauthorized: open the dashboard URL that `escher start` "
                                "printed (it carries ?token=...)\n");
}

/* Checks the request; false when it was answered (401, or the token's redirect). */
static bool admit(gcs_dash *d, esc_http_req *r)
{
    const char *t = esc_http_query(r, "token");
    if (t) {
        if (!esc_secret_equal(t, strlen(t), d->g->cfg.token)) {
            unauthorized(r);
            return false;
        }
        char cookie[160];
        snprintf(cookie, sizeof cookie, "%s=%s; Path=/; HttpOnly; SameSite=Strict", COOKIE_NAME,
                 d->cookie);
        esc_http_add_header(r, "Set-Cookie", cookie);
        /* The same page without the token in the address bar and the history. */
        esc_http_add_header(r, "Location", esc_http_path(r));
        esc_http_reply_text(r, 303, "see other\n");
        return false;
    }
    if (!authorized(d, r)) {
        unauthorized(r);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ routes */

static json_t *state_json(gcs_dash *d)
{
    gcs *g = d->g;
    return json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "seq", (json_int_t)g->seq, "t_ms",
                     (json_int_t)esc_wall_ms(), "nodes", gcs_dash_nodes(g), "totals",
                     gcs_dash_totals(g), "demand", gcs_dash_demand(g), "resources",
                     gcs_dash_resources(g), "jobs", gcs_dash_jobs(g));
}

static json_t *events_json(const gcs_dash *d)
{
    json_t *out = json_array();
    for (size_t i = 0; i < d->ev_len; i++) {
        json_t *e = json_loads(d->events[(d->ev_start + i) % EVENTS_KEPT], 0, NULL);
        if (e)
            json_array_append_new(out, e);
    }
    return out;
}

static void serve_api(void *ud, esc_http_req *r)
{
    gcs_dash *d = ud;
    if (!admit(d, r))
        return;
    const char *p = esc_http_path(r) + strlen("/api/");
    gcs *g = d->g;
    char job[64];
    int end = 0;
    if (sscanf(p, "jobs/%63[0-9a-f]/tasks%n", job, &end) == 1 && p[end] == '\0') {
        gcs_dash_job_tasks(g, r, job);
        return;
    }
    char task[80];
    if (sscanf(p, "tasks/%79[0-9a-f]/logs%n", task, &end) == 1 && p[end] == '\0') {
        gcs_dash_task_logs(g, r, task, esc_http_query(r, "node"));
        return;
    }
    json_t *j = !strcmp(p, "state")       ? state_json(d)
                : !strcmp(p, "nodes")     ? gcs_dash_nodes(g)
                : !strcmp(p, "totals")    ? gcs_dash_totals(g)
                : !strcmp(p, "demand")    ? gcs_dash_demand(g)
                : !strcmp(p, "resources") ? gcs_dash_resources(g)
                : !strcmp(p, "jobs")      ? gcs_dash_jobs(g)
                : !strcmp(p, "events")    ? events_json(d)
                                          : NULL;
    if (!j)
        esc_http_reply_text(r, 404, "no such endpoint\n");
    else
        esc_http_reply_json(r, 200, j);
}

static void stream_closed(void *ud, esc_http_sse *st)
{
    gcs_dash *d = ud;
    for (dash_stream **p = &d->streams; *p; p = &(*p)->next) {
        if ((*p)->st == st) {
            dash_stream *s = *p;
            *p = s->next;
            free(s);
            return;
        }
    }
}

static void serve_stream(void *ud, esc_http_req *r)
{
    gcs_dash *d = ud;
    if (!admit(d, r))
        return;
    dash_stream *s = esc_xcalloc(1, sizeof *s);
    s->st = esc_http_sse_start(r, stream_closed, d);
    if (!s->st) {
        free(s);
        return;
    }
    s->next = d->streams;
    d->streams = s;
    /* The page reads the tables once this arrives, so nothing falls between. */
    char hello[64];
    snprintf(hello, sizeof hello, "{\"seq\":%llu}", (unsigned long long)d->g->seq);
    esc_http_sse_send(s->st, "hello", hello);
}

static void serve_file(void *ud, esc_http_req *r)
{
    gcs_dash *d = ud;
    if (!admit(d, r))
        return;
    const char *p = esc_http_path(r);
    if (!d->dir[0]) {
        esc_http_reply_text(r, 404, "the dashboard's files were not found (escher-gcs "
                                    "--dashboard-dir DIR)\n");
        return;
    }
    esc_http_add_header(r, "Content-Security-Policy",
                        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
    esc_http_reply_file(r, d->dir, !strcmp(p, "/") ? "index.html" : p + 1);
}

/* ------------------------------------------------------------------ start, stop */

static bool has_index(const char *dir)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/index.html", dir);
    return access(p, R_OK) == 0;
}

/* --dashboard-dir, else the installed copy next to the program, else the source tree's.
 * false only when --dashboard-dir was given and has no index.html. */
static bool find_dir(gcs_dash *d)
{
    const char *given = d->g->cfg.dashboard_dir;
    if (given) {
        snprintf(d->dir, sizeof d->dir, "%s", given);
        return has_index(given);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
    if (slash) {
        snprintf(d->dir, sizeof d->dir, "%.*s/%s", (int)(slash - exe), exe,
                 ESCHER_DASHBOARD_FROM_BIN);
        if (has_index(d->dir))
            return true;
    }
    snprintf(d->dir, sizeof d->dir, "%s", ESCHER_DASHBOARD_SOURCE_DIR);
    if (!has_index(d->dir)) {
        ESC_WARN("dashboard: no index.html found (give --dashboard-dir): the API only");
        d->dir[0] = '\0';
    }
    return true;
}

static int add_routes(gcs_dash *d)
{
    esc_http_server *s = d->http;
    if (esc_http_route(s, "/api/stream", false, serve_stream, d) != 0 ||
        esc_http_route(s, "/api/", true, serve_api, d) != 0 ||
        esc_http_route(s, "/", true, serve_file, d) != 0)
        return -1;
    return 0;
}

static void dash_free(gcs_dash *d)
{
    if (!d)
        return;
    esc_http_stop(d->http); /* ends the streams: stream_closed empties d->streams */
    size_t pos = 0;
    const char *k;
    void *v;
    while (d->history && esc_strmap_next(d->history, &pos, &k, &v))
        free(v);
    esc_strmap_free(d->history);
    for (size_t i = 0; i < d->ev_len; i++)
        free(d->events[(d->ev_start + i) % EVENTS_KEPT]);
    memset(d->cookie, 0, sizeof d->cookie);
    free(d);
}

int gcs_dashboard_start(gcs *g)
{
    if (g->cfg.dashboard_port < 0)
        return 0;
    gcs_dash *d = esc_xcalloc(1, sizeof *d);
    char err[512];
    d->history = esc_strmap_new();
    d->g = g;
    cookie_value(g->cfg.token, d->cookie);
    if (!find_dir(d)) {
        fprintf(stderr, "escher-gcs: --dashboard-dir %s has no index.html\n", d->dir);
        dash_free(d);
        return 1;
    }
    d->http = esc_http_start(esc_loop_ev(g->loop), "dashboard", g->cfg.dashboard_bind,
                             g->cfg.dashboard_port, err, sizeof err);
    if (!d->http || add_routes(d) != 0) {
        fprintf(stderr, "escher-gcs: %s\n", d->http ? "dashboard: out of memory" : err);
        dash_free(d);
        return 1;
    }
    int port = esc_http_port(d->http);
    if (g->cfg.dashboard_port_file &&
        esc_metrics_write_port_file(g->cfg.dashboard_port_file, port) != 0) {
        fprintf(stderr, "escher-gcs: cannot write %s: %s\n", g->cfg.dashboard_port_file,
                strerror(errno));
        dash_free(d);
        return 1;
    }
    g->dash = d;
    ESC_INFO("dashboard on http://%s:%d/ (files from %s)", g->cfg.dashboard_bind, port,
             d->dir[0] ? d->dir : "nowhere");
    return 0;
}

void gcs_dashboard_stop(gcs *g)
{
    gcs_dash *d = g->dash;
    g->dash = NULL; /* no more events while the streams end */
    dash_free(d);
}
