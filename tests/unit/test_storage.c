/* test_storage.c: one battery of storage tests run against both backends.
 *
 * The memory group needs nothing. The Redis group starts its own redis-server
 * on a free loopback port (no persistence) and uses DB 5 of it; if
 * redis-server cannot be started the group fails rather than skips, because CI
 * installs it and a silent skip would hide a broken backend.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <hiredis/hiredis.h>

#include "storage.h"

#define REDIS_DB 5
#define SCAN_N 10000

typedef struct {
    const char *name;
    char uri[128];
} backend;

static backend memory_backend = { "memory", "memory" };
static backend redis_backend = { "redis", "" }; /* uri set once the server is up */

/* ---- helpers ---- */

static void assert_one_line(const char *err)
{
    assert_non_null(err);
    assert_true(strlen(err) > 0);
    assert_null(strchr(err, '\n'));
    assert_null(strchr(err, '\r'));
}

static esc_storage *open_ok(const char *uri)
{
    char err[256] = "";
    esc_storage *st = esc_storage_open(uri, err, sizeof(err));
    if (st == NULL)
        fail_msg("esc_storage_open(%s): %s", uri ? uri : "NULL", err);
    return st;
}

static esc_storage *open_backend(void **state)
{
    const backend *be = *state;
    return open_ok(be->uri);
}

static void commit_ok(esc_storage *st, esc_storage_batch *b)
{
    char err[256] = "";
    if (esc_storage_commit(st, b, err, sizeof(err)) != 0)
        fail_msg("commit: %s", err);
}

static void put1(esc_storage *st, const char *table, const char *key, const void *v, size_t len)
{
    esc_storage_batch *b = esc_storage_batch_new();
    assert_non_null(b);
    esc_storage_put(b, table, key, v, len);
    commit_ok(st, b);
}

static void put_str(esc_storage *st, const char *table, const char *key, const char *v)
{
    put1(st, table, key, v, strlen(v));
}

static void del1(esc_storage *st, const char *table, const char *key)
{
    esc_storage_batch *b = esc_storage_batch_new();
    assert_non_null(b);
    esc_storage_del(b, table, key);
    commit_ok(st, b);
}

static void assert_value(esc_storage *st, const char *table, const char *key, const void *want,
                         size_t want_len)
{
    void *v = NULL;
    size_t len = 0;
    int rc = esc_storage_get(st, table, key, &v, &len);
    if (rc != 1)
        fail_msg("get %s/%s returned %d, want 1", table, key, rc);
    assert_non_null(v);
    assert_int_equal(len, want_len);
    if (want_len > 0)
        assert_memory_equal(v, want, want_len);
    free(v);
}

static void assert_str(esc_storage *st, const char *table, const char *key, const char *want)
{
    assert_value(st, table, key, want, strlen(want));
}

static void assert_absent(esc_storage *st, const char *table, const char *key)
{
    void *v = (void *)1;
    size_t len = 7;
    int rc = esc_storage_get(st, table, key, &v, &len);
    if (rc != 0)
        fail_msg("get %s/%s returned %d, want 0 (absent)", table, key, rc);
    assert_null(v);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- redis-server under test ---- */

static pid_t redis_pid = -1;
static int redis_port;

/* Asks the kernel for a free port; a tiny race with other processes is fine. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static pid_t spawn_redis(int port)
{
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* Dies with the test even if the test crashes before its teardown. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0)
        dup2(devnull, STDOUT_FILENO);
    execlp("redis-server", "redis-server", "--port", portstr, "--bind", "127.0.0.1", "--save",
           "", "--appendonly", "no", "--daemonize", "no", (char *)NULL);
    fprintf(stderr, "test_storage: cannot run redis-server: %s\n", strerror(errno));
    _exit(127);
}

static int redis_answers_ping(int port)
{
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, (struct timeval){ 0, 200000 });
    int ok = 0;
    if (c != NULL && !c->err) {
        redisSetTimeout(c, (struct timeval){ 1, 0 });
        redisReply *r = redisCommand(c, "PING");
        ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        if (r != NULL)
            freeReplyObject(r);
    }
    if (c != NULL)
        redisFree(c);
    return ok;
}

static int start_redis(void)
{
    if (redis_port <= 0)
        redis_port = free_port();
    if (redis_port <= 0) {
        fprintf(stderr, "test_storage: cannot find a free port\n");
        return -1;
    }
    redis_pid = spawn_redis(redis_port);
    if (redis_pid < 0) {
        fprintf(stderr, "test_storage: fork: %s\n", strerror(errno));
        return -1;
    }
    for (int i = 0; i < 200; i++) { /* up to ~10 s */
        int status;
        if (waitpid(redis_pid, &status, WNOHANG) == redis_pid) {
            fprintf(stderr, "test_storage: redis-server exited at start (exit %d); "
                            "is it installed and on PATH?\n",
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            redis_pid = -1;
            return -1;
        }
        if (redis_answers_ping(redis_port))
            return 0;
        usleep(50000);
    }
    fprintf(stderr, "test_storage: redis-server on port %d never answered PING\n", redis_port);
    return -1;
}

