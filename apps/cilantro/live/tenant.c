/* tenant.c: `cilantro-tenant`, one tenant of a live Cilantro run (docs/cilantro.md,
 * "Live runs"). `cilantro serve` submits it as an escher job and grants it the
 * controller's namespace NS. It
 *  - runs one actor per node that has NS/<name>.home (the controller's placement),
 *    holding NS/<name>.home = 1 and NS/<name>.cpu = that node's capacity (CPU-backed, so
 *    the actor's worker runs under a CPU quota of that many CPUs), and resizes each actor
 *    whenever its node's capacity changes;
 *  - offers load: kind slo replays a trace (requests per second = row x scale), each
 *    request an actor call of --work-us of CPU time; kind throughput trains Ekya's MLP
 *    on Fashion-MNIST: it reads a shard of the training set here (the head's machine)
 *    and ships it to its actors as one object, each actor trains its own model on it,
 *    one call being one SGD step on --batch samples, and it keeps every actor busy
 *    (about two seconds of steps in flight each);
 *  - every --report-s seconds writes one feedback record to KV (namespace NS, key
 *    <name>.feedback/<seq>, JSON: load, reward, sigma, span_s, alloc, pids, at;
 *    throughput tenants also the training loss and CPU per step), and the same line to
 *    stdout.
 * It runs until killed (the controller stops its job).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <escher/escher.h>

#include "cilantro/env.h"
#include "ekya/idx.h"
#include "live.h"
#include "shard.h"

#define LIVE_LIB "libcilantro_live.so"
#define MAX_ACTORS 16
#define MAX_PENDING 4096
/* throughput: calls in flight per actor, about INFLIGHT_S of work at its quota (the
 * round trip, and a get that takes a second on a loaded machine, must not idle it) */
#define INFLIGHT_S 2.0
#define INFLIGHT_MIN 4
#define INFLIGHT_MAX 64
/* A get of a result on another node can take ~0.1 s (a busy machine): one collect stops
 * after this long, so reports and resizes keep their pace. */
#define COLLECT_S 0.2
#define START_TIMEOUT_MS 20000 /* an actor's first answer (its worker starts, the package
                                  is fetched on its node) */
#define GET_TIMEOUT_MS 1000 /* a ready result's pull (0.1-0.2 s on a loaded machine) */
#define SUSPECT_S 3.0       /* how long an actor whose pull timed out is left alone */
#define PER_ACTOR_QUEUE 64 /* slo: requests beyond this per actor are dropped (violations) */
#define SHARD_IMAGES 4000  /* throughput: the first images of the training set (3.2 MB) */

typedef struct {
    const char *name, *kind, *ns, *trace_path;
    double work_us, slo_ms, scale, target_sps, report_s;
    int batch, hidden, work_set;
} tenant_opts;

typedef struct {
    esc_actor *a;
    char node[ESC_ID_MAX];
    long pid;
    double held;      /* CPUs of NS/<name>.cpu it holds */
    int inflight;
    int gone;         /* its node died or lost NS/<name>.home: no calls; a free slot */
    double suspect_until; /* a pull of its result timed out: its results wait till then */
} actor_t;

typedef struct {
    esc_ref *ref;
    double t0;
    int actor;
    int load; /* throughput: the actor's cil_train_load, not a step */
} pending_t;

typedef struct {
    tenant_opts o;
    esc_client *c;
    cil_trace *trace;
    int train;      /* kind throughput */
    esc_ref *shard; /* throughput: the training shard, every actor's data */
    double step_cpu_s; /* throughput: CPU per step, a moving average (0: none yet) */
    actor_t act[MAX_ACTORS];
    int nact;       /* slots used, gone ones included */
    int created;    /* actors created: names and trainer seeds */
    pending_t pend[MAX_PENDING];
    size_t npend;
    /* this report period */
    double arrivals, good, bad, done, lat_sum;
    double samples, loss_sum, cpu_us; /* throughput: per step, summed */
    double alloc_s; /* integral of held CPUs over time, for the mean allocation */
} tenant;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static int die(const tenant_opts *o, const char *what, const esc_status *st)
{
    fprintf(stderr, "cilantro-tenant %s: %s: %s\n", o->name ? o->name : "?", what,
            st ? st->message : strerror(errno));
    exit(1);
}

