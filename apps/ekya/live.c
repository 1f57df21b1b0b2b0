/* live.c: the live executor and driver (ekya/live.h). The scheduling loop is drive.c's,
 * one window and one node at a time (ekya_drive_window); this file is the executor that
 * carries each step out on the cluster, and the driver around it: the cluster's nodes,
 * the streams' frames and models, a thread per node and window, the summary. */
#include "ekya/live.h"

#include <escher/escher.h>

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ekya/live_wire.h"
#include "ekya/profiler.h"
#include "ekya/rng.h"
#include "ekya/run_cmd.h"
#include "ekya/sched.h"
#include "ekya/sim.h"
#include "ekya/workload.h"

#define LIVE_LIB "libekya_live.so"
#define CALL_TIMEOUT_MS 60000
/* How long a node whose calls failed is given to be declared dead before the failure is
 * the run's: three times the GCS's default --node-timeout-ms. A raylet killed just before
 * a window starts fails that window's first calls well before its verdict. */
#define VERDICT_WAIT_S 30
#define MAX_LATENCIES 100000
#define LIVE_HEADROOM 1.25

typedef struct {
    char *id;
    double devices;      /* G */
    const char *backing; /* "GPU" or "CPU" */
    double per_device;   /* backing units per device */
    atomic_int dead;
    double dead_at;      /* monotonic seconds */
} live_node;

typedef struct {
    int node;            /* where it runs */
    int actors_node;     /* where its actors are (-1: none) */
    esc_actor *infer, *train;
    ekya_mlp model[EKYA_MAX_WIDTHS];
    int deployed;        /* index into model[] served */
    esc_ref *frames;     /* this window's train and test splits (an object) */
    esc_ref *shown;      /* the frames its camera shows this window (an object) */
    /* this window */
    double infer_share, train_share; /* devices held */
    int sub;             /* subsampling told to the inference actor (-1: not yet) */
    int cfg;             /* configuration retraining (global index) or EKYA_NO_RETRAIN */
    esc_ref *epoch;      /* the epoch call in flight */
    double progress;     /* device-seconds spent on cfg */
    int completed;
    double model_acc;    /* accuracy of the deployed model on this window's test frames */
    esc_ref *serve;
    double failed_over_at; /* monotonic seconds its node died; 0: none pending */
} live_stream;

typedef struct {
    const ekya_live_opts *o;
    esc_client *c;
    ekya_workload wl;
    const ekya_retrain_config *set;
    int n_cfg, nconfigs;
    ekya_infer_profile inf;
    double frame_seconds, fps;
    ekya_profiles prof;  /* every stream and window: predictions, and actuals retrained */
    live_node *nodes;
    int nnodes;
    live_stream *st;
    double *acc;         /* [s * windows + w] measured */
    pthread_mutex_t mu;  /* below, and the decisions file */
    pthread_cond_t died; /* broadcast under mu when a node is declared dead */
    double *latency_ms;
    int nlat;
    double *overhead;    /* per node window: seconds of runtime work, for the summary */
    int nover, capover;
    double *profile_wall; /* per node window: seconds until the profiles were in */
    int retrainings, completions;
    double retrain_seconds, profile_seconds;
    ekya_sched_stats stats;
    json_t *failovers;
} live_run;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(char *err, size_t errlen, const char *what, const esc_status *st)
{
    snprintf(err, errlen, "%s: %.200s", what, st->message[0] ? st->message : esc_status_name(st->code));
    return -1;
}

static void name_of(int s, const char *role, char *buf, size_t len)
{
    snprintf(buf, len, "s%d.%s", s, role);
}

static void full_name(const live_run *r, int s, const char *role, char *buf, size_t len)
{
    snprintf(buf, len, "%s/s%d.%s", esc_client_namespace(r->c), s, role);
}

/* Forgets a reference without releasing its object: for calls on a dead node, whose
 * results no node holds (a release would wait on that node for nothing). */
static void forget_ref(esc_ref **ref)
{
    esc_ref_free(*ref);
    *ref = NULL;
}

static void drop_ref(live_run *r, esc_ref **ref)
{
    if (*ref) {
        esc_ref_release(r->c, *ref, NULL);
        esc_ref_free(*ref);
        *ref = NULL;
    }
}

/* ------------------------------------------------------------------ one node window */

typedef struct {
    live_run *r;
    int node, w;
    int n;
    int *streams;        /* global stream indices */
    ekya_profiles sub;   /* this node's streams, this window */
    double t0;           /* window start, monotonic */
    double overhead;     /* seconds of runtime work in this window */
    int placed;          /* streams that got new actors this window */
    double profiled_at;
    char err[256];
} node_window;

static live_stream *local(node_window *nw, int i) { return &nw->r->st[nw->streams[i]]; }

static int update_infer(node_window *nw, int i, int sub, const ekya_mlp *m, esc_ref **out,
                        char *err, size_t errlen);
static int wait_calls(live_run *r, esc_ref **refs, int n, char *err, size_t errlen);
static int ex_apply(void *ctx, const ekya_step *step, char *err, size_t errlen);

static int cell_index(int i, int k) { return i * EKYA_N_EPOCH_CHOICES + k; }

static ekya_cell *global_cell(live_run *r, int s, int w, int c)
{
    return &r->prof.cells[((size_t)s * (size_t)r->prof.nwindows + (size_t)w) * (size_t)r->nconfigs +
                          (size_t)c];
}

static int width_index(const live_run *r, int hidden)
{
    for (int i = 0; i < r->wl.n_widths; i++)
        if (r->wl.base[i].hidden == hidden)
            return i;
    return -1;
}

/* A model as an argument (inline bytes, owned by b). */
static esc_task_arg model_arg(ekya_wbuf *b, const ekya_mlp *m)
{
    ekya_wire_put_model(b, m);
    esc_task_arg a = {b->data, b->len, NULL};
    return a;
}

/* Makes the stream's resources and actors on its node (after a move, or at the start). */
static int place_stream(node_window *nw, int i, char *err, size_t errlen)
{
    live_run *r = nw->r;
    live_stream *ls = local(nw, i);
    int s = nw->streams[i];
    if (ls->actors_node == nw->node)
        return 0;
    esc_actor_free(ls->infer);
    esc_actor_free(ls->train);
    ls->infer = ls->train = NULL;
    ls->infer_share = ls->train_share = 0;
    ls->sub = -1;
    char home[64], full[96];
    name_of(s, "home", home, sizeof home);
    esc_status st;
    esc_target t = ESC_NODE(r->nodes[nw->node].id);
    uint64_t seq;
    if (esc_resource_set(r->c, home, ESC_QTY(3), &t, &seq, &st) != ESC_OK ||
        esc_wait_applied(r->c, seq, (const char *const *)&r->nodes[nw->node].id, 1,
                         CALL_TIMEOUT_MS, &st) != ESC_OK)
        return fail(err, errlen, "placing a stream", &st);
    full_name(r, s, "home", full, sizeof full);
    esc_amount hold = {full, ESC_QTY(1), false};
    char an[64];
    snprintf(an, sizeof an, "ekya-s%d-infer", s);
    esc_actor_spec spec = {an, LIVE_LIB, NULL, &hold, 1, 0, NULL, 0, 2};
    if (esc_actor_create(r->c, &spec, &ls->infer, &st) != ESC_OK)
        return fail(err, errlen, "creating an inference actor", &st);
    snprintf(an, sizeof an, "ekya-s%d-train", s);
    spec.max_concurrency = 1;
    if (esc_actor_create(r->c, &spec, &ls->train, &st) != ESC_OK)
        return fail(err, errlen, "creating a training actor", &st);
    ls->actors_node = nw->node;
    nw->placed++;
    esc_ref *u = NULL; /* the deployed model, before the first frame */
    int rc = update_infer(nw, i, -1, &ls->model[ls->deployed], &u, err, errlen);
    if (rc == 0)
        rc = wait_calls(r, &u, 1, err, errlen);
    return rc;
}