static void stop_redis(void)
{
    if (redis_pid <= 0)
        return;
    kill(redis_pid, SIGCONT); /* in case a test left it stopped */
    kill(redis_pid, SIGKILL);
    waitpid(redis_pid, NULL, 0);
    redis_pid = -1;
}

/* Runs one command on a fresh side connection to DB REDIS_DB; caller frees. */
static redisReply *admin(const char *fmt, ...)
{
    redisContext *c = redisConnectWithTimeout("127.0.0.1", redis_port, (struct timeval){ 2, 0 });
    if (c == NULL || c->err)
        fail_msg("admin connect: %s", c ? c->errstr : "out of memory");
    redisSetTimeout(c, (struct timeval){ 5, 0 });
    redisReply *sel = redisCommand(c, "SELECT %d", REDIS_DB);
    if (sel != NULL)
        freeReplyObject(sel);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL)
        fail_msg("admin command failed: %s", c->errstr);
    redisFree(c);
    return r;
}

static void admin_ok(const char *cmd)
{
    redisReply *r = admin(cmd);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("admin %s: %s", cmd, r->str);
    freeReplyObject(r);
}

static int redis_group_setup(void **state)
{
    (void)state;
    if (start_redis() != 0)
        return -1;
    snprintf(redis_backend.uri, sizeof(redis_backend.uri), "redis://127.0.0.1:%d/%d",
             redis_port, REDIS_DB);
    return 0;
}

static int redis_group_teardown(void **state)
{
    (void)state;
    stop_redis();
    return 0;
}

/* Each Redis test starts on a running server with an empty keyspace. */
static int redis_test_setup(void **state)
{
    (void)state;
    if (redis_pid > 0)
        kill(redis_pid, SIGCONT);
    if (redis_pid <= 0 && start_redis() != 0)
        return -1;
    admin_ok("FLUSHALL");
    return 0;
}

/* ---- the battery, for every backend ---- */

static void test_put_get_overwrite_delete(void **state)
{
    esc_storage *st = open_backend(state);
    put_str(st, "nodes", "n1", "alpha");
    assert_str(st, "nodes", "n1", "alpha");
    put_str(st, "nodes", "n1", "beta-longer-value");
    assert_str(st, "nodes", "n1", "beta-longer-value");
    put_str(st, "nodes", "n1", "g");
    assert_str(st, "nodes", "n1", "g");
    put_str(st, "jobs", "n1", "other table");
    del1(st, "nodes", "n1");
    assert_absent(st, "nodes", "n1");
    assert_str(st, "jobs", "n1", "other table");
    del1(st, "nodes", "n1"); /* deleting an absent key is not an error */
    put_str(st, "nodes", "n1", "back");
    assert_str(st, "nodes", "n1", "back");
    esc_storage_close(st);
}

