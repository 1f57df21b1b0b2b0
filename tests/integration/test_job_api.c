/* test_job_api.c: jobs from C (escher/jobs.h) on a GCS and two raylets, each with a log
 * folder of its own: esc_job_submit, esc_job_status while it runs, esc_job_logs
 * following output as it is written and whole afterwards (from a client with no local
 * node), esc_job_wait's result and record; the output of an entrypoint that ran on the
 * other node read through that node's raylet (and gone with it); an infeasible
 * entrypoint shown as PENDING with what it lacks (through the SDK, the GCS's ListJobs
 * and `escher job status`), a pending one that starts once its resource appears, and stopping a pending
 * job while its logs are followed; bad input answered with clear errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escher/jobs.h"
#include "harness.h"
#include "raylet.pb-c.h"
#include "task.pb-c.h"

static h_cluster C;

static int setup(void **state)
{
    *state = &C;
    h_init(&C, 2000);
    char extra1[512];
    /* Its own log folder: only raylet 1 can serve what ran there. */
    snprintf(extra1, sizeof extra1, "--resources only_b=1 --log-dir %s/logs/node1", C.dir);
    return h_start_cluster(&C, 2, (const char *const[]){NULL, extra1});
}

/* ------------------------------------------------------------------ helpers */

/* Output gathered by an esc_log_fn, under a lock (a follower thread writes it). */
typedef struct {
    pthread_mutex_t mu;
    char out[4096], err[4096];
    size_t nout, nerr;
} sink;

