/* baselines.c: the --scheduler specs: thief and fixedconfig (thief.c's allocation)
 * and the baselines of the Ekya evaluation: uniform, noretrain and fixedres. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ekya/sched.h"

typedef enum { K_THIEF, K_FIXEDCONFIG, K_UNIFORM, K_NORETRAIN, K_FIXEDRES } kind;

typedef struct {
    kind k;
    int cfg;        /* the fixed configuration, or EKYA_ANY_CONFIG */
    double share;   /* uniform: fraction of a stream's GPUs given to inference */
} base_ctx;

/* Every stream gets G/V; `infer_frac` of it for inference, the rest for retraining
 * with `cfg` (the uniform baseline) or with PickConfigs' choice (fixedres). A stream
 * whose retraining is done gives its retraining share to its own inference. */
static void split_evenly(const ekya_sched_state *st, double infer_frac, int cfg,
                         ekya_stream_alloc *out)
{
    int n = st->prof->nstreams;
    double per = st->gpus / n;
    for (int s = 0; s < n; s++) {
        double inf = st->completed[s] ? per : per * infer_frac;
        double ret = per - inf;
        if (cfg == EKYA_ANY_CONFIG) {
            ekya_pick_stream(st, s, ret, inf, EKYA_ANY_CONFIG, &out[s]);
            continue;
        }
        out[s].retrain_share = ret;
        out[s].infer_share = inf;
        out[s].infer_subsampling = ekya_infer_subsampling(st->infer, inf, st->rmax);
        /* uniform retrains blindly: even a job that cannot finish runs (and is lost) */
        int usable = !st->completed[s] && ret > 0 &&
                     ekya_profiles_cell(st->prof, s, st->window, cfg)->present;
        out[s].retrain_cfg = usable ? cfg : EKYA_NO_RETRAIN;
    }
}

static int base_schedule(void *ctx, const ekya_sched_state *st, ekya_stream_alloc *out,
                         char *err, size_t errlen)
{
    const base_ctx *b = ctx;
    switch (b->k) {
    case K_THIEF:
    case K_FIXEDCONFIG:
        if (ekya_thief_schedule(st, b->cfg, out) != 0) {
            snprintf(err, errlen, "thief scheduler: out of memory");
            return -1;
        }
        return 0;
    case K_UNIFORM:
        split_evenly(st, b->share, b->cfg, out);
        return 0;
    case K_NORETRAIN:
        for (int s = 0; s < st->prof->nstreams; s++) {
            double inf = st->gpus / st->prof->nstreams;
            out[s] = (ekya_stream_alloc){EKYA_NO_RETRAIN, 0, inf,
                                         ekya_infer_subsampling(st->infer, inf, st->rmax)};
        }
        return 0;
    case K_FIXEDRES:
        split_evenly(st, 0.5, EKYA_ANY_CONFIG, out);
        return 0;
    }
    return -1;
}

/* Parses "CONFIG:EPOCHS" (the rest of a spec) into a configuration index. `tail`
 * receives what follows a further ':' (NULL when none). */
static int parse_config(const char *spec, const char *arg, const ekya_profiles *p, int *cfg,
                        const char **tail, char *err, size_t errlen)
{
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg) {
        snprintf(err, errlen, "scheduler '%s': expected CONFIG:EPOCHS", spec);
        return -1;
    }
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(colon - arg), arg);
    char *end;
    errno = 0;
    long e = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || (*end != '\0' && *end != ':') || errno || e < 1 || e > 1000000000) {
        snprintf(err, errlen, "scheduler '%s': epochs must be a positive integer", spec);
        return -1;
    }
    *tail = *end == ':' ? end + 1 : NULL;
    *cfg = ekya_profiles_find_config(p, name, (int)e);
    if (*cfg < 0) {
        snprintf(err, errlen, "scheduler '%s': unknown configuration '%s' with %ld epochs "
                 "(not in the profiles)", spec, name, e);
        return -1;
    }
    return 0;
}

static int parse_uniform(const char *spec, const ekya_profiles *p, base_ctx *b, char *err,
                         size_t errlen)
{
    const char *tail;
    if (parse_config(spec, spec + strlen("uniform:"), p, &b->cfg, &tail, err, errlen) != 0)
        return -1;
    char *end;
    b->share = tail ? strtod(tail, &end) : -1;
    if (!tail || *end != '\0' || end == tail || !(b->share >= 0 && b->share <= 1)) {
        snprintf(err, errlen, "scheduler '%s': expected uniform:CONFIG:EPOCHS:SHARE with "
                 "SHARE (inference fraction) in 0..1", spec);
        return -1;
    }
    return 0;
}

static int parse_spec(const char *spec, const ekya_profiles *p, base_ctx *b, char *err,
                      size_t errlen)
{
    b->cfg = EKYA_ANY_CONFIG;
    if (strcmp(spec, "thief") == 0)
        b->k = K_THIEF;
    else if (strcmp(spec, "noretrain") == 0)
        b->k = K_NORETRAIN;
    else if (strcmp(spec, "fixedres") == 0)
        b->k = K_FIXEDRES;
    else if (strncmp(spec, "uniform:", 8) == 0) {
        b->k = K_UNIFORM;
        return parse_uniform(spec, p, b, err, errlen);
    } else if (strncmp(spec, "fixedconfig:", 12) == 0) {
        const char *tail;
        b->k = K_FIXEDCONFIG;
        if (parse_config(spec, spec + 12, p, &b->cfg, &tail, err, errlen) != 0)
            return -1;
        if (tail) {
            snprintf(err, errlen, "scheduler '%s': expected fixedconfig:CONFIG:EPOCHS", spec);
            return -1;
        }
    } else {
        snprintf(err, errlen, "unknown scheduler '%s' (expected thief, noretrain, fixedres, "
                 "uniform:CONFIG:EPOCHS:SHARE or fixedconfig:CONFIG:EPOCHS)", spec);
        return -1;
    }
    return 0;
}

int ekya_scheduler_create(const char *spec, const ekya_profiles *p, ekya_scheduler *out,
                          char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    base_ctx *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (parse_spec(spec, p, b, err, errlen) != 0) {
        free(b);
        return -1;
    }
    out->name = spec;
    out->ctx = b;
    out->schedule = base_schedule;
    out->destroy = free;
    out->plans_with_predictions = b->k == K_THIEF || b->k == K_FIXEDCONFIG || b->k == K_FIXEDRES;
    return 0;
}

void ekya_scheduler_destroy(ekya_scheduler *s)
{
    if (s->destroy)
        s->destroy(s->ctx);
    memset(s, 0, sizeof *s);
}
