/* stream.c: drifting streams of Fashion-MNIST frames (see ekya/stream.h). The state of
 * window w is obtained by replaying the walk from window 0 with one seed per step, so
 * any window can be drawn alone and always comes out the same. */
#include "ekya/stream.h"

#include "ekya/rng.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seed purposes: keep the random draws of different concerns independent. */
enum { P_BASE = 1, P_WALK = 2, P_FRAMES = 3, P_SPLIT = 4 };

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

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }
static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static double unif(ekya_rng *r, double lo, double hi) { return lo + (hi - lo) * ekya_rng_uniform(r); }

int ekya_pool_init(ekya_pool *p, const ekya_dataset *d, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->data = d;
    for (uint32_t i = 0; i < d->labels.count; i++)
        p->class_count[d->labels.labels[i]]++;
    for (int c = 0; c < EKYA_NUM_CLASSES; c++) {
        if (p->class_count[c] == 0) {
            ekya_pool_free(p);
            return fail(err, errlen, "stream: class %d has no image in the pool", c);
        }
        p->by_class[c] = malloc(sizeof(uint32_t) * p->class_count[c]);
        if (!p->by_class[c]) {
            ekya_pool_free(p);
            return fail(err, errlen, "stream: out of memory");
        }
        p->class_count[c] = 0;
    }
    for (uint32_t i = 0; i < d->labels.count; i++) {
        int c = d->labels.labels[i];
        p->by_class[c][p->class_count[c]++] = i;
    }
    return 0;
}

void ekya_pool_free(ekya_pool *p)
{
    if (!p)
        return;
    for (int c = 0; c < EKYA_NUM_CLASSES; c++)
        free(p->by_class[c]);
    memset(p, 0, sizeof *p);
}

void ekya_stream_opts_default(ekya_stream_opts *o, uint64_t seed)
{
    o->seed = seed;
    o->images_per_window = 1000;
    o->train_frac = 0.7;
    o->mix_concentration = 20.0;
    o->walk_sigma = 0.6;
    o->p_vanish = 0.15;
    o->p_return = 0.35;
    o->mean_run = 4.0;
    o->appearance_rate = 1.0;
}

static int check_opts(const ekya_stream_opts *o, char *err, size_t errlen)
{
    if (o->images_per_window < 20 || o->images_per_window > 1000000)
        return fail(err, errlen, "stream: images per window %d outside 20..1000000",
                    o->images_per_window);
    if (!(o->train_frac > 0.05 && o->train_frac < 0.95))
        return fail(err, errlen, "stream: train fraction %g outside (0.05, 0.95)", o->train_frac);
    if (!(o->mix_concentration > 0) || !(o->walk_sigma >= 0) || !(o->mean_run >= 1) ||
        !(o->p_vanish >= 0 && o->p_vanish <= 1) || !(o->p_return >= 0 && o->p_return <= 1) ||
        !(o->appearance_rate >= 0))
        return fail(err, errlen, "stream: drift parameters out of range");
    return 0;
}

/* Per-stream drift speeds, drawn once from (seed, stream): streams differ in how fast
 * and how much their appearance moves. */
typedef struct {
    double step_brightness, step_contrast, step_noise, p_shift;
} drift_speed;

