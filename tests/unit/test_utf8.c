/* test_utf8.c: UTF-8 checks of runtime/utf8.c: well-formed text and each kind of
 * malformed sequence, cutting at character boundaries, cleaning a command line, and
 * the walk over a protobuf message's string fields (nested, repeated, oneof). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gcs.pb-c.h"
#include "utf8.h"
#include "worker.pb-c.h"

static bool valid(const char *s)
{
    return esc_utf8_valid(s, strlen(s));
}

static void test_valid_text(void **state)
{
    (void)state;
    assert_true(valid(""));
    assert_true(valid("plain ascii ./run --x=1"));
    assert_true(valid("caf\xc3\xa9"));                 /* U+00E9 */
    assert_true(valid("\xe2\x82\xac 5"));              /* U+20AC */
    assert_true(valid("\xf0\x9f\x98\x80"));            /* U+1F600 */
    assert_true(valid("\xed\x9f\xbf"));                /* U+D7FF, below the surrogates */
    assert_true(valid("\xee\x80\x80"));                /* U+E000, above them */
    assert_true(valid("\xf4\x8f\xbf\xbf"));            /* U+10FFFF, the last */
    assert_true(valid("\xc2\x80"));                    /* U+0080, the first 2-byte */
}

static void test_malformed_text(void **state)
{
    (void)state;
    assert_false(valid("\xff"));                       /* never a byte of UTF-8 */
    assert_false(valid("ab\x80"));                     /* lone continuation */
    assert_false(valid("\xc3"));                       /* truncated */
    assert_false(valid("\xe2\x82"));                   /* truncated */
    assert_false(valid("\xc3\x28"));                   /* bad continuation */
    assert_false(valid("\xc0\xaf"));                   /* overlong '/' */
    assert_false(valid("\xc1\xbf"));                   /* overlong */
    assert_false(valid("\xe0\x80\xaf"));               /* overlong 3-byte */
    assert_false(valid("\xf0\x80\x80\xaf"));           /* overlong 4-byte */
    assert_false(valid("\xed\xa0\x80"));               /* U+D800, a surrogate */
    assert_false(valid("\xed\xbf\xbf"));               /* U+DFFF */
    assert_false(valid("\xf4\x90\x80\x80"));           /* U+110000 */
    assert_false(valid("\xf5\x80\x80\x80"));
    assert_false(valid("latin1 caf\xe9"));
    /* The length bounds the check: a character cut by len is malformed. */
    assert_false(esc_utf8_valid("\xc3\xa9", 1));
    assert_true(esc_utf8_valid("a\xc3\xa9", 1));
}

static void test_prefix(void **state)
{
    (void)state;
    assert_int_equal(esc_utf8_prefix("abc", 10), 3);
    assert_int_equal(esc_utf8_prefix("abc", 2), 2);
    /* "a" then U+20AC (3 bytes): cutting inside the euro keeps only "a". */
    const char *s = "a\xe2\x82\xac" "b";
    assert_int_equal(esc_utf8_prefix(s, 1), 1);
    assert_int_equal(esc_utf8_prefix(s, 2), 1);
    assert_int_equal(esc_utf8_prefix(s, 3), 1);
    assert_int_equal(esc_utf8_prefix(s, 4), 4);
    assert_int_equal(esc_utf8_prefix(s, 5), 5);
    assert_int_equal(esc_utf8_prefix("\xf0\x9f\x98\x80", 3), 0);
    assert_int_equal(esc_utf8_prefix("", 4), 0);
}

static void test_sanitize(void **state)
{
    (void)state;
    char cmd[] = "./drv --file caf\xe9 \xc3\xa9 \xed\xa0\x80";
    assert_int_equal(esc_utf8_sanitize(cmd), 4);
    assert_string_equal(cmd, "./drv --file caf? \xc3\xa9 ???");
    assert_true(valid(cmd));
    char ok[] = "caf\xc3\xa9";
    assert_int_equal(esc_utf8_sanitize(ok), 0);
    assert_string_equal(ok, "caf\xc3\xa9");
}

static void test_message_top_level(void **state)
{
    (void)state;
    Escher__RegisterJobRequest req = ESCHER__REGISTER_JOB_REQUEST__INIT;
    req.entrypoint = "python3 caf\xc3\xa9.py";
    char why[200];
    assert_true(esc_pb_utf8_valid(&req.base, why, sizeof why));
    req.entrypoint = "python3 caf\xe9.py";
    assert_false(esc_pb_utf8_valid(&req.base, why, sizeof why));
    assert_string_equal(why, "RegisterJobRequest.entrypoint is not valid UTF-8");
    assert_false(esc_pb_utf8_valid(&req.base, NULL, 0));
}

static void test_message_nested_repeated(void **state)
{
    (void)state;
    Escher__Amount where = ESCHER__AMOUNT__INIT;
    where.name = "CPU";
    Escher__Amount *wv[] = {&where};
    Escher__Target t = ESCHER__TARGET__INIT;
    t.where = wv;
    t.n_where = 1;
    Escher__ResourceOp a = ESCHER__RESOURCE_OP__INIT, b = ESCHER__RESOURCE_OP__INIT;
    a.name = "ok";
    b.name = "also_ok";
    b.target = &t;
    Escher__ResourceOp *ops[] = {&a, &b};
    Escher__UpdateResourcesRequest req = ESCHER__UPDATE_RESOURCES_REQUEST__INIT;
    req.ops = ops;
    req.n_ops = 2;
    char why[200];
    assert_true(esc_pb_utf8_valid(&req.base, why, sizeof why));
    where.name = "\xc0\xaf";
    assert_false(esc_pb_utf8_valid(&req.base, why, sizeof why));
    assert_string_equal(why, "UpdateResourcesRequest.ops.target.where.name is not valid UTF-8");
    where.name = "CPU";
    /* Repeated strings too. */
    char *ids[] = {"n1", "n\xff"};
    Escher__WaitAppliedRequest w = ESCHER__WAIT_APPLIED_REQUEST__INIT;
    w.node_ids = ids;
    w.n_node_ids = 2;
    assert_false(esc_pb_utf8_valid(&w.base, why, sizeof why));
    assert_string_equal(why, "WaitAppliedRequest.node_ids is not valid UTF-8");
}

static void test_message_oneof(void **state)
{
    (void)state;
    Escher__WorkerMsg__Hello h = ESCHER__WORKER_MSG__HELLO__INIT;
    h.worker_id = "w\xff";
    h.job_id = "job";
    Escher__WorkerMsg m = ESCHER__WORKER_MSG__INIT;
    char why[200];
    /* Not the selected member: not looked at (its pointer may be anything). */
    m.hello = &h;
    m.msg_case = ESCHER__WORKER_MSG__MSG__NOT_SET;
    assert_true(esc_pb_utf8_valid(&m.base, why, sizeof why));
    m.msg_case = ESCHER__WORKER_MSG__MSG_HELLO;
    assert_false(esc_pb_utf8_valid(&m.base, why, sizeof why));
    assert_string_equal(why, "WorkerMsg.hello.worker_id is not valid UTF-8");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_text),
        cmocka_unit_test(test_malformed_text),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_message_top_level),
        cmocka_unit_test(test_message_nested_repeated),
        cmocka_unit_test(test_message_oneof),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