static int sink_fn(void *ud, int stream, const void *data, size_t len)
{
    sink *s = ud;
    pthread_mutex_lock(&s->mu);
    char *buf = stream == 1 ? s->out : s->err;
    size_t *n = stream == 1 ? &s->nout : &s->nerr;
    if (*n + len < sizeof s->out) {
        memcpy(buf + *n, data, len);
        *n += len;
        buf[*n] = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void sink_init(sink *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
}

static bool sink_has(sink *s, const char *what)
{
    pthread_mutex_lock(&s->mu);
    bool yes = strstr(s->out, what) != NULL;
    pthread_mutex_unlock(&s->mu);
    return yes;
}

/* esc_job_logs with follow on a thread of its own. */
typedef struct {
    esc_client *c;
    char job_id[ESC_ID_MAX];
    sink out;
    int rc;
    esc_status st;
    pthread_t thread;
} follower;

static void *follow_main(void *arg)
{
    follower *f = arg;
    f->rc = esc_job_logs(f->c, f->job_id, true, sink_fn, &f->out, &f->st);
    return NULL;
}

static void follow_start(follower *f, esc_client *c, const char *job_id)
{
    f->c = c;
    snprintf(f->job_id, sizeof f->job_id, "%s", job_id);
    sink_init(&f->out);
    f->rc = -1;
    assert_int_equal(pthread_create(&f->thread, NULL, follow_main, f), 0);
}

static esc_client *driver(const char *ns)
{
    return h_connect(&C, ns, 0, false);
}

/* A client with no local node: it reaches raylets only through the GCS's node table. */
static esc_client *remote_reader(void)
{
    return h_connect(&C, NULL, -1, false);
}

typedef struct {
    esc_client *c;
    const char *job_id;
    const char *want;     /* the state waited for */
    esc_job_status_info info;
} state_wait;

static bool has_state(void *arg)
{
    state_wait *w = arg;
    esc_job_status_clear(&w->info);
    return esc_job_status(w->c, w->job_id, &w->info, NULL) == ESC_OK &&
           !strcmp(w->info.state, w->want);
}

/* Waits until job_id's state is want; *out gets that status (caller clears it). */
static void wait_state(esc_client *c, const char *job_id, const char *want,
                       esc_job_status_info *out)
{
    state_wait w = {.c = c, .job_id = job_id, .want = want};
    if (!h_wait_until(has_state, &w, 30000)) {
        fprintf(stderr, "job %s: state %s, want %s (result: %s)\n", job_id,
                w.info.state ? w.info.state : "?", want, w.info.result ? w.info.result : "?");
        h_show_logs(&C, 20);
        fail();
    }
    *out = w.info;
}

static bool has_first(void *s)
{
    return sink_has(s, "first\n");
}

/* Whether the GCS lists raylet 1's node as DEAD. */
static bool node1_dead(void *c)
{
    esc_cluster_status *cs;
    if (esc_get_cluster_resources(c, &cs, NULL) != ESC_OK)
        return false;
    bool dead = false;
    for (size_t i = 0; i < cs->nnodes; i++)
        dead |= !strcmp(cs->nodes[i].id, C.raylets[1].node_id) &&
                !strcmp(cs->nodes[i].state, "DEAD");
    esc_cluster_status_free(cs);
    return dead;
}

/* What the GCS's ListJobs says of job_id's entrypoint: waits on node (or "" when it
 * does not), and its first missing name ("" when none). */
typedef struct {
    esc_client *c;
    const char *job_id;
    const char *node, *missing;
    bool infeasible;
} listed_wait;

static bool listed_as(void *arg)
{
    listed_wait *w = arg;
    esc_job_info *jobs;
    size_t n;
    if (esc_list_jobs(w->c, &jobs, &n, NULL) != ESC_OK)
        return false;
    bool ok = false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(jobs[i].id, w->job_id))
            ok = !strcmp(jobs[i].pending_node, w->node) &&
                 !strcmp(jobs[i].npending_missing ? jobs[i].pending_missing[0] : "",
                         w->missing) &&
                 jobs[i].pending_infeasible == w->infeasible;
    esc_jobs_free(jobs, n);
    return ok;
}

/* ------------------------------------------------------------------ tests */

/* Submit, status while it runs, output followed as it is written, the result. */
static void test_submit_follow_wait(void **state)
{
    (void)state;
    char gate[400], script[1024];
    snprintf(gate, sizeof gate, "%s/gate-1", C.dir);
    /* "first" is written, then the entrypoint waits for the test's gate: a follower that
     * sees "first" before the gate opens got it while the entrypoint ran. */
    snprintf(script, sizeof script,
             "echo first; echo to-stderr >&2; while [ ! -e %s ]; do sleep 0.02; done; "
             "echo second; exit 3", gate);
    const char *argv[] = {"sh", "-c", script, NULL};
    esc_client *c = driver("jobapi1");
    esc_job_spec spec = {.argv = argv};
    char job_id[ESC_ID_MAX];
    esc_status st;
    assert_int_equal(esc_job_submit(c, &spec, job_id, &st), ESC_OK);
    assert_string_equal(job_id, esc_client_job_id(c));

    esc_client *r = remote_reader();
    follower f;
    follow_start(&f, r, job_id);
    /* While it runs: "first" arrives before the gate opens, and it is RUNNING on node 0. */
    assert_true(h_wait_until(has_first, &f.out, 30000));
    assert_false(sink_has(&f.out, "second"));
    esc_job_status_info info;
    wait_state(r, job_id, "RUNNING", &info);
    assert_string_equal(info.result, "running");
    assert_string_equal(info.node_id, C.raylets[0].node_id);
    assert_string_equal(info.submit_node, C.raylets[0].node_id);
    assert_int_equal(info.nentrypoint, 3);
    assert_string_equal(info.entrypoint[0], "sh");
    esc_job_status_clear(&info);

    FILE *g = fopen(gate, "w");
    assert_non_null(g);
    fclose(g);
    /* The follower ends by itself once the entrypoint ended on its node. */
    assert_int_equal(pthread_join(f.thread, NULL), 0);
    assert_int_equal(f.rc, ESC_OK);
    assert_string_equal(f.out.out, "first\nsecond\n");
    assert_string_equal(f.out.err, "to-stderr\n");

    esc_job_result res;
    assert_int_equal(esc_job_wait(c, 30000, &res, &st), ESC_OK);
    assert_int_equal(res.outcome, ESC_JOB_FAILED);
    assert_int_equal(res.exit_code, 3);
    assert_string_equal(res.message, "exited with code 3");
    /* A second wait gives the same result. */
    assert_int_equal(esc_job_wait(c, 0, &res, &st), ESC_OK);
    assert_int_equal(res.exit_code, 3);

    wait_state(r, job_id, "FAILED", &info);
    assert_string_equal(info.status, "FAILED");
    assert_int_equal(info.exit_code, 3);
    assert_string_equal(info.result, "exit code 3");
    assert_true(info.end_ms >= info.submitted_ms && info.submitted_ms > 0);
    esc_job_status_clear(&info);

    /* Whole, afterwards, from the client with no local node. */
    sink all;
    sink_init(&all);
    assert_int_equal(esc_job_logs(r, job_id, false, sink_fn, &all, &st), ESC_OK);
    assert_string_equal(all.out, "first\nsecond\n");
    assert_string_equal(all.err, "to-stderr\n");
    /* And listed. */
    esc_job_status_info *jobs;
    size_t n;
    assert_int_equal(esc_job_list(r, &jobs, &n, &st), ESC_OK);
    bool listed = false;
    for (size_t i = 0; i < n; i++)
        listed |= !strcmp(jobs[i].id, job_id) && !strcmp(jobs[i].result, "exit code 3");
    assert_true(listed);
    esc_job_list_free(jobs, n);
    esc_disconnect(r);
    esc_disconnect(c);
}

/* An entrypoint that ran on node 1 (its static resource): its output is read through
 * node 1's raylet, the only one with those files; once node 1 is gone, nobody has it. */
static void test_logs_through_remote_raylet(void **state)
{
    (void)state;
    const char *argv[] = {"sh", "-c", "echo remote-output; echo remote-err >&2", NULL};
    esc_amount b[] = {{.name = "only_b", .value = ESC_QTY(1)}};
    esc_client *c = driver("jobapi2");
    esc_job_spec spec = {.argv = argv, .resources = b, .nresources = 1};
    char job_id[ESC_ID_MAX];
    esc_status st;
    assert_int_equal(esc_job_submit(c, &spec, job_id, &st), ESC_OK);
    /* Followed by the driver itself, on node 0, while it runs on node 1. */
    follower f;
    follow_start(&f, c, job_id);
    esc_job_result res;
    assert_int_equal(esc_job_wait(c, 30000, &res, &st), ESC_OK);
    assert_int_equal(res.outcome, ESC_JOB_SUCCEEDED);
    assert_int_equal(pthread_join(f.thread, NULL), 0);
    assert_int_equal(f.rc, ESC_OK);
    assert_string_equal(f.out.out, "remote-output\n");
    assert_string_equal(f.out.err, "remote-err\n");
    esc_disconnect(c);

    esc_client *r = remote_reader();
    sink s;
    sink_init(&s);
    assert_int_equal(esc_job_logs(r, job_id, false, sink_fn, &s, &st), ESC_OK);
    assert_string_equal(s.out, "remote-output\n");
    assert_string_equal(s.err, "remote-err\n");
    /* `escher logs TASK_ID` takes the same way. */
    esc_job_status_info info;
    assert_int_equal(esc_job_status(r, job_id, &info, &st), ESC_OK);
    char cmd[1024], out[256] = {0};
    snprintf(cmd, sizeof cmd, "%s/client/escher --address %s --token %s logs %s",
             getenv("ESCHER_BIN_DIR"), C.gcs_addr, C.token, info.task_id);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    assert_int_equal(pclose(p), 0);
    assert_string_equal(out, "remote-output\n");

    /* Node 1 goes; its files stay on this disk, but no alive raylet serves them. */
    h_kill(&C.raylets[1].pid, SIGKILL);
    assert_true(h_wait_until(node1_dead, r, 30000));
    sink gone;
    sink_init(&gone);
    assert_int_equal(esc_job_logs(r, job_id, false, sink_fn, &gone, &st), ESC_NOT_FOUND);
    assert_non_null(strstr(st.message, "on any alive node"));
    assert_int_equal(gone.nout + gone.nerr, 0);
    esc_job_status_clear(&info);
    esc_disconnect(r);
}

/* An entrypoint that asks for a resource no node has: PENDING with the missing name, in
 * the SDK, the list and `escher job status`; it starts once its resource appears. */
typedef struct {
    esc_client *c;
    char key[ESC_ID_MAX + 16];
} started_probe;

static bool started_written(void *p)
{
    started_probe *sp = p;
    void *v = NULL;
    size_t len = 0;
    bool ok = esc_kv_get(sp->c, "_jobs", sp->key, &v, &len, NULL) == ESC_OK;
    free(v);
    return ok;
}

static void test_infeasible_pending_then_runs(void **state)
{
    (void)state;
    esc_client *c = driver("jobapi3");
    const char *argv[] = {"sh", "-c", "echo got-slot", NULL};
    esc_amount need[] = {{.name = "jobapi3/slot", .value = ESC_QTY(1)}};
    esc_job_spec spec = {.argv = argv, .resources = need, .nresources = 1};
    char job_id[ESC_ID_MAX];
    esc_status st;
    assert_int_equal(esc_job_submit(c, &spec, job_id, &st), ESC_OK);

    esc_client *r = remote_reader();
    esc_job_status_info info;
    wait_state(r, job_id, "PENDING", &info);
    assert_true(info.infeasible);
    assert_int_equal(info.nmissing, 1);
    assert_string_equal(info.missing[0], "jobapi3/slot");
    assert_int_equal(info.nrequest, 1);
    assert_string_equal(info.request[0].name, "jobapi3/slot");
    assert_int_equal(info.request[0].value, ESC_QTY(1));
    assert_string_equal(info.result, "pending: no node has jobapi3/slot");
    esc_job_status_clear(&info);
    /* The GCS's ListJobs shows it too, as the raylet that queued it reported. */
    listed_wait lw = {r, job_id, C.raylets[0].node_id, "jobapi3/slot", true};
    assert_true(h_wait_until(listed_as, &lw, 30000));
    esc_job_status_info *jobs;
    size_t n;
    assert_int_equal(esc_job_list(r, &jobs, &n, &st), ESC_OK);
    bool listed = false;
    for (size_t i = 0; i < n; i++)
        listed |= !strcmp(jobs[i].id, job_id) && !strcmp(jobs[i].state, "PENDING");
    assert_true(listed);
    esc_job_list_free(jobs, n);

    char cmd[1024], out[2048] = {0};
    snprintf(cmd, sizeof cmd, "%s/client/escher --address %s --token %s job status %s",
             getenv("ESCHER_BIN_DIR"), C.gcs_addr, C.token, job_id);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = 0;
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(out, "state:       PENDING\n"));
    assert_non_null(strstr(out, "result:      pending: no node has jobapi3/slot\n"));
    assert_non_null(strstr(out, "missing:     jobapi3/slot\n"));

    /* The resource appears on node 0: the entrypoint runs and succeeds. */
    uint64_t seq;
    assert_int_equal(esc_resource_set(c, "slot", ESC_QTY(1), NULL, &seq, &st), ESC_OK);
    /* Its raylet says it left the queue: ListJobs stops showing it waiting while the
     * job still runs (the driver has not read the result yet). */
    listed_wait ran = {r, job_id, "", "", false};
    assert_true(h_wait_until(listed_as, &ran, 30000));
    esc_job_result res;
    assert_int_equal(esc_job_wait(c, 30000, &res, &st), ESC_OK);
    assert_int_equal(res.outcome, ESC_JOB_SUCCEEDED);
    sink s;
    sink_init(&s);
    assert_int_equal(esc_job_logs(r, job_id, false, sink_fn, &s, &st), ESC_OK);
    assert_string_equal(s.out, "got-slot\n");
    /* Its raylet writes where it started (what `job logs --follow` waits for); the
     * write goes out beside the task, so it may land just after the result. */
    started_probe sp = {.c = r};
    snprintf(sp.key, sizeof sp.key, "%s/started", job_id);
    assert_true(h_wait_until(started_written, &sp, 10000));
    void *v = NULL;
    size_t vlen = 0;
    assert_int_equal(esc_kv_get(r, "_jobs", sp.key, &v, &vlen, &st), ESC_OK);
    assert_int_equal(vlen, strlen(C.raylets[0].node_id));
    assert_memory_equal(v, C.raylets[0].node_id, vlen);
    free(v);
    esc_disconnect(r);
    esc_disconnect(c);
}

