/* run_cmd.c: `ekya run`: the real workload end to end. Per window and stream the
 * micro-profiler predicts every retraining configuration from the stream's current
 * models; the scheduler decides on those predictions; the configurations it starts are
 * retrained for real (and only those), their measured cost and accuracy drive the
 * window's timeline, and a model that completes in time is deployed and carried into
 * the next window. The timeline is the simulator's (ekya/sim.h) with hooks that produce
 * the profile values as they are needed, so `run` and `simulate` share one accounting
 * of shares, completions and per-second accuracy. */
#include "ekya/run_cmd.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ekya/cli.h"
#include "ekya/config.h"
#include "ekya/live.h"
#include "ekya/profiler.h"
#include "ekya/retrain.h"
#include "ekya/rng.h"
#include "ekya/sim.h"
#include "ekya/workload.h"

#define RUN_SUBS 10
static const int run_subsamplings[RUN_SUBS] = {1, 2, 3, 4, 5, 6, 8, 10, 15, 20};

typedef struct {
    int streams, windows, images, json;
    uint64_t seed;
    const char *configs, *scheduler, *decisions;
    ekya_params prm;
    int cluster;        /* --cluster: run live (ekya/live.h) */
    ekya_live_opts live;/* its own options */
} run_opts;

/* One stream's models: one per width (the set's widths), the index of the deployed
 * one, and the model of a retraining in progress. */
typedef struct {
    ekya_mlp model[EKYA_MAX_WIDTHS];
    int deployed;
    ekya_mlp pending;
    int pending_width;
    ekya_window win; /* the current window's frames */
} run_stream;

typedef struct {
    const run_opts *o;
    ekya_workload wl;
    const ekya_retrain_config *set;
    int n_cfg;
    ekya_profiler_opts popts;
    ekya_profiles prof;   /* filled window by window through the hooks */
    run_stream *st;
    int prune; /* the scheduler plans with predictions: pruned configurations withheld */
    double profile_seconds, retrain_seconds;
    int retrainings;
} run_ctx;

static const char usage[] =
    "usage: ekya run --streams V --windows W --gpus G --window T [--scheduler S]\n"
    "         [--configs small|full] [--images-per-window N] [--seed S] [--delta D|FG]\n"
    "         [--rmax R] [--sample S] [--json] [--decisions FILE]\n"
    "       ekya run --cluster [ADDRESS] --streams V --windows W --window T\n"
    "         [--node-devices D] [--device-cpus C] [--profile-cpus P] [--latency L]\n"
    "         [--max-nodes N] [--namespace NS] [same options as above, without --gpus]\n"
    "  T and the costs are CPU-seconds of a full device (GPU-seconds with a GPU).\n"
    "  --cluster runs live on an escher cluster (the local one without ADDRESS): each\n"
    "  node's devices are its GPUs, else D devices of C CPUs each (defaults 1 and 1);\n"
    "  micro-profiling tasks hold P CPUs (0.25); an answer counts for its frame when\n"
    "  ready within L seconds (0.01). Progress goes to stderr. See docs/ekya.md.\n";

static int width_index(const ekya_workload *wl, int hidden)
{
    for (int i = 0; i < wl->n_widths; i++)
        if (wl->base[i].hidden == hidden)
            return i;
    return -1;
}

/* Table row of configuration i at the k-th epoch choice. */
static int cell_index(int i, int k) { return i * EKYA_N_EPOCH_CHOICES + k; }

