/* idx.c: the IDX reader. zlib's gzread reads gzip and plain files alike, so tests can
 * write malformed files uncompressed or compressed. */
#include "ekya/idx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Reads exactly n bytes; returns 0, or -1 on a short read (truncated file). */
static int read_exact(gzFile f, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static uint32_t be32(const uint8_t b[4])
{
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

/* Opens path and reads the magic plus ndims sizes; checks the magic. */
static gzFile open_header(const char *path, uint32_t magic, uint32_t *dims, int ndims,
                          char *err, size_t errlen)
{
    if (!path) {
        fail(err, errlen, "idx: no path given");
        return NULL;
    }
    gzFile f = gzopen(path, "rb");
    if (!f) {
        fail(err, errlen, "idx: cannot open %s", path);
        return NULL;
    }
    uint8_t hdr[16];
    size_t need = 4 + 4 * (size_t)ndims;
    if (read_exact(f, hdr, need) != 0) {
        fail(err, errlen, "idx: %s: truncated header", path);
        gzclose(f);
        return NULL;
    }
    uint32_t got = be32(hdr);
    if (got != magic) {
        fail(err, errlen, "idx: %s: bad magic 0x%08x (expected 0x%08x)", path, got, magic);
        gzclose(f);
        return NULL;
    }
    for (int i = 0; i < ndims; i++)
        dims[i] = be32(hdr + 4 + 4 * i);
    return f;
}

int ekya_idx_read_images(const char *path, ekya_images *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint32_t d[3];
    gzFile f = open_header(path, EKYA_IDX_MAGIC_IMAGES, d, 3, err, errlen);
    if (!f)
        return -1;
    if (d[0] == 0 || d[0] > EKYA_IDX_MAX_ITEMS || d[1] == 0 || d[1] > EKYA_IDX_MAX_SIDE ||
        d[2] == 0 || d[2] > EKYA_IDX_MAX_SIDE) {
        gzclose(f);
        return fail(err, errlen, "idx: %s: bad dimensions %ux%ux%u", path, d[0], d[1], d[2]);
    }
    size_t n = (size_t)d[0] * d[1] * d[2];
    uint8_t *px = malloc(n);
    if (!px) {
        gzclose(f);
        return fail(err, errlen, "idx: %s: out of memory for %zu bytes", path, n);
    }
    if (read_exact(f, px, n) != 0) {
        free(px);
        gzclose(f);
        return fail(err, errlen, "idx: %s: truncated data (expected %u images of %ux%u)",
                    path, d[0], d[1], d[2]);
    }
    gzclose(f);
    out->count = d[0];
    out->rows = d[1];
    out->cols = d[2];
    out->pixels = px;
    return 0;
}

int ekya_idx_read_labels(const char *path, ekya_labels *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint32_t d[1];
    gzFile f = open_header(path, EKYA_IDX_MAGIC_LABELS, d, 1, err, errlen);
    if (!f)
        return -1;
    if (d[0] == 0 || d[0] > EKYA_IDX_MAX_ITEMS) {
        gzclose(f);
        return fail(err, errlen, "idx: %s: bad label count %u", path, d[0]);
    }
    uint8_t *lb = malloc(d[0]);
    if (!lb) {
        gzclose(f);
        return fail(err, errlen, "idx: %s: out of memory", path);
    }
    if (read_exact(f, lb, d[0]) != 0) {
        free(lb);
        gzclose(f);
        return fail(err, errlen, "idx: %s: truncated data (expected %u labels)", path, d[0]);
    }
    gzclose(f);
    out->count = d[0];
    out->labels = lb;
    return 0;
}

void ekya_images_free(ekya_images *im)
{
    if (!im)
        return;
    free(im->pixels);
    memset(im, 0, sizeof *im);
}

void ekya_labels_free(ekya_labels *lb)
{
    if (!lb)
        return;
    free(lb->labels);
    memset(lb, 0, sizeof *lb);
}

const char *ekya_data_dir(void)
{
    const char *env = getenv("EKYA_DATA_DIR");
    return env && env[0] ? env : "/usr/share/datasets/fashion-mnist";
}

/* The semantic checks a data set needs beyond a well-formed file. */
static int check_dataset(const ekya_dataset *d, char *err, size_t errlen)
{
    if (d->images.rows != EKYA_SIDE || d->images.cols != EKYA_SIDE)
        return fail(err, errlen, "idx: images are %ux%u, expected %dx%d", d->images.rows,
                    d->images.cols, EKYA_SIDE, EKYA_SIDE);
    if (d->images.count != d->labels.count)
        return fail(err, errlen, "idx: %u images but %u labels", d->images.count,
                    d->labels.count);
    for (uint32_t i = 0; i < d->labels.count; i++)
        if (d->labels.labels[i] >= EKYA_NUM_CLASSES)
            return fail(err, errlen, "idx: label %u of item %u is not below %d",
                        d->labels.labels[i], i, EKYA_NUM_CLASSES);
    return 0;
}

int ekya_dataset_load(const char *dir, const char *split, ekya_dataset *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!split || (strcmp(split, "train") != 0 && strcmp(split, "t10k") != 0))
        return fail(err, errlen, "idx: unknown split '%s' (train or t10k)",
                    split ? split : "(null)");
    if (!dir)
        dir = ekya_data_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, split);
    if (ekya_idx_read_images(path, &out->images, err, errlen) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, split);
    if (ekya_idx_read_labels(path, &out->labels, err, errlen) != 0 ||
        check_dataset(out, err, errlen) != 0) {
        ekya_dataset_free(out);
        return -1;
    }
    return 0;
}

void ekya_dataset_free(ekya_dataset *d)
{
    if (!d)
        return;
    ekya_images_free(&d->images);
    ekya_labels_free(&d->labels);
}