static void test_binary_values(void **state)
{
    esc_storage *st = open_backend(state);
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    static const char nul_edges[] = { '\0', 'a', '\0', '\0', 'b', '\0' };
    size_t big_len = 1 << 20;
    unsigned char *big = malloc(big_len);
    assert_non_null(big);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (unsigned char)(i * 2654435761u >> 13);

    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, "bin", "all", all, sizeof(all));
    esc_storage_put(b, "bin", "nul", nul_edges, sizeof(nul_edges));
    esc_storage_put(b, "bin", "empty", NULL, 0);
    esc_storage_put(b, "bin", "big", big, big_len);
    esc_storage_put(b, "bin", "key with spaces %s %b", "x", 1);
    esc_storage_put(b, "table with spaces", "", "empty key", 9);
    esc_storage_put(b, "bin", "utf8-\xc3\xa9\xe2\x82\xac", "\xff\xfe", 2);
    commit_ok(st, b);

    assert_value(st, "bin", "all", all, sizeof(all));
    assert_value(st, "bin", "nul", nul_edges, sizeof(nul_edges));
    assert_value(st, "bin", "empty", "", 0);
    assert_value(st, "bin", "big", big, big_len);
    assert_value(st, "bin", "key with spaces %s %b", "x", 1);
    assert_value(st, "table with spaces", "", "empty key", 9);
    assert_value(st, "bin", "utf8-\xc3\xa9\xe2\x82\xac", "\xff\xfe", 2);
    assert_int_equal(esc_storage_scan(st, "bin", NULL, NULL), 6);
    free(big);
    esc_storage_close(st);
}

static void test_batch_atomicity(void **state)
{
    esc_storage *st = open_backend(state);
    put_str(st, "t", "old", "1");

    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, "t", "a", "A", 1);
    esc_storage_put(b, "u", "b", "B", 1);
    esc_storage_del(b, "t", "old");
    assert_int_equal(esc_storage_batch_size(b), 3);
    /* Buffered writes are invisible until the commit. */
    assert_absent(st, "t", "a");
    assert_absent(st, "u", "b");
    assert_str(st, "t", "old", "1");
    commit_ok(st, b);
    assert_str(st, "t", "a", "A");
    assert_str(st, "u", "b", "B");
    assert_absent(st, "t", "old");

    /* Writes apply in order within a batch. */
    b = esc_storage_batch_new();
    esc_storage_put(b, "t", "k", "v1", 2);
    esc_storage_del(b, "t", "k");
    esc_storage_put(b, "t", "k2", "x", 1);
    esc_storage_del(b, "t", "k2");
    esc_storage_put(b, "t", "k2", "y", 1);
    esc_storage_put(b, "t", "k3", "first", 5);
    esc_storage_put(b, "t", "k3", "second", 6);
    commit_ok(st, b);
    assert_absent(st, "t", "k");
    assert_str(st, "t", "k2", "y");
    assert_str(st, "t", "k3", "second");

    /* An empty batch commits as a no-op. */
    b = esc_storage_batch_new();
    assert_int_equal(esc_storage_batch_size(b), 0);
    commit_ok(st, b);
    esc_storage_close(st);
}

static void test_failed_commit_shows_nothing(void **state)
{
    esc_storage *st = open_backend(state);
    put_str(st, "t", "keep", "original");

    /* One unrecordable write poisons the whole batch. */
    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, "t", "keep", "changed", 7);
    esc_storage_put(b, "t", "new", "N", 1);
    esc_storage_del(b, "t", "keep");
    esc_storage_put(b, "t", NULL, "x", 1);
    esc_storage_put(b, "t", "after", "Z", 1);
    assert_int_equal(esc_storage_batch_size(b), 5);
    char err[256] = "";
    assert_int_equal(esc_storage_commit(st, b, err, sizeof(err)), -1);
    assert_one_line(err);
    assert_str(st, "t", "keep", "original");
    assert_absent(st, "t", "new");
    assert_absent(st, "t", "after");

    b = esc_storage_batch_new();
    esc_storage_put(b, "t", "new", NULL, 3); /* NULL value with a length */
    assert_int_equal(esc_storage_commit(st, b, err, sizeof(err)), -1);
    assert_absent(st, "t", "new");

    b = esc_storage_batch_new();
    esc_storage_del(b, NULL, "keep");
    assert_int_equal(esc_storage_commit(st, b, err, sizeof(err)), -1);
    assert_str(st, "t", "keep", "original");

    err[0] = '\0';
    assert_int_equal(esc_storage_commit(st, NULL, err, sizeof(err)), -1);
    assert_one_line(err);
    esc_storage_close(st);
}

