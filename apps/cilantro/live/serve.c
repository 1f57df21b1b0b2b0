/* serve.c: `cilantro serve --cluster [ADDRESS] --config FILE [--rounds N]`: a Cilantro
 * controller as an escher job (docs/cilantro.md, "Live runs"). It starts every tenant
 * as an escher job (`cilantro-tenant`, granted the controller's namespace), takes their
 * feedback from KV through a watch into the policy object (cilantro/policy.h), and each
 * round commits the policy's allocation as CPU-backed capacities <tenant>.cpu, split
 * evenly over the nodes, in one atomic batch. One line per round on stdout.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <escher/escher.h>
#include <escher/jobs.h>

#include "cilantro/metrics.h"
#include "cilantro/policy.h"
#include "../cli/cli.h" /* cli_median: serve.c is part of the cilantro command */
#include "live.h"

#define MAX_TENANTS 32
#define MAX_NODES 64
#define MAX_FEEDBACK 8192 /* feedback latencies kept per round */
#define MAX_APPLY_FAILURES 10 /* in a row, before the run gives up */

typedef struct {
    char name[64], kind[16], trace[PATH_MAX];
    double work_us, slo_ms, scale, target_sps, demand, weight;
    int batch, hidden; /* throughput: samples per step, the MLP's hidden units */
    esc_client *job;        /* the client whose job the tenant's entrypoint is */
    char job_id[ESC_ID_MAX];
    int ended;              /* its job finished: it gets no CPU (under the lock) */
    int released;           /* ended, and its rows deleted (the main thread's) */
    /* feedback of the current round (under the lock) */
    double rsum, rn, alloc_seen, lat_sum, served, load_sum, load_n;
    int pids_printed;
} tenant_t;

typedef struct {
    const char *ns, *policy;
    double round_s, unit, report_s;
    double cpus;            /* CPUs shared, a multiple of unit */
    int rounds;
    tenant_t t[MAX_TENANTS];
    int nt;
    cil_env *env;
    cil_policy *pol;
    esc_client *c;
    /* the nodes the allocation is split over (under the lock: the watch changes them) */
    char *nodes[MAX_NODES];
    int nnodes;
    int changed;            /* nodes or tenants changed since the last apply */
    int apply_failures;     /* commits that failed, in a row */
    int apply_late;         /* applies not seen done on every node in time */
    double retry_at;        /* a failed commit is tried again from then on */
    pthread_mutex_t mu;
    double t0;
    FILE *log;              /* --log: one JSON object per round, or NULL */
    double fb_ms[MAX_FEEDBACK]; /* this round's feedback latencies (under the lock) */
    int nfb;
} serve_t;

static volatile sig_atomic_t stop_flag;
static void on_signal(int s) { (void)s; stop_flag = 1; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what, const char *why)
{
    fprintf(stderr, "cilantro serve: %s: %s\n", what, why);
    return -1;
}