/* Starts the window's serve call on the stream's inference actor. */
static int start_serve(node_window *nw, int i, char *err, size_t errlen)
{
    live_run *r = nw->r;
    live_stream *ls = local(nw, i);
    ekya_wbuf b = {0};
    ekya_w_bytes(&b, "EKS1", 4);
    ekya_w_i32(&b, nw->streams[i]);
    ekya_w_i32(&b, nw->w);
    ekya_w_f64(&b, r->o->prm.length);
    ekya_w_f64(&b, r->fps);
    ekya_w_f64(&b, r->o->latency);
    esc_task_arg args[2] = {{b.data, b.len, NULL}, {NULL, 0, ls->shown}};
    esc_status st;
    int rc = esc_actor_call(r->c, ls->infer, "ekya_infer_serve", args, 2, 1, &ls->serve, &st);
    ekya_wbuf_free(&b);
    return rc == ESC_OK ? 0 : fail(err, errlen, "starting inference", &st);
}

/* The profiling request of one stream: the configurations, the profiler's knobs. */
static void profile_request(const live_run *r, int s, int w, ekya_wbuf *b)
{
    ekya_profiler_opts po;
    ekya_profiler_opts_default(&po, r->o->seed);
    ekya_w_bytes(b, "EKP1", 4);
    ekya_w_i32(b, r->n_cfg);
    ekya_w_i32(b, r->wl.n_widths);
    ekya_w_i32(b, r->st[s].deployed);
    for (int i = 0; i < r->n_cfg; i++)
        ekya_wire_put_config(b, &r->set[i]);
    ekya_w_i64(b, (int64_t)ekya_seed_mix(r->o->seed, (uint64_t)s, (uint64_t)w, 0x5000));
    ekya_w_i32(b, po.epochs);
    ekya_w_f64(b, po.data_frac);
}

static int submit_profile(node_window *nw, int i, esc_ref **out, char *err, size_t errlen)
{
    live_run *r = nw->r;
    int s = nw->streams[i];
    live_stream *ls = local(nw, i);
    ekya_wbuf req = {0}, m[EKYA_MAX_WIDTHS];
    memset(m, 0, sizeof m);
    profile_request(r, s, nw->w, &req);
    esc_task_arg args[2 + EKYA_MAX_WIDTHS] = {{req.data, req.len, NULL}, {NULL, 0, ls->frames}};
    for (int k = 0; k < r->wl.n_widths; k++)
        args[2 + k] = model_arg(&m[k], &ls->model[k]);
    /* on the stream's node (its home's third unit): the node's own CPU profiles its
     * streams, next to their frames and models */
    char home[96];
    full_name(r, s, "home", home, sizeof home);
    esc_amount need[2] = {{"CPU", ESC_QTY(r->o->profile_cpus), false}, {home, ESC_QTY(1), false}};
    esc_task_spec spec = {.name = "ekya_live_profile", .library = LIVE_LIB, .symbol = "ekya_live_profile",
                          .resources = need, .nresources = 2, .args = args,
                          .nargs = 2 + (size_t)r->wl.n_widths, .num_returns = 1};
    esc_status st;
    int rc = esc_task_submit(r->c, &spec, out, NULL, &st);
    ekya_wbuf_free(&req);
    for (int k = 0; k < r->wl.n_widths; k++)
        ekya_wbuf_free(&m[k]);
    return rc == ESC_OK ? 0 : fail(err, errlen, "submitting micro-profiling", &st);
}

/* Reads a profiling reply into the global table (predictions, and the actuals until a
 * retraining measures them) and the node's table. */
static int take_profile(node_window *nw, int i, const void *data, size_t len)
{
    live_run *r = nw->r;
    int s = nw->streams[i];
    ekya_rbuf rd = ekya_rbuf_of(data, len);
    ekya_r_tag(&rd, "EKR1");
    double start = ekya_r_f64(&rd), secs = ekya_r_f64(&rd);
    double per_device = r->nodes[nw->node].per_device;
    double unit = strcmp(r->nodes[nw->node].backing, "CPU") == 0 ? per_device : 1;
    for (int c = 0; c < r->n_cfg; c++) {
        int pruned = ekya_r_i32(&rd);
        for (int k = 0; k < EKYA_N_EPOCH_CHOICES; k++) {
            double acc = ekya_r_f64(&rd), cost = ekya_r_f64(&rd) / unit;
            ekya_cell *g = global_cell(r, s, nw->w, cell_index(c, k));
            g->present = !pruned;
            g->pred_end_acc = g->end_acc = acc;
            g->pred_gpu_seconds = g->gpu_seconds = cost > 0 ? cost : 1e-9;
            nw->sub.cells[(size_t)i * (size_t)r->nconfigs + (size_t)cell_index(c, k)] = *g;
        }
    }
    if (rd.bad)
        return -1;
    r->prof.start_acc[(size_t)s * (size_t)r->prof.nwindows + (size_t)nw->w] = start;
    nw->sub.start_acc[i] = start;
    local(nw, i)->model_acc = start;
    pthread_mutex_lock(&r->mu);
    r->profile_seconds += secs;
    pthread_mutex_unlock(&r->mu);
    return 0;
}

/* The window's micro-profiling: one task per stream, all at once. */
static int profile_window(node_window *nw, char *err, size_t errlen)
{
    esc_ref **refs = calloc((size_t)nw->n, sizeof *refs);
    int rc = refs ? 0 : -1;
    for (int i = 0; rc == 0 && i < nw->n; i++)
        rc = submit_profile(nw, i, &refs[i], err, errlen);
    for (int i = 0; rc == 0 && i < nw->n; i++) {
        void *data = NULL;
        size_t len = 0;
        esc_status st;
        if (esc_get(nw->r->c, refs[i], CALL_TIMEOUT_MS, &data, &len, &st) != ESC_OK)
            rc = fail(err, errlen, "micro-profiling", &st);
        else if (take_profile(nw, i, data, len) != 0)
            rc = -1, snprintf(err, errlen, "micro-profiling: unreadable reply");
        free(data);
    }
    for (int i = 0; refs && i < nw->n; i++)
        drop_ref(nw->r, &refs[i]);
    free(refs);
    return rc;
}

/* ------------------------------------------------------------------ the executor */

static int ex_start(void *ctx, int window, double length, char *err, size_t errlen)
{
    (void)ctx;
    (void)window;
    (void)length;
    (void)err;
    (void)errlen;
    return 0; /* placement, serving and profiling ran before the scheduler was made */
}