/* Replays the walk to window `window`: class log-weights, presence, appearance. */
static void walk_to(const ekya_stream_opts *o, int stream, int window,
                    double logw[EKYA_NUM_CLASSES], int present[EKYA_NUM_CLASSES],
                    ekya_appearance *app)
{
    ekya_rng r;
    ekya_rng_seed(&r, ekya_seed_mix(o->seed, (uint64_t)stream, 0, P_BASE));
    drift_speed sp;
    sp.step_brightness = unif(&r, 0.01, 0.05) * o->appearance_rate;
    sp.step_contrast = unif(&r, 0.02, 0.08) * o->appearance_rate;
    sp.step_noise = unif(&r, 0.0, 0.03) * o->appearance_rate;
    sp.p_shift = unif(&r, 0.02, 0.15) * o->appearance_rate;
    app->brightness = unif(&r, -0.1, 0.1) * o->appearance_rate;
    app->contrast = 1.0 + unif(&r, -0.2, 0.2) * o->appearance_rate;
    app->noise = unif(&r, 0.0, 0.08) * o->appearance_rate;
    app->shift_x = 0; /* shifts arrive only by drift: an MLP is not translation invariant */
    app->shift_y = 0;
    for (int c = 0; c < EKYA_NUM_CLASSES; c++) {
        logw[c] = ekya_rng_normal(&r);
        present[c] = ekya_rng_uniform(&r) < 0.8;
    }
    for (int k = 1; k <= window; k++) {
        ekya_rng_seed(&r, ekya_seed_mix(o->seed, (uint64_t)stream, (uint64_t)k, P_WALK));
        for (int c = 0; c < EKYA_NUM_CLASSES; c++) {
            logw[c] += o->walk_sigma * ekya_rng_normal(&r);
            logw[c] = clampd(logw[c], -4.0, 4.0); /* keep the walk from freezing a class out */
            double u = ekya_rng_uniform(&r);
            if (present[c] && u < o->p_vanish)
                present[c] = 0;
            else if (!present[c] && u < o->p_return)
                present[c] = 1;
        }
        app->brightness = clampd(app->brightness + sp.step_brightness * ekya_rng_normal(&r), -0.35, 0.35);
        app->contrast = clampd(app->contrast + sp.step_contrast * ekya_rng_normal(&r), 0.4, 1.6);
        app->noise = clampd(app->noise + sp.step_noise * ekya_rng_normal(&r), 0.0, 0.25);
        if (ekya_rng_uniform(&r) < sp.p_shift)
            app->shift_x = clampi(app->shift_x + (ekya_rng_uniform(&r) < 0.5 ? -1 : 1), -3, 3);
        if (ekya_rng_uniform(&r) < sp.p_shift)
            app->shift_y = clampi(app->shift_y + (ekya_rng_uniform(&r) < 0.5 ? -1 : 1), -3, 3);
    }
    /* A window always shows at least three classes: revive the heaviest absent ones. */
    for (;;) {
        int n = 0, best = -1;
        for (int c = 0; c < EKYA_NUM_CLASSES; c++) {
            n += present[c];
            if (!present[c] && (best < 0 || logw[c] > logw[best]))
                best = c;
        }
        if (n >= 3 || best < 0)
            break;
        present[best] = 1;
    }
}

int ekya_stream_state(const ekya_stream_opts *o, int stream, int window,
                      double mix[EKYA_NUM_CLASSES], ekya_appearance *app, char *err,
                      size_t errlen)
{
    if (stream < 0 || window < 0)
        return fail(err, errlen, "stream: stream %d / window %d must be >= 0", stream, window);
    if (check_opts(o, err, errlen) != 0)
        return -1;
    double logw[EKYA_NUM_CLASSES];
    int present[EKYA_NUM_CLASSES];
    walk_to(o, stream, window, logw, present, app);
    /* Dirichlet draw around the softmax of the present classes' log-weights. */
    double mx = -1e300, z = 0;
    for (int c = 0; c < EKYA_NUM_CLASSES; c++)
        if (present[c] && logw[c] > mx)
            mx = logw[c];
    for (int c = 0; c < EKYA_NUM_CLASSES; c++)
        z += present[c] ? exp(logw[c] - mx) : 0.0;
    ekya_rng r;
    ekya_rng_seed(&r, ekya_seed_mix(o->seed, (uint64_t)stream, (uint64_t)window, P_WALK + 100));
    double sum = 0;
    for (int c = 0; c < EKYA_NUM_CLASSES; c++) {
        double alpha = present[c] ? o->mix_concentration * exp(logw[c] - mx) / z : 0.0;
        mix[c] = alpha > 0 ? ekya_rng_gamma(&r, alpha) + 1e-12 : 0.0;
        sum += mix[c];
    }
    for (int c = 0; c < EKYA_NUM_CLASSES; c++)
        mix[c] /= sum;
    return 0;
}

