/* test_list.c: the state API (esc_list_*, `escher list`; docs/observability.md, "State
 * API: escher list") on a two-raylet loopback cluster:
 *  - tasks: one running (on the node that alone has `slot`), one queued behind it there,
 *    one waiting for the running one's return, one finished and one failed on node 0,
 *    each with its state, node, resources, times;
 *  - an actor appears on its node (the only one with `aslot`) with what it holds;
 *  - an object put appears with its size and node;
 *  - filters: --job, --state, --node, --limit with the cut marker (SDK and CLI);
 *  - `--json` parses (python3's json module) and carries the rows;
 *  - a raylet that does not answer is named unreachable, the other node's rows listed;
 *  - bad kind, state, limit and a filter that does not apply: one line, exit 2;
 *  - visibility: a client of job B sees none of job A's tasks, actors or objects; the
 *    CLI (no job) sees both jobs' rows.
 * No fixed sleeps: every wait polls with a deadline (h_wait_until) or waits on a marker
 * file the running task creates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define WAIT_MS 30000
#define PUT_SIZE 12345

static h_cluster C;
static esc_client *A, *B;         /* job A (namespace "lista"), job B ("listb") */
static char running_id[ESC_ID_MAX], queued_id[ESC_ID_MAX], done_id[ESC_ID_MAX],
    failed_id[ESC_ID_MAX], waiting_id[ESC_ID_MAX];
static esc_actor *actor;
static esc_ref *put_a, *put_b;

static int setup(void **state)
{
    *state = &C;
    /* A node timeout well above the list's per-node deadline: a raylet stopped for one
     * list is unreachable, not dead. */
    h_init(&C, 15000);
    const char *extras[] = {"--num-cpus 4", "--num-cpus 4 --resources slot=1,aslot=1"};
    if (h_start_cluster(&C, 2, extras) != 0)
        return -1;
    A = h_connect(&C, "lista", 0, false);
    B = h_connect(&C, "listb", 0, false);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    esc_ref_free(put_a);
    esc_ref_free(put_b);
    esc_actor_free(actor);
    esc_disconnect(B);
    esc_disconnect(A);
    h_stop(&C);
    return 0;
}

/* ------------------------------------------------------------ helpers */

static void submit(esc_client *c, const char *symbol, const char *const *args, size_t nargs,
                   const esc_amount *res, size_t nres, char *task_id, esc_ref **ref)
{
    esc_task_arg a[4];
    for (size_t i = 0; i < nargs; i++)
        a[i] = (esc_task_arg){.data = args[i], .len = strlen(args[i])};
    esc_task_spec spec = {.library = h_tasks_lib(), .symbol = symbol, .resources = res,
                          .nresources = nres, .args = a, .nargs = nargs};
    esc_status st;
    int rc = esc_task_submit(c, &spec, ref, task_id, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "submit %s: %s %s\n", symbol, esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
}

/* The row of task id in a list by filter f, or NULL. */
static const esc_task_row *find_task(const esc_task_table *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->rows[i].task_id, id))
            return &l->rows[i];
    return NULL;
}

typedef struct {
    esc_client *c;
    const char *id;
    const char *state;
    const char *node;
} task_want;

static bool task_is(void *arg)
{
    task_want *w = arg;
    esc_task_table *l = NULL;
    if (esc_list_tasks(w->c, NULL, &l, NULL) != ESC_OK)
        return false;
    const esc_task_row *t = find_task(l, w->id);
    bool ok = t && !strcmp(t->state, w->state) && !strcmp(t->node_id, w->node);
    esc_task_table_free(l);
    return ok;
}

static void wait_task(const char *id, const char *state, int node)
{
    task_want w = {A, id, state, C.raylets[node].node_id};
    if (!h_wait_until(task_is, &w, WAIT_MS)) {
        esc_task_table *l = NULL;
        if (esc_list_tasks(A, NULL, &l, NULL) == ESC_OK)
            for (size_t i = 0; i < l->n; i++)
                fprintf(stderr, "  %s %s %s\n", l->rows[i].task_id, l->rows[i].state,
                        l->rows[i].node_id);
        esc_task_table_free(l);
        fail_msg("task %s never showed %s on node %d", id, state, node);
    }
}

/* Runs `escher --address A --token T ARGS`; stdout and stderr into out/err (NUL-ended,
 * cut to their size). Returns the exit status. */
