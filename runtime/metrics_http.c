/* metrics_http.c: the Prometheus endpoint, libmicrohttpd driven by the daemon's libev
 * loop (metrics_http.h). */
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

#include <microhttpd.h>

/* ------------------------------------------------------------------ the text */

static void put(esc_metrics_text *t, const char *s, size_t n)
{
    if (t->oom)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->oom = 1;
            return;
        }
        t->buf = b;
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

/* ------------------------------------------------------------------ the server */

struct esc_metrics_http {
    struct ev_loop *ev;
    struct MHD_Daemon *d;
    ev_io io;       /* MHD's epoll descriptor */
    ev_timer timer; /* MHD's own timeouts */
    int port;
    esc_metrics_fill_fn fill;
    void *ud;
};

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)con_cls;
    esc_metrics_http *m = cls;
    *upload_size = 0;
    struct MHD_Response *r;
    unsigned code;
    if (!strcmp(method, "GET") && !strcmp(url, "/metrics")) {
        esc_metrics_text t = {0};
        m->fill(m->ud, &t);
        if (t.oom) {
            free(t.buf);
            return MHD_NO;
        }
        r = MHD_create_response_from_buffer(t.len, t.buf ? t.buf : (char *)"",
                                            t.buf ? MHD_RESPMEM_MUST_FREE
                                                  : MHD_RESPMEM_PERSISTENT);
        if (!r) {
            free(t.buf);
            return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4");
        code = MHD_HTTP_OK;
    } else {
        static char nf[] = "not found: only GET /metrics\n";
        r = MHD_create_response_from_buffer(sizeof nf - 1, nf, MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
        code = MHD_HTTP_NOT_FOUND;
    }
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

/* Runs MHD, then arms the timer for what it waits on next. */
static void drive(esc_metrics_http *m)
{
    MHD_run(m->d);
    ev_timer_stop(m->ev, &m->timer);
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(m->d, &ms) == MHD_YES) {
        ev_timer_set(&m->timer, (double)ms / 1000.0, 0.0);
        ev_timer_start(m->ev, &m->timer);
    }
}

static void on_io(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    drive(w->data);
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    drive(w->data);
}

esc_metrics_http *esc_metrics_http_start(struct ev_loop *ev, const char *bind, int port,
                                         esc_metrics_fill_fn fill, void *ud, char *err,
                                         size_t errlen)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    unsigned flags = MHD_USE_EPOLL;
    if (inet_pton(AF_INET, bind, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
    } else if (inet_pton(AF_INET6, bind, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, errlen, "metrics: bad bind address '%s' (an IP address)", bind);
        return NULL;
    }
    esc_metrics_http *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "metrics: out of memory");
        return NULL;
    }
    m->ev = ev;
    m->fill = fill;
    m->ud = ud;
    m->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, answer, m,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                            MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_END);
    if (!m->d) {
        snprintf(err, errlen, "metrics: cannot listen on %s:%d", bind, port);
        free(m);
        return NULL;
    }
    const union MHD_DaemonInfo *li = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_LISTEN_FD);
    const union MHD_DaemonInfo *ei = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_EPOLL_FD);
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    if (!li || !ei || getsockname(li->listen_fd, (struct sockaddr *)&got, &gl) != 0) {
        snprintf(err, errlen, "metrics: cannot read the listening socket");
        MHD_stop_daemon(m->d);
        free(m);
        return NULL;
    }
    m->port = got.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&got)->sin6_port)
                                        : ntohs(((struct sockaddr_in *)&got)->sin_port);
    ev_io_init(&m->io, on_io, ei->epoll_fd, EV_READ);
    m->io.data = m;
    ev_io_start(ev, &m->io);
    ev_init(&m->timer, on_timer);
    m->timer.data = m;
    /* Neither watcher keeps the loop running on its own. */
    ev_unref(ev);
    return m;
}

int esc_metrics_http_port(const esc_metrics_http *m)
{
    return m->port;
}

void esc_metrics_http_stop(esc_metrics_http *m)
{
    if (!m)
        return;
    ev_ref(m->ev);
    ev_io_stop(m->ev, &m->io);
    ev_timer_stop(m->ev, &m->timer);
    MHD_stop_daemon(m->d);
    free(m);
}

int esc_metrics_write_port_file(const char *path, int port)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}