static int sample_class(ekya_rng *r, const double mix[EKYA_NUM_CLASSES])
{
    double u = ekya_rng_uniform(r), acc = 0;
    int last = 0;
    for (int c = 0; c < EKYA_NUM_CLASSES; c++) {
        if (mix[c] <= 0)
            continue;
        last = c;
        acc += mix[c];
        if (u < acc)
            return c;
    }
    return last;
}

/* Renders one pool image into out[EKYA_PIXELS] with the window's appearance. */
static void render(const uint8_t *src, const ekya_appearance *a, ekya_rng *r, float *out)
{
    for (int yy = 0; yy < EKYA_SIDE; yy++) {
        for (int xx = 0; xx < EKYA_SIDE; xx++) {
            int sx = xx - a->shift_x, sy = yy - a->shift_y;
            double v = (sx >= 0 && sx < EKYA_SIDE && sy >= 0 && sy < EKYA_SIDE)
                           ? src[sy * EKYA_SIDE + sx] / 255.0
                           : 0.0;
            v = (v - 0.5) * a->contrast + 0.5 + a->brightness;
            if (a->noise > 0)
                v += a->noise * ekya_rng_normal(r);
            out[yy * EKYA_SIDE + xx] = (float)clampd(v, 0.0, 1.0);
        }
    }
}

static int alloc_window(ekya_window *w)
{
    w->x = malloc(sizeof(float) * EKYA_PIXELS * (size_t)w->n);
    w->y = malloc((size_t)w->n);
    w->train_x = malloc(sizeof(float) * EKYA_PIXELS * (size_t)w->n_train);
    w->train_y = malloc((size_t)w->n_train);
    w->test_x = malloc(sizeof(float) * EKYA_PIXELS * (size_t)w->n_test);
    w->test_y = malloc((size_t)w->n_test);
    return w->x && w->y && w->train_x && w->train_y && w->test_x && w->test_y ? 0 : -1;
}

/* The seeded permutation of a window's frames: the first n_train go to retraining, the
 * rest to test. NULL when memory runs out. */