static void test_missing_keys(void **state)
{
    esc_storage *st = open_backend(state);
    assert_absent(st, "never-written", "k");
    put_str(st, "t", "present", "p");
    assert_absent(st, "t", "absent");
    assert_absent(st, "t", "presen");
    assert_absent(st, "t", "present ");
    assert_absent(st, "T", "present");
    assert_int_equal(esc_storage_scan(st, "never-written", NULL, NULL), 0);
    del1(st, "never-written", "k");
    del1(st, "t", "present");
    assert_int_equal(esc_storage_scan(st, "t", NULL, NULL), 0);
    esc_storage_close(st);
}

/* Value of entry i: length and bytes depend on i, with NULs inside. */
static size_t scan_value(int i, unsigned char *buf)
{
    size_t len = 2 + (size_t)(i % 61);
    for (size_t j = 0; j < len; j++)
        buf[j] = (unsigned char)(i * 31 + (int)j * 7);
    buf[1] = '\0';
    return len;
}

typedef struct {
    char seen[SCAN_N];
    int calls;
    int bad; /* counted here; asserting inside the callback would jump out of the backend */
} scan_check;

static void check_entry(void *ud, const char *key, const void *value, size_t len)
{
    scan_check *sc = ud;
    sc->calls++;
    int i;
    char tail;
    if (sscanf(key, "k%d%c", &i, &tail) != 1 || i < 0 || i >= SCAN_N || sc->seen[i]) {
        sc->bad++;
        return;
    }
    sc->seen[i] = 1;
    unsigned char want[64];
    size_t want_len = scan_value(i, want);
    if (len != want_len || memcmp(value, want, len) != 0)
        sc->bad++;
}

static void fill_table(esc_storage *st, const char *table)
{
    esc_storage_batch *b = esc_storage_batch_new();
    for (int i = 0; i < SCAN_N; i++) {
        char key[16];
        unsigned char v[64];
        snprintf(key, sizeof(key), "k%d", i);
        esc_storage_put(b, table, key, v, scan_value(i, v));
    }
    assert_int_equal(esc_storage_batch_size(b), SCAN_N);
    commit_ok(st, b);
}

static void test_scan_10000(void **state)
{
    esc_storage *st = open_backend(state);
    fill_table(st, "big");
    put_str(st, "small", "k1", "not in big");
    put_str(st, "small", "k2", "not in big");

    scan_check *sc = calloc(1, sizeof(*sc));
    assert_non_null(sc);
    assert_int_equal(esc_storage_scan(st, "big", check_entry, sc), SCAN_N);
    assert_int_equal(sc->calls, SCAN_N);
    assert_int_equal(sc->bad, 0);
    for (int i = 0; i < SCAN_N; i++)
        assert_true(sc->seen[i]);

    /* Delete the even half, across several batches. */
    for (int start = 0; start < SCAN_N; start += 2500) {
        esc_storage_batch *b = esc_storage_batch_new();
        for (int i = start; i < start + 2500; i += 2) {
            char key[16];
            snprintf(key, sizeof(key), "k%d", i);
            esc_storage_del(b, "big", key);
        }
        commit_ok(st, b);
    }
    memset(sc, 0, sizeof(*sc));
    assert_int_equal(esc_storage_scan(st, "big", check_entry, sc), SCAN_N / 2);
    assert_int_equal(sc->calls, SCAN_N / 2);
    assert_int_equal(sc->bad, 0);
    for (int i = 0; i < SCAN_N; i++)
        assert_int_equal(sc->seen[i], i % 2);
    assert_int_equal(esc_storage_scan(st, "small", NULL, NULL), 2);
    assert_int_equal(esc_storage_scan(st, "absent", check_entry, sc), 0);
    free(sc);
    esc_storage_close(st);
}