static int ex_observe(void *ctx, double *model_acc, int *training_cfg, double *progress,
                      int *completed)
{
    node_window *nw = ctx;
    for (int i = 0; i < nw->n; i++) {
        live_stream *ls = local(nw, i);
        model_acc[i] = ls->model_acc;
        training_cfg[i] = ls->cfg;
        progress[i] = ls->progress;
        completed[i] = ls->completed;
    }
    return 0;
}

/* What an actor of stream s holds for a share: its home unit and the share. */
static int resize(node_window *nw, int i, int train, double share, int timeout_ms, char *err,
                  size_t errlen)
{
    live_run *r = nw->r;
    live_stream *ls = local(nw, i);
    char home[96], res[96];
    full_name(r, nw->streams[i], "home", home, sizeof home);
    full_name(r, nw->streams[i], train ? "train" : "infer", res, sizeof res);
    esc_amount want[2] = {{home, ESC_QTY(1), false}, {res, ESC_QTY(share), false}};
    esc_status st;
    if (esc_actor_resize(r->c, train ? ls->train : ls->infer, want, share > 0 ? 2 : 1,
                         timeout_ms, NULL, NULL, &st) != ESC_OK)
        return fail(err, errlen, "resizing an actor", &st);
    *(train ? &ls->train_share : &ls->infer_share) = share;
    return 0;
}

/* The step's capacities on this node, one atomic batch. */
static int commit_shares(node_window *nw, const ekya_step *step, char *err, size_t errlen)
{
    live_run *r = nw->r;
    live_node *node = &r->nodes[nw->node];
    esc_batch *b = esc_batch_new();
    esc_target t = ESC_NODE(node->id);
    esc_amount backing = {node->backing, ESC_QTY(node->per_device), false};
    for (int i = 0; i < nw->n; i++) {
        const ekya_stream_alloc *a = &step->alloc[i];
        char name[64];
        name_of(nw->streams[i], "infer", name, sizeof name);
        esc_batch_set_backed(b, name, ESC_QTY(a->infer_share), &backing, 1, &t);
        name_of(nw->streams[i], "train", name, sizeof name);
        double tr = a->retrain_cfg == EKYA_NO_RETRAIN ? 0 : a->retrain_share;
        esc_batch_set_backed(b, name, ESC_QTY(tr), &backing, 1, &t);
    }
    uint64_t seq;
    esc_status st;
    int rc = esc_batch_commit(r->c, b, &seq, &st);
    esc_batch_free(b);
    if (rc == ESC_OK)
        rc = esc_wait_applied(r->c, seq, (const char *const *)&node->id, 1, CALL_TIMEOUT_MS, &st);
    return rc == ESC_OK ? 0 : fail(err, errlen, "setting the shares", &st);
}

/* Tells the inference actor its subsampling and (when m is not NULL) a new model. */
static int update_infer(node_window *nw, int i, int sub, const ekya_mlp *m, esc_ref **out,
                        char *err, size_t errlen)
{
    live_run *r = nw->r;
    ekya_wbuf h = {0}, mb = {0};
    ekya_w_bytes(&h, "EKU1", 4);
    ekya_w_i32(&h, sub);
    esc_task_arg args[2] = {{h.data, h.len, NULL}, {NULL, 0, NULL}};
    if (m)
        args[1] = model_arg(&mb, m);
    esc_status st;
    int rc = esc_actor_call(r->c, local(nw, i)->infer, "ekya_infer_update", args, m ? 2 : 1, 1,
                            out, &st);
    ekya_wbuf_free(&h);
    ekya_wbuf_free(&mb);
    return rc == ESC_OK ? 0 : fail(err, errlen, "updating inference", &st);
}

static int next_epoch(node_window *nw, int i, char *err, size_t errlen)
{
    esc_status st;
    if (esc_actor_call(nw->r->c, local(nw, i)->train, "ekya_train_epoch", NULL, 0, 1,
                       &local(nw, i)->epoch, &st) != ESC_OK)
        return fail(err, errlen, "retraining", &st);
    return 0;
}

/* Begins retraining configuration cfg (global index) on the stream's training actor. */
static int begin_retraining(node_window *nw, int i, int cfg, char *err, size_t errlen)
{
    live_run *r = nw->r;
    live_stream *ls = local(nw, i);
    int s = nw->streams[i];
    const ekya_retrain_config *c = &r->set[cfg / EKYA_N_EPOCH_CHOICES];
    int wi = width_index(r, c->hidden);
    if (wi < 0)
        return snprintf(err, errlen, "no model of width %d", c->hidden), -1;
    ekya_wbuf h = {0}, mb = {0};
    ekya_w_bytes(&h, "EKT1", 4);
    ekya_wire_put_config(&h, c);
    ekya_w_i32(&h, ekya_epoch_choices[cfg % EKYA_N_EPOCH_CHOICES]);
    ekya_w_i64(&h, (int64_t)ekya_seed_mix(r->o->seed, (uint64_t)s, (uint64_t)nw->w,
                                          0x9000 + (uint64_t)cfg));
    esc_task_arg args[3] = {{h.data, h.len, NULL}, {NULL, 0, ls->frames}, model_arg(&mb, &ls->model[wi])};
    esc_ref *ref = NULL;
    esc_status st;
    int rc = esc_actor_call(r->c, ls->train, "ekya_train_begin", args, 3, 1, &ref, &st);
    ekya_wbuf_free(&h);
    ekya_wbuf_free(&mb);
    esc_ref_free(ref); /* a failed begin shows as a failed epoch */
    if (rc != ESC_OK)
        return fail(err, errlen, "starting a retraining", &st);
    ls->cfg = cfg;
    ls->progress = 0;
    pthread_mutex_lock(&r->mu);
    r->retrainings++;
    pthread_mutex_unlock(&r->mu);
    return next_epoch(nw, i, err, errlen);
}

static void record_latency(live_run *r, double ms)
{
    pthread_mutex_lock(&r->mu);
    if (r->nlat < MAX_LATENCIES)
        r->latency_ms[r->nlat++] = ms;
    pthread_mutex_unlock(&r->mu);
}

/* Waits until every call in refs[0..n) has run, then frees them. */
static int wait_calls(live_run *r, esc_ref **refs, int n, char *err, size_t errlen)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        void *data = NULL;
        size_t len;
        esc_status st;
        if (rc == 0 && esc_get(r->c, refs[i], CALL_TIMEOUT_MS, &data, &len, &st) != ESC_OK)
            rc = fail(err, errlen, "an actor call", &st);
        free(data);
        drop_ref(r, &refs[i]);
    }
    return rc;
}

/* A step: shrinking holders first (so the carve of what grows finds the CPUs free), the
 * capacities in one batch, growing holders, then the actors' new subsampling and
 * retrainings. Its latency runs until every holder runs at its new share. */
