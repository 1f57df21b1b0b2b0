/* test_gang.c: backed ephemeral resources and ESL gang reservations on a GCS and three
 * raylets of 4 CPUs each: carving and giving back visible in status, malformed
 * backings, a gang whose members all start, a gang that can not fit and leaves
 * nothing, competing gangs that finish or time out cleanly with nothing leaked, and
 * the ghost-task variant. No timing assertions: timeouts are generous. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escher/esl.h"
#include "harness.h"

#define NODES 3
#define CPUS 4

static h_cluster C;
static const char *LIB; /* the test task library */

static int setup(void **state)
{
    *state = &C;
    LIB = h_tasks_lib();
    h_init(&C, 5000);
    const char *extras[NODES];
    for (int i = 0; i < NODES; i++)
        extras[i] = "--num-cpus 4";
    return h_start_cluster(&C, NODES, extras);
}

/* ------------------------------------------------------------------ helpers */

/* Row `name` of node i (false when absent); strings of *out are not kept. */
static bool row_of(esc_client *cl, int i, const char *name, esc_resource_info *out)
{
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_resources(cl, &s, NULL), ESC_OK);
    bool found = false;
    for (size_t n = 0; n < s->nnodes; n++) {
        if (strcmp(s->nodes[n].id, C.raylets[i].node_id) != 0)
            continue;
        const esc_resource_info *r = esc_node_resource(&s->nodes[n], name);
        if (r) {
            *out = *r;
            out->name = out->namespace_ = out->owner = NULL;
            out->backing = NULL;
            found = true;
        }
    }
    esc_cluster_status_free(s);
    return found;
}

static int64_t cpu_held(esc_client *cl, int i)
{
    esc_resource_info r;
    assert_true(row_of(cl, i, "CPU", &r));
    return r.held;
}

typedef struct {
    esc_client *cl;
    int64_t held[NODES];  /* expected CPU held per node */
    const char *absent;   /* a full name that must be on no node (NULL: none) */
} settled_arg;

/* Reports lag releases by up to the raylet's row interval: poll until settled. */
static bool settled(void *p)
{
    settled_arg *a = p;
    esc_cluster_status *s = NULL;
    if (esc_get_cluster_resources(a->cl, &s, NULL) != ESC_OK)
        return false;
    bool ok = true;
    for (int i = 0; i < NODES && ok; i++) {
        for (size_t n = 0; n < s->nnodes; n++) {
            if (strcmp(s->nodes[n].id, C.raylets[i].node_id) != 0)
                continue;
            const esc_resource_info *cpu = esc_node_resource(&s->nodes[n], "CPU");
            ok = cpu && cpu->held == a->held[i];
            if (ok && a->absent)
                ok = esc_node_resource(&s->nodes[n], a->absent) == NULL;
        }
    }
    esc_cluster_status_free(s);
    return ok;
}

static void wait_settled(esc_client *cl, int64_t held_each, const char *absent)
{
    settled_arg a = {.cl = cl, .absent = absent};
    for (int i = 0; i < NODES; i++)
        a.held[i] = held_each;
    assert_true(h_wait_until(settled, &a, 20000));
}

static esc_ref *submit(esc_client *cl, const char *fn, const char *arg, const esc_amount *res,
                       size_t nres)
{
    esc_task_arg a = {.data = arg, .len = arg ? strlen(arg) : 0};
    esc_task_spec spec = {.library = LIB, .symbol = fn, .resources = res, .nresources = nres,
                          .args = arg ? &a : NULL, .nargs = arg ? 1 : 0};
    esc_ref *ref = NULL;
    esc_status st;
    int rc = esc_task_submit(cl, &spec, &ref, NULL, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "submit %s: %s %s\n", fn, esc_status_name(rc), st.message);
    assert_int_equal(rc, ESC_OK);
    return ref;
}

static void one_line(const esc_status *st)
{
    assert_null(strchr(st->message, '\n'));
    assert_true(strlen(st->message) > 0);
}

/* ------------------------------------------------------------------ backed resources */