static double num(json_t *o, const char *k, double dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

/* A config number that must be positive when present: *out, or -1 with a message. */
static int positive(json_t *o, const char *k, double dflt, double *out, const char *who)
{
    json_t *v = json_object_get(o, k);
    *out = v ? (json_is_number(v) ? json_number_value(v) : NAN) : dflt;
    if (isfinite(*out) && *out > 0)
        return 0;
    fprintf(stderr, "cilantro serve: config: %s: \"%s\" must be a positive number\n", who, k);
    return -1;
}

static const char *str(json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : dflt;
}

/* A "data:" path against the cilantro data folder, as environment files do. */
static void resolve(const char *p, char *out, size_t len)
{
    if (!strncmp(p, "data:", 5))
        snprintf(out, len, "%s/%s", cil_env_data_dir(), p + 5);
    else
        snprintf(out, len, "%s", p);
}

/* One tenant of the config, and its job in the policy's environment: a linear curve
 * with the config's demand (CPUs at its nominal load: the learner's domain), the load
 * in the tenant's own units (requests per second; 1 for throughput tenants). */
static int parse_tenant(serve_t *s, json_t *o, json_t *jobs)
{
    tenant_t *t = &s->t[s->nt];
    const char *name = str(o, "name", NULL), *kind = str(o, "kind", NULL);
    if (!name || !kind || strlen(name) >= sizeof t->name ||
        (strcmp(kind, "slo") && strcmp(kind, "throughput")))
        return fail("config", "each tenant needs a name and kind \"slo\" or \"throughput\"");
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->kind, sizeof t->kind, "%s", kind);
    if (positive(o, "work_us", 5000, &t->work_us, name) ||
        positive(o, "slo_ms", 50, &t->slo_ms, name) || positive(o, "scale", 1, &t->scale, name) ||
        positive(o, "target_sps", 5000, &t->target_sps, name) ||
        positive(o, "demand", 1, &t->demand, name) || positive(o, "weight", 1, &t->weight, name))
        return -1;
    t->batch = (int)num(o, "batch", 256);
    t->hidden = (int)num(o, "hidden", 512);
    int slo = !strcmp(kind, "slo");
    if (!slo && json_object_get(o, "work_us"))
        return fail(name, "work_us is an slo key: a throughput tenant's step is batch and hidden");
    /* checked here too: a tenant that exits on bad options shows only as reward=nan;
     * 4000 is the tenant's shard (tenant.c, SHARD_IMAGES) */
    if (!slo && (t->batch < 1 || t->batch > 4000 || t->hidden < 1 || t->hidden > 4096))
        return fail(name, "needs batch in 1..4000 and hidden in 1..4096");
    if (slo)
        resolve(str(o, "trace", "data:twitter-trace.csv"), t->trace, sizeof t->trace);
    json_t *load = slo ? json_pack("{s:s, s:f}", "trace", t->trace, "scale", t->scale)
                       : json_real(1);
    json_t *j = json_pack("{s:s, s:{s:s, s:f}, s:o, s:f, s:s, s:f}", "name", name, "curve",
                          "type", "linear", "demand", t->demand / s->unit, "load", load,
                          "slo", num(o, "target", 0.9), "utility",
                          str(o, "utility", "linear"), "weight", t->weight);
    json_array_append_new(jobs, j);
    s->nt++;
    return 0;
}

static int load_config(serve_t *s, const char *path)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root)
        return fail(path, je.text);
    s->ns = strdup(str(root, "namespace", "cilantro"));
    s->policy = strdup(str(root, "policy", "resource-fair"));
    s->round_s = num(root, "round_s", 5);
    s->report_s = num(root, "report_s", 1);
    s->unit = num(root, "unit", 0.1);
    s->cpus = num(root, "cpus", 0);
    if (s->rounds == 0)
        s->rounds = (int)num(root, "rounds", 0);
    json_t *ts = json_object_get(root, "tenants");
    double units = s->unit > 0 ? s->cpus / s->unit : 0;
    if (!(units >= 1) || fabs(units - round(units)) > 1e-6 || units > 1e6 || !(s->round_s > 0) ||
        !(s->report_s > 0) || !json_is_array(ts) || json_array_size(ts) == 0 ||
        json_array_size(ts) > MAX_TENANTS) {
        json_decref(root);
        return fail(path, "needs cpus a positive multiple of unit (CPUs), round_s > 0, "
                          "report_s > 0 and 1..32 tenants");
    }
    json_t *jobs = json_array();
    size_t i;
    json_t *o;
    json_array_foreach(ts, i, o) {
        if (parse_tenant(s, o, jobs)) {
            json_decref(jobs);
            json_decref(root);
            return -1;
        }
    }
    json_t *env = json_pack("{s:i, s:f, s:f, s:o}", "cpus", (int)round(units), "round_s", s->round_s,
                            "report_s", s->report_s, "jobs", jobs);
    char *text = json_dumps(env, 0), err[512];
    s->env = cil_env_parse(text, ".", path, err, sizeof err);
    free(text);
    json_decref(env);
    json_decref(root);
    if (!s->env) /* err names the file already */
        return fprintf(stderr, "cilantro serve: %s\n", err), -1;
    cil_policy_opts po;
    cil_policy_opts_default(&po);
    po.unit = 1; /* the policy's world counts units (parse_tenant, on_feedback) */
    s->pol = cil_policy_new(s->policy, s->env, &po, err, sizeof err);
    return s->pol ? 0 : fail(path, err);
}