/* Closing and reopening: Redis keeps the data, the memory store starts empty. */
static void test_reopen(void **state)
{
    const backend *be = *state;
    esc_storage *st = open_backend(state);
    put_str(st, "kv", "persist", "me");
    int durable = esc_storage_is_durable(st);
    esc_storage_close(st);

    st = open_ok(be->uri);
    if (durable)
        assert_str(st, "kv", "persist", "me");
    else
        assert_absent(st, "kv", "persist");
    esc_storage_close(st);
}

/* ---- Redis only ---- */

static void test_redis_durable_across_stores(void **state)
{
    esc_storage *a = open_backend(state);
    esc_storage *b = open_backend(state);
    assert_true(esc_storage_is_durable(a));
    put_str(a, "actors", "x", "from a");
    assert_str(b, "actors", "x", "from a"); /* a second store on the same server */
    esc_storage_close(a);
    put_str(b, "actors", "y", "from b");
    esc_storage_close(b);

    esc_storage *c = open_backend(state);
    assert_str(c, "actors", "x", "from a");
    assert_str(c, "actors", "y", "from b");
    assert_int_equal(esc_storage_scan(c, "actors", NULL, NULL), 2);
    esc_storage_close(c);

    /* Stored where documented: one hash per table. */
    redisReply *r = admin("HGET escher:actors x");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "from a");
    freeReplyObject(r);
}

static void test_redis_db_isolation(void **state)
{
    esc_storage *st = open_backend(state);
    put_str(st, "t", "k", "in db 5");
    char uri[128];
    snprintf(uri, sizeof(uri), "redis://127.0.0.1:%d/%d", redis_port, REDIS_DB + 1);
    esc_storage *other = open_ok(uri);
    assert_absent(other, "t", "k");
    esc_storage_close(other);

    snprintf(uri, sizeof(uri), "redis://127.0.0.1:%d", redis_port); /* DB 0 by default */
    other = open_ok(uri);
    assert_absent(other, "t", "k");
    esc_storage_close(other);

    char err[256] = "";
    snprintf(uri, sizeof(uri), "redis://127.0.0.1:%d/99999", redis_port);
    assert_null(esc_storage_open(uri, err, sizeof(err)));
    assert_one_line(err);
    assert_non_null(strstr(err, "SELECT"));
    esc_storage_close(st);
}

/* A transaction Redis refuses while queueing (here: over maxmemory) applies nothing. */
static void test_redis_rejected_commit_shows_nothing(void **state)
{
    esc_storage *st = open_backend(state);
    put_str(st, "t", "keep", "original");
    admin_ok("CONFIG SET maxmemory 1");
    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, "t", "keep", "changed", 7);
    esc_storage_put(b, "t2", "new", "N", 1);
    char err[256] = "";
    int rc = esc_storage_commit(st, b, err, sizeof(err));
    admin_ok("CONFIG SET maxmemory 0");
    assert_int_equal(rc, -1);
    assert_one_line(err);
    assert_non_null(strstr(err, "OOM"));
    assert_str(st, "t", "keep", "original");
    assert_absent(st, "t2", "new");
    put_str(st, "t2", "new", "N"); /* the connection is still usable */
    assert_str(st, "t2", "new", "N");
    esc_storage_close(st);
}

static void test_redis_wrong_type_is_an_error(void **state)
{
    esc_storage *st = open_backend(state);
    admin_ok("SET escher:wt not-a-hash");
    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, "wt", "k", "v", 1);
    char err[256] = "";
    assert_int_equal(esc_storage_commit(st, b, err, sizeof(err)), -1);
    assert_one_line(err);
    assert_non_null(strstr(err, "WRONGTYPE"));
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(esc_storage_get(st, "wt", "k", &v, &len), -1);
    assert_int_equal(esc_storage_scan(st, "wt", NULL, NULL), -1);
    put_str(st, "fine", "k", "v");
    assert_str(st, "fine", "k", "v");
    esc_storage_close(st);
}

