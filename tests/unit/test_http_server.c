/* test_http_server.c: runtime/http_server.c on a private libev loop (in a thread of its
 * own), with the test speaking raw HTTP/1.1 to it over loopback: routes, 404 and 405, JSON, files (and
 * paths that must not escape the folder), and server-sent events: a stream receives what
 * is sent after it sleeps suspended, costs no CPU while idle, and its close callback runs
 * once the client went away (at the next send) or when the server stops. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <ev.h>

#include "http_server.h"

/* ------------------------------------------------------------------ the server side */

typedef enum { CMD_NONE, CMD_SEND, CMD_STOP_SERVER, CMD_QUIT } cmd_kind;

typedef struct {
    struct ev_loop *ev;
    esc_http_server *s;
    ev_async wake;
    pthread_mutex_t mu;
    cmd_kind cmd;
    char payload[256];
    esc_http_sse *stream;   /* the one open stream, loop thread only */
    int closed;             /* close callbacks run (read by the client under mu) */
    char dir[64];
    int port;
} fixture;

static void on_close(void *ud, esc_http_sse *st)
{
    fixture *f = ud;
    pthread_mutex_lock(&f->mu);
    if (f->stream == st)
        f->stream = NULL;
    f->closed++;
    pthread_mutex_unlock(&f->mu);
}

static void h_hello(void *ud, esc_http_req *r)
{
    (void)ud;
    esc_http_add_header(r, "X-Test", "yes");
    esc_http_reply_text(r, 200, "hi\n");
}

static void h_json(void *ud, esc_http_req *r)
{
    (void)ud;
    const char *q = esc_http_query(r, "q");
    esc_http_reply_json(r, 200, json_pack("{s:s}", "q", q ? q : ""));
}

static void h_files(void *ud, esc_http_req *r)
{
    fixture *f = ud;
    esc_http_reply_file(r, f->dir, esc_http_path(r) + strlen("/f/"));
}

static void h_sse(void *ud, esc_http_req *r)
{
    fixture *f = ud;
    esc_http_sse *st = esc_http_sse_start(r, on_close, f);
    pthread_mutex_lock(&f->mu);
    f->stream = st;
    pthread_mutex_unlock(&f->mu);
    if (st)
        esc_http_sse_send(st, "hello", "{}");
}

static void h_silent(void *ud, esc_http_req *r)
{
    (void)ud;
    (void)r; /* answers nothing: the server answers 500 */
}

/* Runs the client's command on the loop thread. */
static void on_wake(struct ev_loop *ev, ev_async *w, int revents)
{
    (void)revents;
    fixture *f = w->data;
    pthread_mutex_lock(&f->mu);
    cmd_kind c = f->cmd;
    f->cmd = CMD_NONE;
    esc_http_sse *st = f->stream;
    /* A copy: once cmd is CMD_NONE the client may write its next payload. */
    char payload[sizeof f->payload];
    memcpy(payload, f->payload, sizeof payload);
    pthread_mutex_unlock(&f->mu);
    if (c == CMD_SEND && st)
        esc_http_sse_send(st, "e", payload);
    else if (c == CMD_STOP_SERVER) {
        esc_http_stop(f->s);
        f->s = NULL;
    } else if (c == CMD_QUIT)
        ev_break(ev, EVBREAK_ALL);
}

/* ------------------------------------------------------------------ the client side */

static void command(fixture *f, cmd_kind c, const char *payload)
{
    pthread_mutex_lock(&f->mu);
    f->cmd = c;
    snprintf(f->payload, sizeof f->payload, "%s", payload ? payload : "");
    pthread_mutex_unlock(&f->mu);
    ev_async_send(f->ev, &f->wake);
    /* Wait until the loop took it. */
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_lock(&f->mu);
        bool taken = f->cmd == CMD_NONE;
        pthread_mutex_unlock(&f->mu);
        if (taken)
            return;
        usleep(1000);
    }
    fail_msg("the loop did not take command %d", (int)c);
}

static int dial(const fixture *f, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
    return fd;
}