/* ---- the watch: feedback, nodes and tenants' ends, on its own thread ---- */
static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The tenant a feedback key "<tenant>.feedback/<seq>" belongs to, or -1. */
static int feedback_tenant(const serve_t *s, const char *key)
{
    const char *dot = strstr(key, CIL_FEEDBACK_KEY);
    char name[64];
    if (!dot || (size_t)(dot - key) >= sizeof name)
        return -1;
    memcpy(name, key, (size_t)(dot - key));
    name[dot - key] = '\0';
    return cil_env_find(s->env, name);
}

static void print_workers(tenant_t *t, json_t *v)
{
    t->pids_printed = 1;
    printf("tenant %s workers:", t->name);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(v, "pids"), i, p)
        printf(" %s:%lld", str(p, "node", "?"),
               (long long)json_integer_value(json_object_get(p, "pid")));
    printf("\n");
    fflush(stdout);
}

static void on_feedback(serve_t *s, const esc_event *ev)
{
    int j = feedback_tenant(s, ev->key);
    json_t *v = j >= 0 ? json_loadb(ev->value, ev->value_len, 0, NULL) : NULL;
    if (!v)
        return;
    json_t *rw = json_object_get(v, "reward");
    double reward = json_is_number(rw) ? json_number_value(rw) : NAN;
    tenant_t *t = &s->t[j];
    pthread_mutex_lock(&s->mu);
    cil_policy_report(s->pol, j, num(v, "load", 0), num(v, "alloc", 0) / s->unit, reward,
                      num(v, "sigma", 0.5), num(v, "span_s", 1));
    if (!isnan(reward)) {
        t->rsum += reward;
        t->rn++;
    }
    t->alloc_seen = num(v, "alloc", 0);
    t->load_sum += num(v, "load", 0);
    t->load_n++;
    t->lat_sum += num(v, "lat_ms", 0) * num(v, "served", 0);
    t->served += num(v, "served", 0);
    /* written at "at" (the tenant's wall clock: the same machine's, or synchronized) */
    double at = num(v, "at", NAN);
    if (isfinite(at) && s->nfb < MAX_FEEDBACK)
        s->fb_ms[s->nfb++] = (wall_s() - at) * 1000;
    if (!t->pids_printed) /* once: where its workers are (tests read their CPU time) */
        print_workers(t, v);
    pthread_mutex_unlock(&s->mu);
    json_decref(v);
}

/* A node joins or dies: the split follows at once (the main loop re-applies). */
static void on_node(serve_t *s, const char *id, int alive)
{
    pthread_mutex_lock(&s->mu);
    int k = 0;
    while (k < s->nnodes && strcmp(s->nodes[k], id))
        k++;
    if (alive && k == s->nnodes && s->nnodes < MAX_NODES)
        s->nodes[s->nnodes++] = strdup(id);
    else if (!alive && k < s->nnodes) {
        free(s->nodes[k]);
        s->nodes[k] = s->nodes[--s->nnodes];
    } else
        k = -1;
    s->changed |= k >= 0;
    pthread_mutex_unlock(&s->mu);
    if (k >= 0) {
        printf("node %s %s\n", id, alive ? "joined" : "died");
        fflush(stdout);
    }
}

/* A tenant's job ended on its own (not stopped by us): it gets no more CPU. */
static void on_job_end(serve_t *s, const char *job_id)
{
    for (int j = 0; j < s->nt; j++) {
        tenant_t *t = &s->t[j];
        pthread_mutex_lock(&s->mu);
        int now_ended = t->job && !strcmp(t->job_id, job_id) && !t->ended;
        t->ended |= now_ended;
        s->changed |= now_ended;
        pthread_mutex_unlock(&s->mu);
        if (now_ended) {
            printf("tenant %s ended (job %s finished); its CPU goes to the others\n", t->name,
                   job_id);
            fflush(stdout);
        }
    }
}