static void test_backed_status(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "bk", 0, false);
    esc_amount cpu1 = {.name = "CPU", .value = ESC_QTY(1)};
    esc_target t0 = ESC_NODE(C.raylets[0].node_id);
    esc_status st;
    uint64_t seq;
    assert_int_equal(esc_resource_set_backed(cl, "g", ESC_QTY(3), &cpu1, 1, &t0, &seq, &st),
                     ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 10000, &st), ESC_OK);
    esc_resource_info g, cpu;
    assert_true(row_of(cl, 0, "bk/g", &g));
    assert_true(g.backed && !g.pending);
    assert_true(g.total == ESC_QTY(3) && g.carved == ESC_QTY(3));
    assert_true(row_of(cl, 0, "CPU", &cpu));
    assert_true(cpu.held == ESC_QTY(3) && cpu.carved == ESC_QTY(3));
    assert_true(cpu.available == ESC_QTY(1));

    /* A second one that does not fit waits, carved once the first goes. */
    assert_int_equal(esc_resource_set_backed(cl, "h", ESC_QTY(2), &cpu1, 1, &t0, &seq, &st),
                     ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 10000, &st), ESC_OK);
    esc_resource_info h;
    assert_true(row_of(cl, 0, "bk/h", &h));
    assert_true(h.backed && h.pending && h.total == 0);
    assert_true(cpu_held(cl, 0) == ESC_QTY(3));         /* nothing half carved */
    assert_int_equal(esc_resource_delete(cl, "g", &t0, &seq, &st), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 10000, &st), ESC_OK);
    assert_true(row_of(cl, 0, "bk/h", &h));
    assert_true(!h.pending && h.total == ESC_QTY(2));
    assert_true(cpu_held(cl, 0) == ESC_QTY(2));
    assert_int_equal(esc_resource_delete(cl, "h", &t0, &seq, &st), ESC_OK);
    wait_settled(cl, 0, "bk/h");
    esc_disconnect(cl);
}

static void test_backed_malformed(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "bad", 0, false);
    esc_target t0 = ESC_NODE(C.raylets[0].node_id);
    esc_status st;
    const char *names[] = {"GPU", "FOO", "bad/x", "CPU"};
    int64_t qtys[] = {ESC_QTY(1), ESC_QTY(1), ESC_QTY(1), -ESC_QTY(1)};
    for (size_t i = 0; i < 4; i++) {
        esc_amount b = {.name = names[i], .value = qtys[i]};
        int rc = esc_resource_set_backed(cl, "g", ESC_QTY(1), &b, 1, &t0, NULL, &st);
        assert_int_equal(rc, ESC_INVALID_ARGUMENT);
        one_line(&st);
    }
    /* Another backing for a live backed resource is refused too. */
    esc_amount cpu1 = {.name = "CPU", .value = ESC_QTY(1)};
    esc_amount cpu2 = {.name = "CPU", .value = ESC_QTY(2)};
    assert_int_equal(esc_resource_set_backed(cl, "g", ESC_QTY(1), &cpu1, 1, &t0, NULL, &st),
                     ESC_OK);
    assert_int_equal(esc_resource_set_backed(cl, "g", ESC_QTY(1), &cpu2, 1, &t0, NULL, &st),
                     ESC_INVALID_ARGUMENT);
    one_line(&st);
    esc_resource_info r;
    assert_false(row_of(cl, 0, "bad/x", &r));
    assert_int_equal(esc_resource_delete(cl, "g", &t0, NULL, &st), ESC_OK);
    wait_settled(cl, 0, "bad/g");
    esc_disconnect(cl);
}

/* ------------------------------------------------------------------ gangs */

static void per_member_cpu(esl_request *r)
{
    memset(r, 0, sizeof *r);
    esl_request_add(r, "CPU", ESC_QTY(1));
}

/* The gang's share of a node (0 when not chosen). */
static unsigned share_of(const esl_gang *g, const char *node)
{
    for (size_t i = 0; i < esl_gang_nnodes(g); i++) {
        unsigned k;
        const char *id = esl_gang_node(g, i, &k);
        if (!strcmp(id, node))
            return k;
    }
    return 0;
}

/* Runs one `stamp` member per slot and checks each ran on a node of the gang, no node
 * running more members than its share. */