static int ex_apply(void *ctx, const ekya_step *step, char *err, size_t errlen)
{
    node_window *nw = ctx;
    live_run *r = nw->r;
    double t0 = mono();
    esc_ref **upd = calloc((size_t)nw->n, sizeof *upd);
    int nupd = 0, rc = upd ? 0 : -1;
    for (int i = 0; rc == 0 && i < nw->n; i++) {
        const ekya_stream_alloc *a = &step->alloc[i];
        live_stream *ls = local(nw, i);
        double tr = a->retrain_cfg == EKYA_NO_RETRAIN ? 0 : a->retrain_share;
        if (a->infer_share < ls->infer_share)
            rc = resize(nw, i, 0, a->infer_share, 0, err, errlen);
        if (rc == 0 && tr < ls->train_share)
            rc = resize(nw, i, 1, tr, 0, err, errlen);
    }
    if (rc == 0)
        rc = commit_shares(nw, step, err, errlen);
    for (int i = 0; rc == 0 && i < nw->n; i++) {
        const ekya_stream_alloc *a = &step->alloc[i];
        live_stream *ls = local(nw, i);
        double tr = a->retrain_cfg == EKYA_NO_RETRAIN ? 0 : a->retrain_share;
        if (a->infer_share > ls->infer_share)
            rc = resize(nw, i, 0, a->infer_share, CALL_TIMEOUT_MS, err, errlen);
        if (rc == 0 && tr > ls->train_share)
            rc = resize(nw, i, 1, tr, CALL_TIMEOUT_MS, err, errlen);
        int sub = (int)ekya_infer_subsampling(&r->inf, a->infer_share, r->o->prm.rmax);
        if (rc == 0 && sub != ls->sub && (rc = update_infer(nw, i, sub, NULL, &upd[nupd], err,
                                                            errlen)) == 0) {
            nupd++;
            ls->sub = sub;
        }
    }
    if (rc == 0)
        rc = wait_calls(r, upd, nupd, err, errlen);
    else
        wait_calls(r, upd, nupd, NULL, 0);
    free(upd);
    double spent = mono() - t0;
    if (rc == 0)
        record_latency(r, 1000 * spent);
    nw->overhead += spent;
    for (int i = 0; rc == 0 && i < nw->n; i++) {
        const ekya_stream_alloc *a = &step->alloc[i];
        live_stream *ls = local(nw, i);
        if (a->retrain_cfg == ls->cfg)
            continue;
        drop_ref(r, &ls->epoch); /* a switch starts over */
        ls->cfg = EKYA_NO_RETRAIN;
        if (a->retrain_cfg != EKYA_NO_RETRAIN)
            rc = begin_retraining(nw, i, a->retrain_cfg, err, errlen);
    }
    return rc;
}

/* A retraining finished: its model is deployed at once (the update call swaps it in). */
static int deploy(node_window *nw, int i, ekya_rbuf *rd, double cpu, char *err, size_t errlen)
{
    live_run *r = nw->r;
    live_stream *ls = local(nw, i);
    double acc = ekya_r_f64(rd);
    ekya_mlp m;
    if (ekya_wire_get_model(rd, &m) != 0)
        return snprintf(err, errlen, "retraining: unreadable model"), -1;
    int wi = width_index(r, m.hidden);
    if (wi < 0) {
        ekya_mlp_free(&m);
        return snprintf(err, errlen, "retraining: model of unknown width %d", m.hidden), -1;
    }
    ekya_mlp_free(&ls->model[wi]);
    ls->model[wi] = m;
    ls->deployed = wi;
    esc_ref *u = NULL;
    if (update_infer(nw, i, -1, &ls->model[wi], &u, err, errlen) != 0)
        return -1;
    esc_ref_free(u); /* the swap runs beside the serve call; its result is not needed */
    ekya_cell *g = global_cell(r, nw->streams[i], nw->w, ls->cfg);
    g->end_acc = acc;
    g->gpu_seconds = ls->progress;
    ls->model_acc = acc;
    ls->completed = 1;
    ls->cfg = EKYA_NO_RETRAIN;
    pthread_mutex_lock(&r->mu);
    r->completions++;
    r->retrain_seconds += cpu;
    pthread_mutex_unlock(&r->mu);
    return 0;
}

/* An epoch call returned: 1 when the retraining completed, 0 when it goes on (or was
 * lost: a failed call ends it without a model), -1 on error. */
static int epoch_done(node_window *nw, int i, char *err, size_t errlen)
{
    live_run *r = nw->r;
    live_stream *ls = local(nw, i);
    void *data = NULL;
    size_t len = 0;
    esc_status st;
    int got = esc_get(r->c, ls->epoch, CALL_TIMEOUT_MS, &data, &len, &st);
    drop_ref(r, &ls->epoch);
    if (got != ESC_OK) {
        fprintf(stderr, "ekya run: stream %d: retraining lost: %s\n", nw->streams[i], st.message);
        ls->cfg = EKYA_NO_RETRAIN;
        return 0;
    }
    ekya_rbuf rd = ekya_rbuf_of(data, len);
    ekya_r_tag(&rd, "EKE1");
    int epoch = ekya_r_i32(&rd), epochs = ekya_r_i32(&rd);
    double cpu = ekya_r_f64(&rd);
    int done = ekya_r_i32(&rd), rc = 0;
    double unit = strcmp(r->nodes[nw->node].backing, "CPU") == 0 ? r->nodes[nw->node].per_device : 1;
    ls->progress = cpu / unit;
    if (rd.bad || epoch < 1 || epoch > epochs)
        rc = -1, snprintf(err, errlen, "retraining: unreadable epoch reply");
    else if (done)
        rc = deploy(nw, i, &rd, cpu, err, errlen) == 0 ? 1 : -1;
    else
        rc = next_epoch(nw, i, err, errlen);
    free(data);
    return rc;
}

/* Waits for the next event: an epoch call's result (the next epoch starts, or the
 * retraining completes), or the window end (the serve calls return then). */
static int ex_advance(void *ctx, double *now, int *stream, char *err, size_t errlen)
{
    node_window *nw = ctx;
    live_run *r = nw->r;
    const esc_ref **refs = calloc(2 * (size_t)nw->n, sizeof *refs);
    int *who = calloc(2 * (size_t)nw->n, sizeof *who);
    bool *ready = calloc(2 * (size_t)nw->n, sizeof *ready);
    int rc = refs && who && ready ? 0 : -1;
    *stream = -1;
    while (rc == 0) {
        double t = mono() - nw->t0, left = r->o->prm.length - t;
        if (left <= 0 || atomic_load(&r->nodes[nw->node].dead))
            break;
        size_t n = 0;
        for (int i = 0; i < nw->n; i++) {
            if (local(nw, i)->epoch)
                who[n] = i, refs[n++] = local(nw, i)->epoch;
            if (local(nw, i)->serve)
                who[n] = -1 - i, refs[n++] = local(nw, i)->serve;
        }
        size_t nready = 0;
        esc_status st;
        int ms = (int)ceil(left * 1000);
        if (n == 0) {
            usleep((useconds_t)ms * 1000); /* nothing runs here: only the window end */
            continue;
        }
        if (esc_wait(r->c, (const esc_ref *const *)refs, n, 1, ms, ready, &nready, &st) != ESC_OK) {
            rc = fail(err, errlen, "waiting", &st);
            break;
        }
        int done = 0;
        for (size_t k = 0; rc == 0 && k < n && !done; k++)
            if (ready[k] && who[k] >= 0 && (done = epoch_done(nw, who[k], err, errlen)) == 1)
                *stream = who[k];
        if (done < 0)
            rc = -1;
        if (done == 1)
            break;
        for (size_t k = 0; k < n; k++)
            if (ready[k] && who[k] < 0 && mono() - nw->t0 < r->o->prm.length)
                goto out; /* a serve call ended early: its actor or node failed */
    }
out:
    *now = fmin(mono() - nw->t0, r->o->prm.length);
    free(refs);
    free(who);
    free(ready);
    return rc;
}