static int run_cli(const char *args, char *out, size_t outlen, char *err, size_t errlen)
{
    char cmd[2048], o[300], e[300];
    snprintf(o, sizeof o, "%s/cli.out", C.dir);
    snprintf(e, sizeof e, "%s/cli.err", C.dir);
    const char *bin = getenv("ESCHER_BIN_DIR");
    snprintf(cmd, sizeof cmd, "%s/client/escher --address %s --token %s %s >%s 2>%s",
             bin ? bin : "build", C.gcs_addr, C.token, args, o, e);
    int rc = system(cmd);
    const char *paths[2] = {o, e};
    char *bufs[2] = {out, err};
    size_t lens[2] = {outlen, errlen};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(paths[i], "r");
        size_t n = f ? fread(bufs[i], 1, lens[i] - 1, f) : 0;
        bufs[i][n] = 0;
        if (f)
            fclose(f);
    }
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Runs the CLI with --json; checks that python3's json module parses the output, and
 * returns it parsed (the caller json_decref's it). */
static json_t *cli_json(const char *args)
{
    static char out[1 << 20];
    char err[4096], full[512], cmd[1024];
    snprintf(full, sizeof full, "%s --json", args);
    int rc = run_cli(full, out, sizeof out, err, sizeof err);
    if (rc != 0)
        fail_msg("escher %s: exit %d: %s", full, rc, err);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; json.load(sys.stdin)' < %s/cli.out", C.dir);
    assert_int_equal(system(cmd), 0);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    assert_non_null(doc);
    return doc;
}

/* The row of the JSON document whose field key is value, or NULL. */
static json_t *json_row(json_t *doc, const char *key, const char *value)
{
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(doc, "rows"), i, row)
    {
        const char *v = json_string_value(json_object_get(row, key));
        if (v && !strcmp(v, value))
            return row;
    }
    return NULL;
}

/* Exactly one line on stderr and exit 2. */
static void usage_error(const char *args)
{
    char out[4096], err[4096];
    int rc = run_cli(args, out, sizeof out, err, sizeof err);
    if (rc != 2)
        fail_msg("escher %s: exit %d (want 2): %s", args, rc, err);
    char *nl = strchr(err, '\n');
    assert_non_null(nl);
    assert_string_equal(nl + 1, "");
    assert_true(strlen(err) > 10);
}

/* ------------------------------------------------------------ tests */

/* Running and queued on node 1 (the only one with `slot`), finished and failed on node 0. */
static void test_tasks(void **state)
{
    (void)state;
    char marker[256];
    h_marker_path(marker, sizeof marker);
    esc_amount slot[] = {{.name = "slot", .value = ESC_QTY(1)}};
    esc_amount cpu[] = {{.name = "CPU", .value = ESC_QTY(1)}};
    esc_ref *r = NULL;
    const char *long_args[] = {"60000", marker};
    submit(A, "marked_stamp", long_args, 2, slot, 1, running_id, &r);
    assert_true(h_wait_marker(marker, WAIT_MS));
    /* Its return as another task's argument: that task waits for it on node 0. */
    esc_task_arg dep = {.ref = r};
    esc_task_spec wspec = {.library = h_tasks_lib(), .symbol = "echo", .resources = cpu,
                           .nresources = 1, .args = &dep, .nargs = 1};
    esc_ref *w = NULL;
    assert_int_equal(esc_task_submit(A, &wspec, &w, waiting_id, NULL), ESC_OK);
    esc_ref_free(w);
    esc_ref_free(r);
    const char *q_args[] = {"0"};
    submit(A, "stamp", q_args, 1, slot, 1, queued_id, &r);
    esc_ref_free(r);
    submit(A, "stamp", q_args, 1, cpu, 1, done_id, &r);
    void *v;
    size_t len;
    assert_int_equal(esc_get(A, r, WAIT_MS, &v, &len, NULL), ESC_OK);
    free(v);
    esc_ref_free(r);
    submit(A, "fail", NULL, 0, cpu, 1, failed_id, &r);
    assert_int_equal(esc_get(A, r, WAIT_MS, &v, &len, NULL), ESC_ABORTED);
    esc_ref_free(r);

    wait_task(running_id, "RUNNING", 1);
    wait_task(queued_id, "QUEUED", 1);
    wait_task(done_id, "FINISHED", 0);
    wait_task(failed_id, "FAILED", 0);
    wait_task(waiting_id, "WAITING_FOR_ARGS", 0);

    esc_task_table *l = NULL;
    assert_int_equal(esc_list_tasks(A, NULL, &l, NULL), ESC_OK);
    const esc_task_row *t = find_task(l, running_id);
    assert_non_null(t);
    assert_string_equal(t->name, "marked_stamp");
    assert_int_equal(t->nresources, 1);
    assert_string_equal(t->resources[0].name, "slot");
    assert_true(t->resources[0].value == ESC_QTY(1));
    assert_true(t->start_ms > 0 && t->end_ms == 0);
    assert_string_equal(t->job_id, esc_client_job_id(A));
    t = find_task(l, done_id);
    assert_true(t->start_ms > 0 && t->end_ms >= t->start_ms);
    t = find_task(l, queued_id);
    assert_true(t->start_ms == 0 && t->end_ms == 0);
    assert_false(l->info.truncated);
    esc_task_table_free(l);
}

