/* http_server.c: routes, answers and event streams on libmicrohttpd, driven by the
 * daemon's libev loop (http_server.h). */
#include "http_server.h"
#include "xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#define MAX_HEADERS 8
#define SSE_QUEUE_MAX (4u << 20)   /* bytes queued for one slow client before it is dropped */
#define SSE_PING_S 15.0            /* a comment this often finds clients that went away */

typedef struct route {
    char *path;
    size_t len;
    bool prefix;
    esc_http_handler fn;
    void *ud;
    struct route *next;
} route;

struct esc_http_server {
    struct ev_loop *ev;
    struct MHD_Daemon *d;
    ev_io io;       /* MHD's epoll descriptor */
    ev_timer timer; /* MHD's own timeouts */
    ev_timer ping;  /* keeps event streams honest */
    int port;
    route *routes, **tail;
    esc_http_sse *streams;
    char what[32];
};

struct esc_http_req {
    esc_http_server *s;
    struct MHD_Connection *c;
    const char *method, *path;
    bool answered;
    enum MHD_Result rc;
    char *hdr[MAX_HEADERS][2];
    int nhdr;
};

struct esc_http_sse {
    esc_http_server *s;
    struct MHD_Connection *c;
    char *buf;
    size_t len, off, cap;
    bool suspended, ending;
    bool later;     /* a later answer (esc_http_later_start): no pings, no framing */
    esc_http_sse_close_fn on_close;
    void *ud;
    esc_http_sse *next, **pprev;
};

/* ------------------------------------------------------------------ requests */

const char *esc_http_method(const esc_http_req *r)
{
    return r->method;
}

const char *esc_http_path(const esc_http_req *r)
{
    return r->path;
}

const char *esc_http_query(const esc_http_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, key);
}

const char *esc_http_header(const esc_http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, name);
}

const char *esc_http_cookie(const esc_http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->c, MHD_COOKIE_KIND, name);
}

int esc_http_add_header(esc_http_req *r, const char *name, const char *value)
{
    if (r->nhdr >= MAX_HEADERS)
        return -1;
    r->hdr[r->nhdr][0] = esc_xstrdup(name);
    r->hdr[r->nhdr][1] = esc_xstrdup(value);
    r->nhdr++;
    return 0;
}

/* Queues resp (NULL: out of memory, the connection is closed) with the handler's
 * headers and releases it. */
static void queue(esc_http_req *r, unsigned code, struct MHD_Response *resp)
{
    r->answered = true;
    if (!resp) {
        r->rc = MHD_NO;
        return;
    }
    for (int i = 0; i < r->nhdr; i++)
        MHD_add_response_header(resp, r->hdr[i][0], r->hdr[i][1]);
    /* Answers are live state: never cached, never sniffed into another type. */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    r->rc = MHD_queue_response(r->c, code, resp);
    MHD_destroy_response(resp);
}

void esc_http_reply(esc_http_req *r, unsigned code, const char *content_type,
                    const void *body, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (resp)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    queue(r, code, resp);
}

void esc_http_reply_text(esc_http_req *r, unsigned code, const char *text)
{
    esc_http_reply(r, code, "text/plain; charset=utf-8", text, strlen(text));
}

void esc_http_reply_json(esc_http_req *r, unsigned code, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        esc_http_reply_text(r, 500, "cannot encode the answer\n");
        return;
    }
    size_t len = strlen(s);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, s, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(s);
    else
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    queue(r, code, resp);
}

static const char *content_type_of(const char *name)
{
    static const char *const types[][2] = {
        {".html", "text/html; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"}, {".json", "application/json"},
        {".svg", "image/svg+xml"}, {".png", "image/png"}, {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"}};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dot, types[i][0]))
            return types[i][1];
    return "application/octet-stream";
}

/* A relative path with no empty, hidden ("." first: also "..") components. */
static bool safe_rel(const char *rel)
{
    if (!*rel)
        return false;
    for (const char *p = rel; *p;) {
        if (*p == '/' || *p == '.')
            return false;
        const char *slash = strchr(p, '/');
        if (!slash)
            break;
        p = slash + 1;
    }
    return true;
}

void esc_http_reply_file(esc_http_req *r, const char *dir, const char *rel)
{
    char path[4096];
    int fd = -1;
    struct stat st;
    if (safe_rel(rel) && snprintf(path, sizeof path, "%s/%s", dir, rel) < (int)sizeof path)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        esc_http_reply_text(r, 404, "not found\n");
        return;
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp)
        close(fd);
    else
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type_of(rel));
    queue(r, 200, resp);
}

/* ------------------------------------------------------------------ event streams */