/* The store survives a Redis restart: the next operation reconnects once. */
static void test_redis_reconnects_after_restart(void **state)
{
    esc_storage *st = open_backend(state);
    put_str(st, "t", "before", "1");
    stop_redis();
    assert_int_equal(start_redis(), 0);
    put_str(st, "t", "after", "2"); /* the old connection is dead; this reconnects */
    assert_str(st, "t", "after", "2");
    stop_redis();
    assert_int_equal(start_redis(), 0);
    admin_ok("FLUSHALL");
    assert_absent(st, "t", "after"); /* get reconnects too */
    put_str(st, "t", "x", "y");
    stop_redis();
    assert_int_equal(start_redis(), 0);
    assert_int_equal(esc_storage_scan(st, "t", NULL, NULL), 0); /* and scan */
    esc_storage_close(st);
}

/* With Redis gone, operations fail promptly with a reason. The batch is large
 * enough to need several writes, so the later ones hit a reset connection. */
static void test_redis_dead_server_errors(void **state)
{
    esc_storage *st = open_backend(state);
    put_str(st, "t", "k", "v");
    stop_redis();

    esc_storage_batch *b = esc_storage_batch_new();
    static unsigned char chunk[4096];
    for (int i = 0; i < 2048; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        esc_storage_put(b, "t", key, chunk, sizeof(chunk));
    }
    char err[512] = "";
    double t0 = now_s();
    assert_int_equal(esc_storage_commit(st, b, err, sizeof(err)), -1);
    assert_true(now_s() - t0 < 5.0);
    assert_one_line(err);
    assert_non_null(strstr(err, "reconnect failed"));

    void *v = NULL;
    size_t len = 0;
    assert_int_equal(esc_storage_get(st, "t", "k", &v, &len), -1);
    assert_null(v);
    assert_int_equal(esc_storage_scan(st, "t", NULL, NULL), -1);

    /* Once Redis is back, the same store works again. */
    assert_int_equal(start_redis(), 0);
    put_str(st, "t", "k", "again");
    assert_str(st, "t", "k", "again");
    esc_storage_close(st);
}

/* A Redis that accepts connections but never answers gives an error after the
 * command timeout (plus one reconnect), not a hang. */
static void test_redis_stalled_server_times_out(void **state)
{
    esc_storage *st = open_backend(state);
    put_str(st, "t", "k", "v");
    assert_int_equal(kill(redis_pid, SIGSTOP), 0);
    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, "t", "k2", "v2", 2);
    char err[512] = "";
    double t0 = now_s();
    int rc = esc_storage_commit(st, b, err, sizeof(err));
    double took = now_s() - t0;
    kill(redis_pid, SIGCONT);
    assert_int_equal(rc, -1);
    assert_one_line(err);
    assert_non_null(strstr(err, "no reply within"));
    assert_true(took < 30.0);
    put_str(st, "t", "k3", "v3");
    assert_str(st, "t", "k3", "v3");
    esc_storage_close(st);
}

/* ---- asynchronous commits on a loop ---- */

typedef struct {
    int order[8]; /* completion order: the tag of each done, in turn */
    char err[8][256];
    int n;
} async_log;

typedef struct {
    async_log *log;
    int tag;
} async_tag;

static void async_done(void *ud, const char *err)
{
    async_tag *t = ud;
    async_log *l = t->log;
    snprintf(l->err[l->n], sizeof l->err[0], "%s", err ? err : "");
    l->order[l->n++] = t->tag;
}

static void async_put(esc_storage *st, const char *key, const char *val, int timeout_ms,
                      async_tag *t)
{
    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, "t", key, val, strlen(val));
    esc_storage_commit_async(st, b, timeout_ms, async_done, t);
}

/* Runs the loop until want completions were logged, or fails after 10 s. */
static void run_until(struct ev_loop *loop, const async_log *l, int want)
{
    double end = now_s() + 10.0;
    while (l->n < want && now_s() < end)
        ev_run(loop, EVRUN_ONCE);
    assert_int_equal(l->n, want);
}