static void on_event(void *ud, const esc_event *ev)
{
    serve_t *s = ud;
    if (ev->kind == ESC_EVENT_KV && !ev->deleted && ev->value)
        on_feedback(s, ev);
    else if (ev->kind == ESC_EVENT_NODE_ADDED || ev->kind == ESC_EVENT_NODE_DEAD)
        on_node(s, ev->node_id, ev->kind == ESC_EVENT_NODE_ADDED);
    else if (ev->kind == ESC_EVENT_JOB_FINISHED)
        on_job_end(s, ev->job_id);
}

/* Feedback records of an earlier run stay in the namespace's KV; the watch would replay
 * them, so they go first. */
static int clear_feedback(serve_t *s)
{
    char **keys;
    size_t n;
    esc_status st;
    if (esc_kv_keys(s->c, NULL, "", &keys, &n, &st) != ESC_OK)
        return fail("listing old feedback", st.message);
    for (size_t i = 0; i < n; i++)
        if (strstr(keys[i], CIL_FEEDBACK_KEY) || strstr(keys[i], CIL_HELLO_KEY))
            esc_kv_del(s->c, NULL, keys[i], NULL, NULL);
    esc_kv_keys_free(keys, n);
    return 0;
}

/* ---- allocation ---- */
static int find_nodes(serve_t *s)
{
    esc_cluster_status *cs;
    esc_status st;
    if (esc_get_cluster_resources(s->c, &cs, &st) != ESC_OK)
        return fail("reading the cluster", st.message);
    for (size_t i = 0; i < cs->nnodes && s->nnodes < MAX_NODES; i++)
        if (!strcmp(cs->nodes[i].state, "ALIVE"))
            s->nodes[s->nnodes++] = strdup(cs->nodes[i].id);
    esc_cluster_status_free(cs);
    return s->nnodes ? 0 : fail("reading the cluster", "no alive node");
}

/* Every alive tenant keeps at least one unit per node, so that each of its actors holds
 * some CPU (an actor holding none would run without a quota): taken from the largest. */
static void floor_alloc(const serve_t *s, int nnodes, double *a)
{
    double minimum = s->unit * nnodes;
    for (int j = 0; j < s->nt; j++)
        while (!s->t[j].ended && a[j] < minimum - 1e-9) {
            int big = 0;
            for (int k = 1; k < s->nt; k++)
                if (a[k] > a[big])
                    big = k;
            if (a[big] - s->unit < minimum - 1e-9)
                break;
            a[big] -= s->unit;
            a[j] += s->unit;
        }
}

/* An ended tenant's CPU goes to the alive ones, a unit at a time to the smallest. */
static void drop_ended(const serve_t *s, double *a)
{
    double freed = 0;
    int alive = 0;
    for (int j = 0; j < s->nt; j++) {
        alive += !s->t[j].ended;
        if (s->t[j].ended)
            freed += a[j], a[j] = 0;
    }
    for (; alive > 0 && freed >= s->unit - 1e-9; freed -= s->unit) {
        int small = -1;
        for (int j = 0; j < s->nt; j++)
            if (!s->t[j].ended && (small < 0 || a[j] < a[small]))
                small = j;
        a[small] += s->unit;
    }
}

/* The split rule: each alive tenant's allocation evenly over the nodes, rounded down to
 * the capacity's fixed point so no node is asked for more CPU than it has; an ended
 * tenant's rows are deleted. One batch, applied on every node before it returns. */
