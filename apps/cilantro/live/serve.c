/* serve.c: `cilantro serve --cluster [ADDRESS] --config FILE [--rounds N]`: a Cilantro
 * controller as an escher job (docs/cilantro.md, "Live runs"). It starts every tenant
 * as an escher job (`cilantro-tenant`, granted the controller's namespace), takes their
 * feedback from KV through a watch into the policy object (cilantro/policy.h), and each
 * round commits the policy's allocation as CPU-backed capacities <tenant>.cpu, split
 * evenly over the nodes, in one atomic batch. One line per round on stdout.
 */
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

#include "cilantro/policy.h"
#include "live.h"

#define MAX_TENANTS 32
#define MAX_NODES 64

typedef struct {
    char name[64], kind[16], trace[PATH_MAX];
    double work_us, slo_ms, scale, target_sps;
    int batch, hidden; /* throughput: samples per step, the MLP's hidden units */
    esc_client *job;        /* the client whose job the tenant's entrypoint is */
    char job_id[ESC_ID_MAX];
    /* feedback of the current round (under the lock) */
    double rsum, rn, alloc_seen, lat_sum, served;
    int pids_printed;
} tenant_t;

typedef struct {
    const char *ns, *policy;
    double round_s, unit, report_s;
    int cpus, rounds;
    tenant_t t[MAX_TENANTS];
    int nt;
    cil_env *env;
    cil_policy *pol;
    esc_client *c;
    char *nodes[MAX_NODES];
    int nnodes;
    pthread_mutex_t mu;
    double t0;
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
    t->work_us = num(o, "work_us", 5000);
    t->slo_ms = num(o, "slo_ms", 50);
    t->scale = num(o, "scale", 1);
    t->target_sps = num(o, "target_sps", 5000);
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
                          "type", "linear", "demand", num(o, "demand", 1), "load", load,
                          "slo", num(o, "target", 0.9), "utility",
                          str(o, "utility", "linear"), "weight", num(o, "weight", 1));
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
    s->cpus = (int)num(root, "cpus", 0);
    if (s->rounds == 0)
        s->rounds = (int)num(root, "rounds", 0);
    json_t *ts = json_object_get(root, "tenants");
    if (s->cpus < 1 || s->round_s <= 0 || s->unit <= 0 || !json_is_array(ts) ||
        json_array_size(ts) == 0 || json_array_size(ts) > MAX_TENANTS) {
        json_decref(root);
        return fail(path, "needs cpus >= 1, round_s > 0, unit > 0 and 1..32 tenants");
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
    json_t *env = json_pack("{s:i, s:f, s:f, s:o}", "cpus", s->cpus, "round_s", s->round_s,
                            "report_s", s->report_s, "jobs", jobs);
    char *text = json_dumps(env, 0), err[512];
    s->env = cil_env_parse(text, ".", path, err, sizeof err);
    free(text);
    json_decref(env);
    json_decref(root);
    if (!s->env)
        return fail(path, err);
    cil_policy_opts po;
    cil_policy_opts_default(&po);
    po.unit = s->unit;
    s->pol = cil_policy_new(s->policy, s->env, &po, err, sizeof err);
    return s->pol ? 0 : fail(path, err);
}

/* ---- feedback: the watch's callback, on its own thread ---- */
static void on_event(void *ud, const esc_event *ev)
{
    serve_t *s = ud;
    if (ev->kind != ESC_EVENT_KV || ev->deleted || !ev->value || strncmp(ev->key, "feedback/", 9))
        return;
    char name[64];
    const char *slash = strchr(ev->key + 9, '/');
    if (!slash || (size_t)(slash - (ev->key + 9)) >= sizeof name)
        return;
    memcpy(name, ev->key + 9, (size_t)(slash - (ev->key + 9)));
    name[slash - (ev->key + 9)] = '\0';
    int j = cil_env_find(s->env, name);
    json_t *v = json_loadb(ev->value, ev->value_len, 0, NULL);
    if (j < 0 || !v) {
        json_decref(v);
        return;
    }
    json_t *rw = json_object_get(v, "reward");
    double reward = json_is_number(rw) ? json_number_value(rw) : NAN;
    tenant_t *t = &s->t[j];
    pthread_mutex_lock(&s->mu);
    cil_policy_report(s->pol, j, num(v, "load", 0), num(v, "alloc", 0), reward,
                      num(v, "sigma", 0.5), num(v, "span_s", 1));
    if (!isnan(reward)) {
        t->rsum += reward;
        t->rn++;
    }
    t->alloc_seen = num(v, "alloc", 0);
    t->lat_sum += num(v, "lat_ms", 0) * num(v, "served", 0);
    t->served += num(v, "served", 0);
    if (!t->pids_printed) { /* once: where its workers are (tests read their CPU time) */
        t->pids_printed = 1;
        printf("tenant %s workers:", name);
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(v, "pids"), i, p)
            printf(" %s:%lld", str(p, "node", "?"),
                   (long long)json_integer_value(json_object_get(p, "pid")));
        printf("\n");
        fflush(stdout);
    }
    pthread_mutex_unlock(&s->mu);
    json_decref(v);
}

/* Feedback records of an earlier run stay in the namespace's KV; the watch would replay
 * them, so they go first. */
