/* test_object_store.c: the raylet's object store: chunked writes and sealing, repeats
 * and gaps, the capacity (a full store is an error, not a crash), free, free of a job,
 * expiry of a partial put whose writer went away, pins outliving a free, error objects,
 * the rows the state API lists (object_store_each). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "object_store.h"

static void test_chunks_and_seal(void **state)
{
    (void)state;
    object_store *s = object_store_new(1000, 100);
    esc_status st;
    bool sealed = true;
    assert_int_equal(object_store_create(s, "a", "job1", 10, false, NULL, 0, &st), ESC_OK);
    object_view v;
    assert_false(object_store_get(s, "a", &v)); /* not readable before the seal */
    assert_int_equal(object_store_write(s, "a", 0, "01234", 5, 1, &sealed, &st), ESC_OK);
    assert_false(sealed);
    /* A retried chunk is accepted and changes nothing; a gap is refused. */
    assert_int_equal(object_store_write(s, "a", 0, "01234", 5, 1, &sealed, &st), ESC_OK);
    assert_int_equal(object_store_write(s, "a", 7, "789", 3, 1, &sealed, &st),
                     ESC_INVALID_ARGUMENT);
    assert_int_equal(object_store_write(s, "a", 5, "567890", 6, 1, &sealed, &st),
                     ESC_INVALID_ARGUMENT); /* past the end */
    assert_int_equal(object_store_write(s, "a", 5, "56789", 5, 2, &sealed, &st), ESC_OK);
    assert_true(sealed);
    assert_true(object_store_get(s, "a", &v));
    assert_int_equal(v.size, 10);
    assert_memory_equal(v.data, "0123456789", 10);
    assert_string_equal(v.job_id, "job1");
    assert_false(v.is_error);
    assert_int_equal(object_store_write(s, "a", 0, "x", 1, 3, &sealed, &st),
                     ESC_FAILED_PRECONDITION);
    assert_int_equal(object_store_create(s, "a", "job1", 10, false, NULL, 0, &st),
                     ESC_ALREADY_EXISTS);
    assert_int_equal(object_store_write(s, "nope", 0, "x", 1, 3, &sealed, &st), ESC_NOT_FOUND);
    assert_int_equal(object_store_create(s, "", "job1", 1, false, NULL, 0, &st),
                     ESC_INVALID_ARGUMENT);
    object_store_free(s);
}

static void test_capacity(void **state)
{
    (void)state;
    object_store *s = object_store_new(100, 1000);
    esc_status st;
    char buf[100];
    memset(buf, 7, sizeof buf);
    assert_int_equal(object_store_put(s, "a", "j", buf, 60, false, NULL, &st), ESC_OK);
    /* Refused on creation, before any byte is taken, with the numbers in the message. */
    assert_int_equal(object_store_put(s, "b", "j", buf, 41, false, NULL, &st),
                     ESC_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(st.message, "object store full (used 60 of 100 bytes"));
    assert_int_equal(object_store_create(s, "huge", "j", UINT64_MAX, false, NULL, 0, &st),
                     ESC_RESOURCE_EXHAUSTED);
    assert_int_equal(object_store_put(s, "b", "j", buf, 40, false, NULL, &st), ESC_OK);
    object_store_stats stats;
    object_store_get_stats(s, &stats);
    assert_int_equal(stats.capacity, 100);
    assert_int_equal(stats.used, 100);
    assert_int_equal(stats.objects, 2);
    /* Freeing makes room again. */
    assert_true(object_store_delete(s, "a", NULL));
    assert_false(object_store_delete(s, "a", NULL));
    assert_int_equal(object_store_put(s, "c", "j", buf, 60, false, NULL, &st), ESC_OK);
    object_store_free(s);
}

static void test_free_job(void **state)
{
    (void)state;
    object_store *s = object_store_new(1000, 1000);
    esc_status st;
    assert_int_equal(object_store_put(s, "a1", "ja", "xx", 2, false, NULL, &st), ESC_OK);
    assert_int_equal(object_store_put(s, "a2", "ja", "yyy", 3, false, NULL, &st), ESC_OK);
    assert_int_equal(object_store_create(s, "a3", "ja", 5, false, NULL, 0, &st), ESC_OK);
    assert_int_equal(object_store_put(s, "b1", "jb", "z", 1, false, NULL, &st), ESC_OK);
    assert_int_equal(object_store_delete_job(s, "ja"), 3);
    object_store_stats stats;
    object_store_get_stats(s, &stats);
    assert_int_equal(stats.objects, 1);
    assert_int_equal(stats.used, 1);
    assert_int_equal(stats.unsealed, 0);
    assert_true(object_store_peek(s, "b1", NULL, NULL));
    assert_int_equal(object_store_delete_job(s, "ja"), 0);
    assert_int_equal(object_store_delete_job(s, ""), 0);
    object_store_free(s);
}

