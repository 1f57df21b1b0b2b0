/* test_event_history.c: the GCS's event history (esc_list_events, `escher events`;
 * docs/observability.md, "Event history: escher events").
 *
 * One cluster on a private Redis with --event-history 200: a node joining, a job starting
 * and ending (FINISHED and FAILED), a resource set/add/delete with seq, writer and target,
 * a task retried after its worker crashed and one that failed for good; a node draining
 * and dying with its resource; a storm of task failures cut to 64 rows and counted; what
 * another job sees; the CLI's lines, --json, bad input and --follow (a change made after it
 * started shows up, SIGINT ends it with 0); the history cut at its bound, in storage too;
 * the history unchanged after the GCS is killed (-9) and restarted on Redis, with ids
 * going on from where they were; and a restart with a smaller bound trimming storage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "gcs.pb-c.h"

#define BOUND 200
#define WAIT_MS 15000

static h_cluster C;
static esc_client *RD; /* a client with no job: it sees every entry, as the CLI does */

static const char *bin_dir(void)
{
    const char *d = getenv("ESCHER_BIN_DIR");
    return d ? d : "build";
}

static esc_client *reader(void)
{
    esc_connect_opts o = {.address = C.gcs_addr, .token = C.token, .no_job = true};
    esc_client *c = NULL;
    esc_status st;
    int rc = esc_connect(&o, &c, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "connect: %s\n", st.message);
    assert_int_equal(rc, ESC_OK);
    return c;
}

/* Every entry after `after` of one kind (kind < 0: all) that the client sees. */
static esc_history_event *list(esc_client *c, uint64_t after, int kind, size_t *n,
                               esc_history_page *page)
{
    esc_history_kind k = (esc_history_kind)kind;
    esc_history_filter f = {.after_id = after, .kinds = kind >= 0 ? &k : NULL,
                            .nkinds = kind >= 0 ? 1 : 0};
    esc_history_event *ev = NULL;
    esc_status st;
    int rc = esc_list_events(c, &f, &ev, n, page, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "list events: %s\n", st.message);
    assert_int_equal(rc, ESC_OK);
    return ev;
}

static uint64_t last_id(void)
{
    size_t n;
    esc_history_page p;
    esc_history_event *ev = list(RD, UINT64_MAX - 1, -1, &n, &p);
    esc_history_free(ev, n);
    return p.last_id;
}

/* Waits (with a deadline) for an entry of kind whose task_id (task kinds) or job_id
 * equals id; copies its error into err (256 bytes) when err is not NULL. */
typedef struct {
    esc_history_kind kind;
    const char *id;
    uint64_t after;
    char err[256];
    uint32_t attempt;
} seek;

static bool found(void *arg)
{
    seek *s = arg;
    size_t n;
    esc_history_event *ev = list(RD, s->after, (int)s->kind, &n, NULL);
    bool ok = false;
    for (size_t i = 0; i < n && !ok; i++) {
        const char *id = *ev[i].task_id ? ev[i].task_id : ev[i].job_id;
        if (!strcmp(id, s->id)) {
            ok = true;
            snprintf(s->err, sizeof s->err, "%s", ev[i].error);
            s->attempt = ev[i].attempt;
        }
    }
    esc_history_free(ev, n);
    return ok;
}

static int setup(void **state)
{
    h_init(&C, 2000);
    if (h_redis_start(&C) != 0)
        return -1;
    snprintf(C.gcs_extra, sizeof C.gcs_extra, "--event-history %d", BOUND);
    if (h_start_cluster(&C, 1, NULL) != 0)
        return -1;
    *state = &C;
    RD = reader();
    return 0;
}

static int teardown(void **state)
{
    esc_disconnect(RD);
    return h_teardown(state);
}

static void test_node_added(void **state)
{
    (void)state;
    size_t n;
    esc_history_event *ev = list(RD, 0, ESC_HIST_NODE_ADDED, &n, NULL);
    bool seen = false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ev[i].node_id, C.raylets[0].node_id)) {
            seen = true;
            assert_true(ev[i].seq > 0);      /* a log entry */
            assert_true(ev[i].time_ms > 1700000000000ULL); /* wall clock, ms */
            assert_true(strchr(ev[i].address, ':') != NULL);
        }
    assert_true(seen);
    esc_history_free(ev, n);
}