static void add_tenant_rows(esc_batch *b, const tenant_t *t, double alloc, char **nodes,
                            int nnodes)
{
    esc_amount backing = {"CPU", ESC_QTY(1), false};
    char cpu[96], home[96];
    snprintf(cpu, sizeof cpu, "%s.cpu", t->name);
    snprintf(home, sizeof home, "%s.home", t->name);
    for (int n = 0; n < nnodes; n++) {
        esc_target tg = ESC_NODE(nodes[n]);
        if (t->ended) {
            esc_batch_delete(b, cpu, &tg);
            esc_batch_delete(b, home, &tg);
            continue;
        }
        int64_t q = (int64_t)floor(alloc / nnodes * ESC_QTY_UNIT + 1e-6);
        esc_batch_set_backed(b, cpu, q, &backing, 1, &tg);
        esc_batch_set(b, home, ESC_QTY(1), &tg);
    }
}

/* How long apply waits for every node: half a round, at most 5 s. */
static int apply_wait_ms(const serve_t *s)
{
    return (int)fmin(5000, s->round_s * 500);
}

static int apply(serve_t *s, double *alloc)
{
    char *nodes[MAX_NODES];
    pthread_mutex_lock(&s->mu);
    int nnodes = s->nnodes;
    for (int n = 0; n < nnodes; n++)
        nodes[n] = strdup(s->nodes[n]);
    s->changed = 0;
    drop_ended(s, alloc);
    floor_alloc(s, nnodes, alloc);
    esc_batch *b = esc_batch_new();
    int deleting[MAX_TENANTS];
    for (int j = 0; j < s->nt; j++) {
        deleting[j] = s->t[j].ended && !s->t[j].released;
        if (!s->t[j].released)
            add_tenant_rows(b, &s->t[j], alloc[j], nodes, nnodes);
    }
    pthread_mutex_unlock(&s->mu);
    uint64_t seq;
    esc_status st;
    int rc = esc_batch_commit(s->c, b, &seq, &st);
    esc_batch_free(b);
    for (int n = 0; n < nnodes; n++)
        free(nodes[n]);
    /* Committed: the GCS holds it, and every node applies it in log order. The wait only
     * sees it done; a node that stopped answering (dead, not yet declared so) holds it up
     * until its timeout, which must not stall the rounds. */
    if (rc == ESC_OK && esc_wait_applied(s->c, seq, NULL, 0, apply_wait_ms(s), &st) != ESC_OK) {
        fprintf(stderr, "cilantro serve: the allocation is not applied on every node yet: %s\n",
                st.message);
        s->apply_late++;
    }
    if (rc != ESC_OK) {
        s->apply_failures++;
        fprintf(stderr, "cilantro serve: applying the allocation: %s%s\n", st.message,
                s->apply_failures < MAX_APPLY_FAILURES ? " (trying again)" : "");
        pthread_mutex_lock(&s->mu);
        s->changed = 1;
        pthread_mutex_unlock(&s->mu);
        s->retry_at = now_s() + 1; /* a GCS that restarts takes a moment */
        return s->apply_failures < MAX_APPLY_FAILURES ? 0 : -1;
    }
    s->apply_failures = 0;
    for (int j = 0; j < s->nt; j++)
        s->t[j].released |= deleting[j];
    return 0;
}