static void sse_wake(esc_http_sse *st)
{
    if (!st->suspended)
        return;
    st->suspended = false;
    MHD_resume_connection(st->c);
    /* MHD takes the connection back in its next run: have one soon, on the loop. */
    if (!ev_is_active(&st->s->timer) || ev_timer_remaining(st->s->ev, &st->s->timer) > 0.0) {
        ev_timer_stop(st->s->ev, &st->s->timer);
        ev_timer_set(&st->s->timer, 0.0, 0.0);
        ev_timer_start(st->s->ev, &st->s->timer);
    }
}

/* MHD asks for more of the stream. Nothing queued: the connection sleeps until
 * esc_http_sse_send wakes it (returning 0 without suspending would spin). */
static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    esc_http_sse *st = cls;
    if (st->off < st->len) {
        size_t n = st->len - st->off < max ? st->len - st->off : max;
        memcpy(out, st->buf + st->off, n);
        st->off += n;
        if (st->off == st->len)
            st->off = st->len = 0;
        return (ssize_t)n;
    }
    if (st->ending)
        return MHD_CONTENT_READER_END_OF_STREAM;
    st->suspended = true;
    MHD_suspend_connection(st->c);
    return 0;
}

/* The response is gone: the client left, the stream ended, or the server stops. */
static void sse_free(void *cls)
{
    esc_http_sse *st = cls;
    if (st->next)
        st->next->pprev = st->pprev;
    *st->pprev = st->next;
    if (st->on_close)
        st->on_close(st->ud, st);
    free(st->buf);
    free(st);
}

static void sse_put(esc_http_sse *st, const char *s, size_t n)
{
    if (st->ending)
        return;
    if (st->len + n > SSE_QUEUE_MAX) {
        st->ending = true; /* a client this far behind is let go, not buffered forever */
        st->len = st->off = 0;
        return;
    }
    if (st->len + n > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + n)
            cap *= 2;
        st->buf = esc_xrealloc(st->buf, cap);
        st->cap = cap;
    }
    memcpy(st->buf + st->len, s, n);
    st->len += n;
}

void esc_http_sse_send(esc_http_sse *st, const char *event, const char *data)
{
    if (event) {
        sse_put(st, "event: ", 7);
        sse_put(st, event, strlen(event));
        sse_put(st, "\n", 1);
    }
    for (const char *p = data;;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        sse_put(st, "data: ", 6);
        sse_put(st, p, n);
        sse_put(st, "\n", 1);
        if (!nl)
            break;
        p = nl + 1;
    }
    sse_put(st, "\n", 1);
    sse_wake(st);
}

/* A kept-open answer of content_type, listed with the server's streams. */
static esc_http_sse *open_answer(esc_http_req *r, const char *content_type,
                                 esc_http_sse_close_fn on_close, void *ud)
{
    esc_http_sse *st = esc_xcalloc(1, sizeof *st);
    struct MHD_Response *resp =
        st ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, st, sse_free)
           : NULL;
    if (!resp) {
        free(st);
        esc_http_reply_text(r, 500, "out of memory\n");
        return NULL;
    }
    st->s = r->s;
    st->c = r->c;
    st->on_close = on_close;
    st->ud = ud;
    st->next = r->s->streams;
    if (st->next)
        st->next->pprev = &st->next;
    st->pprev = &r->s->streams;
    r->s->streams = st;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    queue(r, 200, resp);
    return st;
}

esc_http_sse *esc_http_later_start(esc_http_req *r, const char *content_type,
                                   esc_http_sse_close_fn on_close, void *ud)
{
    esc_http_sse *st = open_answer(r, content_type, on_close, ud);
    if (st)
        st->later = true;
    return st;
}

void esc_http_later_finish(esc_http_sse *st, const char *body, size_t len)
{
    sse_put(st, body, len);
    st->ending = true;
    sse_wake(st);
}

