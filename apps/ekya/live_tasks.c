/* live_tasks.c: the code of a live Ekya run that runs on the cluster's nodes, built as
 * libekya_live.so and shipped to every node in the driver's job package (docs/ekya.md,
 * "Live runs"). Three kinds of work, all ordinary escher tasks and actors:
 *
 *  - ekya_live_profile: a task, the micro-profiler on one stream's window (ekya/profiler.h);
 *  - the training actor of a stream (ekya_train_begin, ekya_train_epoch): one retraining
 *    at a time, one epoch per call, so that the driver can stop it at the window end or
 *    switch its configuration between epochs; it holds the stream's training share;
 *  - the inference actor of a stream (ekya_infer_serve, ekya_infer_update): classifies the
 *    stream's frames as they arrive, at the subsampling it was told, with the deployed
 *    model, and measures the accuracy of the answers it served; it holds the stream's
 *    inference share. Created with max_concurrency 2: an update (new model, new
 *    subsampling) runs while the window's serve call does.
 *
 * Shares are enforced by escher (the CPU quota of the worker follows the ephemeral
 * resource it holds), never here: the serve loop sleeps only while no frame is due.
 * The frames come from the driver as an object, so no worker spends its quota making
 * them (a camera does not charge the model for its pictures).
 */
#include <escher/task.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ekya/live_wire.h"
#include "ekya/profiler.h"
#include "ekya/retrain.h"
#include "ekya/workload.h"

static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int reply(esc_buf *ret, ekya_wbuf *b)
{
    int rc = b->bad || esc_buf_set(ret, b->data, b->len) != 0 ? 1 : 0;
    ekya_wbuf_free(b);
    return rc;
}

/* Argument i read as a message (NULL/0 when absent). */
static ekya_rbuf arg_reader(const esc_task_ctx *ctx, size_t i)
{
    size_t len = 0;
    const void *p = esc_task_arg_at(ctx, i, &len);
    return ekya_rbuf_of(p, len);
}

/* ------------------------------------------------------------- micro-profiling */

/* args: request, window, models...; returns start accuracy, cost, and per configuration
 * whether it was pruned and the predicted accuracy and full-device seconds at each epoch
 * choice. */
ESC_TASK(ekya_live_profile)
{
    (void)arg;
    (void)len;
    ekya_rbuf r = arg_reader(ctx, 0), rw = arg_reader(ctx, 1);
    ekya_r_tag(&r, "EKP1");
    int n_cfg = ekya_r_i32(&r), n_models = ekya_r_i32(&r), deployed = ekya_r_i32(&r);
    if (r.bad || n_cfg < 1 || n_cfg > 64 || n_models < 1 || n_models > EKYA_MAX_WIDTHS ||
        deployed < 0 || deployed >= n_models || esc_task_num_args(ctx) != 2 + (size_t)n_models)
        return 2;
    ekya_retrain_config set[64];
    for (int i = 0; i < n_cfg; i++)
        ekya_wire_get_config(&r, &set[i]);
    ekya_profiler_opts o;
    ekya_profiler_opts_default(&o, (uint64_t)ekya_r_i64(&r));
    o.epochs = ekya_r_i32(&r);
    o.data_frac = ekya_r_f64(&r);
    if (r.bad)
        return 2;
    ekya_window w;
    ekya_mlp m[EKYA_MAX_WIDTHS];
    const ekya_mlp *mp[EKYA_MAX_WIDTHS];
    memset(m, 0, sizeof m);
    int rc = ekya_wire_get_window(&rw, &w, NULL) == 0 ? 0 : 3;
    for (int i = 0; rc == 0 && i < n_models; i++) {
        ekya_rbuf rm = arg_reader(ctx, 2 + (size_t)i);
        rc = ekya_wire_get_model(&rm, &m[i]) == 0 ? 0 : 3;
        mp[i] = &m[i];
    }
    ekya_profile prof;
    char err[256];
    if (rc == 0 && ekya_profile_window(mp, n_models, &w, set, n_cfg, &o, &prof, err,
                                       sizeof err) != 0) {
        fprintf(stderr, "ekya_profile: %s\n", err);
        rc = 4;
    }
    if (rc == 0) {
        ekya_wbuf b = {0};
        ekya_w_bytes(&b, "EKR1", 4);
        ekya_w_f64(&b, ekya_mlp_accuracy(&m[deployed], w.test_x, w.test_y, w.n_test));
        ekya_w_f64(&b, prof.profile_seconds);
        for (int i = 0; i < n_cfg; i++) {
            ekya_w_i32(&b, prof.items[i].pruned);
            for (int k = 0; k < EKYA_N_EPOCH_CHOICES; k++) {
                ekya_w_f64(&b, ekya_profile_predict_acc(&prof, i, ekya_epoch_choices[k], &o));
                ekya_w_f64(&b, ekya_profile_predict_seconds(&prof, i, ekya_epoch_choices[k]));
            }
        }
        rc = reply(ret, &b);
        ekya_profile_free(&prof);
    }
    for (int i = 0; i < n_models; i++)
        ekya_mlp_free(&m[i]);
    ekya_window_free(&w);
    return rc;
}