/* ---- tenants as jobs ---- */
static int start_tenant(serve_t *s, tenant_t *t, const char *bindir, const char *address)
{
    char exe[PATH_MAX + 32], pkg[PATH_MAX + 32], ns[128], work[32], slo[32], scale[32],
        sps[32], rep[32], batch[16], hidden[16];
    snprintf(exe, sizeof exe, "%s/cilantro-tenant", bindir);
    snprintf(pkg, sizeof pkg, "%s/cilantro-live", bindir);
    snprintf(ns, sizeof ns, "%s-%s", s->ns, t->name);
    snprintf(work, sizeof work, "%g", t->work_us);
    snprintf(slo, sizeof slo, "%g", t->slo_ms);
    snprintf(scale, sizeof scale, "%g", t->scale);
    snprintf(sps, sizeof sps, "%g", t->target_sps);
    snprintf(rep, sizeof rep, "%g", s->report_s);
    snprintf(batch, sizeof batch, "%d", t->batch);
    snprintf(hidden, sizeof hidden, "%d", t->hidden);
    const char *argv[24] = {exe, "--name", t->name, "--kind", t->kind, "--ns", s->ns,
                            "--report-s", rep};
    int n = 9;
    if (!strcmp(t->kind, "slo")) {
        const char *more[] = {"--work-us", work, "--slo-ms", slo, "--trace", t->trace,
                              "--scale", scale};
        memcpy(argv + n, more, sizeof more);
        n += 8;
    } else {
        const char *more[] = {"--target-sps", sps, "--batch", batch, "--hidden", hidden};
        memcpy(argv + n, more, sizeof more);
        n += 6;
    }
    argv[n] = NULL;
    esc_connect_opts co = {.address = address, .namespace_ = ns, .new_job = true};
    esc_status st;
    esc_job_spec spec = {.argv = argv, .working_dir = pkg};
    char prefix[72]; /* its rows and its records, no one else's: "<tenant>." */
    snprintf(prefix, sizeof prefix, "%s.", t->name);
    if (esc_connect(&co, &t->job, &st) != ESC_OK ||
        esc_job_submit(t->job, &spec, t->job_id, &st) != ESC_OK ||
        esc_namespace_grant_prefix(s->c, t->job_id, prefix, &st) != ESC_OK) {
        char what[128];
        snprintf(what, sizeof what, "starting tenant %s", t->name);
        return fail(what, st.message);
    }
    printf("tenant %s job %s\n", t->name, t->job_id);
    return 0;
}

static void stop_tenants(serve_t *s)
{
    for (int j = 0; j < s->nt; j++)
        if (s->t[j].job) {
            esc_job_stop(s->t[j].job, s->t[j].job_id, "cilantro serve ended", NULL);
            esc_disconnect(s->t[j].job);
        }
}

/* ---- rounds ---- */
/* What one round measured: per tenant (reward NAN without records), and overall. */
typedef struct {
    double reward[MAX_TENANTS], util[MAX_TENANTS], reports[MAX_TENANTS], held[MAX_TENANTS],
        served[MAX_TENANTS], lat_ms[MAX_TENANTS], load[MAX_TENANTS];
    double feedback_ms, decide_ms, apply_ms;
    cil_metrics m;   /* over the alive tenants with a reward; NAN when none */
} round_stats;

/* Takes the round's feedback (and resets it); under the lock. */
static void take_feedback(serve_t *s, round_stats *rs)
{
    for (int j = 0; j < s->nt; j++) {
        tenant_t *t = &s->t[j];
        rs->reward[j] = t->rn > 0 ? t->rsum / t->rn : NAN;
        rs->util[j] = isnan(rs->reward[j]) ? NAN : cil_job_utility(&s->env->jobs[j], rs->reward[j]);
        rs->reports[j] = t->rn;
        rs->held[j] = t->alloc_seen;
        rs->served[j] = t->served;
        rs->lat_ms[j] = t->served > 0 ? t->lat_sum / t->served : 0;
        rs->load[j] = t->load_n > 0 ? t->load_sum / t->load_n : NAN;
        t->rsum = t->rn = t->lat_sum = t->served = t->load_sum = t->load_n = 0;
    }
    rs->feedback_ms = s->nfb ? cli_median(s->fb_ms, (size_t)s->nfb) : NAN;
    s->nfb = 0;
}

/* The paper's metrics (cilantro/metrics.h) of the round that ended, at the allocation
 * that was in effect during it, over the alive tenants that reported a reward. */
static void round_metrics(const serve_t *s, const double *in_effect, round_stats *rs)
{
    double a[MAX_TENANTS], d[MAX_TENANTS], u[MAX_TENANTS], w[MAX_TENANTS];
    size_t n = 0;
    for (int j = 0; j < s->nt; j++)
        if (!s->t[j].ended && !isnan(rs->util[j])) {
            a[n] = in_effect[j], d[n] = s->t[j].demand, u[n] = rs->util[j], w[n] = s->t[j].weight;
            n++;
        }
    rs->m.social_welfare = n ? cil_social_welfare(n, u, w) : NAN;
    rs->m.egalitarian_welfare = n ? cil_egalitarian_welfare(n, u) : NAN;
    rs->m.njc_fairness = n ? cil_njc_fairness(n, s->cpus, a, d, w) : NAN;
    rs->m.useful_usage = n ? cil_useful_usage(n, s->cpus, a, d) : NAN;
    rs->m.njc_fairness_utility = NAN; /* needs each tenant's utility at its equal share */
}

