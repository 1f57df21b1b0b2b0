/* profile_cmd.c: `ekya profile` (format in ekya/profile_cmd.h). Streams are processed
 * one after another; within a stream every window is profiled, then retrained with each
 * configuration starting from the models the stream carries, and the carried model of
 * each width becomes the one retrained with that width's carry configuration
 * (ekya_config_carry_index) at EKYA_CARRY_EPOCHS epochs. */
#include "ekya/profile_cmd.h"

#include "ekya/config.h"
#include "ekya/profiler.h"
#include "ekya/retrain.h"
#include "ekya/rng.h"
#include "ekya/workload.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EKYA_CARRY_EPOCHS 15
#define N_SUBS 8
static const int subsamplings[N_SUBS] = {1, 2, 3, 4, 5, 6, 8, 10};

typedef struct {
    int streams, windows, images, quiet;
    unsigned long long seed;
    const char *out, *configs, *infer_out, *infer_cfg_out;
    char infer_buf[4096];
} cmd_args;

/* Running totals for the summary and the inference profile. */
typedef struct {
    double *abs_err; /* |pred - real| end accuracy, points, one per row */
    int n_err, rows, pruned, profiled;
    double profile_s, retrain_s, retrain_30_s;
    double mult_sum[N_SUBS];
    int mult_n;
} cmd_totals;

int ekya_cmd_profile_usage(FILE *out)
{
    fputs("usage: ekya profile --streams V --windows W [--seed S] [--images-per-window N]\n"
          "                    [--out FILE] [--configs small|full] [--infer-out FILE]\n"
          "                    [--infer-configs-out FILE] [--quiet]\n"
          "  Runs the Fashion-MNIST retraining workload and writes the profiles CSV\n"
          "  (accuracies in percent): stream,window,config,epochs,start_pct,end_pct,\n"
          "  gpu_seconds,pred_end_pct,pred_gpu_seconds. Data: $EKYA_DATA_DIR or\n"
          "  /usr/share/datasets/fashion-mnist. Defaults: seed 1, 1000 images per window,\n"
          "  full configurations (18), output to stdout.\n",
          out);
    return 0;
}