static int *split_perm(const ekya_window *w, uint64_t seed)
{
    int *perm = malloc(sizeof(int) * (size_t)w->n);
    if (!perm)
        return NULL;
    for (int i = 0; i < w->n; i++)
        perm[i] = i;
    ekya_rng r;
    ekya_rng_seed(&r, ekya_seed_mix(seed, (uint64_t)w->stream, (uint64_t)w->window, P_SPLIT));
    for (int i = w->n - 1; i > 0; i--) {
        int j = (int)ekya_rng_below(&r, (uint32_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    return perm;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int ekya_window_test_positions(const ekya_stream_opts *o, const ekya_window *w, int *pos)
{
    int *perm = split_perm(w, o->seed);
    if (!perm)
        return -1;
    memcpy(pos, perm + w->n_train, sizeof(int) * (size_t)w->n_test);
    qsort(pos, (size_t)w->n_test, sizeof *pos, cmp_int);
    free(perm);
    return 0;
}

int ekya_window_test_sequence(const ekya_stream_opts *o, const ekya_window *w, float **x,
                              uint8_t **y)
{
    size_t n = (size_t)(w->n_test > 0 ? w->n_test : 1);
    int *pos = malloc(sizeof(int) * n);
    *x = malloc(sizeof(float) * EKYA_PIXELS * n);
    *y = malloc(n);
    if (!pos || !*x || !*y || ekya_window_test_positions(o, w, pos) != 0) {
        free(pos);
        free(*x);
        free(*y);
        *x = NULL;
        *y = NULL;
        return -1;
    }
    for (int i = 0; i < w->n_test; i++) {
        memcpy(*x + (size_t)i * EKYA_PIXELS, w->x + (size_t)pos[i] * EKYA_PIXELS,
               sizeof(float) * EKYA_PIXELS);
        (*y)[i] = w->y[pos[i]];
    }
    free(pos);
    return 0;
}

static int split_frames(ekya_window *w, const ekya_stream_opts *o)
{
    int *perm = split_perm(w, o->seed);
    if (!perm)
        return -1;
    for (int i = 0; i < w->n; i++) {
        int k = perm[i];
        float *dst = i < w->n_train ? w->train_x + (size_t)i * EKYA_PIXELS
                                    : w->test_x + (size_t)(i - w->n_train) * EKYA_PIXELS;
        memcpy(dst, w->x + (size_t)k * EKYA_PIXELS, sizeof(float) * EKYA_PIXELS);
        if (i < w->n_train)
            w->train_y[i] = w->y[k];
        else
            w->test_y[i - w->n_train] = w->y[k];
    }
    free(perm);
    return 0;
}

int ekya_window_make(const ekya_pool *pool, const ekya_stream_opts *o, int stream,
                     int window, ekya_window *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (!pool || !pool->data)
        return fail(err, errlen, "stream: no pool");
    if (ekya_stream_state(o, stream, window, w->class_mix, &w->app, err, errlen) != 0)
        return -1;
    w->stream = stream;
    w->window = window;
    w->n = o->images_per_window;
    w->n_train = (int)lround(o->train_frac * w->n);
    w->n_test = w->n - w->n_train;
    if (alloc_window(w) != 0) {
        ekya_window_free(w);
        return fail(err, errlen, "stream: out of memory for %d frames", w->n);
    }
    ekya_rng r;
    ekya_rng_seed(&r, ekya_seed_mix(o->seed, (uint64_t)stream, (uint64_t)window, P_FRAMES));
    const uint8_t *px = pool->data->images.pixels;
    int cls = 0;
    double p_end = 1.0 / o->mean_run; /* geometric run lengths with the requested mean */
    for (int i = 0; i < w->n; i++) {
        if (i == 0 || ekya_rng_uniform(&r) < p_end)
            cls = sample_class(&r, w->class_mix);
        uint32_t pick = pool->by_class[cls][ekya_rng_below(&r, pool->class_count[cls])];
        w->y[i] = (uint8_t)cls;
        render(px + (size_t)pick * EKYA_PIXELS, &w->app, &r, w->x + (size_t)i * EKYA_PIXELS);
    }
    if (split_frames(w, o) != 0) {
        ekya_window_free(w);
        return fail(err, errlen, "stream: out of memory");
    }
    return 0;
}

void ekya_window_free(ekya_window *w)
{
    if (!w)
        return;
    free(w->x);
    free(w->y);
    free(w->train_x);
    free(w->train_y);
    free(w->test_x);
    free(w->test_y);
    memset(w, 0, sizeof *w);
}

int ekya_stream_heldout(const ekya_pool *pool, const ekya_stream_opts *o, int streams,
                        int windows, float **x, uint8_t **y, int *n, char *err,
                        size_t errlen)
{
    *x = NULL;
    *y = NULL;
    *n = 0;
    if (streams <= 0 || windows <= 0)
        return fail(err, errlen, "stream: held-out streams %d x windows %d must be positive",
                    streams, windows);
    size_t total = (size_t)streams * (size_t)windows * (size_t)o->images_per_window;
    float *xs = malloc(sizeof(float) * EKYA_PIXELS * total);
    uint8_t *ys = malloc(total);
    if (!xs || !ys) {
        free(xs);
        free(ys);
        return fail(err, errlen, "stream: out of memory for %zu pretraining frames", total);
    }
    size_t at = 0;
    for (int s = 0; s < streams; s++) {
        for (int k = 0; k < windows; k++) {
            ekya_window w;
            if (ekya_window_make(pool, o, EKYA_HELDOUT_STREAM_BASE + s, k, &w, err, errlen) != 0) {
                free(xs);
                free(ys);
                return -1;
            }
            memcpy(xs + at * EKYA_PIXELS, w.x, sizeof(float) * EKYA_PIXELS * (size_t)w.n);
            memcpy(ys + at, w.y, (size_t)w.n);
            at += (size_t)w.n;
            ekya_window_free(&w);
        }
    }
    *x = xs;
    *y = ys;
    *n = (int)at;
    return 0;
}