static void parse(int argc, char **argv, tenant_opts *o)
{
    *o = (tenant_opts){.ns = "cilantro", .work_us = 5000, .slo_ms = 50, .scale = 1,
                       .target_sps = 5000, .report_s = 1, .batch = 256, .hidden = 512};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--name")) o->name = v;
        else if (!strcmp(k, "--kind")) o->kind = v;
        else if (!strcmp(k, "--ns")) o->ns = v;
        else if (!strcmp(k, "--trace")) o->trace_path = v;
        else if (!strcmp(k, "--work-us")) o->work_us = atof(v), o->work_set = 1;
        else if (!strcmp(k, "--slo-ms")) o->slo_ms = atof(v);
        else if (!strcmp(k, "--scale")) o->scale = atof(v);
        else if (!strcmp(k, "--target-sps")) o->target_sps = atof(v);
        else if (!strcmp(k, "--report-s")) o->report_s = atof(v);
        else if (!strcmp(k, "--batch")) o->batch = atoi(v);
        else if (!strcmp(k, "--hidden")) o->hidden = atoi(v);
        else {
            fprintf(stderr, "cilantro-tenant: unknown option '%s'\n", k);
            exit(2);
        }
    }
    if (!o->name || !o->kind || (strcmp(o->kind, "slo") && strcmp(o->kind, "throughput")) ||
        o->work_us <= 0 || o->report_s <= 0 || (!strcmp(o->kind, "slo") && !o->trace_path) ||
        o->batch < 1 || o->batch > SHARD_IMAGES || o->hidden < 1 || o->hidden > 4096) {
        fprintf(stderr, "usage: cilantro-tenant --name N --kind slo|throughput [--ns NS] "
                        "[--work-us US --slo-ms MS --trace CSV --scale X] [--target-sps S "
                        "--batch 1..%d --hidden 1..4096] [--report-s S]\n", SHARD_IMAGES);
        exit(2);
    }
    if (!strcmp(o->kind, "throughput") && o->work_set) {
        fprintf(stderr, "cilantro-tenant %s: --work-us is for slo tenants (a throughput "
                        "tenant's step is set by --batch and --hidden)\n", o->name);
        exit(2);
    }
}

/* The capacity of NS/<name>.cpu on node (-1: absent) and whether .home is there. */
static double node_cap(const tenant *t, const esc_node_status *n, int *home)
{
    char nm[256];
    snprintf(nm, sizeof nm, "%s/%s.home", t->o.ns, t->o.name);
    *home = esc_node_resource(n, nm) != NULL;
    snprintf(nm, sizeof nm, "%s/%s.cpu", t->o.ns, t->o.name);
    const esc_resource_info *r = esc_node_resource(n, nm);
    return r ? (double)r->total / ESC_QTY_UNIT : -1;
}

/* The grant arrives just after the job starts: wait until a write to NS succeeds. */
static void wait_grant(tenant *t)
{
    char key[256];
    snprintf(key, sizeof key, "%s" CIL_HELLO_KEY, t->o.name);
    esc_status st;
    for (double end = now_s() + 30;; sleep_s(0.1))
        if (esc_kv_put(t->c, t->o.ns, key, "1", 1, true, NULL, &st) == ESC_OK)
            return;
        else if (now_s() > end)
            die(&t->o, "no access to the controller's namespace", &st);
}

static void amounts(const tenant *t, double cpu, char *home, char *cpun, esc_amount a[2])
{
    sprintf(home, "%s/%s.home", t->o.ns, t->o.name);
    sprintf(cpun, "%s/%s.cpu", t->o.ns, t->o.name);
    a[0] = (esc_amount){home, ESC_QTY(1), false};
    a[1] = (esc_amount){cpun, ESC_QTY(cpu), false};
}

/* A new actor in slot k on a node with NS/<name>.home and capacity cap (.home = 1 per
 * node keeps two of them off one node, so it lands on the one that has none); it says
 * where it runs (its node and worker pid). 0, or -1 when it did not start there. */