/* ---------------------------------------------------------------- training actor */

/* The retraining in progress; an actor runs its calls one at a time, so no lock. */
static struct {
    ekya_window w;
    ekya_mlp m;
    ekya_trainer *t;
    int epoch, epochs;
    double cpu_seconds; /* training cost so far (ekya_cost_seconds), evaluation excluded */
} tr;

static void train_reset(void)
{
    ekya_trainer_free(tr.t);
    ekya_mlp_free(&tr.m);
    ekya_window_free(&tr.w);
    memset(&tr, 0, sizeof tr);
}

/* args: {config, epochs, seed}, window, start model. Replaces any retraining. */
ESC_TASK(ekya_train_begin)
{
    (void)arg;
    (void)len;
    (void)ret;
    train_reset();
    ekya_rbuf r = arg_reader(ctx, 0), rw = arg_reader(ctx, 1), rm = arg_reader(ctx, 2);
    ekya_r_tag(&r, "EKT1");
    ekya_retrain_config c;
    ekya_wire_get_config(&r, &c);
    int epochs = ekya_r_i32(&r);
    uint64_t seed = (uint64_t)ekya_r_i64(&r);
    if (r.bad || epochs < 1 || ekya_wire_get_window(&rw, &tr.w, NULL) != 0 ||
        ekya_wire_get_model(&rm, &tr.m) != 0 || tr.m.hidden != c.hidden) {
        train_reset();
        return 2;
    }
    /* the same training as ekya_retrain (retrain.c), epoch by epoch */
    ekya_train_opts o;
    ekya_train_opts_default(&o);
    o.epochs = epochs;
    o.batch = c.batch;
    o.train_all = c.train_all;
    o.data_frac = c.data_frac;
    o.seed = seed;
    o.lr = EKYA_RETRAIN_LR;
    char err[256];
    double t0 = ekya_cost_seconds();
    tr.t = ekya_trainer_new(&tr.m, tr.w.train_x, tr.w.train_y, tr.w.n_train, &o, err, sizeof err);
    if (!tr.t) {
        fprintf(stderr, "ekya_train_begin: %s\n", err);
        train_reset();
        return 3;
    }
    tr.cpu_seconds = ekya_cost_seconds() - t0;
    tr.epochs = epochs;
    return 0;
}

/* One epoch of the retraining begun last. Returns {epoch, epochs, cost so far, done} and,
 * after the last epoch, the test accuracy and the retrained model. */
ESC_TASK(ekya_train_epoch)
{
    (void)ctx;
    (void)arg;
    (void)len;
    if (!tr.t || tr.epoch >= tr.epochs)
        return 2;
    double t0 = ekya_cost_seconds();
    if (ekya_trainer_epoch(tr.t, NULL) != 0)
        return 3;
    tr.cpu_seconds += ekya_cost_seconds() - t0;
    tr.epoch++;
    int done = tr.epoch == tr.epochs;
    ekya_wbuf b = {0};
    ekya_w_bytes(&b, "EKE1", 4);
    ekya_w_i32(&b, tr.epoch);
    ekya_w_i32(&b, tr.epochs);
    ekya_w_f64(&b, tr.cpu_seconds);
    ekya_w_i32(&b, done);
    if (done) {
        ekya_w_f64(&b, ekya_mlp_accuracy(&tr.m, tr.w.test_x, tr.w.test_y, tr.w.n_test));
        ekya_wire_put_model(&b, &tr.m);
    }
    int rc = reply(ret, &b);
    if (done)
        train_reset();
    return rc;
}