/* set, add and delete: three entries with the calls' seqs, the writer and the node. */
static void test_resource_changes(void **state)
{
    (void)state;
    uint64_t mark = last_id();
    esc_client *cl = h_connect(&C, "eh", -1, false);
    const char *node = C.raylets[0].node_id;
    esc_target t = ESC_NODE(node);
    uint64_t s[3];
    assert_int_equal(esc_resource_set(cl, "r1", ESC_QTY(2), &t, &s[0], NULL), ESC_OK);
    assert_int_equal(esc_resource_add(cl, "r1", ESC_QTY(1), &t, &s[1], NULL), ESC_OK);
    assert_int_equal(esc_resource_delete(cl, "r1", &t, &s[2], NULL), ESC_OK);
    size_t n;
    esc_history_event *ev = list(RD, mark, ESC_HIST_RESOURCES, &n, NULL);
    assert_int_equal(n, 3);
    const char *ops[3] = {"set", "add", "delete"};
    int64_t vals[3] = {ESC_QTY(2), ESC_QTY(1), 0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ev[i].seq, s[i]);
        assert_string_equal(ev[i].job_id, esc_client_job_id(cl));
        assert_string_equal(ev[i].namespace_, "eh");
        assert_int_equal(ev[i].nops, 1);
        assert_int_equal(ev[i].ops_total, 1);
        assert_string_equal(ev[i].ops[0].op, ops[i]);
        assert_string_equal(ev[i].ops[0].name, "eh/r1");
        assert_string_equal(ev[i].ops[0].node_id, node);
        if (i < 2)
            assert_int_equal(ev[i].ops[0].value, vals[i]);
    }
    /* The job's start came before, in the same history. */
    esc_history_free(ev, n);
    ev = list(RD, mark, ESC_HIST_JOB_STARTED, &n, NULL);
    assert_true(n >= 1);
    assert_string_equal(ev[n - 1].job_id, esc_client_job_id(cl));
    assert_string_equal(ev[n - 1].namespace_, "eh");
    esc_history_free(ev, n);
    esc_disconnect(cl);
}

/* A job that finishes and one that fails: job_ended with each state. */
static void test_job_end(void **state)
{
    (void)state;
    uint64_t mark = last_id();
    const char *states[2] = {"FINISHED", "FAILED"};
    for (int i = 0; i < 2; i++) {
        esc_client *cl = h_connect(&C, i ? "ehfail" : "ehok", -1, false);
        char id[128];
        snprintf(id, sizeof id, "%s", esc_client_job_id(cl));
        assert_int_equal(esc_job_finish(cl, NULL, i == 1, NULL), ESC_OK);
        esc_disconnect(cl);
        size_t n;
        esc_history_event *ev = list(RD, mark, ESC_HIST_JOB_ENDED, &n, NULL);
        bool seen = false;
        for (size_t k = 0; k < n; k++)
            if (!strcmp(ev[k].job_id, id)) {
                seen = true;
                assert_string_equal(ev[k].job_state, states[i]);
                assert_true(ev[k].seq > 0);
            }
        assert_true(seen);
        esc_history_free(ev, n);
    }
}

static esc_ref *submit(esc_client *cl, const char *fn, const char *arg, unsigned retries,
                       char *task_id)
{
    char lib[600];
    snprintf(lib, sizeof lib, "%s", h_tasks_lib());
    esc_task_arg a = {.data = arg, .len = arg ? strlen(arg) : 0};
    esc_task_spec spec = {.library = lib, .symbol = fn, .args = arg ? &a : NULL,
                          .nargs = arg ? 1 : 0, .max_retries = retries};
    esc_ref *ref = NULL;
    assert_int_equal(esc_task_submit(cl, &spec, &ref, task_id, NULL), ESC_OK);
    return ref;
}

/* A task whose worker crashes once and is retried (max_retries 1), and one that crashes
 * with no retries left: the raylet reports both. */