/* A request larger than any node (no name missing): PENDING, infeasible. Its logs are
 * followed while it waits; stopping the job from another client ends the follower and
 * the driver's wait (STOPPED, with the stop's reason). */
static void test_pending_stopped_while_followed(void **state)
{
    (void)state;
    esc_client *c = driver("jobapi4");
    const char *argv[] = {"echo", "never", NULL};
    esc_amount need[] = {{.name = "CPU", .value = ESC_QTY(1000)}};
    esc_job_spec spec = {.argv = argv, .resources = need, .nresources = 1};
    char job_id[ESC_ID_MAX];
    esc_status st;
    assert_int_equal(esc_job_submit(c, &spec, job_id, &st), ESC_OK);
    esc_client *r = remote_reader();
    esc_job_status_info info;
    wait_state(r, job_id, "PENDING", &info);
    assert_true(info.infeasible);
    assert_int_equal(info.nmissing, 0);
    assert_string_equal(info.result, "pending: no node can hold CPU=1000");
    esc_job_status_clear(&info);
    listed_wait lw = {r, job_id, C.raylets[0].node_id, "", true};
    assert_true(h_wait_until(listed_as, &lw, 30000));

    follower f;
    follow_start(&f, r, job_id);
    esc_client *other = remote_reader();
    assert_int_equal(esc_job_stop(other, job_id, "stopped by the test", &st), ESC_OK);
    assert_int_equal(esc_job_stop(other, job_id, NULL, &st), ESC_FAILED_PRECONDITION);
    assert_non_null(strstr(st.message, "is not running (FAILED)"));
    esc_job_result res;
    assert_int_equal(esc_job_wait(c, 30000, &res, &st), ESC_OK);
    assert_int_equal(res.outcome, ESC_JOB_STOPPED);
    assert_string_equal(res.message, "stopped by the test");
    assert_int_equal(res.exit_code, -1);
    assert_int_equal(pthread_join(f.thread, NULL), 0);
    assert_int_equal(f.rc, ESC_OK);
    assert_int_equal(f.out.nout + f.out.nerr, 0);
    wait_state(r, job_id, "FAILED", &info);
    assert_string_equal(info.status, "STOPPED");
    assert_string_equal(info.result, "stopped");
    assert_true(info.stopped);
    esc_job_status_clear(&info);
    esc_disconnect(other);
    esc_disconnect(r);
    esc_disconnect(c);
}

