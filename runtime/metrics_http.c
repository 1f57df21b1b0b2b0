/* metrics_http.c: the Prometheus endpoint (metrics_http.h): the text format, and GET
 * /metrics as one route of the loop's HTTP server (http_server.c). */
#include "metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http_server.h"
#include "rpc.h"
#include "xalloc.h"

/* ------------------------------------------------------------------ the text */

static void put(esc_metrics_text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1)
            cap *= 2;
        t->buf = esc_xrealloc(t->buf, cap);
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void puts_(esc_metrics_text *t, const char *s)
{
    put(t, s, strlen(s));
}

static void putf(esc_metrics_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(esc_metrics_text *t, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(t, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* HELP text escapes \ and newline; label values also escape ". */
static void put_escaped(esc_metrics_text *t, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            puts_(t, "\\\\");
        else if (*s == '\n')
            puts_(t, "\\n");
        else if (quote && *s == '"')
            puts_(t, "\\\"");
        else
            put(t, s, 1);
    }
}

void esc_metrics_header(esc_metrics_text *t, const char *name, const char *type,
                        const char *help)
{
    puts_(t, "# HELP ");
    puts_(t, name);
    puts_(t, " ");
    put_escaped(t, help, false);
    puts_(t, "\n# TYPE ");
    puts_(t, name);
    puts_(t, " ");
    puts_(t, type);
    puts_(t, "\n");
}

void esc_metrics_sample(esc_metrics_text *t, const char *name, const char *const *labels,
                        double value)
{
    puts_(t, name);
    if (labels && labels[0]) {
        puts_(t, "{");
        for (size_t i = 0; labels[i] && labels[i + 1]; i += 2) {
            if (i)
                puts_(t, ",");
            puts_(t, labels[i]);
            puts_(t, "=\"");
            put_escaped(t, labels[i + 1], true);
            puts_(t, "\"");
        }
        puts_(t, "}");
    }
    if (isnan(value))
        puts_(t, " NaN\n");
    else if (isinf(value))
        puts_(t, value > 0 ? " +Inf\n" : " -Inf\n");
    else if (value == floor(value) && fabs(value) < 1e15)
        putf(t, " %.0f\n", value);
    else
        putf(t, " %.17g\n", value);
}

/* ------------------------------------------------------------------ the endpoint */

/* One user of the loop's HTTP server (http_server.c): GET /metrics. */
struct esc_metrics_http {
    esc_http_server *s;
    esc_metrics_fill_fn fill;
    void *ud;
};

static void serve_metrics(void *ud, esc_http_req *r)
{
    esc_metrics_http *m = ud;
    esc_metrics_text t = {0};
    m->fill(m->ud, &t);
    esc_http_reply(r, 200, "text/plain; version=0.0.4", t.buf ? t.buf : "", t.len);
    free(t.buf);
}

static void not_found(void *ud, esc_http_req *r)
{
    (void)ud;
    esc_http_reply_text(r, 404, "not found: only GET /metrics\n");
}

esc_metrics_http *esc_metrics_http_start(struct ev_loop *ev, const char *bind, int port,
                                         esc_metrics_fill_fn fill, void *ud, char *err,
                                         size_t errlen)
{
    esc_metrics_http *m = esc_xcalloc(1, sizeof *m);
    m->fill = fill;
    m->ud = ud;
    m->s = esc_http_start(ev, "metrics", bind, port, err, errlen);
    if (!m->s || esc_http_route(m->s, "/metrics", false, serve_metrics, m) != 0 ||
        esc_http_route(m->s, "/", true, not_found, m) != 0) {
        if (m->s)
            snprintf(err, errlen, "metrics: out of memory");
        esc_http_stop(m->s);
        free(m);
        return NULL;
    }
    return m;
}

int esc_metrics_http_port(const esc_metrics_http *m)
{
    return esc_http_port(m->s);
}

void esc_metrics_http_stop(esc_metrics_http *m)
{
    if (!m)
        return;
    esc_http_stop(m->s);
    free(m);
}

int esc_metrics_write_file(const char *path, const char *text)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fputs(text, f);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

int esc_metrics_write_port_file(const char *path, int port)
{
    char line[32];
    snprintf(line, sizeof line, "%d\n", port);
    return esc_metrics_write_file(path, line);
}

bool esc_metrics_wildcard(const char *bind)
{
    return !*bind || !strcmp(bind, "0.0.0.0") || !strcmp(bind, "::") || !strcmp(bind, "[::]");
}

/* labels plus method=name (and le=bound when le is not NULL) into out (9 pairs max). */
static void rpc_labels(const char **out, const char *const *labels, const char *method,
                       const char *le)
{
    size_t n = 0;
    for (size_t i = 0; labels && labels[i] && n < 8; i += 2) {
        out[n++] = labels[i];
        out[n++] = labels[i + 1];
    }
    out[n++] = "method";
    out[n++] = method;
    if (le) {
        out[n++] = "le";
        out[n++] = le;
    }
    out[n] = NULL;
}

void esc_metrics_rpc(esc_metrics_text *t, const struct esc_rpc_server *s,
                     const char *calls_name, const char *const *labels)
{
    const char *l[16], *method;
    uint64_t calls;
    if (calls_name) {
        esc_metrics_header(t, calls_name, "counter",
                           "Calls received per method, whatever their outcome.");
        for (size_t i = 0; esc_rpc_server_method_calls(s, i, &method, &calls); i++) {
            rpc_labels(l, labels, method, NULL);
            esc_metrics_sample(t, calls_name, (const char *const *)l, (double)calls);
        }
    }
    esc_metrics_header(t, "escher_rpc_server_seconds", "histogram",
                       "Seconds from a call's arrival to its answer, per method (streams "
                       "left out).");
    esc_rpc_latency lat;
    char le[32];
    for (size_t i = 0; esc_rpc_server_method_latency(s, i, &method, &lat); i++) {
        for (size_t k = 0; k < ESC_RPC_LATENCY_BUCKETS; k++) {
            snprintf(le, sizeof le, "%g", esc_rpc_latency_le[k]);
            rpc_labels(l, labels, method, le);
            esc_metrics_sample(t, "escher_rpc_server_seconds_bucket", (const char *const *)l,
                               (double)lat.le[k]);
        }
        rpc_labels(l, labels, method, "+Inf");
        esc_metrics_sample(t, "escher_rpc_server_seconds_bucket", (const char *const *)l,
                           (double)lat.count);
        rpc_labels(l, labels, method, NULL);
        esc_metrics_sample(t, "escher_rpc_server_seconds_sum", (const char *const *)l, lat.sum_s);
        esc_metrics_sample(t, "escher_rpc_server_seconds_count", (const char *const *)l,
                           (double)lat.count);
    }
}