static void test_task_failures(void **state)
{
    (void)state;
    uint64_t mark = last_id();
    esc_client *cl = h_connect(&C, "ehtask", 0, false);
    char marker[300], retried_id[ESC_ID_MAX], failed_id[ESC_ID_MAX];
    snprintf(marker, sizeof marker, "%s/crash_once", C.dir);
    esc_ref *r = submit(cl, "crash_once", marker, 1, retried_id);
    void *v = NULL;
    size_t len;
    assert_int_equal(esc_get(cl, r, 30000, &v, &len, NULL), ESC_OK); /* the retry ran */
    free(v);
    esc_ref_free(r);
    r = submit(cl, "crash", NULL, 0, failed_id);
    assert_int_equal(esc_get(cl, r, 30000, &v, &len, NULL), ESC_ABORTED);
    esc_ref_free(r);

    seek s = {ESC_HIST_TASK_RETRIED, retried_id, mark, "", 0};
    assert_true(h_wait_until(found, &s, WAIT_MS));
    /* Only a worker's death is retried; its cause reads "signal 11 (SIGSEGV)", or under
     * ASan whatever the sanitizer made of it. */
    if (!strstr(s.err, "worker died"))
        fprintf(stderr, "retried: %s\n", s.err);
    assert_non_null(strstr(s.err, "worker died"));
    assert_int_equal(s.attempt, 1); /* the attempt that runs now */
    s = (seek){ESC_HIST_TASK_FAILED, failed_id, mark, "", 0};
    assert_true(h_wait_until(found, &s, WAIT_MS));
    assert_non_null(strstr(s.err, "worker died"));
    esc_disconnect(cl);
}

/* Another job sees node entries, not this job's resource changes or start. */
static void test_visibility(void **state)
{
    (void)state;
    uint64_t mark = last_id();
    esc_client *a = h_connect(&C, "ehA", -1, false);
    esc_target t = ESC_NODE(C.raylets[0].node_id);
    assert_int_equal(esc_resource_set(a, "secret", ESC_QTY(1), &t, NULL, NULL), ESC_OK);
    esc_client *b = h_connect(&C, "ehB", -1, false);
    size_t n;
    esc_history_page p;
    esc_history_event *ev = list(b, mark, -1, &n, &p);
    for (size_t i = 0; i < n; i++) {
        assert_string_not_equal(ev[i].job_id, esc_client_job_id(a));
        for (size_t k = 0; k < ev[i].nops; k++)
            assert_null(strstr(ev[i].ops[k].name, "ehA/"));
    }
    assert_true(p.hidden >= 2); /* a's start and its resource change */
    esc_history_free(ev, n);
    /* The job itself sees both. */
    ev = list(a, mark, ESC_HIST_RESOURCES, &n, NULL);
    assert_int_equal(n, 1);
    assert_string_equal(ev[0].ops[0].name, "ehA/secret");
    esc_history_free(ev, n);
    esc_disconnect(b);
    esc_disconnect(a);
}

/* A raw call as a daemon (the daemon key), as the raylets make it. */
static int daemon_call(const esc_rpc_method *method, const ProtobufCMessage *req)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_rpc_channel_set_secret(ch, ESC_RPC_DAEMON_KEY, C.daemon_key);
    ProtobufCMessage *out = NULL;
    esc_status st;
    int rc = esc_rpc_call(ch, method, req, &out, 5000, 0, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "%s: %s\n", esc_rpc_method_name(method), st.message);
    if (out)
        protobuf_c_message_free_unpacked(out, NULL);
    esc_rpc_channel_free(ch);
    return rc;
}

typedef struct {
    const char *node;
    bool with_op; /* node_dead: its resource removed in the same entry */
} dead_probe;

static bool node_dead_seen(void *arg)
{
    const dead_probe *d = arg;
    size_t n;
    esc_history_event *ev = list(RD, 0, ESC_HIST_NODE_DEAD, &n, NULL);
    bool ok = false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ev[i].node_id, d->node))
            ok = ev[i].nops == 1 && !strcmp(ev[i].ops[0].op, "delete") &&
                 !strcmp(ev[i].ops[0].name, "ehd/onnode") && ev[i].seq > 0;
    esc_history_free(ev, n);
    return ok;
}

/* A second node joins, drains (DrainNode, as a raylet's daemon call) and dies (kill
 * -9, then the node timeout): node_draining, then node_dead with its resource removed. */
