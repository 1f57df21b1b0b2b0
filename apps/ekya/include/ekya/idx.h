/* ekya/idx.h: gzip-compressed IDX files (the MNIST / Fashion-MNIST format) read with
 * zlib. An IDX file is a big-endian header (magic 0x0000080N: unsigned bytes, N
 * dimensions; then N uint32 sizes) followed by the bytes. Every error is one line
 * written to the caller's buffer; nothing here aborts. */
#ifndef EKYA_IDX_H
#define EKYA_IDX_H

#include <stddef.h>
#include <stdint.h>

#define EKYA_IDX_MAGIC_IMAGES 0x00000803u /* unsigned bytes, three dimensions */
#define EKYA_IDX_MAGIC_LABELS 0x00000801u /* unsigned bytes, one dimension */
#define EKYA_IDX_MAX_ITEMS 10000000u      /* refuse absurd counts before allocating */
#define EKYA_IDX_MAX_SIDE 1024u
#define EKYA_NUM_CLASSES 10
#define EKYA_SIDE 28
#define EKYA_PIXELS (EKYA_SIDE * EKYA_SIDE)

/* Images: count * rows * cols bytes, row-major, image after image. */
typedef struct {
    uint32_t count, rows, cols;
    uint8_t *pixels; /* owned; free with ekya_images_free */
} ekya_images;

typedef struct {
    uint32_t count;
    uint8_t *labels; /* owned; free with ekya_labels_free */
} ekya_labels;

/* One split of the data set: images (28x28) with their labels (0..9), equal counts. */
typedef struct {
    ekya_images images;
    ekya_labels labels;
} ekya_dataset;

/* Reads an idx3 image file (gzip or plain: zlib reads both). Returns 0 and fills *out
 * (caller frees with ekya_images_free), or -1 with a one-line message in err. */
int ekya_idx_read_images(const char *path, ekya_images *out, char *err, size_t errlen);

/* Reads an idx1 label file. Returns 0 and fills *out (caller frees), or -1 and err. */
int ekya_idx_read_labels(const char *path, ekya_labels *out, char *err, size_t errlen);

/* Release what the readers allocated; safe on zeroed structs and twice. */
void ekya_images_free(ekya_images *im);
void ekya_labels_free(ekya_labels *lb);

/* The data directory: $EKYA_DATA_DIR if set and non-empty, else
 * /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist). Static string. */
const char *ekya_data_dir(void);

/* Loads split "train" or "t10k" from dir (NULL: ekya_data_dir()) as
 * <dir>/<split>-images-idx3-ubyte.gz and <dir>/<split>-labels-idx1-ubyte.gz, checking
 * 28x28 images, equal counts and labels below 10. Returns 0 (caller frees with
 * ekya_dataset_free) or -1 with a one-line message. */
int ekya_dataset_load(const char *dir, const char *split, ekya_dataset *out, char *err,
                      size_t errlen);

void ekya_dataset_free(ekya_dataset *d);

#endif
