/* test_idx: the real Fashion-MNIST files parse with the published sizes, and malformed
 * files (bad magic, truncated header or data, wrong dimensions) give one-line errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ekya/idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    (void)state;
    strcpy(tmpdir, "/tmp/ekya_idx_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes a gzip file with a header (magic, dims) and `payload` data bytes. */
static void write_idx(const char *name, uint32_t magic, const uint32_t *dims, int nd,
                      size_t payload, char *path, size_t plen)
{
    snprintf(path, plen, "%s/%s", tmpdir, name);
    gzFile f = gzopen(path, "wb");
    assert_non_null(f);
    uint32_t words[4] = {magic, 0, 0, 0};
    for (int i = 0; i < nd; i++)
        words[1 + i] = dims[i];
    for (int i = 0; i <= nd; i++) {
        uint8_t b[4] = {(uint8_t)(words[i] >> 24), (uint8_t)(words[i] >> 16),
                        (uint8_t)(words[i] >> 8), (uint8_t)words[i]};
        gzwrite(f, b, 4);
    }
    for (size_t i = 0; i < payload; i++) {
        uint8_t v = (uint8_t)(i % 10);
        gzwrite(f, &v, 1);
    }
    gzclose(f);
}

static void real_files(void **state)
{
    (void)state;
    char err[256] = "";
    ekya_dataset tr, te;
    assert_int_equal(ekya_dataset_load(NULL, "train", &tr, err, sizeof err), 0);
    assert_int_equal(tr.images.count, 60000);
    assert_int_equal(tr.labels.count, 60000);
    assert_int_equal(tr.images.rows, 28);
    assert_int_equal(tr.images.cols, 28);
    assert_int_equal(ekya_dataset_load(NULL, "t10k", &te, err, sizeof err), 0);
    assert_int_equal(te.images.count, 10000);
    int hist[10] = {0};
    for (uint32_t i = 0; i < te.labels.count; i++)
        hist[te.labels.labels[i]]++;
    for (int c = 0; c < 10; c++)
        assert_int_equal(hist[c], 1000); /* t10k is balanced */
    ekya_dataset_free(&tr);
    ekya_dataset_free(&te);
    ekya_dataset_free(&te); /* second free is harmless */
}

static void bad_magic(void **state)
{
    (void)state;
    char path[256], err[256] = "";
    uint32_t d[3] = {2, 28, 28};
    write_idx("m.gz", 0x00000804u, d, 3, 2 * 784, path, sizeof path);
    ekya_images im;
    assert_int_equal(ekya_idx_read_images(path, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad magic"));
    assert_null(strchr(err, '\n'));
    assert_null(im.pixels);
    /* an image file is not a label file */
    write_idx("i.gz", EKYA_IDX_MAGIC_IMAGES, d, 3, 2 * 784, path, sizeof path);
    ekya_labels lb;
    assert_int_equal(ekya_idx_read_labels(path, &lb, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad magic"));
}

static void truncated(void **state)
{
    (void)state;
    char path[256], err[256] = "";
    uint32_t d[3] = {3, 28, 28};
    write_idx("t.gz", EKYA_IDX_MAGIC_IMAGES, d, 3, 2 * 784 + 5, path, sizeof path);
    ekya_images im;
    assert_int_equal(ekya_idx_read_images(path, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated data"));
    uint32_t n[1] = {100};
    write_idx("l.gz", EKYA_IDX_MAGIC_LABELS, n, 1, 99, path, sizeof path);
    ekya_labels lb;
    assert_int_equal(ekya_idx_read_labels(path, &lb, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated data"));
    /* header cut inside the dimensions */
    write_idx("h.gz", EKYA_IDX_MAGIC_IMAGES, d, 1, 0, path, sizeof path);
    assert_int_equal(ekya_idx_read_images(path, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated header"));
    assert_int_equal(ekya_idx_read_images("/nonexistent/x.gz", &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
}

static void wrong_dims(void **state)
{
    (void)state;
    char path[256], err[256] = "";
    uint32_t zero[3] = {0, 28, 28};
    write_idx("z.gz", EKYA_IDX_MAGIC_IMAGES, zero, 3, 0, path, sizeof path);
    ekya_images im;
    assert_int_equal(ekya_idx_read_images(path, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad dimensions"));
    uint32_t huge[3] = {5, 100000, 28};
    write_idx("g.gz", EKYA_IDX_MAGIC_IMAGES, huge, 3, 0, path, sizeof path);
    assert_int_equal(ekya_idx_read_images(path, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad dimensions"));

    /* well-formed files, but 27x28 images: the data set loader refuses them */
    uint32_t odd[3] = {4, 27, 28}, n[1] = {4};
    write_idx("train-images-idx3-ubyte.gz", EKYA_IDX_MAGIC_IMAGES, odd, 3, 4 * 27 * 28, path, sizeof path);
    write_idx("train-labels-idx1-ubyte.gz", EKYA_IDX_MAGIC_LABELS, n, 1, 4, path, sizeof path);
    ekya_dataset ds;
    assert_int_equal(ekya_dataset_load(tmpdir, "train", &ds, err, sizeof err), -1);
    assert_non_null(strstr(err, "expected 28x28"));
    /* counts that disagree, found through $EKYA_DATA_DIR */
    uint32_t ok[3] = {4, 28, 28}, five[1] = {5};
    write_idx("train-images-idx3-ubyte.gz", EKYA_IDX_MAGIC_IMAGES, ok, 3, 4 * 784, path, sizeof path);
    write_idx("train-labels-idx1-ubyte.gz", EKYA_IDX_MAGIC_LABELS, five, 1, 5, path, sizeof path);
    setenv("EKYA_DATA_DIR", tmpdir, 1);
    assert_string_equal(ekya_data_dir(), tmpdir);
    assert_int_equal(ekya_dataset_load(NULL, "train", &ds, err, sizeof err), -1);
    assert_non_null(strstr(err, "4 images but 5 labels"));
    unsetenv("EKYA_DATA_DIR");
    assert_int_equal(ekya_dataset_load(NULL, "valid", &ds, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown split"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(real_files),
        cmocka_unit_test(bad_magic),
        cmocka_unit_test(truncated),
        cmocka_unit_test(wrong_dims),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