static void test_node_drain_and_death(void **state)
{
    (void)state;
    assert_int_equal(h_raylet_start(&C, 1, NULL), 0);
    const char *node = C.raylets[1].node_id;
    esc_client *cl = h_connect(&C, "ehd", -1, true);
    esc_target t = ESC_NODE(node);
    assert_int_equal(esc_resource_set(cl, "onnode", ESC_QTY(1), &t, NULL, NULL), ESC_OK);
    uint64_t mark = last_id();
    Escher__DrainNodeRequest drain = ESCHER__DRAIN_NODE_REQUEST__INIT;
    drain.node_id = (char *)node;
    assert_int_equal(daemon_call(&ESC_M_GCS_DRAIN_NODE, &drain.base), ESC_OK);
    size_t n;
    esc_history_event *ev = list(RD, mark, ESC_HIST_NODE_DRAINING, &n, NULL);
    assert_int_equal(n, 1);
    assert_string_equal(ev[0].node_id, node);
    assert_int_equal(ev[0].seq, 0); /* a table write, not a log entry */
    esc_history_free(ev, n);
    h_kill(&C.raylets[1].pid, SIGKILL);
    dead_probe d = {node, true};
    assert_true(h_wait_until(node_dead_seen, &d, WAIT_MS));
    esc_disconnect(cl);
}

/* A storm of task failures in one report: the GCS keeps 64 rows of it and counts the
 * rest, with what the raylet said it dropped, in one task_events_dropped entry. */
static void test_task_event_bound(void **state)
{
    (void)state;
    enum { SENT = 100, KEPT = 64, RAYLET_DROPPED = 7 };
    uint64_t mark = last_id();
    Escher__TaskEvent evs[SENT], *ptrs[SENT];
    char ids[SENT][32];
    for (int i = 0; i < SENT; i++) {
        escher__task_event__init(&evs[i]);
        snprintf(ids[i], sizeof ids[i], "storm%02d", i);
        evs[i].task_id = ids[i];
        evs[i].name = "storm";
        evs[i].error = "boom";
        evs[i].time_ms = 1;
        ptrs[i] = &evs[i];
    }
    Escher__ReportNodeRequest rep = ESCHER__REPORT_NODE_REQUEST__INIT;
    rep.node_id = C.raylets[0].node_id;
    rep.task_events = ptrs;
    rep.n_task_events = SENT;
    rep.task_events_dropped = RAYLET_DROPPED;
    assert_int_equal(daemon_call(&ESC_M_GCS_REPORT_NODE, &rep.base), ESC_OK);
    esc_history_kind kinds[] = {ESC_HIST_TASK_FAILED, ESC_HIST_TASK_EVENTS_DROPPED};
    size_t failed = 0, dropped = 0;
    double t0 = h_now_ms();
    while ((failed < KEPT || !dropped) && h_now_ms() - t0 < WAIT_MS) {
        esc_history_filter f = {.after_id = mark, .kinds = kinds, .nkinds = 2};
        esc_history_event *ev;
        size_t n;
        assert_int_equal(esc_list_events(RD, &f, &ev, &n, NULL, NULL), ESC_OK);
        failed = dropped = 0;
        for (size_t i = 0; i < n; i++) {
            if (ev[i].kind == ESC_HIST_TASK_FAILED && !strncmp(ev[i].task_id, "storm", 5))
                failed++;
            if (ev[i].kind == ESC_HIST_TASK_EVENTS_DROPPED)
                dropped += ev[i].dropped;
        }
        esc_history_free(ev, n);
        if (failed < KEPT || !dropped)
            usleep(20000);
    }
    assert_int_equal(failed, KEPT);
    assert_int_equal(dropped, SENT - KEPT + RAYLET_DROPPED);
}