/* Reads into buf until want appears (or, want NULL, the server closes). */
static size_t read_until(int fd, char *buf, size_t cap, const char *want, size_t have)
{
    while (have < cap - 1) {
        buf[have] = '\0';
        if (want && strstr(buf, want))
            return have;
        ssize_t n = read(fd, buf + have, cap - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    buf[have] = '\0';
    return have;
}

/* One request with Connection: close; the whole answer into buf. */
static void fetch(const fixture *f, const char *method, const char *path, char *buf, size_t cap)
{
    char req[512];
    snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", method,
             path);
    int fd = dial(f, req);
    read_until(fd, buf, cap, NULL, 0);
    close(fd);
}

static int status_of(const char *answer)
{
    int code = 0;
    sscanf(answer, "HTTP/1.1 %d", &code);
    return code;
}

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static int closed_count(fixture *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->closed;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static void wait_closed(fixture *f, int want)
{
    for (int i = 0; i < 5000 && closed_count(f) < want; i++)
        usleep(1000);
    assert_int_equal(closed_count(f), want);
}

static void check_routes(fixture *f)
{
    char b[8192];
    fetch(f, "GET", "/hello", b, sizeof b);
    assert_int_equal(status_of(b), 200);
    assert_non_null(strstr(b, "X-Test: yes"));
    assert_non_null(strstr(b, "Cache-Control: no-store"));
    assert_non_null(strstr(b, "\r\n\r\nhi\n"));
    fetch(f, "GET", "/hello/more", b, sizeof b); /* an exact route */
    assert_int_equal(status_of(b), 404);
    fetch(f, "POST", "/hello", b, sizeof b);
    assert_int_equal(status_of(b), 405);
    fetch(f, "GET", "/silent", b, sizeof b);
    assert_int_equal(status_of(b), 500);
    fetch(f, "GET", "/json?q=a%20b", b, sizeof b);
    assert_int_equal(status_of(b), 200);
    assert_non_null(strstr(b, "Content-Type: application/json"));
    assert_non_null(strstr(b, "{\"q\":\"a b\"}"));
}

static void check_files(fixture *f)
{
    char b[8192];
    fetch(f, "GET", "/f/page.html", b, sizeof b);
    assert_int_equal(status_of(b), 200);
    assert_non_null(strstr(b, "Content-Type: text/html"));
    assert_non_null(strstr(b, "<p>page</p>"));
    static const char *const bad[] = {"/f/../secret", "/f/%2e%2e/secret", "/f/.hidden",
                                      "/f//etc/passwd", "/f/", "/f/missing.js", "/f/sub"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fetch(f, "GET", bad[i], b, sizeof b);
        if (status_of(b) != 404)
            fail_msg("%s: %d, want 404", bad[i], status_of(b));
        assert_null(strstr(b, "SECRET"));
    }
}

static void check_stream(fixture *f)
{
    char b[16384];
    int fd = dial(f, "GET /sse HTTP/1.1\r\nHost: t\r\n\r\n");
    size_t n = read_until(fd, b, sizeof b, "event: hello\ndata: {}\n\n", 0);
    assert_non_null(strstr(b, "Content-Type: text/event-stream"));
    assert_non_null(strstr(b, "event: hello"));
    /* Idle and suspended: no CPU spent by the loop (a spinning reader would burn it). */
    double c0 = cpu_s();
    usleep(300 * 1000);
    assert_true(cpu_s() - c0 < 0.1);
    command(f, CMD_SEND, "one\ntwo");
    n = read_until(fd, b, sizeof b, "event: e\ndata: one\ndata: two\n\n", n);
    assert_non_null(strstr(b, "event: e\ndata: one\ndata: two\n\n"));
    command(f, CMD_SEND, "three");
    read_until(fd, b, sizeof b, "data: three\n\n", n);
    assert_non_null(strstr(b, "data: three\n\n"));
    assert_int_equal(closed_count(f), 0);
    /* The client goes away: noticed when the stream is next woken. */
    close(fd);
    for (int i = 0; i < 3 && closed_count(f) == 0; i++) {
        command(f, CMD_SEND, "anyone?");
        usleep(50 * 1000);
    }
    wait_closed(f, 1);
}

static void check_stop_with_stream(fixture *f)
{
    char b[4096];
    int fd = dial(f, "GET /sse HTTP/1.1\r\nHost: t\r\n\r\n");
    read_until(fd, b, sizeof b, "event: hello", 0);
    int before = closed_count(f);
    command(f, CMD_STOP_SERVER, NULL); /* a suspended stream must not stop MHD_stop_daemon */
    wait_closed(f, before + 1);
    close(fd);
}

/* The server's loop runs in its own thread; the checks (and cmocka's assertions) in the
 * test's. */
static void *serve(void *arg)
{
    fixture *f = arg;
    ev_run(f->ev, 0);
    return NULL;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_http_server(void **state)
{
    (void)state;
    fixture f;
    memset(&f, 0, sizeof f);
    pthread_mutex_init(&f.mu, NULL);
    snprintf(f.dir, sizeof f.dir, "/tmp/escher-test-http-XXXXXX");
    assert_non_null(mkdtemp(f.dir));
    char sub[128];
    write_file(f.dir, "page.html", "<p>page</p>\n");
    write_file(f.dir, ".hidden", "SECRET\n");
    snprintf(sub, sizeof sub, "%s/sub", f.dir);
    mkdir(sub, 0700);
    f.ev = ev_loop_new(EVFLAG_AUTO);
    char err[256];
    f.s = esc_http_start(f.ev, "test", "127.0.0.1", 0, err, sizeof err);
    assert_non_null(f.s);
    f.port = esc_http_port(f.s);
    assert_true(f.port > 0);
    assert_int_equal(esc_http_route(f.s, "/hello", false, h_hello, &f), 0);
    assert_int_equal(esc_http_route(f.s, "/json", false, h_json, &f), 0);
    assert_int_equal(esc_http_route(f.s, "/f/", true, h_files, &f), 0);
    assert_int_equal(esc_http_route(f.s, "/sse", false, h_sse, &f), 0);
    assert_int_equal(esc_http_route(f.s, "/silent", false, h_silent, &f), 0);
    assert_null(esc_http_start(f.ev, "test", "not-an-ip", 0, err, sizeof err));
    assert_non_null(strstr(err, "bad bind address"));
    ev_async_init(&f.wake, on_wake);
    f.wake.data = &f;
    ev_async_start(f.ev, &f.wake);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, serve, &f), 0);
    check_routes(&f);
    check_files(&f);
    check_stream(&f);
    check_stop_with_stream(&f);
    command(&f, CMD_QUIT, NULL);
    pthread_join(t, NULL);
    esc_http_stop(f.s);
    ev_async_stop(f.ev, &f.wake);
    ev_loop_destroy(f.ev);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f.dir);
    assert_int_equal(system(cmd), 0);
    pthread_mutex_destroy(&f.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_http_server)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
