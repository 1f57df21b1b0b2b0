/* live_wire.c: messages between the live driver and its tasks (ekya/live_wire.h). */
#include "ekya/live_wire.h"

#include <stdlib.h>
#include <string.h>

/* Frames and models far larger than any window or model this code makes are refused
 * before allocating, so a corrupt length cannot ask for gigabytes. */
#define WIRE_MAX_FRAMES 1000000
#define WIRE_MAX_HIDDEN 4096

void ekya_wbuf_free(ekya_wbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void ekya_w_bytes(ekya_wbuf *b, const void *v, size_t n)
{
    if (b->bad || n == 0)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *d = realloc(b->data, cap);
        if (!d) {
            b->bad = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, v, n);
    b->len += n;
}

void ekya_w_i32(ekya_wbuf *b, int32_t v) { ekya_w_bytes(b, &v, sizeof v); }
void ekya_w_i64(ekya_wbuf *b, int64_t v) { ekya_w_bytes(b, &v, sizeof v); }
void ekya_w_f64(ekya_wbuf *b, double v) { ekya_w_bytes(b, &v, sizeof v); }

ekya_rbuf ekya_rbuf_of(const void *data, size_t len)
{
    ekya_rbuf r = {data, data ? len : 0, data == NULL};
    return r;
}

void ekya_r_bytes(ekya_rbuf *r, void *v, size_t n)
{
    if (r->bad || r->left < n) {
        r->bad = 1;
        memset(v, 0, n);
        return;
    }
    memcpy(v, r->p, n);
    r->p += n;
    r->left -= n;
}

int32_t ekya_r_i32(ekya_rbuf *r)
{
    int32_t v;
    ekya_r_bytes(r, &v, sizeof v);
    return v;
}

int64_t ekya_r_i64(ekya_rbuf *r)
{
    int64_t v;
    ekya_r_bytes(r, &v, sizeof v);
    return v;
}

double ekya_r_f64(ekya_rbuf *r)
{
    double v;
    ekya_r_bytes(r, &v, sizeof v);
    return v;
}

void ekya_r_tag(ekya_rbuf *r, const char tag[4])
{
    char got[4];
    ekya_r_bytes(r, got, 4);
    if (memcmp(got, tag, 4) != 0)
        r->bad = 1;
}

void ekya_wire_put_model(ekya_wbuf *b, const ekya_mlp *m)
{
    ekya_w_bytes(b, "EKM1", 4);
    ekya_w_i32(b, m->res);
    ekya_w_i32(b, m->hidden);
    ekya_w_bytes(b, m->w1, sizeof(float) * (size_t)m->in * (size_t)m->hidden);
    ekya_w_bytes(b, m->b1, sizeof(float) * (size_t)m->hidden);
    ekya_w_bytes(b, m->w2, sizeof(float) * (size_t)m->hidden * EKYA_CLASSES);
    ekya_w_bytes(b, m->b2, sizeof(float) * EKYA_CLASSES);
}

int ekya_wire_get_model(ekya_rbuf *r, ekya_mlp *m)
{
    memset(m, 0, sizeof *m);
    ekya_r_tag(r, "EKM1");
    int res = ekya_r_i32(r), hidden = ekya_r_i32(r);
    if (r->bad || (res != 28 && res != 14 && res != 7) || hidden < 1 || hidden > WIRE_MAX_HIDDEN ||
        ekya_mlp_init(m, res, hidden, 1, NULL, 0) != 0) {
        r->bad = 1;
        return -1;
    }
    ekya_r_bytes(r, m->w1, sizeof(float) * (size_t)m->in * (size_t)m->hidden);
    ekya_r_bytes(r, m->b1, sizeof(float) * (size_t)m->hidden);
    ekya_r_bytes(r, m->w2, sizeof(float) * (size_t)m->hidden * EKYA_CLASSES);
    ekya_r_bytes(r, m->b2, sizeof(float) * EKYA_CLASSES);
    if (r->bad) {
        ekya_mlp_free(m);
        return -1;
    }
    return 0;
}

void ekya_wire_put_window(ekya_wbuf *b, const ekya_window *w)
{
    ekya_w_bytes(b, "EKW1", 4);
    ekya_w_i32(b, w->stream);
    ekya_w_i32(b, w->window);
    ekya_w_i32(b, w->n_train);
    ekya_w_i32(b, w->n_test);
    ekya_w_bytes(b, w->train_x, sizeof(float) * EKYA_PIXELS * (size_t)w->n_train);
    ekya_w_bytes(b, w->train_y, (size_t)w->n_train);
    ekya_w_bytes(b, w->test_x, sizeof(float) * EKYA_PIXELS * (size_t)w->n_test);
    ekya_w_bytes(b, w->test_y, (size_t)w->n_test);
}

/* Allocates and reads `count` frames and their labels. */
static void get_frames(ekya_rbuf *r, int count, float **x, uint8_t **y)
{
    *x = malloc(sizeof(float) * EKYA_PIXELS * (size_t)(count > 0 ? count : 1));
    *y = malloc((size_t)(count > 0 ? count : 1));
    if (!*x || !*y) {
        r->bad = 1;
        return;
    }
    ekya_r_bytes(r, *x, sizeof(float) * EKYA_PIXELS * (size_t)count);
    ekya_r_bytes(r, *y, (size_t)count);
}

int ekya_wire_get_window(ekya_rbuf *r, ekya_window *w)
{
    memset(w, 0, sizeof *w);
    ekya_r_tag(r, "EKW1");
    w->stream = ekya_r_i32(r);
    w->window = ekya_r_i32(r);
    w->n_train = ekya_r_i32(r);
    w->n_test = ekya_r_i32(r);
    if (r->bad || w->n_train < 0 || w->n_test < 0 || w->n_train > WIRE_MAX_FRAMES ||
        w->n_test > WIRE_MAX_FRAMES) {
        r->bad = 1;
        return -1;
    }
    w->n = w->n_train + w->n_test;
    get_frames(r, w->n_train, &w->train_x, &w->train_y);
    get_frames(r, w->n_test, &w->test_x, &w->test_y);
    if (r->bad) {
        ekya_window_free(w);
        return -1;
    }
    return 0;
}

void ekya_wire_put_frames(ekya_wbuf *b, const float *x, const uint8_t *y, int n)
{
    ekya_w_bytes(b, "EKF1", 4);
    ekya_w_i32(b, n);
    ekya_w_bytes(b, x, sizeof(float) * EKYA_PIXELS * (size_t)n);
    ekya_w_bytes(b, y, (size_t)n);
}

int ekya_wire_get_frames(ekya_rbuf *r, float **x, uint8_t **y, int *n)
{
    *x = NULL;
    *y = NULL;
    ekya_r_tag(r, "EKF1");
    *n = ekya_r_i32(r);
    if (r->bad || *n < 1 || *n > WIRE_MAX_FRAMES) {
        r->bad = 1;
        return -1;
    }
    get_frames(r, *n, x, y);
    if (r->bad) {
        free(*x);
        free(*y);
        *x = NULL;
        *y = NULL;
        return -1;
    }
    return 0;
}

void ekya_wire_put_config(ekya_wbuf *b, const ekya_retrain_config *c)
{
    ekya_w_i32(b, c->hidden);
    ekya_w_i32(b, c->train_all);
    ekya_w_i32(b, c->batch);
    ekya_w_f64(b, c->data_frac);
}

void ekya_wire_get_config(ekya_rbuf *r, ekya_retrain_config *c)
{
    memset(c, 0, sizeof *c);
    c->hidden = ekya_r_i32(r);
    c->train_all = ekya_r_i32(r);
    c->batch = ekya_r_i32(r);
    c->data_frac = ekya_r_f64(r);
    if (c->hidden < 1 || c->hidden > WIRE_MAX_HIDDEN || c->batch < 1 ||
        !(c->data_frac > 0 && c->data_frac <= 1))
        r->bad = 1;
}