/* Runs `escher WORDS ARGS`; stdout into out (size bytes), returns the exit status. */
static int cli_words(const char *words, const char *args, char *out, size_t size, char *err,
                     size_t esize)
{
    char cmd[1024], errf[300];
    snprintf(errf, sizeof errf, "%s/cli.err", C.dir);
    snprintf(cmd, sizeof cmd, "ESCHER_ADDRESS=%s ESCHER_TOKEN=%s %s/client/escher %s %s 2>%s",
             C.gcs_addr, C.token, bin_dir(), words, args, errf);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(out, 1, size - 1, p);
    out[got] = '\0';
    int rc = pclose(p);
    FILE *e = fopen(errf, "r");
    size_t eg = e ? fread(err, 1, esize - 1, e) : 0;
    err[eg] = '\0';
    if (e)
        fclose(e);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int cli(const char *args, char *out, size_t size, char *err, size_t esize)
{
    return cli_words("events", args, out, size, err, esize);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_cli(void **state)
{
    (void)state;
    static char out[1 << 16];
    char err[1024];
    assert_int_equal(cli("--kind node_added", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "node_added"));
    assert_non_null(strstr(out, C.raylets[0].node_id));
    assert_int_equal(cli("--kind resources --json --limit 2", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(count_lines(out), 2);
    assert_non_null(strstr(out, "\"kind\":\"resources\""));
    assert_non_null(strstr(out, "\"writer\":"));
    /* `escher list events` is the same command. */
    static char listed[1 << 16];
    assert_int_equal(cli_words("list events", "--kind node_added", listed, sizeof listed, err,
                               sizeof err), 0);
    assert_int_equal(cli("--kind node_added", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(listed, out);
    /* Bad input: one line on stderr, exit 2. */
    const char *bad[] = {"--kind bogus", "--limit 0", "--since x", "--job", "extra"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(cli(bad[i], out, sizeof out, err, sizeof err), 2);
        assert_int_equal(count_lines(err), 1);
        assert_string_equal(out, "");
    }
}

static bool file_has(const char *path, const char *needle)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, needle) != NULL;
}

typedef struct {
    const char *path, *needle;
} file_probe;

static bool probe_file(void *arg)
{
    const file_probe *p = arg;
    return file_has(p->path, p->needle);
}

static int lines_in(const char *path)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return count_lines(buf);
}

static bool history_printed(void *arg)
{
    return lines_in(arg) >= 1;
}

/* --follow prints a change made after it started; SIGINT ends it with 0. It starts one
 * entry back (--since last-1), so the line of that entry shows that it listed the
 * history and went on to follow before the change is made. */
static void test_follow(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "ehf", -1, false);
    char path[300], since[32], exe[512], addr[80], tok[120];
    snprintf(path, sizeof path, "%s/follow.out", C.dir);
    snprintf(since, sizeof since, "%llu", (unsigned long long)(last_id() - 1));
    snprintf(exe, sizeof exe, "%s/client/escher", bin_dir());
    snprintf(addr, sizeof addr, "%s", C.gcs_addr);
    snprintf(tok, sizeof tok, "%s", C.token);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        execl(exe, exe, "--address", addr, "--token", tok, "events", "--follow", "--since",
              since, (char *)NULL);
        _exit(127);
    }
    bool listed = h_wait_until(history_printed, path, WAIT_MS);
    bool seen = false;
    if (listed) {
        esc_target t = ESC_NODE(C.raylets[0].node_id);
        assert_int_equal(esc_resource_set(cl, "followed", ESC_QTY(5), &t, NULL, NULL), ESC_OK);
        file_probe fp = {path, "ehf/followed=5"};
        seen = h_wait_until(probe_file, &fp, WAIT_MS);
    }
    kill(pid, SIGINT);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(listed);
    assert_true(seen);
    assert_int_equal(lines_in(path), 2); /* the history's one entry, then the change */
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    esc_disconnect(cl);
}

/* More changes than the bound: the history holds the newest BOUND. */
static void test_bound(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "ehb", -1, false);
    esc_target t = ESC_NODE(C.raylets[0].node_id);
    for (int i = 0; i < BOUND + 5; i++)
        assert_int_equal(esc_resource_add(cl, "n", ESC_QTY(1), &t, NULL, NULL), ESC_OK);
    size_t n;
    esc_history_page p;
    esc_history_event *ev = list(RD, 0, -1, &n, &p);
    assert_int_equal(n, BOUND);
    assert_int_equal(p.bound, BOUND);
    assert_int_equal(p.first_id, p.last_id - BOUND + 1);
    assert_int_equal(ev[0].id, p.first_id);
    assert_int_equal(ev[n - 1].id, p.last_id);
    esc_history_free(ev, n);
    esc_disconnect(cl);
}