static void run_members(esc_client *cl, const esl_gang *g, unsigned members)
{
    const esl_request *req = esl_gang_request(g);
    esc_ref **refs = calloc(members, sizeof *refs);
    for (unsigned m = 0; m < members; m++)
        refs[m] = submit(cl, "stamp", "200", req->v, req->n);
    unsigned ran[NODES] = {0};
    for (unsigned m = 0; m < members; m++) {
        void *data = NULL;
        size_t len = 0;
        esc_status st;
        assert_int_equal(esc_get(cl, refs[m], 60000, &data, &len, &st), ESC_OK);
        long long t0, t1;
        char node[128] = "";
        assert_int_equal(sscanf(data, "%lld %lld %127s", &t0, &t1, node), 3);
        int idx = -1;
        for (int i = 0; i < NODES; i++)
            if (!strcmp(C.raylets[i].node_id, node))
                idx = i;
        assert_true(idx >= 0);
        ran[idx]++;
        assert_true(share_of(g, node) > 0);
        free(data);
        esc_ref_free(refs[m]);
    }
    for (int i = 0; i < NODES; i++)
        assert_true(ran[i] <= share_of(g, C.raylets[i].node_id));
    free(refs);
}

static void test_gang_all_start(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "gs", 0, false);
    esl_request pm;
    per_member_cpu(&pm);
    esl_gang *g = NULL;
    esc_status st;
    int rc = esl_gang_reserve(cl, "gang", 6, &pm, 20000, &g, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "reserve: %s\n", st.message);
    assert_int_equal(rc, ESC_OK);
    unsigned sum = 0;
    for (size_t i = 0; i < esl_gang_nnodes(g); i++) {
        unsigned k;
        esl_gang_node(g, i, &k);
        sum += k;
    }
    assert_int_equal(sum, 6);
    /* The carve is visible: 6 CPUs held in all before any member runs. */
    int64_t held = 0;
    for (int i = 0; i < NODES; i++)
        held += cpu_held(cl, i);
    assert_true(held == ESC_QTY(6));
    run_members(cl, g, 6);
    assert_int_equal(esl_gang_release(cl, g, &st), ESC_OK);
    wait_settled(cl, 0, "gs/gang");
    /* A name in use is refused; a gang that can never fit fails at once. */
    esc_amount cpu1 = {.name = "CPU", .value = ESC_QTY(1)};
    uint64_t seq;
    assert_int_equal(esc_resource_set_backed(cl, "taken", ESC_QTY(1), &cpu1, 1, NULL, &seq, &st),
                     ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 10000, &st), ESC_OK);
    assert_int_equal(esl_gang_reserve(cl, "taken", 2, &pm, 5000, &g, &st),
                     ESC_FAILED_PRECONDITION);
    one_line(&st);
    assert_null(g);
    assert_int_equal(esl_gang_reserve(cl, "huge", NODES * CPUS + 1, &pm, 5000, &g, &st),
                     ESC_FAILED_PRECONDITION);
    one_line(&st);
    esc_amount gpu = {.name = "gs/x", .value = ESC_QTY(1)};
    esl_request bad = {.v = &gpu, .n = 1};
    assert_int_equal(esl_gang_reserve(cl, "bad", 2, &bad, 5000, &g, &st), ESC_INVALID_ARGUMENT);
    assert_int_equal(esc_resource_delete(cl, "taken", NULL, NULL, &st), ESC_OK);
    wait_settled(cl, 0, "gs/taken");
    esl_request_clear(&pm);
    esc_disconnect(cl);
}

/* Tasks hold 3 of the 4 CPUs of every node: a gang of 4 (room for 3 now) queues for the
 * CPUs, times out, and leaves nothing carved or listed. */
static void test_gang_times_out_clean(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "to", 0, false);
    esc_amount cpu3 = {.name = "CPU", .value = ESC_QTY(3)};
    esc_ref *busy[NODES];
    for (int i = 0; i < NODES; i++)
        busy[i] = submit(cl, "sleep_ms", "6000", &cpu3, 1);
    wait_settled(cl, ESC_QTY(3), NULL);
    esl_request pm;
    per_member_cpu(&pm);
    esl_gang_opts o = {.timeout_ms = 1500, .attempt_ms = 500};
    esl_gang *g = NULL;
    esc_status st;
    assert_int_equal(esl_gang_reserve_opts(cl, "wide", 4, &pm, &o, &g, &st),
                     ESC_DEADLINE_EXCEEDED);
    one_line(&st);
    assert_null(g);
    /* Rolled back: only the tasks hold CPU, no gang row anywhere. */
    wait_settled(cl, ESC_QTY(3), "to/wide");
    for (int i = 0; i < NODES; i++) {
        esc_resource_info cpu;
        assert_true(row_of(cl, i, "CPU", &cpu));
        assert_true(cpu.carved == 0);
    }
    for (int i = 0; i < NODES; i++) {
        void *d = NULL;
        size_t len;
        assert_int_equal(esc_get(cl, busy[i], 60000, &d, &len, &st), ESC_OK);
        free(d);
        esc_ref_free(busy[i]);
    }
    wait_settled(cl, 0, NULL);
    esl_request_clear(&pm);
    esc_disconnect(cl);
}