static int create_actor(tenant *t, int k, double cap)
{
    char hn[256], cn[256], an[128];
    esc_amount a[2];
    amounts(t, cap, hn, cn, a);
    snprintf(an, sizeof an, "cil-%s-%d", t->o.name, t->created++);
    esc_actor_spec spec = {.name = an, .library = LIVE_LIB, .resources = a, .nresources = 2};
    actor_t *x = &t->act[k];
    esc_status st;
    esc_ref *ref = NULL;
    void *data = NULL;
    size_t len;
    *x = (actor_t){.held = cap};
    if (esc_actor_create(t->c, &spec, &x->a, &st) != ESC_OK ||
        esc_actor_call(t->c, x->a, "cil_where", NULL, 0, 1, &ref, &st) != ESC_OK ||
        esc_get(t->c, ref, START_TIMEOUT_MS, &data, &len, &st) != ESC_OK ||
        sscanf(data, "%79s %ld", x->node, &x->pid) != 2) {
        fprintf(stderr, "cilantro-tenant %s: an actor did not start (it is tried again): %s\n",
                t->o.name, st.message);
        if (x->a)
            esc_actor_kill(t->c, x->a, NULL);
        x->gone = 1;
    }
    else
        fprintf(stderr, "cilantro-tenant %s: actor %s started on node %s (pid %ld)\n",
                t->o.name, an, x->node, x->pid);
    esc_ref_free(ref);
    free(data);
    return x->gone ? -1 : 0;
}

static int has_live_actor(const tenant *t)
{
    for (int k = 0; k < t->nact; k++)
        if (!t->act[k].gone)
            return 1;
    return 0;
}

/* Whether a live actor runs on node id. */
static int has_actor(const tenant *t, const char *id)
{
    for (int k = 0; k < t->nact; k++)
        if (!t->act[k].gone && !strcmp(t->act[k].node, id))
            return 1;
    return 0;
}

/* A slot for a new actor: a gone one (its calls were dropped), else a new one; -1. */
static int free_slot(tenant *t)
{
    for (int k = 0; k < t->nact; k++)
        if (t->act[k].gone && t->act[k].inflight == 0) {
            esc_actor_free(t->act[k].a);
            return k;
        }
    return t->nact < MAX_ACTORS ? t->nact++ : -1;
}

static void load_trainer(tenant *t, int k);

/* An actor on every alive node that carries NS/<name>.home and none of ours yet. */
static void add_actors(tenant *t, const esc_cluster_status *cs)
{
    for (size_t i = 0; i < cs->nnodes; i++) {
        int home;
        double cap = node_cap(t, &cs->nodes[i], &home);
        if (!home || cap <= 0 || strcmp(cs->nodes[i].state, "ALIVE") ||
            has_actor(t, cs->nodes[i].id))
            continue;
        int k = free_slot(t);
        if (k >= 0 && create_actor(t, k, cap) == 0 && t->train)
            load_trainer(t, k);
    }
}

/* The first actors: waits (30 s at most) for the controller's rows. */
static void start_actors(tenant *t)
{
    esc_status st;
    for (double end = now_s() + 30; !has_live_actor(t); sleep_s(0.2)) {
        esc_cluster_status *cs;
        if (esc_get_cluster_resources(t->c, &cs, &st) != ESC_OK)
            die(&t->o, "reading the cluster", &st);
        add_actors(t, cs);
        esc_cluster_status_free(cs);
        if (!has_live_actor(t) && now_s() > end)
            die(&t->o, "no node carries this tenant's resources", NULL);
    }
}

/* throughput: actor k becomes the trainer of its own model (seeded by its number) on
 * the shard. Calls of one caller run in order, so the steps follow at once, behind it;
 * its result is collected as a pending call, and a failure ends the tenant (the
 * actor's log says why). */
static void load_trainer(tenant *t, int k)
{
    esc_status st;
    char p[64];
    int n = snprintf(p, sizeof p, "%d %d %d", t->o.hidden, t->o.batch, t->created);
    esc_task_arg a[2] = {{p, (size_t)n, NULL}, {NULL, 0, t->shard}};
    esc_ref *ref;
    if (esc_actor_call(t->c, t->act[k].a, "cil_train_load", a, 2, 1, &ref, &st) != ESC_OK)
        die(&t->o, "loading the training shard", &st);
    t->pend[t->npend++] = (pending_t){ref, now_s(), k, 1};
    t->act[k].inflight++;
}

/* throughput: the first SHARD_IMAGES images of Fashion-MNIST's training set, read with
 * Ekya's reader from ekya_data_dir() on this (the head's) machine, as a shard (shard.h).
 * Exits with one line when the data set is not there. */