esc_http_sse *esc_http_sse_start(esc_http_req *r, esc_http_sse_close_fn on_close, void *ud)
{
    esc_http_sse *st = open_answer(r, "text/event-stream", on_close, ud);
    if (!st)
        return NULL;
    /* A stream is quiet between events: MHD's idle timeout must not end it. */
    MHD_set_connection_option(r->c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    /* The stream starts with a comment, so the client sees the headers at once. */
    sse_put(st, ": escher\n\n", 10);
    return st;
}

static void on_ping(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    esc_http_server *s = w->data;
    for (esc_http_sse *st = s->streams; st; st = st->next) {
        if (st->later)
            continue; /* a JSON body must not get comments; it ends on its own */
        sse_put(st, ": ping\n\n", 8);
        sse_wake(st);
    }
}

/* ------------------------------------------------------------------ the server */

static const route *find_route(const esc_http_server *s, const char *path)
{
    for (const route *r = s->routes; r; r = r->next)
        if (r->prefix ? !strncmp(path, r->path, r->len) : !strcmp(path, r->path))
            return r;
    return NULL;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)con_cls;
    esc_http_server *s = cls;
    *upload_size = 0;
    esc_http_req r = {.s = s, .c = c, .method = method, .path = url};
    const route *rt = find_route(s, url);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        esc_http_reply_text(&r, 405, "only GET and HEAD\n");
    else if (!rt)
        esc_http_reply_text(&r, 404, "not found\n");
    else
        rt->fn(rt->ud, &r);
    if (!r.answered)
        esc_http_reply_text(&r, 500, "no answer\n");
    for (int i = 0; i < r.nhdr; i++) {
        free(r.hdr[i][0]);
        free(r.hdr[i][1]);
    }
    return r.rc;
}

/* Runs MHD, then arms the timer for what it waits on next. */
static void drive(esc_http_server *s)
{
    MHD_run(s->d);
    ev_timer_stop(s->ev, &s->timer);
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(s->d, &ms) == MHD_YES) {
        ev_timer_set(&s->timer, (double)ms / 1000.0, 0.0);
        ev_timer_start(s->ev, &s->timer);
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

/* Fills ss from an IP address and port; false when bind is not one. */
static bool parse_bind(const char *bind, int port, struct sockaddr_storage *ss, bool *v6)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    *v6 = false;
    if (inet_pton(AF_INET, bind, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        return true;
    }
    if (inet_pton(AF_INET6, bind, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *v6 = true;
        return true;
    }
    return false;
}

/* The port the listening socket got, or -1. */
static int bound_port(struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *li = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    if (!li || getsockname(li->listen_fd, (struct sockaddr *)&got, &gl) != 0)
        return -1;
    return got.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&got)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&got)->sin_port);
}

esc_http_server *esc_http_start(struct ev_loop *ev, const char *what, const char *bind,
                                int port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    bool v6;
    if (!parse_bind(bind, port, &ss, &v6)) {
        snprintf(err, errlen, "%s: bad bind address '%s' (an IP address)", what, bind);
        return NULL;
    }
    esc_http_server *s = esc_xcalloc(1, sizeof *s);
    snprintf(s->what, sizeof s->what, "%s", what);
    s->ev = ev;
    s->tail = &s->routes;
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | (v6 ? MHD_USE_IPv6 : 0);
    s->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, answer, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                            MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_END);
    const union MHD_DaemonInfo *ei =
        s->d ? MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    s->port = s->d ? bound_port(s->d) : -1;
    if (!s->d || !ei || s->port < 0) {
        snprintf(err, errlen, "%s: cannot listen on %s:%d", what, bind, port);
        if (s->d)
            MHD_stop_daemon(s->d);
        free(s);
        return NULL;
    }
    ev_io_init(&s->io, on_io, ei->epoll_fd, EV_READ);
    s->io.data = s;
    ev_io_start(ev, &s->io);
    ev_init(&s->timer, on_timer);
    s->timer.data = s;
    ev_timer_init(&s->ping, on_ping, SSE_PING_S, SSE_PING_S);
    s->ping.data = s;
    ev_timer_start(ev, &s->ping);
    /* None of the watchers keeps the loop running on its own. */
    ev_unref(ev);
    ev_unref(ev);
    return s;
}

int esc_http_port(const esc_http_server *s)
{
    return s->port;
}

int esc_http_route(esc_http_server *s, const char *path, bool prefix, esc_http_handler fn,
                   void *ud)
{
    route *r = esc_xcalloc(1, sizeof *r);
    r->path = esc_xstrdup(path);
    r->len = strlen(path);
    r->prefix = prefix;
    r->fn = fn;
    r->ud = ud;
    *s->tail = r;
    s->tail = &r->next;
    return 0;
}

void esc_http_stop(esc_http_server *s)
{
    if (!s)
        return;
    /* MHD refuses to stop with suspended connections: wake every stream to its end
     * (which arms the timer: the watchers are stopped after). */
    for (esc_http_sse *st = s->streams; st; st = st->next) {
        st->ending = true;
        sse_wake(st);
    }
    ev_ref(s->ev);
    ev_ref(s->ev);
    ev_io_stop(s->ev, &s->io);
    ev_timer_stop(s->ev, &s->timer);
    ev_timer_stop(s->ev, &s->ping);
    MHD_stop_daemon(s->d);
    while (s->routes) {
        route *r = s->routes;
        s->routes = r->next;
        free(r->path);
        free(r);
    }
    free(s);
}