/* --------------------------------------------------------------- inference actor */

/* The model and subsampling in use, shared by the serve call and the update calls that
 * run beside it (two threads of one actor). `changed` wakes a serve loop that sleeps;
 * `pending` counts updates waiting for the lock, which a serve loop that never sleeps
 * (it is behind) lets in after its current frame. */
static atomic_int pending;
static struct {
    pthread_mutex_t mu;
    pthread_cond_t changed;
    int cond_ready;
    ekya_mlp model;
    int have_model;
    int subsampling; /* one frame in this many; 0: none (the share cannot keep up) */
    float *xin, *logits, *hidden; /* one frame's buffers for the model in use */
} inf = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, {0}, 0, 0, NULL, NULL, NULL};

/* The condition variable waits on CLOCK_MONOTONIC (set once, before any wait). */
static void inf_cond_init(void)
{
    if (inf.cond_ready)
        return;
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_destroy(&inf.changed);
    pthread_cond_init(&inf.changed, &a);
    pthread_condattr_destroy(&a);
    inf.cond_ready = 1;
}

/* Installs m (taken over) as the model in use; called with inf.mu held. */
static int inf_set_model(ekya_mlp *m)
{
    float *xin = malloc(sizeof(float) * (size_t)m->in);
    float *logits = malloc(sizeof(float) * EKYA_CLASSES);
    float *hidden = malloc(sizeof(float) * (size_t)m->hidden);
    if (!xin || !logits || !hidden) {
        free(xin);
        free(logits);
        free(hidden);
        ekya_mlp_free(m);
        return -1;
    }
    ekya_mlp_free(&inf.model);
    free(inf.xin);
    free(inf.logits);
    free(inf.hidden);
    inf.model = *m;
    memset(m, 0, sizeof *m);
    inf.xin = xin;
    inf.logits = logits;
    inf.hidden = hidden;
    inf.have_model = 1;
    return 0;
}

/* The class of one 28x28 frame under the model in use (inf.mu held). */
static int classify(const float *frame)
{
    ekya_downscale(frame, 1, inf.model.res, inf.xin);
    ekya_mlp_forward(&inf.model, inf.xin, 1, inf.logits, inf.hidden);
    int best = 0;
    for (int c = 1; c < EKYA_CLASSES; c++)
        best = inf.logits[c] > inf.logits[best] ? c : best;
    return best;
}

/* args: {subsampling (-1: keep)}, then optionally a model. */
ESC_TASK(ekya_infer_update)
{
    (void)arg;
    (void)len;
    (void)ret;
    ekya_rbuf r = arg_reader(ctx, 0);
    ekya_r_tag(&r, "EKU1");
    int sub = ekya_r_i32(&r);
    if (r.bad || sub < -1)
        return 2;
    ekya_mlp m = {0};
    if (esc_task_num_args(ctx) > 1) {
        ekya_rbuf rm = arg_reader(ctx, 1);
        if (ekya_wire_get_model(&rm, &m) != 0)
            return 2;
    }
    atomic_fetch_add(&pending, 1);
    pthread_mutex_lock(&inf.mu);
    atomic_fetch_sub(&pending, 1);
    inf_cond_init();
    int rc = m.w1 && inf_set_model(&m) != 0 ? 3 : 0;
    if (sub >= 0)
        inf.subsampling = sub;
    pthread_cond_broadcast(&inf.changed);
    pthread_mutex_unlock(&inf.mu);
    return rc;
}

/* One processed frame: its index, when its answer was ready, and the answer. */
typedef struct {
    int64_t frame;
    double done;
    uint8_t answer;
} answer;

/* Frames served correctly: frame f shows the answer of the latest processed frame p <= f
 * whose answer was ready by f's arrival plus the latency bound (none: wrong). */
static int64_t score(const answer *a, int64_t na, const ekya_window *w, const int *pos,
                     int64_t frames, double fps, double latency)
{
    int64_t correct = 0, j = -1;
    for (int64_t f = 0; f < frames; f++) {
        double due = (double)f / fps + latency;
        while (j + 1 < na && a[j + 1].frame <= f && a[j + 1].done <= due)
            j++;
        correct += j >= 0 && a[j].answer == w->y[pos[f % w->n_test]];
    }
    return correct;
}