/* Bad input: clear errors, and the raylet lives on. */
static void test_bad_input(void **state)
{
    (void)state;
    esc_client *c = driver("jobapi5");
    esc_status st;
    esc_job_result res;
    assert_int_equal(esc_job_wait(c, 0, &res, &st), ESC_FAILED_PRECONDITION);
    esc_job_spec none = {0};
    assert_int_equal(esc_job_submit(c, &none, NULL, &st), ESC_INVALID_ARGUMENT);
    const char *argv[] = {"true", NULL};
    char missing[400];
    snprintf(missing, sizeof missing, "%s/no-such-dir", C.dir);
    esc_job_spec bad_dir = {.argv = argv, .working_dir = missing};
    assert_int_equal(esc_job_submit(c, &bad_dir, NULL, &st), ESC_INVALID_ARGUMENT);
    assert_non_null(strstr(st.message, "cannot use working directory"));
    esc_job_spec ok = {.argv = argv};
    assert_int_equal(esc_job_submit(c, &ok, NULL, &st), ESC_OK);
    assert_int_equal(esc_job_submit(c, &ok, NULL, &st), ESC_ALREADY_EXISTS);
    assert_int_equal(esc_job_wait(c, 30000, &res, &st), ESC_OK);
    assert_int_equal(res.outcome, ESC_JOB_SUCCEEDED);

    esc_job_status_info info;
    assert_int_equal(esc_job_status(c, "0123456789abcdef", &info, &st), ESC_NOT_FOUND);
    esc_job_status_clear(&info);
    sink s;
    sink_init(&s);
    assert_int_equal(esc_job_logs(c, "../etc", false, sink_fn, &s, &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esc_job_logs(c, "0123456789abcdef", false, sink_fn, &s, &st),
                     ESC_NOT_FOUND);
    assert_int_equal(esc_task_logs(c, "../x", sink_fn, &s, &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esc_task_logs(c, "0123abcd", sink_fn, &s, &st), ESC_NOT_FOUND);
    assert_int_equal(esc_job_stop(c, "0123456789abcdef", NULL, &st), ESC_NOT_FOUND);

    /* Straight at the raylet: an empty or hostile task id, a stream cancelled at once. */
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", C.raylets[0].port);
    esc_rpc_channel *ch = esc_rpc_channel_new(addr, C.token);
    const char *ids[] = {"", "../../etc/passwd"};
    for (size_t i = 0; i < 2; i++) {
        Escher__StreamLogsRequest rq = ESCHER__STREAM_LOGS_REQUEST__INIT;
        rq.task_id = (char *)ids[i];
        rq.follow = i == 1;
        esc_rpc_stream *sm = esc_rpc_stream_open(ch, &ESC_M_RAYLET_STREAM_LOGS, &rq.base, &st);
        assert_non_null(sm);
        ProtobufCMessage *m;
        assert_int_equal(esc_rpc_stream_next(sm, &m, &st), 0);
        assert_int_equal(st.code, ESC_INVALID_ARGUMENT);
        esc_rpc_stream_free(sm);
    }
    Escher__TaskStateRequest tq = ESCHER__TASK_STATE_REQUEST__INIT;
    tq.task_id = "../../etc";
    ProtobufCMessage *reply = NULL;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_TASK_SERVICE_GET_TASK_STATE, &tq.base, &reply, 5000, 0, &st),
        ESC_INVALID_ARGUMENT);
    tq.task_id = "0123abcd"; /* a task this raylet never saw */
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_TASK_SERVICE_GET_TASK_STATE, &tq.base, &reply, 5000, 0, &st),
        ESC_OK);
    assert_int_equal(((Escher__TaskStateReply *)reply)->phase, ESCHER__TASK_PHASE__TASK_UNKNOWN);
    protobuf_c_message_free_unpacked(reply, NULL);
    esc_rpc_channel *nochan = esc_rpc_channel_new(addr, "wrong-token");
    Escher__StreamLogsRequest rq = ESCHER__STREAM_LOGS_REQUEST__INIT;
    rq.task_id = "0123abcd";
    esc_rpc_stream *sm = esc_rpc_stream_open(nochan, &ESC_M_RAYLET_STREAM_LOGS, &rq.base, &st);
    assert_non_null(sm);
    ProtobufCMessage *m;
    assert_int_equal(esc_rpc_stream_next(sm, &m, &st), 0);
    assert_int_equal(st.code, ESC_UNAUTHENTICATED);
    esc_rpc_stream_free(sm);
    esc_rpc_channel_free(nochan);
    esc_rpc_channel_free(ch);
    assert_true(h_alive(C.raylets[0].pid));
    esc_disconnect(c);
}

