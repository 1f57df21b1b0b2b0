/* ekya/live_wire.h: the bytes the live driver (ekya/live.h) and its tasks and actors
 * (live_tasks.c) exchange as escher arguments and objects: models, a window's frames,
 * and the small requests and replies.
 *
 * Each message starts with a four-byte tag and is read back field by field with length
 * checks, so a truncated or foreign buffer is refused rather than misread. Numbers are
 * in the host's byte order: a cluster's hosts share one architecture (the driver, the
 * raylets and the workers run the same build). Units: seconds, accuracies 0..1, pixel
 * values 0..1, shares in devices.
 */
#ifndef EKYA_LIVE_WIRE_H
#define EKYA_LIVE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "ekya/config.h"
#include "ekya/mlp.h"
#include "ekya/stream.h"

/* A growing output buffer; `bad` is set when memory ran out (then every later write is
 * a no-op and the buffer must be dropped). */
typedef struct {
    unsigned char *data;
    size_t len, cap;
    int bad;
} ekya_wbuf;

/* A reader over a received buffer; `bad` is set at the first short or invalid read. */
typedef struct {
    const unsigned char *p;
    size_t left;
    int bad;
} ekya_rbuf;

void ekya_wbuf_free(ekya_wbuf *b);
void ekya_w_bytes(ekya_wbuf *b, const void *v, size_t n);
void ekya_w_i32(ekya_wbuf *b, int32_t v);
void ekya_w_i64(ekya_wbuf *b, int64_t v);
void ekya_w_f64(ekya_wbuf *b, double v);

ekya_rbuf ekya_rbuf_of(const void *data, size_t len);
void ekya_r_bytes(ekya_rbuf *r, void *v, size_t n);
int32_t ekya_r_i32(ekya_rbuf *r);
int64_t ekya_r_i64(ekya_rbuf *r);
double ekya_r_f64(ekya_rbuf *r);
/* Reads the four-byte tag and marks r bad unless it is `tag`. */
void ekya_r_tag(ekya_rbuf *r, const char tag[4]);

/* A model: "EKM1", res, hidden, then the weights. */
void ekya_wire_put_model(ekya_wbuf *b, const ekya_mlp *m);
/* Reads a model into *m (allocated; ekya_mlp_free). Returns 0, or -1 (r marked bad). */
int ekya_wire_get_model(ekya_rbuf *r, ekya_mlp *m);

/* A window's retraining and test splits (what the profiler and a retraining read):
 * "EKW1", stream, window, n_train, n_test, then the train and the test frames with their
 * labels. The stream-order frames are not sent (x and y are NULL after reading; n is
 * n_train + n_test). */
void ekya_wire_put_window(ekya_wbuf *b, const ekya_window *w);
/* Reads a window into *w (allocated; ekya_window_free). Returns 0, or -1. */
int ekya_wire_get_window(ekya_rbuf *r, ekya_window *w);

/* Frames to serve, in the order they are shown: "EKF1", n, then n frames and labels. */
void ekya_wire_put_frames(ekya_wbuf *b, const float *x, const uint8_t *y, int n);
/* Reads them (*x, *y malloc'd for the caller). Returns 0, or -1. */
int ekya_wire_get_frames(ekya_rbuf *r, float **x, uint8_t **y, int *n);

/* A retraining configuration: hidden, train_all, batch, data_frac. */
void ekya_wire_put_config(ekya_wbuf *b, const ekya_retrain_config *c);
void ekya_wire_get_config(ekya_rbuf *r, ekya_retrain_config *c);

#endif