static void test_partial_timeout(void **state)
{
    (void)state;
    object_store *s = object_store_new(1000, 100);
    esc_status st;
    bool sealed;
    assert_int_equal(object_store_create(s, "p", "j", 10, false, NULL, 1000, &st), ESC_OK);
    assert_int_equal(object_store_write(s, "p", 0, "abc", 3, 1050, &sealed, &st), ESC_OK);
    assert_int_equal(object_store_put(s, "done", "j", "d", 1, false, NULL, &st), ESC_OK);
    /* A write resets the clock; sealed objects never expire. */
    assert_int_equal(object_store_expire(s, 1100), 0);
    assert_int_equal(object_store_expire(s, 1150), 1);
    assert_false(object_store_peek(s, "p", NULL, NULL));
    assert_true(object_store_peek(s, "done", NULL, NULL));
    object_store_stats stats;
    object_store_get_stats(s, &stats);
    assert_int_equal(stats.used, 1);
    assert_int_equal(object_store_write(s, "p", 3, "def", 3, 1200, &sealed, &st), ESC_NOT_FOUND);
    object_store_free(s);
}

static void test_pin_outlives_free(void **state)
{
    (void)state;
    object_store *s = object_store_new(1000, 100);
    esc_status st;
    assert_int_equal(object_store_put(s, "a", "j", "hello", 5, false, NULL, &st), ESC_OK);
    object_view v;
    object_entry *pin = object_store_pin(s, "a", &v);
    assert_non_null(pin);
    assert_true(object_store_delete(s, "a", NULL));
    assert_false(object_store_get(s, "a", &v)); /* gone for new readers... */
    object_store_stats stats;
    object_store_get_stats(s, &stats);
    assert_int_equal(stats.objects, 0);
    assert_int_equal(stats.used, 5); /* ...but its memory is still in use */
    assert_memory_equal(v.data, "hello", 5);
    object_store_unpin(s, pin);
    object_store_get_stats(s, &stats);
    assert_int_equal(stats.used, 0);
    assert_null(object_store_pin(s, "a", &v));
    object_store_free(s);
}

typedef struct {
    object_row rows[4];
    int n;
} seen_rows;

static void see_row(void *ud, const object_row *row)
{
    seen_rows *s = ud;
    s->rows[s->n++] = *row;
}

static const object_row *row_of(const seen_rows *s, const char *id)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->rows[i].id, id))
            return &s->rows[i];
    return NULL;
}

/* Every object in the index, sealed or not, with its size, job, pin and error flag. */
static void test_each_row(void **state)
{
    (void)state;
    object_store *s = object_store_new(1000, 100);
    esc_status st;
    assert_int_equal(object_store_put(s, "a", "j1", "hello", 5, false, NULL, &st), ESC_OK);
    assert_int_equal(object_store_create(s, "b", "j2", 10, false, NULL, 0, &st), ESC_OK);
    assert_int_equal(object_store_put(s, "c", "", NULL, 0, true, "boom", &st), ESC_OK);
    object_view v;
    object_entry *pin = object_store_pin(s, "a", &v);
    seen_rows seen = {0};
    object_store_each(s, see_row, &seen);
    assert_int_equal(seen.n, 3);
    const object_row *a = row_of(&seen, "a"), *b = row_of(&seen, "b"), *c = row_of(&seen, "c");
    assert_true(a && b && c);
    assert_int_equal(a->size, 5);
    assert_string_equal(a->job_id, "j1");
    assert_true(a->sealed && a->pinned && !a->is_error);
    assert_int_equal(b->size, 10);
    assert_true(!b->sealed && !b->pinned);
    assert_true(c->is_error && c->sealed);
    object_store_unpin(s, pin);
    seen.n = 0;
    object_store_each(s, see_row, &seen);
    assert_false(row_of(&seen, "a")->pinned);
    object_store_free(s);
}

static void test_error_and_empty_objects(void **state)
{
    (void)state;
    object_store *s = object_store_new(1000, 100);
    esc_status st;
    assert_int_equal(object_store_put(s, "e", "j", NULL, 0, true, "task failed: boom", &st),
                     ESC_OK);
    object_view v;
    assert_true(object_store_get(s, "e", &v)); /* empty objects are sealed at creation */
    assert_true(v.is_error);
    assert_string_equal(v.error, "task failed: boom");
    assert_int_equal(v.size, 0);
    object_store_stats stats;
    object_store_get_stats(s, &stats);
    assert_int_equal(stats.used, strlen("task failed: boom"));
    assert_int_equal(object_store_put(s, "z", "j", NULL, 0, false, NULL, &st), ESC_OK);
    assert_true(object_store_get(s, "z", &v));
    assert_string_equal(v.error, "");
    object_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks_and_seal),
        cmocka_unit_test(test_capacity),
        cmocka_unit_test(test_free_job),
        cmocka_unit_test(test_partial_timeout),
        cmocka_unit_test(test_pin_outlives_free),
        cmocka_unit_test(test_error_and_empty_objects),
        cmocka_unit_test(test_each_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