static int parse_int(const char *opt, const char *v, long lo, long hi, long long *out)
{
    char *end;
    errno = 0;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "ekya profile: %s needs an integer in %ld..%ld, got '%s'\n", opt, lo, hi,
                v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_args(int argc, char **argv, cmd_args *a)
{
    memset(a, 0, sizeof *a);
    a->streams = a->windows = -1;
    a->images = 1000;
    a->seed = 1;
    a->configs = "full";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x = 0; /* the assignments below read it even when parse_int failed */
        int rc = 0, takes = 1;
        if (!strcmp(o, "--streams"))
            rc = parse_int(o, v, 1, 100000, &x), a->streams = (int)x;
        else if (!strcmp(o, "--windows"))
            rc = parse_int(o, v, 1, 100000, &x), a->windows = (int)x;
        else if (!strcmp(o, "--images-per-window"))
            rc = parse_int(o, v, 40, 1000000, &x), a->images = (int)x;
        else if (!strcmp(o, "--seed"))
            rc = parse_int(o, v, 0, 0x7fffffffffffffffLL, &x), a->seed = (unsigned long long)x;
        else if (!strcmp(o, "--out") || !strcmp(o, "--configs") || !strcmp(o, "--infer-out") ||
                 !strcmp(o, "--infer-configs-out")) {
            if (!v) {
                fprintf(stderr, "ekya profile: %s needs a value\n", o);
                return -1;
            }
            const char **dst = !strcmp(o, "--out") ? &a->out
                               : !strcmp(o, "--configs") ? &a->configs
                               : !strcmp(o, "--infer-out") ? &a->infer_out
                                                            : &a->infer_cfg_out;
            *dst = v;
        } else if (!strcmp(o, "--quiet"))
            a->quiet = 1, takes = 0;
        else {
            fprintf(stderr, "ekya profile: unknown option '%s' (see --help)\n", o);
            return -1;
        }
        if (rc != 0)
            return -1;
        i += takes;
    }
    if (a->streams < 0 || a->windows < 0) {
        fprintf(stderr, "ekya profile: --streams and --windows are required\n");
        return -1;
    }
    if (!a->infer_out && a->out && strcmp(a->out, "-") != 0) {
        size_t n = strlen(a->out);
        if (n >= 4 && !strcmp(a->out + n - 4, ".csv"))
            n -= 4;
        snprintf(a->infer_buf, sizeof a->infer_buf, "%.*s_infer.csv", (int)n, a->out);
        a->infer_out = a->infer_buf;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Everything one window needs, built from the stream's carried models. */
typedef struct {
    const ekya_retrain_config *set;
    int n_cfg;
    const ekya_profiler_opts *popts;
    FILE *csv;
    uint64_t seed;
} cmd_ctx;

static int carried_index(ekya_mlp *carried, int n, int hidden)
{
    for (int i = 0; i < n; i++)
        if (carried[i].hidden == hidden)
            return i;
    return -1;
}

/* Subsampling accuracy multipliers of the widest carried model on this window. */
static void add_infer(const ekya_mlp *m, const ekya_window *w, cmd_totals *t)
{
    ekya_infer_config ic[N_SUBS];
    if (ekya_infer_measure(&m, 1, w, subsamplings, N_SUBS, ic, NULL, 0) != 0 ||
        ic[0].accuracy <= 0)
        return;
    for (int k = 0; k < N_SUBS; k++)
        t->mult_sum[k] += ic[k].accuracy / ic[0].accuracy;
    t->mult_n++;
}

/* start_acc is the deployed model's: a stream serves with one model (the widest it
 * carries), so every row of a (stream, window) has the same start accuracy; a
 * configuration of another width retrains that width's carried model, and its end_acc
 * is what the stream serves with once it completes. */
static void write_rows(const cmd_ctx *c, const ekya_window *w, int i, double deployed_acc,
                       const ekya_retrain_result *r, const ekya_profile *p, cmd_totals *t)
{
    char name[EKYA_CONFIG_NAME_MAX];
    ekya_config_name(&c->set[i], name, sizeof name);
    for (int k = 0; k < r->n_checkpoints; k++) {
        double pred = 100.0 * ekya_profile_predict_acc(p, i, r->epochs[k], c->popts);
        double pred_s = ekya_profile_predict_seconds(p, i, r->epochs[k]);
        fprintf(c->csv, "%d,%d,%s,%d,%.2f,%.2f,%.6g,%.2f,%.6g\n", w->stream, w->window, name,
                r->epochs[k], 100.0 * deployed_acc, 100.0 * r->end_acc[k], r->gpu_seconds[k],
                pred, pred_s);
        t->abs_err[t->n_err++] = fabs(pred - 100.0 * r->end_acc[k]);
        t->rows++;
    }
    t->retrain_s += r->gpu_seconds[r->n_checkpoints - 1];
}

/* Profiles and retrains one window; replaces the carried models. */
static int run_window(const cmd_ctx *c, const ekya_window *w, ekya_mlp *carried, int n_w,
                      cmd_totals *t, char *err, size_t errlen)
{
    const ekya_mlp *models[EKYA_MAX_WIDTHS];
    int widest = 0;
    for (int i = 0; i < n_w; i++) {
        models[i] = &carried[i];
        widest = carried[i].hidden > carried[widest].hidden ? i : widest;
    }
    add_infer(models[widest], w, t);
    double deployed_acc = ekya_mlp_accuracy(models[widest], w->test_x, w->test_y, w->n_test);
    ekya_profile prof;
    if (ekya_profile_window(models, n_w, w, c->set, c->n_cfg, c->popts, &prof, err, errlen) != 0)
        return -1;
    t->profile_s += prof.profile_seconds;
    for (int i = 0; i < prof.n; i++)
        t->pruned += prof.items[i].pruned;
    t->profiled += prof.n;
    ekya_mlp next[EKYA_MAX_WIDTHS];
    memset(next, 0, sizeof next);
    int rc = 0;
    for (int i = 0; rc == 0 && i < c->n_cfg; i++) {
        int wi = carried_index(carried, n_w, c->set[i].hidden);
        int keep = ekya_config_carry_index(c->set, c->n_cfg, c->set[i].hidden) == i;
        ekya_retrain_result r;
        uint64_t seed = ekya_seed_mix(c->seed, (uint64_t)w->stream, (uint64_t)w->window, 0x7000 + (uint64_t)i);
        rc = ekya_retrain(&carried[wi], w, &c->set[i], ekya_epoch_choices, EKYA_N_EPOCH_CHOICES,
                          seed, &r, keep ? &next[wi] : NULL, EKYA_CARRY_EPOCHS, err, errlen);
        if (rc == 0)
            write_rows(c, w, i, deployed_acc, &r, &prof, t);
    }
    for (int i = 0; i < n_w; i++) {
        if (rc == 0 && next[i].w1) /* widths without a carry configuration keep their model */
            ekya_mlp_assign(&carried[i], &next[i]);
        ekya_mlp_free(&next[i]);
    }
    ekya_profile_free(&prof);
    return rc;
}

static int run_stream(const cmd_ctx *c, const ekya_workload *wl, int s, int windows,
                      cmd_totals *t, char *err, size_t errlen)
{
    ekya_mlp carried[EKYA_MAX_WIDTHS];
    memset(carried, 0, sizeof carried);
    int rc = 0;
    for (int i = 0; rc == 0 && i < wl->n_widths; i++)
        rc = ekya_mlp_copy(&carried[i], &wl->base[i]);
    for (int w = 0; rc == 0 && w < windows; w++) {
        ekya_window win;
        rc = ekya_window_make(&wl->live, &wl->stream, s, w, &win, err, errlen);
        if (rc == 0)
            rc = run_window(c, &win, carried, wl->n_widths, t, err, errlen);
        ekya_window_free(&win);
    }
    for (int i = 0; i < wl->n_widths; i++)
        ekya_mlp_free(&carried[i]);
    return rc;
}

static int write_infer(const char *path, const cmd_totals *t)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ekya profile: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "subsampling,accuracy_multiplier\n");
    for (int k = 0; k < N_SUBS; k++)
        fprintf(f, "%d,%.4f\n", subsamplings[k], t->mult_n ? t->mult_sum[k] / t->mult_n : 1.0);
    return fclose(f) == 0 ? 0 : -1;
}