/* Output larger than one chunk (64 KiB) arrives whole and in order, followed or not. */
typedef struct {
    size_t n;
    bool in_order; /* every byte so far is 'x', but a last '\n' */
    bool ended;
} counter;

static int count_fn(void *ud, int stream, const void *data, size_t len)
{
    counter *k = ud;
    const char *p = data;
    for (size_t i = 0; i < len && stream == 1; i++) {
        k->in_order &= !k->ended && (p[i] == 'x' || p[i] == '\n');
        k->ended |= p[i] == '\n';
    }
    k->n += stream == 1 ? len : 0;
    return 0;
}

static void test_large_output(void **state)
{
    (void)state;
    const char *argv[] = {"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; echo", NULL};
    esc_client *c = driver("jobapi6");
    esc_job_spec spec = {.argv = argv};
    char job_id[ESC_ID_MAX];
    esc_status st;
    assert_int_equal(esc_job_submit(c, &spec, job_id, &st), ESC_OK);
    esc_client *r = remote_reader();
    counter followed = {.in_order = true};
    assert_int_equal(esc_job_logs(r, job_id, true, count_fn, &followed, &st), ESC_OK);
    esc_job_result res;
    assert_int_equal(esc_job_wait(c, 30000, &res, &st), ESC_OK);
    assert_int_equal(res.outcome, ESC_JOB_SUCCEEDED);
    counter whole = {.in_order = true};
    assert_int_equal(esc_job_logs(r, job_id, false, count_fn, &whole, &st), ESC_OK);
    assert_int_equal(followed.n, 300001);
    assert_true(followed.in_order && followed.ended);
    assert_int_equal(whole.n, 300001);
    assert_true(whole.in_order && whole.ended);
    esc_disconnect(r);
    esc_disconnect(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_submit_follow_wait),
        cmocka_unit_test(test_infeasible_pending_then_runs),
        cmocka_unit_test(test_pending_stopped_while_followed),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_large_output),
        /* Last: it kills node 1. */
        cmocka_unit_test(test_logs_through_remote_raylet),
    };
    int rc = cmocka_run_group_tests(tests, setup, h_teardown);
    return rc || h_unclean_exits();
}