/* The window is over: retraining in flight is abandoned (its window's data is stale), and
 * each serve call gives the stream's measured accuracy. */
static int ex_end(void *ctx, char *err, size_t errlen)
{
    node_window *nw = ctx;
    live_run *r = nw->r;
    (void)err;
    (void)errlen;
    int dead = atomic_load(&r->nodes[nw->node].dead);
    for (int i = 0; i < nw->n; i++) {
        live_stream *ls = local(nw, i);
        int s = nw->streams[i];
        if (dead)
            forget_ref(&ls->epoch);
        else
            drop_ref(r, &ls->epoch);
        ls->cfg = EKYA_NO_RETRAIN;
        void *data = NULL;
        size_t len = 0;
        esc_status st;
        double acc = 0, first = -1;
        /* on a dead node the call's answer never comes: the window is lost for it */
        int wait_ms = dead ? 0 : CALL_TIMEOUT_MS;
        st.message[0] = '\0';
        if (ls->serve && esc_get(r->c, ls->serve, wait_ms, &data, &len, &st) == ESC_OK) {
            ekya_rbuf rd = ekya_rbuf_of(data, len);
            ekya_r_tag(&rd, "EKV1");
            int64_t frames = ekya_r_i64(&rd), correct = ekya_r_i64(&rd);
            ekya_r_i64(&rd);
            ekya_r_f64(&rd);
            first = ekya_r_f64(&rd);
            acc = !rd.bad && frames > 0 ? (double)correct / (double)frames : 0;
        } else if (ls->serve) {
            fprintf(stderr, "ekya run: stream %d window %d: inference failed: %s\n", s, nw->w,
                    st.message);
        }
        free(data);
        if (dead)
            forget_ref(&ls->serve);
        else
            drop_ref(r, &ls->serve);
        r->acc[(size_t)s * (size_t)r->o->windows + (size_t)nw->w] = acc;
        if (ls->failed_over_at > 0 && first >= 0) {
            pthread_mutex_lock(&r->mu);
            json_array_append_new(r->failovers,
                                  json_pack("{s:i, s:i, s:f}", "stream", s, "window", nw->w,
                                            "seconds", nw->t0 + first - ls->failed_over_at));
            pthread_mutex_unlock(&r->mu);
            ls->failed_over_at = 0;
        }
    }
    return 0;
}

/* The node's table for this window: its streams, every configuration. */
static int node_table(node_window *nw)
{
    live_run *r = nw->r;
    if (ekya_profiles_alloc(&nw->sub, nw->n, 1, r->nconfigs) != 0)
        return -1;
    for (int i = 0; i < nw->n; i++)
        if (!(nw->sub.streams[i] = strdup(r->prof.streams[nw->streams[i]])))
            return -1;
    for (int c = 0; c < r->nconfigs; c++) {
        nw->sub.configs[c].epochs = r->prof.configs[c].epochs;
        if (!(nw->sub.configs[c].name = strdup(r->prof.configs[c].name)))
            return -1;
    }
    nw->sub.window_ids[0] = nw->w;
    nw->sub.has_pred = 1;
    return 0;
}

/* Until the window's first decision, streams newly placed on a node (the first window, a
 * move after a node died) need shares to serve with: every stream of the node gets an
 * equal inference share (at most rmax, in whole quanta) and no retraining. */
static int provisional_shares(node_window *nw, char *err, size_t errlen)
{
    live_run *r = nw->r;
    double g = r->nodes[nw->node].devices, q = ekya_params_delta(&r->o->prm);
    double share = floor(fmin(r->o->prm.rmax, g / nw->n) / q + 1e-9) * q;
    ekya_stream_alloc *a = calloc((size_t)nw->n, sizeof *a);
    if (!a)
        return snprintf(err, errlen, "out of memory"), -1;
    for (int i = 0; i < nw->n; i++) {
        a[i].retrain_cfg = EKYA_NO_RETRAIN;
        a[i].infer_share = share;
    }
    ekya_step step = {EKYA_STEP_START, 0, -1, nw->n, a};
    int rc = ex_apply(nw, &step, err, errlen);
    free(a);
    return rc;
}

/* Everything before the first decision: actors in place, serving, profiles in. */
static int prepare(node_window *nw, char *err, size_t errlen)
{
    int rc = node_table(nw) == 0 ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    for (int i = 0; rc == 0 && i < nw->n; i++) {
        live_stream *ls = local(nw, i);
        ls->completed = 0;
        ls->progress = 0;
        ls->cfg = EKYA_NO_RETRAIN;
        rc = place_stream(nw, i, err, errlen);
    }
    if (rc == 0 && nw->placed > 0)
        rc = provisional_shares(nw, err, errlen);
    for (int i = 0; rc == 0 && i < nw->n; i++)
        rc = start_serve(nw, i, err, errlen);
    nw->overhead += mono() - nw->t0;
    if (rc == 0)
        rc = profile_window(nw, err, errlen);
    nw->profiled_at = mono() - nw->t0;
    return rc;
}

/* Whether node k is declared dead within VERDICT_WAIT_S: a node whose calls failed is
 * either dying (its streams lose the window and move at the next) or the failure is the
 * run's own. */
static int await_verdict(live_run *r, int k)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += VERDICT_WAIT_S;
    pthread_mutex_lock(&r->mu);
    while (!atomic_load(&r->nodes[k].dead))
        if (pthread_cond_timedwait(&r->died, &r->mu, &until) != 0)
            break;
    pthread_mutex_unlock(&r->mu);
    return atomic_load(&r->nodes[k].dead);
}

static void *node_thread(void *arg)
{
    node_window *nw = arg;
    live_run *r = nw->r;
    ekya_params prm = r->o->prm;
    prm.gpus = r->nodes[nw->node].devices;
    ekya_scheduler sched = {0};
    ekya_window_decision d = {0};
    ekya_sched_stats stats = {0};
    nw->t0 = mono();
    int rc = prepare(nw, nw->err, sizeof nw->err);
    if (rc == 0)
        rc = ekya_scheduler_create(r->o->scheduler, &nw->sub, &sched, nw->err, sizeof nw->err);
    if (rc == 0 && sched.plans_with_predictions == 0)
        for (size_t k = 0; k < (size_t)nw->n * (size_t)r->nconfigs; k++)
            nw->sub.cells[k].present = 1; /* a fixed choice runs whatever was pruned */
    ekya_executor ex = {nw, ex_start, ex_observe, ex_apply, ex_advance, ex_end};
    if (rc == 0)
        rc = ekya_drive_window(&nw->sub, &r->inf, &prm, &sched, &ex, 0, &d, &stats, nw->err,
                               sizeof nw->err);
    if (rc != 0 && await_verdict(r, nw->node)) {
        ex_end(nw, NULL, 0); /* its streams lost the window; they move at the next */
        rc = 0;
    }
    pthread_mutex_lock(&r->mu);
    r->stats.total_seconds += stats.total_seconds;
    r->stats.calls += stats.calls;
    r->stats.max_seconds = fmax(r->stats.max_seconds, stats.max_seconds);
    if (r->o->decisions && d.nsteps > 0) {
        d.window = 0;
        ekya_window_decision_write_json(r->o->decisions, &nw->sub, &d);
    }
    pthread_mutex_unlock(&r->mu);
    ekya_window_decision_free(&d);
    if (sched.destroy)
        ekya_scheduler_destroy(&sched);
    ekya_profiles_free(&nw->sub);
    if (rc != 0 && !nw->err[0])
        snprintf(nw->err, sizeof nw->err, "node %s failed", r->nodes[nw->node].id);
    return rc == 0 ? NULL : nw;
}