/* Resolution x subsampling table: models of the widest width pretrained at 28, 14 and 7,
 * measured on stream 0, window 0. */
static int write_infer_configs(const char *path, const ekya_workload *wl, uint64_t seed,
                               char *err, size_t errlen)
{
    const int res[3] = {28, 14, 7};
    ekya_mlp m[3];
    const ekya_mlp *mp[3];
    memset(m, 0, sizeof m);
    int hidden = wl->base[0].hidden, rc = 0;
    for (int i = 1; i < wl->n_widths; i++)
        hidden = wl->base[i].hidden > hidden ? wl->base[i].hidden : hidden;
    for (int i = 0; rc == 0 && i < 3; i++) {
        rc = ekya_mlp_init(&m[i], res[i], hidden, ekya_seed_mix(seed, (uint64_t)res[i], 0, 0x1f), err, errlen);
        if (rc == 0)
            rc = ekya_pretrain(&m[i], &wl->heldout, &wl->stream, 8, 2, 5, seed, err, errlen) < 0 ? -1 : 0;
        mp[i] = &m[i];
    }
    ekya_window w;
    memset(&w, 0, sizeof w);
    ekya_infer_config ic[3 * N_SUBS];
    if (rc == 0)
        rc = ekya_window_make(&wl->live, &wl->stream, 0, 0, &w, err, errlen);
    if (rc == 0)
        rc = ekya_infer_measure(mp, 3, &w, subsamplings, N_SUBS, ic, err, errlen);
    FILE *f = rc == 0 ? fopen(path, "w") : NULL;
    if (rc == 0 && !f)
        rc = -1, snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    if (f) {
        fprintf(f, "resolution,subsampling,accuracy,cpu_seconds_per_frame\n");
        for (int i = 0; i < 3 * N_SUBS; i++)
            fprintf(f, "%d,%d,%.2f,%.6g\n", ic[i].res, ic[i].subsample, 100.0 * ic[i].accuracy,
                    ic[i].cpu_seconds_per_frame);
        rc = fclose(f) == 0 ? rc : -1;
    }
    ekya_window_free(&w);
    for (int i = 0; i < 3; i++)
        ekya_mlp_free(&m[i]);
    return rc;
}