static void print_round(const serve_t *s, int r, double t, const round_stats *rs,
                        const double *alloc)
{
    printf("round %d t=%.1fs policy=%s", r, t, s->policy);
    for (int j = 0; j < s->nt; j++)
        printf(" | %s reward=%.3f utility=%.3f reports=%.0f held=%.2f served=%.0f lat_ms=%.1f%s",
               s->t[j].name, rs->reward[j], rs->util[j], rs->reports[j], rs->held[j],
               rs->served[j], rs->lat_ms[j], s->t[j].ended ? " ended" : "");
    printf(" || sw=%.3f ew=%.3f njc=%.3f decide_ms=%.2f apply_ms=%.1f feedback_ms=%.1f || alloc",
           rs->m.social_welfare, rs->m.egalitarian_welfare, rs->m.njc_fairness, rs->decide_ms,
           rs->apply_ms, rs->feedback_ms);
    for (int j = 0; j < s->nt; j++)
        printf(" %s=%.2f", s->t[j].name, alloc[j]);
    printf("\n");
    fflush(stdout);
}

/* JSON has no NaN: null. */
static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* --log: one object per round (docs/cilantro.md, "Run log"). */
static void log_round(const serve_t *s, int r, double t, const round_stats *rs,
                      const double *in_effect, const double *alloc)
{
    json_t *ts = json_object();
    for (int j = 0; j < s->nt; j++)
        json_object_set_new(ts, s->t[j].name,
                            json_pack("{s:o, s:o, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:b}",
                                      "reward", jnum(rs->reward[j]), "utility",
                                      jnum(rs->util[j]), "load", jnum(rs->load[j]),
                                      "reports", rs->reports[j], "held", rs->held[j], "alloc",
                                      in_effect[j], "next_alloc", alloc[j], "served",
                                      rs->served[j], "lat_ms", rs->lat_ms[j], "ended",
                                      s->t[j].ended));
    json_t *o = json_pack("{s:i, s:f, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "round", r,
                          "t", t, "policy", s->policy, "tenants", ts, "social_welfare",
                          jnum(rs->m.social_welfare), "egalitarian_welfare",
                          jnum(rs->m.egalitarian_welfare), "njc_fairness",
                          jnum(rs->m.njc_fairness), "useful_usage", jnum(rs->m.useful_usage),
                          "decide_ms", jnum(rs->decide_ms), "apply_ms", jnum(rs->apply_ms),
                          "feedback_ms", jnum(rs->feedback_ms));
    json_dumpf(o, s->log, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    fputc('\n', s->log);
    fflush(s->log);
    json_decref(o);
}

/* One round: the policy decides from the feedback so far; apply, print, log. alloc holds
 * the allocation in effect and receives the next. */
static int round_once(serve_t *s, int r, double *alloc)
{
    char err[256];
    round_stats rs;
    double in_effect[MAX_TENANTS];
    memcpy(in_effect, alloc, sizeof in_effect);
    pthread_mutex_lock(&s->mu);
    double t = now_s() - s->t0, t1 = now_s();
    int rc = cil_policy_round(s->pol, t, alloc, err, sizeof err);
    rs.decide_ms = (now_s() - t1) * 1000;
    for (int j = 0; j < s->nt; j++) /* units to CPUs */
        alloc[j] *= s->unit;
    take_feedback(s, &rs);
    pthread_mutex_unlock(&s->mu);
    if (rc != 0)
        return fail("policy round", err);
    round_metrics(s, in_effect, &rs);
    t1 = now_s();
    rc = apply(s, alloc);
    rs.apply_ms = (now_s() - t1) * 1000;
    print_round(s, r, t, &rs, alloc);
    if (s->log)
        log_round(s, r, t, &rs, in_effect, alloc);
    return rc;
}

static int run(serve_t *s, const char *address)
{
    char exe[PATH_MAX];
    ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[exe_len > 0 ? exe_len : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    esc_status st;
    esc_connect_opts co = {.address = address, .namespace_ = s->ns};
    if (esc_connect(&co, &s->c, &st) != ESC_OK)
        return fail("connecting", st.message);
    if (find_nodes(s))
        return -1;
    double alloc[MAX_TENANTS];
    for (int j = 0; j < s->nt; j++) /* round 0: equal shares, in whole units */
        alloc[j] = floor(round(s->cpus / s->unit) / s->nt) * s->unit;
    esc_kv_filter kf = {NULL, ""}; /* every tenant's records: "<tenant>.feedback/..." */
    esc_watch_filter wf = {.kv = &kf, .nkv = 1};
    esc_watch *w = NULL;
    int rc = clear_feedback(s) ? -1 : apply(s, alloc);
    if (rc == 0 && esc_subscribe(s->c, &wf, on_event, s, &w, &st) != ESC_OK)
        rc = fail("watching feedback", st.message);
    for (int j = 0; rc == 0 && j < s->nt; j++)
        rc = start_tenant(s, &s->t[j], exe, address);
    s->t0 = now_s();
    printf("serving %d tenants on %d nodes: policy %s, round %.1fs, unit %g CPU, %g CPUs\n",
           s->nt, s->nnodes, s->policy, s->round_s, s->unit, s->cpus);
    fflush(stdout);
    double end = s->t0;
    for (int r = 1; rc == 0 && !stop_flag && (s->rounds == 0 || r <= s->rounds); r++) {
        /* a round lasts round_s; one that starts late (a stalled apply) starts the clock
         * again rather than firing the missed rounds back to back without feedback */
        end = fmax(end + s->round_s, now_s() + s->round_s / 2);
        while (rc == 0 && !stop_flag && now_s() < end) {
            usleep(20000);
            pthread_mutex_lock(&s->mu);
            int changed = s->changed;
            pthread_mutex_unlock(&s->mu);
            if (changed && now_s() >= s->retry_at) /* a node came or went, or a tenant ended: split again now */
                rc = apply(s, alloc);
        }
        if (rc == 0 && !stop_flag)
            rc = round_once(s, r, alloc);
    }
    esc_unsubscribe(w);
    stop_tenants(s);
    esc_disconnect(s->c);
    for (int i = 0; i < s->nnodes; i++)
        free(s->nodes[i]);
    return rc;
}

int cil_serve_cmd(int argc, char **argv)
{
    const char *address = NULL, *config = NULL, *log_path = NULL;
    static serve_t s;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cluster")) {
            if (i + 1 < argc && argv[i + 1][0] != '-')
                address = argv[++i];
        } else if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 0 || v > 1000000) {
                fprintf(stderr, "cilantro serve: --rounds needs a count (0..1000000)\n");
                return 2;
            }
            s.rounds = (int)v;
        } else if (!strcmp(argv[i], "--log") && i + 1 < argc)
            log_path = argv[++i];
        else {
            fprintf(stderr, "cilantro serve: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!config) {
        fprintf(stderr, "usage: cilantro serve --cluster [ADDRESS] --config FILE [--rounds N] "
                        "[--log FILE]\n");
        return 2;
    }
    pthread_mutex_init(&s.mu, NULL);
    if (load_config(&s, config))
        return 1;
    if (log_path && !(s.log = fopen(log_path, "w"))) {
        fprintf(stderr, "cilantro serve: cannot write %s: %s\n", log_path, strerror(errno));
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int rc = run(&s, address);
    if (s.log)
        fclose(s.log);
    cil_policy_free(s.pol);
    cil_env_free(s.env);
    return rc ? 1 : 0;
}