/* Sleeps until `until` (seconds on the monotonic clock) or an update; inf.mu held. */
static void wait_until(double until)
{
    struct timespec ts;
    ts.tv_sec = (time_t)until;
    ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&inf.changed, &inf.mu, &ts);
}

/* args: {length s, frames per second, latency bound s}, window. Plays the window's test
 * frames in stream order (cycling through them; the frames no retraining of the window
 * sees) for `length` seconds as they arrive, classifying one in
 * `subsampling` (the newest due one when it fell behind by more than the latency bound),
 * and returns {frames, correct, processed, cpu seconds}. */
ESC_TASK(ekya_infer_serve)
{
    (void)arg;
    (void)len;
    ekya_rbuf r = arg_reader(ctx, 0), rw = arg_reader(ctx, 1);
    ekya_r_tag(&r, "EKS1");
    double length = ekya_r_f64(&r), fps = ekya_r_f64(&r), latency = ekya_r_f64(&r);
    ekya_window w;
    int *pos;
    if (r.bad || !(length > 0 && fps > 0 && length * fps < 1e9 && latency >= 0)) {
        fprintf(stderr, "ekya_infer_serve: bad request\n");
        return 2;
    }
    if (ekya_wire_get_window(&rw, &w, &pos) != 0 || w.n_test < 1) {
        fprintf(stderr, "ekya_infer_serve: unreadable frames (%zu bytes)\n", rw.left);
        return 2;
    }
    int64_t frames = (int64_t)(length * fps);
    answer *a = malloc(sizeof *a * (size_t)(frames > 0 ? frames : 1));
    if (!a) {
        free(pos);
        ekya_window_free(&w);
        return 3;
    }
    int64_t na = 0, next = 0;
    double cpu0 = ekya_thread_seconds(), t0 = mono_seconds();
    pthread_mutex_lock(&inf.mu);
    inf_cond_init();
    for (;;) {
        double now = mono_seconds() - t0;
        if (now >= length)
            break;
        int64_t due = (int64_t)(now * fps);
        if (due >= frames)
            due = frames - 1;
        int s = inf.subsampling;
        int64_t p = s > 0 ? (next + s - 1) / s * s : -1;
        if (s > 0 && inf.have_model && p <= due) {
            if ((double)(due - p) / fps > latency)
                p = due - due % s; /* behind: skip to the newest due frame */
            a[na].frame = p;
            a[na].answer = (uint8_t)classify(w.x + (size_t)pos[p % w.n_test] * EKYA_PIXELS);
            a[na].done = mono_seconds() - t0;
            na++;
            next = p + 1;
            while (atomic_load(&pending) > 0)
                pthread_cond_wait(&inf.changed, &inf.mu);
            continue;
        }
        /* Sleep until the next frame to classify is due, but at least half the latency
         * bound: the frames due meanwhile are classified together on waking, still in
         * time, and the loop does not pay a wake-up (a few microseconds of its quota) per
         * frame. */
        double wake = s > 0 && inf.have_model ? (double)p / fps : length;
        if (wake < now + latency / 2)
            wake = now + latency / 2;
        wait_until(t0 + (wake < length ? wake : length));
    }
    pthread_mutex_unlock(&inf.mu);
    double cpu = ekya_thread_seconds() - cpu0;
    int64_t correct = score(a, na, &w, pos, frames, fps, latency);
    /* the measurement in the actor's own log, where it can be checked against the summary */
    printf("ekya_infer_serve: stream %d window %d frames %lld correct %lld processed %lld\n",
           w.stream, w.window, (long long)frames, (long long)correct, (long long)na);
    fflush(stdout);
    ekya_wbuf b = {0};
    ekya_w_bytes(&b, "EKV1", 4);
    ekya_w_i64(&b, frames);
    ekya_w_i64(&b, correct);
    ekya_w_i64(&b, na);
    ekya_w_f64(&b, cpu);
    ekya_w_f64(&b, na > 0 ? a[0].done : -1);
    free(a);
    free(pos);
    ekya_window_free(&w);
    return reply(ret, &b);
}