/* kill -9 and a restart on Redis: the same entries (ids, kinds, times, seqs), and the
 * next entry's id follows the last. The restarted GCS loads only what storage has, so
 * the count also shows that storage was trimmed at the bound. */
static void test_survives_restart(void **state)
{
    (void)state;
    size_t n0, n1;
    esc_history_page p0, p1;
    esc_history_event *before = list(RD, 0, -1, &n0, &p0);
    esc_disconnect(RD);
    h_kill(&C.gcs_pid, SIGKILL);
    assert_int_equal(h_gcs_start(&C), 0);
    RD = reader();
    esc_history_event *after = list(RD, 0, -1, &n1, &p1);
    assert_int_equal(n0, BOUND);
    assert_int_equal(n1, BOUND); /* storage held the newest BOUND, no more */
    assert_true(p1.last_id >= p0.last_id);
    size_t same = 0;
    for (size_t i = 0; i < n1; i++) {
        const esc_history_event *b = &after[i];
        if (b->id > p0.last_id)
            continue; /* made since the restart */
        assert_true(b->id >= p0.first_id);
        const esc_history_event *a = &before[b->id - p0.first_id];
        assert_int_equal(a->id, b->id);
        assert_int_equal(a->kind, b->kind);
        assert_int_equal(a->time_ms, b->time_ms);
        assert_int_equal(a->seq, b->seq);
        assert_string_equal(a->job_id, b->job_id);
        same++;
    }
    assert_int_equal(same, p0.last_id - p1.first_id + 1);
    esc_history_free(before, n0);
    esc_history_free(after, n1);
    esc_client *cl = h_connect(&C, "ehr", -1, false);
    esc_target t = ESC_NODE(C.raylets[0].node_id);
    uint64_t seq = 0;
    assert_int_equal(esc_resource_set(cl, "again", ESC_QTY(1), &t, &seq, NULL), ESC_OK);
    size_t n;
    esc_history_event *ev = list(RD, p1.last_id, ESC_HIST_RESOURCES, &n, NULL);
    assert_int_equal(n, 1);
    assert_true(ev[0].id > p1.last_id);
    assert_int_equal(ev[0].seq, seq);
    esc_history_free(ev, n);
    esc_disconnect(cl);
}

/* Restarted with a smaller bound, the GCS keeps the newest entries and deletes the rest
 * from storage: restarted again with the larger bound, it still has only those. */
static void test_smaller_bound_at_restart(void **state)
{
    (void)state;
    enum { SMALL = 50 };
    size_t n;
    esc_history_page p0, p;
    esc_history_event *all = list(RD, 0, -1, &n, &p0);
    esc_history_free(all, n);
    for (int round = 0; round < 2; round++) {
        esc_disconnect(RD);
        h_kill(&C.gcs_pid, SIGTERM);
        snprintf(C.gcs_extra, sizeof C.gcs_extra, "--event-history %d", round ? BOUND : SMALL);
        assert_int_equal(h_gcs_start(&C), 0);
        RD = reader();
        esc_history_event *ev = list(RD, 0, -1, &n, &p);
        assert_int_equal(n, SMALL);
        assert_int_equal(p.bound, round ? BOUND : SMALL);
        assert_int_equal(ev[n - 1].id, p0.last_id);
        assert_int_equal(ev[0].id, p0.last_id - SMALL + 1);
        esc_history_free(ev, n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_added),   cmocka_unit_test(test_resource_changes),
        cmocka_unit_test(test_job_end),      cmocka_unit_test(test_task_failures),
        cmocka_unit_test(test_visibility),   cmocka_unit_test(test_node_drain_and_death),
        cmocka_unit_test(test_task_event_bound), cmocka_unit_test(test_cli),
        cmocka_unit_test(test_follow),       cmocka_unit_test(test_bound),
        cmocka_unit_test(test_survives_restart), cmocka_unit_test(test_smaller_bound_at_restart),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    return failed || h_unclean_exits();
}