/* ------------------------------------------------------------------ the driver */

static void on_node_dead(void *ud, const char *node_id)
{
    live_run *r = ud;
    for (int k = 0; k < r->nnodes; k++)
        if (strcmp(r->nodes[k].id, node_id) == 0 && !atomic_load(&r->nodes[k].dead)) {
            pthread_mutex_lock(&r->mu);
            r->nodes[k].dead_at = mono();
            atomic_store(&r->nodes[k].dead, 1);
            pthread_cond_broadcast(&r->died);
            pthread_mutex_unlock(&r->mu);
        }
}

/* Alive nodes and their devices: GPUs where a node has them, else the stated devices of
 * device_cpus CPUs each. */
static int find_nodes(live_run *r, char *err, size_t errlen)
{
    esc_cluster_status *cs;
    esc_status st;
    if (esc_get_cluster_resources(r->c, &cs, &st) != ESC_OK)
        return fail(err, errlen, "cluster status", &st);
    r->nodes = calloc(cs->nnodes ? cs->nnodes : 1, sizeof *r->nodes);
    for (size_t k = 0; r->nodes && k < cs->nnodes; k++) {
        const esc_node_status *n = &cs->nodes[k];
        if (strcmp(n->state, "ALIVE") != 0 || (r->o->max_nodes && r->nnodes >= r->o->max_nodes))
            continue;
        const esc_resource_info *gpu = esc_node_resource(n, "GPU");
        live_node *ln = &r->nodes[r->nnodes++];
        ln->id = strdup(n->id);
        if (gpu && gpu->total >= ESC_QTY_UNIT) {
            ln->devices = (double)(gpu->total / ESC_QTY_UNIT);
            ln->backing = "GPU";
            ln->per_device = 1;
        } else {
            ln->devices = r->o->node_devices;
            ln->backing = "CPU";
            ln->per_device = r->o->device_cpus;
        }
    }
    esc_cluster_status_free(cs);
    if (!r->nodes || r->nnodes == 0)
        return snprintf(err, errlen, "no alive node in the cluster"), -1;
    return 0;
}

/* The alive node with the fewest streams per device (first on ties), or -1. */
static int least_loaded(const live_run *r)
{
    int best = -1;
    double best_load = 0;
    for (int k = 0; k < r->nnodes; k++) {
        if (atomic_load(&r->nodes[k].dead))
            continue;
        int n = 0;
        for (int s = 0; s < r->o->streams; s++)
            n += r->st[s].node == k;
        double load = (double)n / r->nodes[k].devices;
        if (best < 0 || load < best_load)
            best = k, best_load = load;
    }
    return best;
}

/* Streams whose node is dead move to the least loaded alive node. */
static int move_orphans(live_run *r, char *err, size_t errlen)
{
    for (int s = 0; s < r->o->streams; s++) {
        live_stream *ls = &r->st[s];
        if (ls->node >= 0 && !atomic_load(&r->nodes[ls->node].dead))
            continue;
        double died = ls->node >= 0 ? r->nodes[ls->node].dead_at : 0;
        ls->node = -1;
        int k = least_loaded(r);
        if (k < 0)
            return snprintf(err, errlen, "every node of the cluster is dead"), -1;
        ls->node = k;
        ls->failed_over_at = died;
        forget_ref(&ls->serve);
        forget_ref(&ls->epoch);
    }
    return 0;
}

/* Puts the bytes of b (dropped) as a new object into *ref, releasing the old one. */
static int put_object(live_run *r, ekya_wbuf *b, esc_ref **ref, char *err, size_t errlen)
{
    drop_ref(r, ref);
    esc_status st;
    int rc = b->bad ? -1 : esc_put(r->c, b->data, b->len, ref, &st);
    ekya_wbuf_free(b);
    if (rc == ESC_OK)
        return 0;
    return rc < 0 ? (snprintf(err, errlen, "out of memory"), -1) : fail(err, errlen, "storing frames", &st);
}

/* The window's frames of one stream as two objects: its train and test splits (for the
 * profiler and retraining) and what its camera shows (the test frames in stream order). */
static int put_stream_frames(live_run *r, int s, const ekya_window *win, char *err, size_t errlen)
{
    ekya_wbuf b = {0}, v = {0};
    ekya_wire_put_window(&b, win);
    if (put_object(r, &b, &r->st[s].frames, err, errlen) != 0)
        return -1;
    float *x;
    uint8_t *y;
    if (ekya_window_test_sequence(&r->wl.stream, win, &x, &y) != 0)
        v.bad = 1;
    else
        ekya_wire_put_frames(&v, x, y, win->n_test);
    free(x); /* NULL when the sequence failed */
    free(y);
    return put_object(r, &v, &r->st[s].shown, err, errlen);
}

