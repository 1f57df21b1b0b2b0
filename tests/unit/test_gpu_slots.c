/* test_gpu_slots.c: GPU instances granted to tasks: whole instances, packed shares,
 * fragmentation that makes a request wait, release. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpu_slots.h"

#define Q(x) ((int64_t)((x) * 10000))

static void test_whole_instances(void **state)
{
    (void)state;
    gpu_slots *g = gpu_slots_new(2);
    gpu_grant a, b, c;
    assert_true(gpu_slots_acquire(g, Q(1), &a));
    assert_true(gpu_slots_acquire(g, Q(1), &b));
    assert_int_not_equal(a.ids[0], b.ids[0]);
    assert_false(gpu_slots_fit(g, Q(1)));
    assert_false(gpu_slots_acquire(g, Q(0.1), &c));
    gpu_slots_release(g, &a);
    assert_true(gpu_slots_acquire(g, Q(1), &c));
    assert_int_equal(c.ids[0], a.ids[0]);
    char buf[16];
    gpu_slots_release(g, &b);
    gpu_slots_release(g, &c);
    assert_true(gpu_slots_acquire(g, Q(2), &a));
    gpu_grant_format(&a, buf, sizeof buf);
    assert_string_equal(buf, "0,1");
    assert_false(gpu_slots_fit(g, Q(0.5))); /* both whole instances are taken */
    gpu_slots_free(g);
}

static void test_shares_pack_and_fragment(void **state)
{
    (void)state;
    gpu_slots *g = gpu_slots_new(2);
    gpu_grant h1, h2, h3, whole;
    assert_true(gpu_slots_acquire(g, Q(0.5), &h1));
    assert_true(gpu_slots_acquire(g, Q(0.5), &h2));
    assert_int_equal(h1.ids[0], h2.ids[0]); /* packed on one instance */
    assert_true(gpu_slots_acquire(g, Q(1), &whole)); /* the other stays whole */
    assert_false(gpu_slots_fit(g, Q(0.25)));
    gpu_slots_release(g, &whole);
    gpu_slots_release(g, &h1);
    /* 0.5 free on one instance, 1 on the other: a whole one still fits, 0.5 packs. */
    assert_true(gpu_slots_acquire(g, Q(0.5), &h3));
    assert_int_equal(h3.ids[0], h2.ids[0]);
    assert_true(gpu_slots_fit(g, Q(1)));
    gpu_slots_release(g, &h3);
    gpu_slots_release(g, &h2);
    /* Two halves on different instances leave no whole one: a request of 1 waits. */
    gpu_slots *f = gpu_slots_new(2);
    gpu_grant x, y, z;
    assert_true(gpu_slots_acquire(f, Q(0.75), &x));
    assert_true(gpu_slots_acquire(f, Q(0.75), &y));
    assert_int_not_equal(x.ids[0], y.ids[0]);
    assert_false(gpu_slots_acquire(f, Q(0.5), &z));
    assert_true(gpu_slots_acquire(f, Q(0.25), &z));
    gpu_slots_free(f);
    gpu_slots_free(g);
}

/* GPU=1.5: one whole instance and half of another; what is left of that one still takes
 * a half, and a whole request waits until the grant goes. */
static void test_whole_and_fraction(void **state)
{
    (void)state;
    gpu_slots *g = gpu_slots_new(2);
    gpu_grant a, b, c;
    assert_true(gpu_slots_acquire(g, Q(1.5), &a));
    assert_int_equal(a.n, 2);
    assert_int_equal(a.take[0], Q(1));
    assert_int_equal(a.take[1], Q(0.5));
    assert_int_not_equal(a.ids[0], a.ids[1]);
    char buf[16];
    gpu_grant_format(&a, buf, sizeof buf);
    assert_true(!strcmp(buf, "0,1") || !strcmp(buf, "1,0"));
    assert_false(gpu_slots_fit(g, Q(1)));
    assert_true(gpu_slots_acquire(g, Q(0.5), &b));
    assert_int_equal(b.ids[0], a.ids[1]);
    assert_false(gpu_slots_fit(g, Q(0.1)));
    gpu_slots_release(g, &a);
    assert_true(gpu_slots_acquire(g, Q(1), &c)); /* the whole one is back */
    assert_int_equal(c.ids[0], a.ids[0]);
    assert_false(gpu_slots_fit(g, Q(2.5)));
    gpu_slots_release(g, &b);
    gpu_slots_release(g, &c);
    assert_true(gpu_slots_fit(g, Q(1.75)));
    assert_false(gpu_slots_fit(g, Q(2.25))); /* three instances' worth on two */
    gpu_slots_free(g);
}

/* The MPS thread percentage: a single share only. */
static void test_mps_percentage(void **state)
{
    (void)state;
    gpu_slots *g = gpu_slots_new(2);
    gpu_grant q, w, m;
    assert_true(gpu_slots_acquire(g, Q(0.25), &q));
    assert_int_equal(gpu_grant_mps_percentage(&q), 25);
    assert_true(gpu_slots_acquire(g, Q(1), &w));
    assert_int_equal(gpu_grant_mps_percentage(&w), 0);
    gpu_slots_release(g, &w);
    gpu_slots_release(g, &q);
    assert_true(gpu_slots_acquire(g, Q(1.5), &m));
    assert_int_equal(gpu_grant_mps_percentage(&m), 0);
    gpu_slots_free(g);
}

/* An MPS daemon is seen by its control socket (a plain file is not one). */
static void test_mps_detection(void **state)
{
    (void)state;
    char dir[] = "/tmp/escher-mps-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("CUDA_MPS_PIPE_DIRECTORY", dir, 1);
    assert_false(gpu_mps_running());
    char path[64];
    snprintf(path, sizeof path, "%s/control", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_false(gpu_mps_running());
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_true(gpu_mps_running());
    close(fd);
    unlink(path);
    rmdir(dir);
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
}

static void test_no_gpus(void **state)
{
    (void)state;
    gpu_slots *g = gpu_slots_new(0);
    gpu_grant a;
    assert_true(gpu_slots_fit(g, 0));
    assert_true(gpu_slots_acquire(g, 0, &a));
    assert_int_equal(a.n, 0);
    assert_false(gpu_slots_fit(g, Q(0.5)));
    gpu_slots_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_instances),
        cmocka_unit_test(test_shares_pack_and_fragment),
        cmocka_unit_test(test_whole_and_fraction),
        cmocka_unit_test(test_mps_percentage),
        cmocka_unit_test(test_mps_detection),
        cmocka_unit_test(test_no_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