static void summary(const cmd_args *a, const ekya_workload *wl, cmd_totals *t)
{
    qsort(t->abs_err, (size_t)t->n_err, sizeof(double), cmp_double);
    double med = t->n_err ? (t->n_err % 2 ? t->abs_err[t->n_err / 2]
                                          : 0.5 * (t->abs_err[t->n_err / 2 - 1] + t->abs_err[t->n_err / 2]))
                          : 0;
    fprintf(stderr,
            "ekya profile: %d rows (%d streams x %d windows, %s configs); pretraining %.2f s; "
            "micro-profiling %.2f s (%d of %d profiles pruned) vs retraining %.2f s (CPU); "
            "profiler median |error| %.2f points, p90 %.2f\n",
            t->rows, a->streams, a->windows, a->configs, wl->pretrain_seconds, t->profile_s,
            t->pruned, t->profiled, t->retrain_s, med, t->n_err ? t->abs_err[(int)(0.9 * (t->n_err - 1))] : 0.0);
}

static int run(const cmd_args *a, char *err, size_t errlen)
{
    cmd_ctx c;
    memset(&c, 0, sizeof c);
    c.n_cfg = ekya_config_set(a->configs, &c.set, err, errlen);
    if (c.n_cfg < 0)
        return 2;
    int widths[64], n_widths = c.n_cfg < 64 ? c.n_cfg : 64;
    for (int i = 0; i < n_widths; i++)
        widths[i] = c.set[i].hidden;
    ekya_workload_opts wo;
    ekya_workload_opts_default(&wo, a->seed);
    wo.images_per_window = a->images;
    ekya_workload wl;
    if (ekya_workload_open(&wl, &wo, widths, n_widths, err, errlen) != 0)
        return 1;
    ekya_profiler_opts po;
    ekya_profiler_opts_default(&po, a->seed);
    c.popts = &po;
    c.seed = a->seed;
    c.csv = a->out && strcmp(a->out, "-") ? fopen(a->out, "w") : stdout;
    cmd_totals t;
    memset(&t, 0, sizeof t);
    t.abs_err = malloc(sizeof(double) * (size_t)a->streams * a->windows * c.n_cfg * EKYA_N_EPOCH_CHOICES);
    int rc = c.csv && t.abs_err ? 0 : 1;
    if (!c.csv)
        snprintf(err, errlen, "cannot write %s: %s", a->out, strerror(errno));
    else if (!t.abs_err)
        snprintf(err, errlen, "out of memory");
    if (rc == 0)
        fprintf(c.csv, "stream,window,config,epochs,start_pct,end_pct,gpu_seconds,pred_end_pct,pred_gpu_seconds\n");
    for (int s = 0; rc == 0 && s < a->streams; s++)
        rc = run_stream(&c, &wl, s, a->windows, &t, err, errlen) == 0 ? 0 : 1;
    if (c.csv && c.csv != stdout && fclose(c.csv) != 0 && rc == 0)
        rc = 1, snprintf(err, errlen, "cannot finish writing %s", a->out);
    if (rc == 0 && a->infer_out && write_infer(a->infer_out, &t) != 0)
        rc = 1, snprintf(err, errlen, "inference profile not written");
    if (rc == 0 && a->infer_cfg_out && write_infer_configs(a->infer_cfg_out, &wl, a->seed, err, errlen) != 0)
        rc = 1;
    if (rc == 0 && !a->quiet)
        summary(a, &wl, &t);
    free(t.abs_err);
    ekya_workload_close(&wl);
    return rc;
}

int ekya_cmd_profile(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return ekya_cmd_profile_usage(stdout);
    cmd_args a;
    if (parse_args(argc, argv, &a) != 0) {
        ekya_cmd_profile_usage(stderr);
        return 2;
    }
    char err[512] = "";
    int rc = run(&a, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "ekya profile: %s\n", err[0] ? err : "failed");
    return rc;
}