static void test_actor(void **state)
{
    (void)state;
    esc_amount aslot[] = {{.name = "aslot", .value = ESC_QTY(1)}};
    esc_actor_spec spec = {.name = "lister", .library = h_tasks_lib(),
                           .init_symbol = "counter_init", .resources = aslot, .nresources = 1};
    esc_status st;
    assert_int_equal(esc_actor_create(A, &spec, &actor, &st), ESC_OK);
    esc_ref *r = NULL;
    esc_task_arg one = {.data = "1", .len = 1};
    assert_int_equal(esc_actor_call(A, actor, "counter_add", &one, 1, 1, &r, &st), ESC_OK);
    void *v;
    size_t len;
    assert_int_equal(esc_get(A, r, WAIT_MS, &v, &len, NULL), ESC_OK);
    free(v);
    esc_ref_free(r);
    esc_actor_table *l = NULL;
    esc_list_filter f = {.state = "alive"};
    assert_int_equal(esc_list_actors(A, &f, &l, &st), ESC_OK);
    assert_int_equal(l->n, 1);
    assert_string_equal(l->rows[0].actor_id, esc_actor_id(actor));
    assert_string_equal(l->rows[0].node_id, C.raylets[1].node_id);
    assert_string_equal(l->rows[0].state, "ALIVE");
    assert_string_equal(l->rows[0].name, "lister");
    assert_int_equal(l->rows[0].nresources, 1);
    assert_string_equal(l->rows[0].resources[0].name, "aslot");
    assert_int_equal(l->rows[0].pending_calls, 0);
    esc_actor_table_free(l);
}

static void test_objects(void **state)
{
    (void)state;
    char *data = calloc(1, PUT_SIZE);
    esc_status st;
    assert_int_equal(esc_put(A, data, PUT_SIZE, &put_a, &st), ESC_OK);
    assert_int_equal(esc_put(B, data, 77, &put_b, &st), ESC_OK);
    free(data);
    esc_object_table *l = NULL;
    esc_list_filter f = {.node_id = C.raylets[0].node_id};
    assert_int_equal(esc_list_objects(A, &f, &l, &st), ESC_OK);
    const esc_object_row *o = NULL;
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->rows[i].object_id, esc_ref_id(put_a)))
            o = &l->rows[i];
    assert_non_null(o);
    assert_int_equal(o->size, PUT_SIZE);
    assert_int_equal(o->nnodes, 1);
    assert_string_equal(o->node_ids[0], C.raylets[0].node_id);
    assert_true(o->sealed);
    assert_false(o->spilled);
    assert_string_equal(o->job_id, esc_client_job_id(A));
    esc_object_table_free(l);
}

/* Job B sees its own object and nothing of job A's; the CLI (no job) sees both. */
static void test_visibility(void **state)
{
    (void)state;
    esc_object_table *o = NULL;
    assert_int_equal(esc_list_objects(B, NULL, &o, NULL), ESC_OK);
    assert_int_equal(o->n, 1);
    assert_string_equal(o->rows[0].object_id, esc_ref_id(put_b));
    esc_object_table_free(o);
    esc_task_table *t = NULL;
    assert_int_equal(esc_list_tasks(B, NULL, &t, NULL), ESC_OK);
    assert_int_equal(t->n, 0);
    esc_task_table_free(t);
    /* Asking for A's rows by name does not help B. */
    esc_list_filter f = {.job_id = esc_client_job_id(A)};
    esc_actor_table *a = NULL;
    assert_int_equal(esc_list_actors(B, &f, &a, NULL), ESC_OK);
    assert_int_equal(a->n, 0);
    esc_actor_table_free(a);

    json_t *doc = cli_json("list objects");
    assert_non_null(json_row(doc, "object_id", esc_ref_id(put_a)));
    assert_non_null(json_row(doc, "object_id", esc_ref_id(put_b)));
    json_t *row = json_row(doc, "object_id", esc_ref_id(put_a));
    assert_int_equal(json_integer_value(json_object_get(row, "size_bytes")), PUT_SIZE);
    json_decref(doc);
}