static uint8_t *read_shard(const tenant_opts *o, size_t *len)
{
    ekya_dataset d;
    char err[512];
    if (ekya_dataset_load(NULL, "train", &d, err, sizeof err) != 0) {
        fprintf(stderr, "cilantro-tenant %s: no Fashion-MNIST training set: %s (EKYA_DATA_DIR "
                        "in the head's environment names its directory)\n", o->name, err);
        exit(1);
    }
    uint32_t n = d.images.count < SHARD_IMAGES ? d.images.count : SHARD_IMAGES;
    *len = cil_shard_size(n);
    uint8_t *b = malloc(*len);
    if (!b)
        die(o, "the training shard", NULL);
    memcpy(b, CIL_SHARD_TAG, 4);
    cil_shard_put_count(b + 4, n);
    memcpy(b + CIL_SHARD_HEADER, d.labels.labels, n);
    memcpy(b + CIL_SHARD_HEADER + n, d.images.pixels, (size_t)n * CIL_SHARD_PIXELS);
    ekya_dataset_free(&d);
    return b;
}

/* Actor k's node died or left the tenant's placement: its calls in flight are dropped
 * (a request of an slo tenant counts as a violation) and its slot is free. */
static void mark_gone(tenant *t, int k)
{
    size_t w = 0;
    for (size_t i = 0; i < t->npend; i++) {
        pending_t p = t->pend[i];
        if (p.actor != k) {
            t->pend[w++] = p;
            continue;
        }
        esc_ref_free(p.ref); /* forgotten, not released: no node holds a result */
        t->bad += !t->train && !p.load;
    }
    t->npend = w;
    t->act[k].inflight = 0;
    t->act[k].gone = 1;
    t->act[k].held = 0;
}

/* The node of actor k in cs, or NULL when it is not there alive. */
static const esc_node_status *actor_node(const tenant *t, int k, const esc_cluster_status *cs)
{
    for (size_t i = 0; i < cs->nnodes; i++)
        if (!strcmp(cs->nodes[i].id, t->act[k].node))
            return strcmp(cs->nodes[i].state, "ALIVE") ? NULL : &cs->nodes[i];
    return NULL;
}

/* Follows the controller's rows (every 0.25 s): an actor whose node died or lost
 * NS/<name>.home is given up; one whose node's capacity changed is resized (a growth
 * that does not fit yet, because the CPU behind it is still held by a shrinking tenant,
 * is tried again next time); a node that gained NS/<name>.home gets an actor. */
static void sync_actors(tenant *t)
{
    esc_status st;
    esc_cluster_status *cs;
    if (esc_get_cluster_resources(t->c, &cs, &st) != ESC_OK)
        return;
    for (int k = 0; k < t->nact; k++) {
        actor_t *x = &t->act[k];
        const esc_node_status *n = x->gone ? NULL : actor_node(t, k, cs);
        int home = 0;
        double cap = n ? node_cap(t, n, &home) : -1;
        if (!x->gone && (!n || !home || cap <= 0)) {
            mark_gone(t, k);
            fprintf(stderr, "cilantro-tenant %s: node %s left; its actor is given up\n",
                    t->o.name, x->node);
        }
        if (x->gone || fabs(cap - x->held) < 1e-4)
            continue;
        char hn[256], cn[256];
        esc_amount a[2];
        amounts(t, cap, hn, cn, a);
        if (esc_actor_resize(t->c, x->a, a, 2, 300, NULL, NULL, &st) == ESC_OK)
            x->held = cap;
    }
    add_actors(t, cs);
    esc_cluster_status_free(cs);
}

/* One call on actor k; 0, or -1 when it could not be made (counted as a violation). */
static int submit(tenant *t, int k, double now)
{
    char arg[32];
    int n = snprintf(arg, sizeof arg, "%.0f", t->o.work_us);
    esc_task_arg a = {arg, (size_t)n, NULL};
    esc_ref *ref;
    esc_status st;
    const char *method = t->train ? "cil_train_step" : "cil_work";
    if (t->npend >= MAX_PENDING ||
        esc_actor_call(t->c, t->act[k].a, method, &a, t->train ? 0 : 1, 1, &ref, &st) !=
            ESC_OK) {
        t->bad++;
        return -1;
    }
    t->pend[t->npend++] = (pending_t){ref, now, k, 0};
    t->act[k].inflight++;
    return 0;
}

/* throughput: the calls to keep in flight on x, INFLIGHT_S of steps at its quota. */
static int inflight_target(const tenant *t, const actor_t *x)
{
    if (t->step_cpu_s <= 0)
        return INFLIGHT_MIN;
    double n = ceil(INFLIGHT_S * x->held / t->step_cpu_s);
    return n < INFLIGHT_MIN ? INFLIGHT_MIN : n > INFLIGHT_MAX ? INFLIGHT_MAX : (int)n;
}