/* Commits complete in order; with Redis stopped, one fails on its deadline while the
 * loop keeps turning, and when Redis resumes and applies it late, it is undone. */
static void test_redis_async_commits(void **state)
{
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    char err[512] = "";
    esc_storage *st = esc_storage_open(redis_backend.uri, err, sizeof err);
    assert_non_null(st);
    put_str(st, "t", "k", "before");
    assert_int_equal(esc_storage_attach(st, loop, err, sizeof err), 0);

    async_log l = { .n = 0 };
    async_tag tags[4] = { { &l, 0 }, { &l, 1 }, { &l, 2 }, { &l, 3 } };
    async_put(st, "a", "1", 5000, &tags[0]);
    async_put(st, "b", "2", 5000, &tags[1]);
    run_until(loop, &l, 2);
    assert_int_equal(l.order[0], 0);
    assert_int_equal(l.order[1], 1);
    assert_string_equal(l.err[0], "");
    assert_str(st, "t", "b", "2");

    /* A synchronous commit would overtake the loop's queue: refused. */
    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, "t", "x", "y", 1);
    assert_int_equal(esc_storage_commit(st, b, err, sizeof err), -1);
    assert_one_line(err);

    assert_int_equal(kill(redis_pid, SIGSTOP), 0);
    double t0 = now_s();
    async_put(st, "k", "late", 300, &tags[2]);
    run_until(loop, &l, 3);
    double took = now_s() - t0;
    assert_true(took >= 0.25 && took < 2.0);
    assert_non_null(strstr(l.err[2], "no reply within 300 ms"));
    assert_one_line(l.err[2]);
    kill(redis_pid, SIGCONT);

    /* Queued behind the late reply and its undo: once it is done, both are. */
    async_put(st, "c", "3", 5000, &tags[3]);
    run_until(loop, &l, 4);
    assert_string_equal(l.err[3], "");
    assert_str(st, "t", "k", "before");
    assert_str(st, "t", "c", "3");
    esc_storage_close(st);
    ev_loop_destroy(loop);
}

/* The memory store completes an asynchronous commit before it returns. */
static void test_memory_async_commit_at_once(void **state)
{
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    char err[256];
    esc_storage *st = esc_storage_open("memory", err, sizeof err);
    assert_int_equal(esc_storage_attach(st, loop, err, sizeof err), 0);
    async_log l = { .n = 0 };
    async_tag t = { &l, 7 };
    async_put(st, "a", "1", 1000, &t);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.err[0], "");
    assert_str(st, "t", "a", "1");
    esc_storage_commit_async(st, NULL, 1000, async_done, &t);
    assert_int_equal(l.n, 2);
    assert_one_line(l.err[1]);
    assert_true(l.err[1][0] != '\0');
    esc_storage_close(st);
    ev_loop_destroy(loop);
}

/* ---- opening ---- */

static void test_open_memory_forms(void **state)
{
    (void)state;
    const char *forms[] = { NULL, "", "memory" };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        esc_storage *st = open_ok(forms[i]);
        assert_false(esc_storage_is_durable(st));
        esc_storage_close(st);
    }
    esc_storage_close(NULL);
    assert_false(esc_storage_is_durable(NULL));
}

static void test_open_bad_uris(void **state)
{
    (void)state;
    const char *bad[] = {
        "bogus://x", "memory://", "Memory", "redis:/127.0.0.1:6379", "REDIS://127.0.0.1:6379",
        "redis://", "redis://host", "redis://host:", "redis://host:0", "redis://host:65536",
        "redis://host:12x", "redis://host:12/", "redis://host:12/x", "redis://host:12/-1",
        "redis://host:+12", "redis://:6379", "redis://[::1", "redis://[::1]", "redis://h:1/2/3",
        "redis://host:99999999999999999999",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[256] = "";
        esc_storage *st = esc_storage_open(bad[i], err, sizeof(err));
        if (st != NULL)
            fail_msg("opening \"%s\" succeeded", bad[i]);
        assert_one_line(err);
    }
    char err[256] = "";
    assert_null(esc_storage_open("bogus://x", err, sizeof(err)));
    assert_non_null(strstr(err, "bogus://x"));
}