static int hook_window(void *vctx, int w, char *err, size_t errlen)
{
    run_ctx *c = vctx;
    ekya_profiles *p = &c->prof;
    for (int s = 0; s < c->o->streams; s++) {
        run_stream *rs = &c->st[s];
        ekya_window_free(&rs->win);
        if (ekya_window_make(&c->wl.live, &c->wl.stream, s, w, &rs->win, err, errlen) != 0)
            return -1;
        const ekya_mlp *models[EKYA_MAX_WIDTHS];
        for (int i = 0; i < c->wl.n_widths; i++)
            models[i] = &rs->model[i];
        const ekya_mlp *dep = &rs->model[rs->deployed];
        p->start_acc[s * p->nwindows + w] =
            ekya_mlp_accuracy(dep, rs->win.test_x, rs->win.test_y, rs->win.n_test);
        ekya_profile prof;
        if (ekya_profile_window(models, c->wl.n_widths, &rs->win, c->set, c->n_cfg, &c->popts,
                                &prof, err, errlen) != 0)
            return -1;
        c->profile_seconds += prof.profile_seconds;
        for (int i = 0; i < c->n_cfg; i++)
            for (int k = 0; k < EKYA_N_EPOCH_CHOICES; k++) {
                ekya_cell *cell = &p->cells[(s * p->nwindows + w) * p->nconfigs + cell_index(i, k)];
                int e = ekya_epoch_choices[k];
                /* a configuration the profiler pruned is not offered to Ekya's own
                 * schedulers; the baselines run their fixed choice regardless */
                cell->present = !(c->prune && prof.items[i].pruned);
                cell->pred_end_acc = ekya_profile_predict_acc(&prof, i, e, &c->popts);
                cell->pred_gpu_seconds = ekya_profile_predict_seconds(&prof, i, e);
                /* until it is retrained for real, the actual values are the predicted */
                cell->end_acc = cell->pred_end_acc;
                cell->gpu_seconds = cell->pred_gpu_seconds;
            }
        ekya_profile_free(&prof);
    }
    return 0;
}

static int hook_retrain(void *vctx, int s, int w, int cfg, char *err, size_t errlen)
{
    run_ctx *c = vctx;
    run_stream *rs = &c->st[s];
    int i = cfg / EKYA_N_EPOCH_CHOICES, e = ekya_epoch_choices[cfg % EKYA_N_EPOCH_CHOICES];
    int wi = width_index(&c->wl, c->set[i].hidden);
    if (wi < 0) {
        snprintf(err, errlen, "run: no model of width %d", c->set[i].hidden);
        return -1;
    }
    ekya_mlp_free(&rs->pending);
    ekya_retrain_result r;
    uint64_t seed = ekya_seed_mix(c->o->seed, (uint64_t)s, (uint64_t)w, 0x9000 + (uint64_t)cfg);
    if (ekya_retrain_once(&rs->model[wi], &rs->win, &c->set[i], e, 1.0, c->popts.share_alpha,
                          seed, &r, NULL, &rs->pending, err, errlen) != 0)
        return -1;
    rs->pending_width = wi;
    ekya_cell *cell = &c->prof.cells[(s * c->prof.nwindows + w) * c->prof.nconfigs + cfg];
    cell->end_acc = r.end_acc[0];
    cell->gpu_seconds = r.gpu_seconds[0] > 0 ? r.gpu_seconds[0] : 1e-9;
    c->retrain_seconds += r.gpu_seconds[0];
    c->retrainings++;
    return 0;
}

static int hook_complete(void *vctx, int s, int w, int cfg, char *err, size_t errlen)
{
    (void)w;
    (void)cfg;
    run_ctx *c = vctx;
    run_stream *rs = &c->st[s];
    if (!rs->pending.w1) {
        snprintf(err, errlen, "run: stream %d completed a retraining it never started", s);
        return -1;
    }
    ekya_mlp_assign(&rs->model[rs->pending_width], &rs->pending);
    ekya_mlp_free(&rs->pending);
    rs->deployed = rs->pending_width;
    return 0;
}

/* The profile table's shape: streams "0".., every configuration at every epoch choice. */
static int build_table(run_ctx *c)
{
    ekya_profiles *p = &c->prof;
    if (ekya_profiles_alloc(p, c->o->streams, c->o->windows, c->n_cfg * EKYA_N_EPOCH_CHOICES))
        return -1;
    p->has_pred = 1;
    char buf[EKYA_CONFIG_NAME_MAX];
    for (int s = 0; s < c->o->streams; s++) {
        snprintf(buf, sizeof buf, "%d", s);
        if (!(p->streams[s] = strdup(buf)))
            return -1;
    }
    for (int i = 0; i < c->n_cfg; i++)
        for (int k = 0; k < EKYA_N_EPOCH_CHOICES; k++) {
            ekya_config_name(&c->set[i], buf, sizeof buf);
            p->configs[cell_index(i, k)].epochs = ekya_epoch_choices[k];
            if (!(p->configs[cell_index(i, k)].name = strdup(buf)))
                return -1;
        }
    return 0;
}