/* The next live actor round robin, or -1 when there is none. */
static int next_actor(const tenant *t, int *rr)
{
    for (int i = 0; i < t->nact; i++) {
        int k = (*rr)++ % t->nact;
        if (!t->act[k].gone)
            return k;
    }
    return -1;
}

/* slo: arrivals by the trace (at elapsed seconds), round robin over the actors;
 * throughput: inflight_target calls in flight per actor, enough to hide the call's
 * round trip so the actor's CPU quota is what limits it. */
static void offer(tenant *t, double elapsed, double dt, double *acc, int *rr)
{
    double now = now_s(); /* requests' start times, against collect's clock */
    if (t->train) {
        for (int k = 0; k < t->nact; k++)
            while (!t->act[k].gone && t->act[k].inflight < inflight_target(t, &t->act[k]) &&
                   submit(t, k, now) == 0)
                ;
        return;
    }
    *acc += cil_trace_at(t->trace, elapsed) * t->o.scale * dt;
    while (*acc >= 1) {
        *acc -= 1;
        t->arrivals++;
        int k = next_actor(t, rr);
        if (k < 0 || t->act[k].inflight >= PER_ACTOR_QUEUE)
            t->bad++; /* dropped: a violation */
        else
            submit(t, k, now);
    }
}

/* throughput: a step's "<samples> <mean loss> <CPU us>" into the period's sums. */
static int took_step(tenant *t, const char *res)
{
    int k;
    double loss, cpu;
    if (sscanf(res, "%d %lf %lf", &k, &loss, &cpu) != 3 || k < 1)
        return 0;
    t->samples += k;
    t->loss_sum += loss * k;
    t->cpu_us += cpu;
    t->step_cpu_s = t->step_cpu_s > 0 ? 0.8 * t->step_cpu_s + 0.2 * cpu / 1e6 : cpu / 1e6;
    return 1;
}

/* A request or step that ended (ok: with a result) lat seconds after it was made. */
static void finished(tenant *t, int ok, double lat)
{
    t->done += ok;
    t->lat_sum += ok ? lat : 0;
    if (ok && lat * 1000 <= t->o.slo_ms)
        t->good++;
    else
        t->bad++;
}

static void collect(tenant *t)
{
    if (t->npend == 0) {
        sleep_s(0.005);
        return;
    }
    const esc_ref *refs[MAX_PENDING];
    bool ready[MAX_PENDING];
    size_t nready = 0;
    esc_status st;
    for (size_t i = 0; i < t->npend; i++)
        refs[i] = t->pend[i].ref;
    if (esc_wait(t->c, refs, t->npend, 1, 10, ready, &nready, &st) != ESC_OK || nready == 0)
        return;
    double now = now_s(), until = now + COLLECT_S;
    size_t w = 0, taken = 0;
    for (size_t i = 0; i < t->npend; i++) {
        pending_t p = t->pend[i];
        if (!ready[i] || now > until || now < t->act[p.actor].suspect_until) {
            t->pend[w++] = p;
            continue;
        }
        void *data = NULL;
        size_t len;
        /* ready means it exists somewhere: a result on another node is pulled. On a node
         * that died (not declared dead yet) the pull never succeeds: GET_TIMEOUT_MS
         * bounds the stall, and the call counts as failed */
        double t1 = now_s();
        taken++;
        int ok = esc_get(t->c, p.ref, GET_TIMEOUT_MS, &data, &len, &st) == ESC_OK;
        now = now_s();
        if (!ok && now - t1 >= GET_TIMEOUT_MS / 2000.0) /* its node may be dying: the other
                                                          results of it wait, not the loop */
            t->act[p.actor].suspect_until = now + SUSPECT_S;
        esc_ref_free(p.ref);
        t->act[p.actor].inflight--;
        if (p.load && !ok)
            die(&t->o, "loading the training shard", &st);
        if (!p.load)
            finished(t, ok && (!t->train || took_step(t, data)), now - p.t0);
        free(data);
    }
    t->npend = w;
    if (taken == 0) /* only results that wait (suspect actors): do not spin */
        sleep_s(0.005);
}

static double held_total(const tenant *t)
{
    double s = 0;
    for (int k = 0; k < t->nact; k++)
        s += t->act[k].held; /* 0 for a gone one */
    return s;
}