static int clear_feedback(serve_t *s)
{
    char **keys;
    size_t n;
    esc_status st;
    if (esc_kv_keys(s->c, NULL, "feedback/", &keys, &n, &st) != ESC_OK)
        return fail("listing old feedback", st.message);
    for (size_t i = 0; i < n; i++)
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

/* Every tenant keeps at least one unit per node, so that each of its actors holds some
 * CPU (an actor holding none would run without a quota): taken from the largest. */
static void floor_alloc(const serve_t *s, double *a)
{
    double minimum = s->unit * s->nnodes;
    for (int j = 0; j < s->nt; j++)
        while (a[j] < minimum - 1e-9) {
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

/* The split rule: each tenant's allocation evenly over all nodes, rounded down to the
 * capacity's fixed point so no node is asked for more CPU than it has. */
static int apply(serve_t *s, const double *alloc)
{
    esc_batch *b = esc_batch_new();
    esc_amount backing = {"CPU", ESC_QTY(1), false};
    for (int j = 0; j < s->nt; j++)
        for (int n = 0; n < s->nnodes; n++) {
            char name[96];
            esc_target tg = ESC_NODE(s->nodes[n]);
            int64_t q = (int64_t)floor(alloc[j] / s->nnodes * ESC_QTY_UNIT + 1e-6);
            snprintf(name, sizeof name, "%s.cpu", s->t[j].name);
            esc_batch_set_backed(b, name, q, &backing, 1, &tg);
            snprintf(name, sizeof name, "%s.home", s->t[j].name);
            esc_batch_set(b, name, ESC_QTY(1), &tg);
        }
    uint64_t seq;
    esc_status st;
    int rc = esc_batch_commit(s->c, b, &seq, &st);
    esc_batch_free(b);
    if (rc == ESC_OK)
        rc = esc_wait_applied(s->c, seq, NULL, 0, 10000, &st);
    return rc == ESC_OK ? 0 : fail("applying the allocation", st.message);
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
    if (esc_connect(&co, &t->job, &st) != ESC_OK ||
        esc_job_submit(t->job, &spec, t->job_id, &st) != ESC_OK ||
        esc_namespace_grant(s->c, t->job_id, &st) != ESC_OK) {
        char what[128];
        snprintf(what, sizeof what, "starting tenant %s", t->name);
        return fail(what, st.message);
    }
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

/* One round: the policy decides from the feedback so far; print, apply. */
static int round_once(serve_t *s, int r, double *alloc)
{
    char err[256];
    pthread_mutex_lock(&s->mu);
    int rc = cil_policy_round(s->pol, now_s() - s->t0, alloc, err, sizeof err);
    printf("round %d t=%.1fs policy=%s", r, now_s() - s->t0, s->policy);
    for (int j = 0; j < s->nt; j++) {
        tenant_t *t = &s->t[j];
        double rew = t->rn > 0 ? t->rsum / t->rn : NAN;
        printf(" | %s reward=%.3f utility=%.3f reports=%.0f held=%.2f served=%.0f lat_ms=%.1f",
               t->name, rew, isnan(rew) ? NAN : cil_job_utility(&s->env->jobs[j], rew), t->rn,
               t->alloc_seen, t->served, t->served > 0 ? t->lat_sum / t->served : 0);
        t->rsum = t->rn = t->lat_sum = t->served = 0;
    }
    pthread_mutex_unlock(&s->mu);
    if (rc != 0)
        return printf("\n"), fail("policy round", err);
    floor_alloc(s, alloc);
    printf(" || alloc");
    for (int j = 0; j < s->nt; j++)
        printf(" %s=%.2f", s->t[j].name, alloc[j]);
    printf("\n");
    fflush(stdout);
    return apply(s, alloc);
}

static int run(serve_t *s, const char *address)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
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
        alloc[j] = floor(s->cpus / s->unit / s->nt) * s->unit;
    esc_kv_filter kf = {NULL, "feedback/"};
    esc_watch_filter wf = {.kv = &kf, .nkv = 1};
    esc_watch *w = NULL;
    int rc = clear_feedback(s) ? -1 : apply(s, alloc);
    if (rc == 0 && esc_subscribe(s->c, &wf, on_event, s, &w, &st) != ESC_OK)
        rc = fail("watching feedback", st.message);
    for (int j = 0; rc == 0 && j < s->nt; j++)
        rc = start_tenant(s, &s->t[j], exe, address);
    s->t0 = now_s();
    printf("serving %d tenants on %d nodes: policy %s, round %.1fs, unit %g CPU, %d CPUs\n",
           s->nt, s->nnodes, s->policy, s->round_s, s->unit, s->cpus);
    fflush(stdout);
    for (int r = 1; rc == 0 && !stop_flag && (s->rounds == 0 || r <= s->rounds); r++) {
        double end = s->t0 + r * s->round_s;
        while (!stop_flag && now_s() < end)
            usleep(20000);
        if (!stop_flag)
            rc = round_once(s, r, alloc);
    }
    esc_unsubscribe(w);
    stop_tenants(s);
    esc_disconnect(s->c);
    return rc;
}

int cil_serve_cmd(int argc, char **argv)
{
    const char *address = NULL, *config = NULL;
    static serve_t s;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cluster")) {
            if (i + 1 < argc && argv[i + 1][0] != '-')
                address = argv[++i];
        } else if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            s.rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "cilantro serve: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!config) {
        fprintf(stderr, "usage: cilantro serve --cluster [ADDRESS] --config FILE [--rounds N]\n");
        return 2;
    }
    pthread_mutex_init(&s.mu, NULL);
    if (load_config(&s, config))
        return 1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int rc = run(&s, address);
    cil_policy_free(s.pol);
    cil_env_free(s.env);
    return rc ? 1 : 0;
}