/* The ghost variant ends in the same state: members start on the gang's nodes, and
 * release gives everything back. */
static void test_ghost_gang(void **state)
{
    (void)state;
    esc_client *cl = h_connect(&C, "gh", 0, false);
    esl_request pm;
    per_member_cpu(&pm);
    esl_gang *g = NULL;
    esc_status st;
    esl_gang_opts o = {.timeout_ms = 30000};
    int rc = esl_gang_reserve_ghost(cl, "ghg", 5, &pm, &o, &g, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "reserve_ghost: %s\n", st.message);
    assert_int_equal(rc, ESC_OK);
    run_members(cl, g, 5);
    assert_int_equal(esl_gang_release(cl, g, &st), ESC_OK);
    wait_settled(cl, 0, "gh/ghg");
    esl_request_clear(&pm);
    esc_disconnect(cl);
}

/* ------------------------------------------------------------------ competition */

#define COMPETITORS 3
#define ROUNDS 15

typedef struct {
    int id;
    int ok, timed_out, other;
} competitor;

/* Gangs of 6 over 12 CPUs: at most two fit at once, three compete. */
static void *compete(void *p)
{
    competitor *me = p;
    char ns[16];
    snprintf(ns, sizeof ns, "cmp%d", me->id);
    esc_client *cl = h_connect(&C, ns, me->id % NODES, false);
    esl_request pm;
    per_member_cpu(&pm);
    for (int r = 0; r < ROUNDS; r++) {
        esl_gang *g = NULL;
        esc_status st;
        esl_gang_opts o = {.timeout_ms = 20000, .attempt_ms = 300};
        int rc = esl_gang_reserve_opts(cl, "g", 6, &pm, &o, &g, &st);
        if (rc == ESC_OK) {
            me->ok++;
            usleep(2000);
            if (esl_gang_release(cl, g, &st) != ESC_OK)
                me->other++;
        } else if (rc == ESC_DEADLINE_EXCEEDED) {
            me->timed_out++;
        } else {
            fprintf(stderr, "competitor %d: %s %s\n", me->id, esc_status_name(rc), st.message);
            me->other++;
        }
    }
    esl_request_clear(&pm);
    esc_disconnect(cl);
    return NULL;
}

static void test_competing_gangs(void **state)
{
    (void)state;
    pthread_t th[COMPETITORS];
    competitor cs[COMPETITORS];
    for (int i = 0; i < COMPETITORS; i++) {
        cs[i] = (competitor){.id = i};
        pthread_create(&th[i], NULL, compete, &cs[i]);
    }
    int ok = 0;
    for (int i = 0; i < COMPETITORS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(cs[i].other, 0);
        assert_int_equal(cs[i].ok + cs[i].timed_out, ROUNDS);
        ok += cs[i].ok;
    }
    assert_true(ok > 0);
    /* Nothing leaked: no CPU held or carved, no gang row. */
    esc_client *cl = h_connect(&C, "check", 0, false);
    wait_settled(cl, 0, NULL);
    esc_cluster_status *s = NULL;
    assert_int_equal(esc_get_cluster_resources(cl, &s, NULL), ESC_OK);
    for (size_t n = 0; n < s->nnodes; n++)
        for (size_t r = 0; r < s->nodes[n].nresources; r++)
            assert_false(s->nodes[n].resources[r].ephemeral);
    esc_cluster_status_free(s);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backed_status),
        cmocka_unit_test(test_backed_malformed),
        cmocka_unit_test(test_gang_all_start),
        cmocka_unit_test(test_gang_times_out_clean),
        cmocka_unit_test(test_ghost_gang),
        cmocka_unit_test(test_competing_gangs),
    };
    int rc = cmocka_run_group_tests(tests, setup, h_teardown);
    return rc || h_unclean_exits();
}