/* The window's frames of every stream, as objects. */
static int put_frames(live_run *r, int w, char *err, size_t errlen)
{
    for (int s = 0; s < r->o->streams; s++) {
        ekya_window win;
        if (ekya_window_make(&r->wl.live, &r->wl.stream, s, w, &win, err, errlen) != 0)
            return -1;
        int rc = put_stream_frames(r, s, &win, err, errlen);
        ekya_window_free(&win);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return n ? s / n : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One window: every node with streams runs it in a thread of its own. */
static int run_window(live_run *r, int w, char *err, size_t errlen)
{
    if (move_orphans(r, err, errlen) != 0 || put_frames(r, w, err, errlen) != 0)
        return -1;
    node_window *nws = calloc((size_t)r->nnodes, sizeof *nws);
    pthread_t *th = calloc((size_t)r->nnodes, sizeof *th);
    int *started = calloc((size_t)r->nnodes, sizeof *started);
    int rc = nws && th && started ? 0 : -1;
    for (int k = 0; rc == 0 && k < r->nnodes; k++) {
        node_window *nw = &nws[k];
        nw->r = r;
        nw->node = k;
        nw->w = w;
        nw->streams = calloc((size_t)r->o->streams, sizeof *nw->streams);
        if (!nw->streams) {
            rc = -1;
            break;
        }
        for (int s = 0; s < r->o->streams; s++)
            if (r->st[s].node == k)
                nw->streams[nw->n++] = s;
        if (nw->n > 0 && pthread_create(&th[k], NULL, node_thread, nw) == 0)
            started[k] = 1;
        else if (nw->n > 0)
            rc = -1;
    }
    for (int k = 0; k < r->nnodes; k++) {
        void *res = NULL;
        if (started[k] && pthread_join(th[k], &res) == 0 && res && rc == 0) {
            snprintf(err, errlen, "node %s, window %d: %s", r->nodes[k].id, w, nws[k].err);
            rc = -1;
        }
        if (started[k]) {
            r->overhead[r->nover] = nws[k].overhead;
            r->profile_wall[r->nover++] = nws[k].profiled_at;
        }
    }
    if (rc != 0 && !err[0])
        snprintf(err, errlen, "out of memory");
    for (int k = 0; nws && k < r->nnodes; k++)
        free(nws[k].streams);
    free(nws);
    free(th);
    free(started);
    return rc;
}

static int setup(live_run *r, char *err, size_t errlen)
{
    const ekya_live_opts *o = r->o;
    esc_status st;
    esc_connect_opts co = {.address = o->address, .namespace_ = o->namespace_};
    if (esc_connect(&co, &r->c, &st) != ESC_OK)
        return fail(err, errlen, "connecting", &st);
    const char *dir = getenv("EKYA_LIVE_DIR");
    char exe[PATH_MAX], pkg[PATH_MAX + 16];
    if (!dir || !*dir) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(pkg, sizeof pkg, "%s/ekya-live", exe);
        dir = pkg;
    }
    if (esc_job_package(r->c, dir, NULL, &st) != ESC_OK)
        return snprintf(err, errlen, "packaging %s (set EKYA_LIVE_DIR to the directory of %s): %s",
                        dir, LIVE_LIB, st.message), -1;
    if (esc_on_node_dead(r->c, on_node_dead, r, &st) != ESC_OK)
        return fail(err, errlen, "watching nodes", &st);
    return find_nodes(r, err, errlen);
}

/* The profile table's shape: streams "0".., every configuration at every epoch choice. */
static int build_table(live_run *r)
{
    ekya_profiles *p = &r->prof;
    if (ekya_profiles_alloc(p, r->o->streams, r->o->windows, r->nconfigs))
        return -1;
    p->has_pred = 1;
    char buf[EKYA_CONFIG_NAME_MAX];
    for (int s = 0; s < r->o->streams; s++) {
        snprintf(buf, sizeof buf, "%d", s);
        if (!(p->streams[s] = strdup(buf)))
            return -1;
    }
    for (int w = 0; w < r->o->windows; w++)
        p->window_ids[w] = w;
    for (int i = 0; i < r->n_cfg; i++)
        for (int k = 0; k < EKYA_N_EPOCH_CHOICES; k++) {
            ekya_config_name(&r->set[i], buf, sizeof buf);
            p->configs[cell_index(i, k)].epochs = ekya_epoch_choices[k];
            if (!(p->configs[cell_index(i, k)].name = strdup(buf)))
                return -1;
        }
    return 0;
}

/* The data, the base models, the streams on their first nodes. */
static int open_streams(live_run *r, char *err, size_t errlen)
{
    const ekya_live_opts *o = r->o;
    r->n_cfg = ekya_config_set(o->configs, &r->set, err, errlen);
    if (r->n_cfg < 0)
        return -1;
    r->nconfigs = r->n_cfg * EKYA_N_EPOCH_CHOICES;
    int widths[64], n = r->n_cfg < 64 ? r->n_cfg : 64;
    for (int i = 0; i < n; i++)
        widths[i] = r->set[i].hidden;
    ekya_workload_opts wo;
    ekya_workload_opts_default(&wo, o->seed);
    wo.images_per_window = o->images;
    if (ekya_workload_open(&r->wl, &wo, widths, n, err, errlen) != 0) {
        r->set = NULL;
        return -1;
    }
    if (ekya_run_inference_profile(&r->wl, 1, &r->inf, &r->frame_seconds, err, errlen) != 0)
        return -1;
    r->st = calloc((size_t)o->streams, sizeof *r->st);
    r->acc = calloc((size_t)o->streams * (size_t)o->windows, sizeof *r->acc);
    size_t nw = (size_t)o->windows * (size_t)(r->nnodes + 1);
    r->overhead = calloc(nw, sizeof *r->overhead);
    r->profile_wall = calloc(nw, sizeof *r->profile_wall);
    r->latency_ms = calloc(MAX_LATENCIES, sizeof *r->latency_ms);
    if (!r->st || !r->acc || !r->overhead || !r->profile_wall || !r->latency_ms ||
        build_table(r) != 0)
        return snprintf(err, errlen, "out of memory"), -1;
    int widest = 0;
    for (int i = 0; i < r->wl.n_widths; i++)
        widest = r->wl.base[i].hidden > r->wl.base[widest].hidden ? i : widest;
    for (int s = 0; s < o->streams; s++) {
        live_stream *ls = &r->st[s];
        ls->node = ls->actors_node = -1;
        ls->deployed = widest; /* a stream serves with the widest pretrained model */
        ls->cfg = EKYA_NO_RETRAIN;
        for (int i = 0; i < r->wl.n_widths; i++)
            if (ekya_mlp_copy(&ls->model[i], &r->wl.base[i]) != 0)
                return snprintf(err, errlen, "out of memory"), -1;
        ls->node = least_loaded(r);
    }
    /* A stream that gets rmax of a device processes every frame: the frame rate at which
     * the widest model's answers use rmax of a device's CPUs, with a quarter kept for the
     * serve loop's own work (waking, timing) so that the share really keeps up. */
    r->fps = o->prm.rmax * o->device_cpus / (r->frame_seconds * LIVE_HEADROOM);
    return 0;
}

static void close_run(live_run *r)
{
    for (int s = 0; r->st && s < r->o->streams; s++) {
        live_stream *ls = &r->st[s];
        if (r->c) {
            drop_ref(r, &ls->serve);
            drop_ref(r, &ls->epoch);
            drop_ref(r, &ls->frames);
            drop_ref(r, &ls->shown);
            if (ls->actors_node >= 0 && !atomic_load(&r->nodes[ls->actors_node].dead)) {
                esc_actor_kill(r->c, ls->infer, NULL);
                esc_actor_kill(r->c, ls->train, NULL);
            }
        }
        esc_actor_free(ls->infer);
        esc_actor_free(ls->train);
        for (int i = 0; i < EKYA_MAX_WIDTHS; i++)
            ekya_mlp_free(&ls->model[i]);
    }
    if (r->c) {
        esc_off_node_dead(r->c, on_node_dead, r);
        esc_disconnect(r->c);
    }
    for (int k = 0; r->nodes && k < r->nnodes; k++)
        free(r->nodes[k].id);
    free(r->nodes);
    free(r->st);
    free(r->acc);
    free(r->overhead);
    free(r->profile_wall);
    free(r->latency_ms);
    ekya_profiles_free(&r->prof);
    ekya_infer_free(&r->inf);
    if (r->set)
        ekya_workload_close(&r->wl);
    json_decref(r->failovers);
    pthread_mutex_destroy(&r->mu);
}

/* The same profiles and the same schedulers through the simulator, node by node (the
 * streams as placed in window 0): what `ekya simulate` predicts for this run. */
static int simulate_nodes(live_run *r, double *sim_acc, char *err, size_t errlen)
{
    const ekya_live_opts *o = r->o;
    int *first = calloc((size_t)o->streams, sizeof *first);
    int rc = first ? 0 : -1;
    for (int s = 0; s < o->streams; s++)
        first[s] = r->st[s].node;
    for (int k = 0; rc == 0 && k < r->nnodes; k++) {
        int n = 0;
        for (int s = 0; s < o->streams; s++)
            n += first[s] == k;
        if (n == 0)
            continue;
        ekya_profiles p = {0};
        int *ids = calloc((size_t)n, sizeof *ids);
        rc = ids && ekya_profiles_alloc(&p, n, o->windows, r->nconfigs) == 0 ? 0 : -1;
        for (int s = 0, i = 0; rc == 0 && s < o->streams; s++) {
            if (first[s] != k)
                continue;
            ids[i] = s;
            p.streams[i] = strdup(r->prof.streams[s]);
            for (int w = 0; w < o->windows; w++) {
                p.start_acc[i * o->windows + w] = r->prof.start_acc[s * o->windows + w];
                memcpy(&p.cells[((size_t)i * (size_t)o->windows + (size_t)w) * (size_t)r->nconfigs],
                       global_cell(r, s, w, 0), sizeof(ekya_cell) * (size_t)r->nconfigs);
            }
            i++;
        }
        for (int c = 0; rc == 0 && c < r->nconfigs; c++) {
            p.configs[c].epochs = r->prof.configs[c].epochs;
            p.configs[c].name = strdup(r->prof.configs[c].name);
        }
        for (int w = 0; rc == 0 && w < o->windows; w++)
            p.window_ids[w] = w;
        p.has_pred = 1;
        ekya_params prm = o->prm;
        prm.gpus = r->nodes[k].devices;
        ekya_scheduler sched = {0};
        ekya_sim_result res;
        if (rc == 0 && ekya_scheduler_create(o->scheduler, &p, &sched, err, errlen) == 0) {
            for (size_t q = 0; !sched.plans_with_predictions && q < (size_t)n * (size_t)o->windows *
                                                                (size_t)r->nconfigs; q++)
                p.cells[q].present = 1; /* as in node_thread */
            rc = ekya_simulate(&p, &r->inf, &prm, &sched, NULL, NULL, &res, err, errlen);
            ekya_scheduler_destroy(&sched);
            for (int i = 0; rc == 0 && i < n; i++)
                sim_acc[ids[i]] = res.stream_mean[i];
            if (rc == 0)
                ekya_sim_result_free(&res);
        } else {
            rc = -1;
        }
        free(ids);
        ekya_profiles_free(&p);
    }
    free(first);
    return rc;
}

static void print_summary(live_run *r, const double *sim_acc)
{
    const ekya_live_opts *o = r->o;
    int S = o->streams, W = o->windows;
    double *stream_mean = calloc((size_t)S, sizeof(double)), *window_mean = calloc((size_t)W, sizeof(double));
    double *frac = calloc((size_t)r->nover + 1, sizeof(double));
    if (!stream_mean || !window_mean || !frac)
        goto out;
    for (int s = 0; s < S; s++)
        stream_mean[s] = mean(&r->acc[s * W], W);
    for (int w = 0; w < W; w++) {
        for (int s = 0; s < S; s++)
            window_mean[w] += r->acc[s * W + w] / S;
    }
    double all = mean(window_mean, W), sim_all = mean(sim_acc, S);
    for (int k = 0; k < r->nover; k++)
        frac[k] = r->overhead[k] / o->prm.length;
    double lat_med = median(r->latency_ms, r->nlat);
    double lat_max = r->nlat ? r->latency_ms[r->nlat - 1] : 0;
    double over_med = median(frac, r->nover), prof_med = median(r->profile_wall, r->nover);
    if (o->json) {
        json_t *streams = json_object(), *sim = json_object(), *windows = json_array();
        for (int s = 0; s < S; s++) {
            json_object_set_new(streams, r->prof.streams[s], json_real(stream_mean[s]));
            json_object_set_new(sim, r->prof.streams[s], json_real(sim_acc[s]));
        }
        for (int w = 0; w < W; w++)
            json_array_append_new(windows, json_real(window_mean[w]));
        json_t *live = json_pack(
            "{s:i, s:f, s:f, s:i, s:f, s:f, s:f, s:f, s:f, s:O}", "nodes", r->nnodes,
            "frames_per_second", r->fps, "frame_cpu_seconds", r->frame_seconds,
            "reallocations", r->nlat, "reallocation_ms_median", lat_med,
            "reallocation_ms_max", lat_max, "overhead_fraction_median", over_med,
            "profiling_seconds_median", prof_med, "simulated_mean_accuracy", sim_all,
            "failovers", r->failovers);
        json_object_set_new(live, "simulated_streams", sim);
        json_t *j = json_pack("{s:s, s:f, s:o, s:o, s:f, s:i, s:i, s:f, s:f, s:f, s:o}",
                              "scheduler", o->scheduler, "mean_accuracy", all, "streams", streams,
                              "windows", windows, "scheduler_seconds", r->stats.total_seconds,
                              "completions", r->completions, "retrainings", r->retrainings,
                              "retrain_seconds", r->retrain_seconds, "profile_seconds",
                              r->profile_seconds, "pretrain_seconds", r->wl.pretrain_seconds,
                              "live", live);
        json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(j);
        goto out;
    }
    printf("scheduler %s (live, %d nodes): mean accuracy %.4f (%.2f%%); simulated %.4f\n",
           o->scheduler, r->nnodes, all, 100 * all, sim_all);
    for (int s = 0; s < S; s++)
        printf("  stream %-12s %.4f (simulated %.4f)\n", r->prof.streams[s], stream_mean[s],
               sim_acc[s]);
    for (int w = 0; w < W; w++)
        printf("  window %-12d %.4f\n", w, window_mean[w]);
    printf("retrainings: %d started, %d completed; %.3f s retraining, %.3f s micro-profiling "
           "(CPU)\n", r->retrainings, r->completions, r->retrain_seconds, r->profile_seconds);
    printf("reallocations: %d, median %.2f ms, max %.2f ms; runtime overhead %.2f%% of a window "
           "(median); profiles in after %.3f s (median)\n", r->nlat, lat_med, lat_max,
           100 * over_med, prof_med);
out:
    free(stream_mean);
    free(window_mean);
    free(frac);
}

void ekya_live_opts_default(ekya_live_opts *o)
{
    memset(o, 0, sizeof *o);
    o->namespace_ = "ekya";
    o->node_devices = 1;
    o->device_cpus = 1;
    o->profile_cpus = 0.25;
    o->latency = 0.01;
    o->images = 1000;
    o->seed = 1;
    o->configs = "small";
    o->scheduler = "thief";
    o->prm.delta = 0.1;
    o->prm.rmax = 0.25;
    o->prm.no_carry = 1;
}

int ekya_live_run(const ekya_live_opts *o, char *err, size_t errlen)
{
    live_run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.died, NULL);
    r.failovers = json_array();
    double *sim = calloc((size_t)o->streams, sizeof *sim);
    int rc = sim && r.failovers ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    if (rc == 0)
        rc = setup(&r, err, errlen);
    if (rc == 0)
        rc = open_streams(&r, err, errlen);
    for (int w = 0; rc == 0 && w < o->windows; w++) {
        rc = run_window(&r, w, err, errlen);
        if (rc != 0)
            break;
        double m = 0;
        for (int s = 0; s < o->streams; s++)
            m += r.acc[s * o->windows + w] / o->streams;
        fprintf(stderr, "ekya run: window %d/%d: accuracy %.4f, %d retrainings completed so far, "
                "%d reallocations\n", w + 1, o->windows, m, r.completions, r.nlat);
    }
    if (rc == 0)
        rc = simulate_nodes(&r, sim, err, errlen);
    if (rc == 0)
        print_summary(&r, sim);
    close_run(&r);
    pthread_cond_destroy(&r.died);
    pthread_mutex_destroy(&r.mu);
    free(sim);
    return rc;
}