static void test_filters(void **state)
{
    (void)state;
    esc_task_table *l = NULL;
    esc_list_filter f = {.state = "FINISHED"};
    assert_int_equal(esc_list_tasks(A, &f, &l, NULL), ESC_OK);
    assert_non_null(find_task(l, done_id));
    assert_null(find_task(l, failed_id));
    assert_null(find_task(l, running_id));
    esc_task_table_free(l);

    f = (esc_list_filter){.node_id = C.raylets[1].node_id};
    assert_int_equal(esc_list_tasks(A, &f, &l, NULL), ESC_OK);
    assert_int_equal(l->n, 2); /* running and queued; the actor's creation ran there too */
    assert_non_null(find_task(l, running_id));
    assert_non_null(find_task(l, queued_id));
    esc_task_table_free(l);

    f = (esc_list_filter){.limit = 1};
    assert_int_equal(esc_list_tasks(A, &f, &l, NULL), ESC_OK);
    assert_int_equal(l->n, 1);
    assert_true(l->info.truncated);
    assert_true(l->info.total >= 4);
    esc_task_table_free(l);

    /* --job on the CLI: B's job id shows none of A's tasks; A's shows them. */
    char args[256];
    snprintf(args, sizeof args, "list tasks --job %s", esc_client_job_id(B));
    json_t *doc = cli_json(args);
    assert_int_equal(json_array_size(json_object_get(doc, "rows")), 0);
    json_decref(doc);
    snprintf(args, sizeof args, "list tasks --job %s --state running", esc_client_job_id(A));
    doc = cli_json(args);
    assert_int_equal(json_array_size(json_object_get(doc, "rows")), 1);
    json_t *row = json_row(doc, "task_id", running_id);
    assert_non_null(row);
    assert_string_equal(json_string_value(json_object_get(row, "node_id")),
                        C.raylets[1].node_id);
    json_decref(doc);

    /* The table: aligned columns, and the cut said. */
    static char out[1 << 16];
    char err[4096];
    assert_int_equal(run_cli("list tasks --limit 1", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "TASK"));
    assert_non_null(strstr(out, "(cut: showing 1 of "));
    assert_int_equal(run_cli("list nodes", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, C.raylets[0].node_id));
    assert_non_null(strstr(out, C.raylets[1].node_id));
    /* Header and rows start their second column at the same offset. */
    const char *l2 = strchr(out, '\n') + 1;
    assert_int_equal(strstr(out, "STATE") - out, strstr(l2, "ALIVE") - l2);

    doc = cli_json("list resources --state ephemeral");
    assert_int_equal(json_array_size(json_object_get(doc, "rows")), 0);
    json_decref(doc);
    snprintf(args, sizeof args, "list resources --node %s", C.raylets[1].node_id);
    doc = cli_json(args);
    assert_non_null(json_row(doc, "name", "slot"));
    json_decref(doc);
    doc = cli_json("list jobs --state running");
    assert_non_null(json_row(doc, "job_id", esc_client_job_id(A)));
    assert_non_null(json_row(doc, "job_id", esc_client_job_id(B)));
    json_decref(doc);
    doc = cli_json("list actors");
    assert_non_null(json_row(doc, "actor_id", esc_actor_id(actor)));
    json_decref(doc);
}

/* A raylet that does not answer (SIGSTOP) is named, its rows missing; the rest is listed. */
static void test_unreachable(void **state)
{
    (void)state;
    kill(C.raylets[1].pid, SIGSTOP);
    esc_task_table *l = NULL;
    esc_status st;
    double t0 = h_now_ms();
    int rc = esc_list_tasks(A, NULL, &l, &st);
    double took = h_now_ms() - t0;
    kill(C.raylets[1].pid, SIGCONT);
    assert_int_equal(rc, ESC_OK);
    assert_int_equal(l->info.nunreachable, 1);
    assert_string_equal(l->info.unreachable[0], C.raylets[1].node_id);
    assert_non_null(find_task(l, done_id));    /* node 0's rows */
    assert_null(find_task(l, running_id));     /* node 1's are missing */
    assert_true(took < ESC_LIST_NODE_TIMEOUT_MS + 3000);
    esc_task_table_free(l);
}

static void test_bad_input(void **state)
{
    (void)state;
    usage_error("list");
    usage_error("list widgets");
    usage_error("list tasks --state sleeping");
    usage_error("list tasks --limit -1");
    usage_error("list tasks --limit many");
    usage_error("list nodes --job 0123");
    usage_error("list jobs --node n1");
    esc_task_table *l = NULL;
    esc_status st;
    esc_list_filter f = {.node_id = "no-such-node"};
    assert_int_equal(esc_list_tasks(A, &f, &l, &st), ESC_NOT_FOUND);
    assert_null(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tasks),     cmocka_unit_test(test_actor),
        cmocka_unit_test(test_objects),   cmocka_unit_test(test_visibility),
        cmocka_unit_test(test_filters),   cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_bad_input),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    /* A daemon that crashed or leaked (under ASan) on its way out fails the test too. */
    return failed || h_unclean_exits() ? 1 : 0;
}