/* One feedback record: the period's load, reward and its sigma (the simulator's noise
 * models, env.h), the mean allocation held, and the workers' pids. */
static void report(tenant *t, unsigned long seq, double span)
{
    double load, reward, sigma;
    if (t->train) {
        load = 1;
        reward = t->samples / span / t->o.target_sps;
        sigma = fmax(reward, 1e-6) * 0.03;
    } else {
        double n = t->good + t->bad;
        load = t->arrivals / span;
        reward = n > 0 ? t->good / n : NAN;
        sigma = fmin(0.5, 10 / sqrt(2 * fmax(n, 1)));
    }
    char v[1024], key[256], rw[32] = "null"; /* JSON has no NaN: null */
    if (!isnan(reward))
        snprintf(rw, sizeof rw, "%.6g", reward);
    int len = snprintf(v, sizeof v,
                       "{\"load\":%.6g,\"reward\":%s,\"sigma\":%.6g,\"span_s\":%.6g,"
                       "\"alloc\":%.6g,\"kind\":\"%s\",\"pids\":[",
                       load, rw, sigma, span, t->alloc_s / span, t->o.kind);
    for (int k = 0, first = 1; k < t->nact && len < (int)sizeof v - 128; k++)
        if (!t->act[k].gone) {
            len += snprintf(v + len, sizeof v - (size_t)len, "%s{\"node\":\"%s\",\"pid\":%ld}",
                            first ? "" : ",", t->act[k].node, t->act[k].pid);
            first = 0;
        }
    struct timespec wall; /* "at": when written, for the controller's feedback latency */
    clock_gettime(CLOCK_REALTIME, &wall);
    len += snprintf(v + len, sizeof v - (size_t)len,
                    "],\"served\":%.0f,\"lat_ms\":%.3g,\"at\":%.6f", t->done,
                    t->done > 0 ? t->lat_sum / t->done * 1000 : 0,
                    (double)wall.tv_sec + (double)wall.tv_nsec / 1e9);
    if (t->train && t->samples > 0) /* the steps' sample-weighted mean loss, CPU per step */
        len += snprintf(v + len, sizeof v - (size_t)len, ",\"loss\":%.4f,\"cpu_ms\":%.3g",
                        t->loss_sum / t->samples, t->cpu_us / t->done / 1000);
    len += snprintf(v + len, sizeof v - (size_t)len, "}");
    printf("%s\n", v); /* the job's log keeps them: a later run deletes the keys */
    fflush(stdout);
    snprintf(key, sizeof key, "%s" CIL_FEEDBACK_KEY "%08lu", t->o.name, seq);
    esc_status st;
    if (esc_kv_put(t->c, t->o.ns, key, v, (size_t)len, true, NULL, &st) != ESC_OK)
        fprintf(stderr, "cilantro-tenant %s: feedback not written: %s\n", t->o.name, st.message);
    t->arrivals = t->good = t->bad = t->done = t->alloc_s = t->lat_sum = 0;
    t->samples = t->loss_sum = t->cpu_us = 0;
}

int main(int argc, char **argv)
{
    static tenant t;
    parse(argc, argv, &t.o);
    char err[256];
    if (t.o.trace_path && !(t.trace = cil_trace_load(t.o.trace_path, err, sizeof err))) {
        fprintf(stderr, "cilantro-tenant %s: %s\n", t.o.name, err);
        return 1;
    }
    t.train = !strcmp(t.o.kind, "throughput");
    size_t shard_len = 0;
    uint8_t *shard = t.train ? read_shard(&t.o, &shard_len) : NULL;
    esc_status st;
    if (esc_connect(NULL, &t.c, &st) != ESC_OK)
        die(&t.o, "connecting", &st);
    if (shard && esc_put(t.c, shard, shard_len, &t.shard, &st) != ESC_OK)
        die(&t.o, "storing the training shard", &st);
    free(shard);
    wait_grant(&t);
    start_actors(&t);
    double t0 = now_s(), last = t0, period = t0, caps = t0, acc = 0;
    int rr = 0;
    unsigned long seq = 0;
    for (;;) {
        double now = now_s();
        t.alloc_s += held_total(&t) * (now - last);
        offer(&t, now - t0, now - last, &acc, &rr);
        last = now;
        collect(&t);
        if (now - caps >= 0.25) {
            sync_actors(&t);
            caps = now;
        }
        if (now - period >= t.o.report_s) {
            report(&t, seq++, now - period);
            period = now;
        }
    }
}