/* The test frames of w in stream order, as a window of their own (x, y and n only). */
static int test_sequence(const ekya_workload *wl, ekya_window *w, char *err, size_t errlen)
{
    float *x;
    uint8_t *y;
    if (ekya_window_test_sequence(&wl->stream, w, &x, &y) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    free(w->x);
    free(w->y);
    w->x = x;
    w->y = y;
    w->n = w->n_test;
    return 0;
}

int ekya_run_inference_profile(const ekya_workload *wl, int test_frames, ekya_infer_profile *inf,
                               double *frame_seconds, char *err, size_t errlen)
{
    ekya_window w;
    if (ekya_window_make(&wl->live, &wl->stream, 0, 0, &w, err, errlen) != 0)
        return -1;
    if (test_frames && test_sequence(wl, &w, err, errlen) != 0) {
        ekya_window_free(&w);
        return -1;
    }
    int widest = 0;
    for (int i = 0; i < wl->n_widths; i++)
        widest = wl->base[i].hidden > wl->base[widest].hidden ? i : widest;
    const ekya_mlp *m = &wl->base[widest];
    ekya_infer_config ic[RUN_SUBS];
    int rc = ekya_infer_measure(&m, 1, &w, run_subsamplings, RUN_SUBS, ic, err, errlen);
    ekya_window_free(&w);
    if (rc != 0)
        return -1;
    double sub[RUN_SUBS], mult[RUN_SUBS];
    for (int k = 0; k < RUN_SUBS; k++) {
        sub[k] = run_subsamplings[k];
        double v = ic[0].accuracy > 0 ? ic[k].accuracy / ic[0].accuracy : 0;
        mult[k] = v > 1 ? 1 : v;
    }
    if (frame_seconds)
        *frame_seconds = ic[0].cpu_seconds_per_frame;
    if (ekya_infer_from_arrays(inf, RUN_SUBS, sub, mult) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static int open_run(run_ctx *c, char *err, size_t errlen)
{
    c->n_cfg = ekya_config_set(c->o->configs, &c->set, err, errlen);
    if (c->n_cfg < 0)
        return -1;
    int widths[64], n = c->n_cfg < 64 ? c->n_cfg : 64;
    for (int i = 0; i < n; i++)
        widths[i] = c->set[i].hidden;
    ekya_workload_opts wo;
    ekya_workload_opts_default(&wo, c->o->seed);
    wo.images_per_window = c->o->images;
    if (ekya_workload_open(&c->wl, &wo, widths, n, err, errlen) != 0)
        return -1;
    ekya_profiler_opts_default(&c->popts, c->o->seed);
    c->st = calloc((size_t)c->o->streams, sizeof *c->st);
    if (!c->st || build_table(c) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int widest = 0;
    for (int i = 0; i < c->wl.n_widths; i++)
        widest = c->wl.base[i].hidden > c->wl.base[widest].hidden ? i : widest;
    for (int s = 0; s < c->o->streams; s++) {
        c->st[s].deployed = widest; /* a stream serves with the widest pretrained model */
        for (int i = 0; i < c->wl.n_widths; i++)
            if (ekya_mlp_copy(&c->st[s].model[i], &c->wl.base[i]) != 0) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
    }
    return 0;
}

static void close_run(run_ctx *c)
{
    if (c->st)
        for (int s = 0; s < c->o->streams; s++) {
            for (int i = 0; i < EKYA_MAX_WIDTHS; i++)
                ekya_mlp_free(&c->st[s].model[i]);
            ekya_mlp_free(&c->st[s].pending);
            ekya_window_free(&c->st[s].win);
        }
    free(c->st);
    ekya_profiles_free(&c->prof);
    if (c->set)
        ekya_workload_close(&c->wl);
}

static void print_result(const run_ctx *c, const ekya_sim_result *r)
{
    const run_opts *o = c->o;
    if (o->json) {
        json_t *streams = json_object(), *windows = json_array();
        for (int s = 0; s < r->nstreams; s++)
            json_object_set_new(streams, c->prof.streams[s], json_real(r->stream_mean[s]));
        for (int w = 0; w < r->nwindows; w++)
            json_array_append_new(windows, json_real(r->window_mean[w]));
        json_t *j = json_pack("{s:s, s:f, s:o, s:o, s:f, s:i, s:i, s:f, s:f, s:f}", "scheduler",
                              o->scheduler, "mean_accuracy", r->mean, "streams", streams,
                              "windows", windows, "scheduler_seconds", r->sched.total_seconds,
                              "completions", r->completions, "retrainings", c->retrainings,
                              "retrain_seconds", c->retrain_seconds, "profile_seconds",
                              c->profile_seconds, "pretrain_seconds", c->wl.pretrain_seconds);
        json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(j);
        return;
    }
    printf("scheduler %s: mean accuracy %.4f (%.2f%%)\n", o->scheduler, r->mean, 100 * r->mean);
    for (int s = 0; s < r->nstreams; s++)
        printf("  stream %-12s %.4f\n", c->prof.streams[s], r->stream_mean[s]);
    for (int w = 0; w < r->nwindows; w++)
        printf("  window %-12d %.4f\n", w, r->window_mean[w]);
    printf("scheduler time: %.6f s over %d calls (max %.6f s per call)\n", r->sched.total_seconds,
           r->sched.calls, r->sched.max_seconds);
    printf("retrainings: %d started, %d completed in their window; %.3f s retraining, "
           "%.3f s micro-profiling, %.3f s pretraining (CPU)\n", c->retrainings, r->completions,
           c->retrain_seconds, c->profile_seconds, c->wl.pretrain_seconds);
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "ekya run: %s: expected an integer in %d..%d, got '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse(int argc, char **argv, run_opts *o)
{
    static const struct option longs[] = {
        {"streams", required_argument, 0, 'v'}, {"windows", required_argument, 0, 'W'},
        {"gpus", required_argument, 0, 'g'},    {"scheduler", required_argument, 0, 's'},
        {"configs", required_argument, 0, 'c'}, {"images-per-window", required_argument, 0, 'n'},
        {"seed", required_argument, 0, 'S'},    {"json", no_argument, 0, 'j'},
        {"decisions", required_argument, 0, 'D'}, {"help", no_argument, 0, 'h'},
        {"cluster", optional_argument, 0, 'C'}, {"node-devices", required_argument, 0, 'N'},
        {"device-cpus", required_argument, 0, 'U'}, {"profile-cpus", required_argument, 0, 'P'},
        {"latency", required_argument, 0, 'L'}, {"max-nodes", required_argument, 0, 'M'},
        {"namespace", required_argument, 0, 'A'},
        EKYA_CLI_PARAM_OPTIONS,                 {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    ekya_live_opts_default(&o->live);
    ekya_cli_params_default(&o->prm);
    o->images = 1000;
    o->seed = 1;
    o->configs = "small";
    o->scheduler = "thief";
    o->prm.no_carry = 1; /* each window's start accuracy is measured on its own frames */
    opterr = 0;
    optind = 1;
    int ch, seed = 1;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 'v': bad = parse_int("--streams", optarg, 1, 64, &o->streams); break;
        case 'W': bad = parse_int("--windows", optarg, 1, 1000, &o->windows); break;
        case 'n': bad = parse_int("--images-per-window", optarg, 100, 100000, &o->images); break;
        case 'S': bad = parse_int("--seed", optarg, 0, 1 << 30, &seed); break;
        case 'g': bad = ekya_cli_number("--gpus", optarg, 0, &o->prm.gpus); break;
        case 's': o->scheduler = optarg; break;
        case 'c': o->configs = optarg; break;
        case 'D': o->decisions = optarg; break;
        case 'j': o->json = 1; break;
        case 'C':
            o->cluster = 1;
            /* `--cluster ADDRESS` as well as `--cluster=ADDRESS` */
            if (!optarg && optind < argc && argv[optind][0] != '-')
                optarg = argv[optind++];
            o->live.address = optarg;
            break;
        case 'N': bad = ekya_cli_number("--node-devices", optarg, 0, &o->live.node_devices); break;
        case 'U': bad = ekya_cli_number("--device-cpus", optarg, 0, &o->live.device_cpus); break;
        case 'P': bad = ekya_cli_number("--profile-cpus", optarg, 0, &o->live.profile_cpus); break;
        case 'L': bad = ekya_cli_number("--latency", optarg, 1, &o->live.latency); break;
        case 'M': bad = parse_int("--max-nodes", optarg, 1, 10000, &o->live.max_nodes); break;
        case 'A': o->live.namespace_ = optarg; break;
        case 'h': fputs(usage, stdout); return 1;
        default:
            if ((bad = ekya_cli_param(ch, optarg, &o->prm)) <= 0)
                break;
            fprintf(stderr, "ekya run: unknown or incomplete option '%s'\n", argv[optind - 1]);
            return -1;
        }
        if (bad)
            return -1;
    }
    o->seed = (uint64_t)seed;
    if (o->cluster && o->prm.gpus) {
        fprintf(stderr, "ekya run: --gpus: with --cluster each node's devices come from the "
                        "node (its GPUs, or --node-devices)\n");
        return -1;
    }
    const char *missing = !o->streams ? "--streams" : !o->windows ? "--windows"
                        : !o->prm.gpus && !o->cluster ? "--gpus"
                        : !o->prm.length ? "--window" : NULL;
    if (missing || optind < argc) {
        fprintf(stderr, "ekya run: %s%s (see ekya run --help)\n",
                missing ? "missing " : "unexpected argument ", missing ? missing : argv[optind]);
        return -1;
    }
    return 0;
}

static int run(run_ctx *c, char *err, size_t errlen)
{
    ekya_infer_profile inf = {0};
    ekya_scheduler sched = {0};
    FILE *dec = NULL;
    int rc = -1;
    if (open_run(c, err, errlen) != 0 || ekya_run_inference_profile(&c->wl, 0, &inf, NULL, err, errlen) != 0 ||
        ekya_scheduler_create(c->o->scheduler, &c->prof, &sched, err, errlen) != 0)
        goto out;
    c->prune = sched.plans_with_predictions;
    if (c->o->decisions && !(dec = fopen(c->o->decisions, "w"))) {
        snprintf(err, errlen, "%s: cannot open for writing", c->o->decisions);
        goto out;
    }
    ekya_sim_hooks hooks = {c, hook_window, hook_retrain, hook_complete};
    ekya_sim_result r;
    rc = ekya_simulate_hooked(&c->prof, &inf, &c->o->prm, &sched, &hooks, dec, NULL, &r, err,
                              errlen);
    if (rc == 0) {
        print_result(c, &r);
        ekya_sim_result_free(&r);
    }
out:
    if (dec && fclose(dec) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: write failed", c->o->decisions);
        rc = -1;
    }
    if (sched.destroy)
        ekya_scheduler_destroy(&sched);
    ekya_infer_free(&inf);
    close_run(c);
    return rc;
}

/* `ekya run --cluster`: the options of a run handed to the live driver. */
static int run_live(run_opts *o)
{
    ekya_live_opts *lo = &o->live;
    lo->streams = o->streams;
    lo->windows = o->windows;
    lo->images = o->images;
    lo->seed = o->seed;
    lo->configs = o->configs;
    lo->scheduler = o->scheduler;
    lo->prm = o->prm;
    lo->json = o->json;
    char err[512] = "";
    if (o->decisions && !(lo->decisions = fopen(o->decisions, "w"))) {
        fprintf(stderr, "ekya run: %s: cannot open for writing\n", o->decisions);
        return 1;
    }
    int rc = ekya_live_run(lo, err, sizeof err);
    if (lo->decisions && fclose(lo->decisions) != 0 && rc == 0) {
        snprintf(err, sizeof err, "%s: write failed", o->decisions);
        rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "ekya run: %s\n", err[0] ? err : "failed");
        return 1;
    }
    return 0;
}

int ekya_cmd_run(int argc, char **argv)
{
    run_opts o;
    int prc = parse(argc, argv, &o);
    if (prc != 0)
        return prc > 0 ? 0 : 2;
    if (o.cluster)
        return run_live(&o);
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.o = &o;
    char err[512] = "";
    if (run(&c, err, sizeof err) != 0) {
        fprintf(stderr, "ekya run: %s\n", err[0] ? err : "failed");
        return 1;
    }
    ekya_cli_note_sampling(&o.prm);
    return 0;
}