static void test_open_unreachable_redis(void **state)
{
    (void)state;
    char err[256] = "";
    double t0 = now_s();
    assert_null(esc_storage_open("redis://127.0.0.1:1", err, sizeof(err)));
    assert_true(now_s() - t0 < 5.0);
    assert_one_line(err);
    assert_non_null(strstr(err, "127.0.0.1:1"));
    assert_non_null(strstr(err, "connect"));
}

static void test_open_error_buffer_edges(void **state)
{
    (void)state;
    assert_null(esc_storage_open("bogus://x", NULL, 0));
    assert_null(esc_storage_open("redis://127.0.0.1:1", NULL, 0));
    char small[8];
    memset(small, 'Z', sizeof(small));
    assert_null(esc_storage_open("bogus://x", small, sizeof(small)));
    assert_int_equal(strlen(small), sizeof(small) - 1);
    char untouched[4] = "abc";
    assert_null(esc_storage_open("bogus://x", untouched, 0));
    assert_string_equal(untouched, "abc");
}

static void test_batch_null_safety(void **state)
{
    (void)state;
    esc_storage_put(NULL, "t", "k", "v", 1);
    esc_storage_del(NULL, "t", "k");
    assert_int_equal(esc_storage_batch_size(NULL), 0);
    char err[128] = "";
    esc_storage_batch *b = esc_storage_batch_new();
    esc_storage_put(b, "t", "k", "v", 1);
    assert_int_equal(esc_storage_commit(NULL, b, err, sizeof(err)), -1); /* frees b */
    assert_one_line(err);
    esc_storage *st = open_ok("memory");
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(esc_storage_get(st, NULL, "k", &v, &len), -1);
    assert_int_equal(esc_storage_scan(st, NULL, NULL, NULL), -1);
    esc_storage_close(st);
}

/* ---- main ---- */

/* The same battery for every backend; setup runs before each test. */
#define ON(be, setup, f) cmocka_unit_test_prestate_setup_teardown(f, setup, NULL, be)
#define BATTERY(be, setup)                                                             \
    ON(be, setup, test_put_get_overwrite_delete), ON(be, setup, test_binary_values),      \
        ON(be, setup, test_batch_atomicity), ON(be, setup, test_failed_commit_shows_nothing), \
        ON(be, setup, test_missing_keys), ON(be, setup, test_scan_10000),                 \
        ON(be, setup, test_reopen)

#define REDIS_TEST(f) ON(&redis_backend, redis_test_setup, f)

int main(void)
{
    const struct CMUnitTest open_tests[] = {
        cmocka_unit_test(test_open_memory_forms),
        cmocka_unit_test(test_open_bad_uris),
        cmocka_unit_test(test_open_unreachable_redis),
        cmocka_unit_test(test_open_error_buffer_edges),
        cmocka_unit_test(test_batch_null_safety),
        cmocka_unit_test(test_memory_async_commit_at_once),
    };
    const struct CMUnitTest memory_tests[] = {
        BATTERY(&memory_backend, NULL),
    };
    const struct CMUnitTest redis_tests[] = {
        BATTERY(&redis_backend, redis_test_setup),
        REDIS_TEST(test_redis_durable_across_stores),
        REDIS_TEST(test_redis_db_isolation),
        REDIS_TEST(test_redis_rejected_commit_shows_nothing),
        REDIS_TEST(test_redis_wrong_type_is_an_error),
        REDIS_TEST(test_redis_reconnects_after_restart),
        REDIS_TEST(test_redis_dead_server_errors),
        REDIS_TEST(test_redis_stalled_server_times_out),
        REDIS_TEST(test_redis_async_commits),
    };
    int failed = 0;
    failed += cmocka_run_group_tests_name("storage_open", open_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("storage_memory", memory_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("storage_redis", redis_tests, redis_group_setup,
                                          redis_group_teardown);
    return failed != 0;
}
