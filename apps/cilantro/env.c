/* env.c: environment files, profiles, traces, feedback noise. See cilantro/env.h. */
#include "cilantro/env.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cilantro/common.h"

/* Where "data:" files are read from when $CILANTRO_DATA_DIR is unset (CMakeLists.txt):
 * programs under the build directory read the source tree's apps/cilantro/data, other
 * programs (installed ones) the data installed relative to their own folder. */
#ifndef CILANTRO_DEFAULT_DATA_DIR
#define CILANTRO_DEFAULT_DATA_DIR "apps/cilantro/data"
#endif
#ifndef CILANTRO_BUILD_DIR
#define CILANTRO_BUILD_DIR ""
#endif
#ifndef CILANTRO_DATA_FROM_BIN
#define CILANTRO_DATA_FROM_BIN "../share/escher/cilantro"
#endif

/* ---------------------------------------------------------------- PRNG */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void cil_rng_seed(cil_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t cil_rng_next(cil_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double cil_rng_uniform(cil_rng *r) { return (double)(cil_rng_next(r) >> 11) * 0x1.0p-53; }

double cil_rng_gauss(cil_rng *r)
{
    double u = 1.0 - cil_rng_uniform(r); /* (0, 1] */
    double v = cil_rng_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

uint64_t cil_rng_binomial(cil_rng *r, uint64_t n, double p)
{
    if (!(p > 0))
        return 0;
    if (p >= 1)
        return n;
    if (n <= 4096) {
        uint64_t k = 0;
        for (uint64_t i = 0; i < n; i++)
            k += cil_rng_uniform(r) < p;
        return k;
    }
    double m = (double)n * p, s = sqrt(m * (1 - p));
    double x = floor(m + s * cil_rng_gauss(r) + 0.5);
    if (x < 0)
        x = 0;
    if (x > (double)n)
        x = (double)n;
    return (uint64_t)x;
}

/* ---------------------------------------------------------------- helpers */


static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Reads a whole file; NULL on error (errno set). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (len + 1 < cap)
            break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return NULL;
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

static int parse_double(const char *s, double *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (*end == ' ' || *end == '\t' || *end == '\r')
        end++;
    if (end == s || *end || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* Splits line (modified in place) at commas into at most max fields. */
static int split_csv(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        fields[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    char *e = fields[n - 1] + strlen(fields[n - 1]);
    while (e > fields[n - 1] && (e[-1] == '\r' || e[-1] == ' '))
        *--e = '\0';
    return n;
}

static int column_index(char **fields, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        const char *f = fields[i];
        while (*f == ' ')
            f++;
        size_t l = strlen(name);
        if (strncmp(f, name, l) == 0 && (f[l] == '\0' || f[l] == ' ' || f[l] == '\r'))
            return i;
    }
    return -1;
}

/* Next line of buf at *pos (NUL-terminated in place), or NULL at the end. */
static char *next_line(char *buf, size_t *pos)
{
    char *s = buf + *pos;
    if (!*s)
        return NULL;
    char *nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        *pos = (size_t)(nl - buf) + 1;
    } else {
        *pos += strlen(s);
    }
    return s;
}

static int blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r')
            return 0;
    return 1;
}

#define MAX_COLS 32

/* ---------------------------------------------------------------- profiles */

void cil_profile_free(cil_profile *p)
{
    if (!p)
        return;
    free(p->grid);
    free(p->ests);
    free(p);
}

static void profile_scalars(cil_profile *p, char *line)
{
    char *save = NULL;
    for (char *tok = strtok_r(line + 1, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *k = tok, *v = eq + 1;
        double d;
        if (strcmp(k, "workload_type") == 0)
            snprintf(p->workload, sizeof p->workload, "%s", v);
        else if (parse_double(v, &d) == 0) {
            if (strcmp(k, "lip_const") == 0)
                p->lip_const = d;
            else if (strcmp(k, "int_ub") == 0)
                p->int_ub = d;
            else if (strcmp(k, "p50_load") == 0)
                p->p50_load = d;
            else if (strcmp(k, "p99_load") == 0)
                p->p99_load = d;
        }
    }
}

cil_profile *cil_profile_load(const char *path, char *err, size_t errlen)
{
    char *buf = slurp(path);
    if (!buf) {
        cil_errorf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    cil_profile *p = cil_profile_parse(buf, path, err, errlen);
    free(buf);
    return p;
}

cil_profile *cil_profile_parse(char *buf, const char *path, char *err, size_t errlen)
{
    cil_profile *p = calloc(1, sizeof *p);
    if (!p) {
        cil_errorf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    p->lip_const = p->int_ub = p->p50_load = p->p99_load = NAN;
    size_t pos = 0, cap = 0;
    int lineno = 0, gi = -1, ei = -1, ncols = 0;
    char *line;
    while ((line = next_line(buf, &pos))) {
        lineno++;
        if (blank(line))
            continue;
        if (line[0] == '#') {
            if (gi < 0)
                profile_scalars(p, line);
            continue;
        }
        char *f[MAX_COLS];
        int n = split_csv(line, f, MAX_COLS);
        if (gi < 0) {
            gi = n > 0 ? column_index(f, n, "grid") : -1;
            ei = n > 0 ? column_index(f, n, "ests") : -1;
            if (gi < 0 || ei < 0) {
                cil_errorf(err, errlen, "%s:%d: header must name columns grid and ests", path, lineno);
                goto fail;
            }
            ncols = n;
            continue;
        }
        double x, y;
        if (n != ncols || parse_double(f[gi], &x) || parse_double(f[ei], &y)) {
            cil_errorf(err, errlen, "%s:%d: expected %d columns with numeric grid and ests", path,
                   lineno, ncols);
            goto fail;
        }
        if (p->n > 0 && x < p->grid[p->n - 1]) {
            cil_errorf(err, errlen, "%s:%d: grid must be non-decreasing", path, lineno);
            goto fail;
        }
        if (p->n == cap) {
            cap = cap ? cap * 2 : 256;
            double *g = realloc(p->grid, cap * sizeof *g);
            if (g)
                p->grid = g;
            double *e = realloc(p->ests, cap * sizeof *e);
            if (e)
                p->ests = e;
            if (!g || !e) {
                cil_errorf(err, errlen, "%s: out of memory", path);
                goto fail;
            }
        }
        p->grid[p->n] = x;
        p->ests[p->n] = y;
        p->n++;
    }
    if (p->n == 0) {
        cil_errorf(err, errlen, "%s: no data rows", path);
        goto fail;
    }
    return p;
fail:
    cil_profile_free(p);
    return NULL;
}

double cil_profile_eval(const cil_profile *p, double x)
{
    if (isnan(x))
        return NAN;
    if (x <= p->grid[0])
        return p->ests[0];
    if (x >= p->grid[p->n - 1])
        return p->ests[p->n - 1];
    /* largest i with grid[i] <= x; then grid[i] <= x < grid[i+1] */
    size_t lo = 0, hi = p->n - 1;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->grid[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    double x0 = p->grid[lo], x1 = p->grid[hi];
    if (x1 <= x0)
        return p->ests[hi];
    return p->ests[lo] + (p->ests[hi] - p->ests[lo]) * (x - x0) / (x1 - x0);
}

/* ---------------------------------------------------------------- traces */

void cil_trace_free(cil_trace *t)
{
    if (!t)
        return;
    free(t->data);
    free(t);
}

cil_trace *cil_trace_load(const char *path, char *err, size_t errlen)
{
    char *buf = slurp(path);
    if (!buf) {
        cil_errorf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    cil_trace *t = cil_trace_parse(buf, path, err, errlen);
    free(buf);
    return t;
}

cil_trace *cil_trace_parse(char *buf, const char *path, char *err, size_t errlen)
{
    cil_trace *t = calloc(1, sizeof *t);
    if (!t) {
        cil_errorf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    size_t pos = 0, cap = 0;
    int lineno = 0, di = -1, ncols = 0;
    char *line;
    while ((line = next_line(buf, &pos))) {
        lineno++;
        if (blank(line) || line[0] == '#')
            continue;
        char *f[MAX_COLS];
        int n = split_csv(line, f, MAX_COLS);
        if (di < 0) {
            di = n > 0 ? column_index(f, n, "data") : -1;
            if (di < 0) {
                cil_errorf(err, errlen, "%s:%d: header must name a column data", path, lineno);
                goto fail;
            }
            ncols = n;
            continue;
        }
        double v;
        if (n != ncols || parse_double(f[di], &v) || v < 0) {
            cil_errorf(err, errlen, "%s:%d: expected %d columns with a non-negative number in data",
                   path, lineno, ncols);
            goto fail;
        }
        if (t->n == cap) {
            cap = cap ? cap * 2 : 4096;
            double *d = realloc(t->data, cap * sizeof *d);
            if (!d) {
                cil_errorf(err, errlen, "%s: out of memory", path);
                goto fail;
            }
            t->data = d;
        }
        t->data[t->n++] = v;
    }
    if (t->n == 0) {
        cil_errorf(err, errlen, "%s: no data rows", path);
        goto fail;
    }
    return t;
fail:
    cil_trace_free(t);
    return NULL;
}

double cil_trace_at(const cil_trace *t, double t_s)
{
    if (!isfinite(t_s))
        return NAN;
    double k = fmod(floor(t_s), (double)t->n);
    if (k < 0)
        k += (double)t->n;
    size_t i = (size_t)k;
    if (i >= t->n)
        i = t->n - 1;
    return t->data[i];
}

/* ---------------------------------------------------------------- jobs */

double cil_job_perf(const cil_job *j, double a, double load)
{
    double x = load > 0 ? a / load : INFINITY;
    switch (j->curve) {
    case CIL_CURVE_PROFILE:
        return cil_profile_eval(j->profile, x);
    case CIL_CURVE_LINEAR: {
        double v = a / j->demand;
        return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case CIL_CURVE_SIGMOID:
        return 1.0 / (1.0 + exp(-(x - j->offset)));
    }
    return NAN;
}

double cil_job_load(const cil_job *j, double t_s)
{
    if (!j->trace)
        return j->load;
    return cil_trace_at(j->trace, t_s) * j->load;
}

double cil_job_mean_load(const cil_job *j, double t0, double t1)
{
    if (!j->trace)
        return j->load;
    double s = cil_job_load(j, t0);
    size_t n = 1;
    for (double t = floor(t0) + 1; t < t1; t += 1) {
        s += cil_job_load(j, t);
        n++;
    }
    return s / (double)n;
}

double cil_job_utility(const cil_job *j, double p)
{
    double v = p / j->slo;
    if (!(v > 0))
        v = 0;
    if (v > 1)
        v = 1;
    switch (j->utility) {
    case CIL_UTIL_LINEAR:
        return v;
    case CIL_UTIL_QUADRATIC:
        return v * v;
    case CIL_UTIL_SQRT:
        return sqrt(v);
    }
    return NAN;
}

int cil_job_report(const cil_job *j, cil_rng *r, double p, double load, double span_s,
                   double *reward, double *sigma)
{
    if (!j || !r || !reward || !sigma || !isfinite(p) || !isfinite(load) || !isfinite(span_s))
        return -1;
    if (j->noise == CIL_NOISE_GAUSSIAN) {
        *reward = p + j->noise_sd * cil_rng_gauss(r);
        *sigma = j->noise_sd;
    } else if (j->throughput) {
        double v = p * (1.0 + CIL_THROUGHPUT_REL_NOISE * cil_rng_gauss(r));
        *reward = v < 0 ? 0 : v;
        *sigma = p > 1e-6 ? p : 1e-6;
    } else {
        double nd = floor(load * span_s + 0.5);
        if (!(nd >= 1))
            nd = 1;
        if (nd > 1e15)
            nd = 1e15;
        uint64_t n = (uint64_t)nd;
        *reward = (double)cil_rng_binomial(r, n, p) / nd;
        double s = 10.0 / sqrt(2.0 * nd);
        *sigma = s < 0.5 ? s : 0.5;
    }
    return 0;
}

/* ---------------------------------------------------------------- env files */

/* The default data folder: the source tree's for a program inside the build directory,
 * else <the program's folder>/CILANTRO_DATA_FROM_BIN (the installed copy). */
static const char *default_data_dir(void)
{
    static char dir[PATH_MAX + sizeof CILANTRO_DATA_FROM_BIN + 1];
    if (dir[0])
        return dir;
    char exe[PATH_MAX], build[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || !*CILANTRO_BUILD_DIR || !realpath(CILANTRO_BUILD_DIR, build)) {
        snprintf(dir, sizeof dir, "%s", CILANTRO_DEFAULT_DATA_DIR);
        return dir;
    }
    exe[n] = 0;
    size_t bl = strlen(build);
    char *slash = strrchr(exe, '/');
    if ((strncmp(exe, build, bl) == 0 && exe[bl] == '/') || !slash)
        snprintf(dir, sizeof dir, "%s", CILANTRO_DEFAULT_DATA_DIR);
    else
        snprintf(dir, sizeof dir, "%.*s/%s", (int)(slash - exe), exe, CILANTRO_DATA_FROM_BIN);
    return dir;
}

const char *cil_env_data_dir(void)
{
    const char *d = getenv("CILANTRO_DATA_DIR");
    return d && *d ? d : default_data_dir();
}

/* For a "data:" file that cannot be read: where it was looked for and how to point
 * elsewhere, appended to the loader's message ("" otherwise). */
static const char *data_hint(const char *file, const char *path, char *buf, size_t len)
{
    if (strncmp(file, "data:", 5) != 0 || access(path, R_OK) == 0)
        return "";
    snprintf(buf, len, " (data: files are read from %s; set CILANTRO_DATA_DIR to the folder "
                       "that holds them)", cil_env_data_dir());
    return buf;
}

void cil_env_free(cil_env *env)
{
    if (!env)
        return;
    for (size_t i = 0; i < env->njobs; i++)
        free(env->jobs[i].name);
    free(env->jobs);
    for (size_t i = 0; i < env->nprofiles; i++) {
        cil_profile_free(env->profiles[i]);
        free(env->profile_paths[i]);
    }
    for (size_t i = 0; i < env->ntraces; i++) {
        cil_trace_free(env->traces[i]);
        free(env->trace_paths[i]);
    }
    free(env->profiles);
    free(env->profile_paths);
    free(env->traces);
    free(env->trace_paths);
    free(env);
}

int cil_env_find(const cil_env *env, const char *name)
{
    for (size_t i = 0; env && name && i < env->njobs; i++)
        if (strcmp(env->jobs[i].name, name) == 0)
            return (int)i;
    return -1;
}

typedef struct {
    const char *name; /* prefix for messages */
    const char *base;
    char *err;
    size_t errlen;
} ctx;

static char *resolve(const ctx *c, const char *p)
{
    const char *dir;
    if (strncmp(p, "data:", 5) == 0) {
        p += 5;
        dir = cil_env_data_dir();
    } else if (p[0] == '/') {
        return xstrdup(p);
    } else {
        dir = c->base;
    }
    size_t n = strlen(dir) + strlen(p) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", dir, p);
    return out;
}

/* Loaded file for a resolved path, loading it on first use. */
static const cil_profile *get_profile(cil_env *env, const ctx *c, const char *job,
                                      const char *file, const char *path)
{
    for (size_t i = 0; i < env->nprofiles; i++)
        if (strcmp(env->profile_paths[i], path) == 0)
            return env->profiles[i];
    char e[512];
    cil_profile *p = cil_profile_load(path, e, sizeof e);
    if (!p) {
        char h[PATH_MAX + 128];
        cil_errorf(c->err, c->errlen, "%s: job '%s': curve.file: %s%s", c->name, job, e,
                   data_hint(file, path, h, sizeof h));
        return NULL;
    }
    cil_profile **np = realloc(env->profiles, (env->nprofiles + 1) * sizeof *np);
    if (np)
        env->profiles = np;
    char **pp = realloc(env->profile_paths, (env->nprofiles + 1) * sizeof *pp);
    if (pp)
        env->profile_paths = pp;
    char *dup = xstrdup(path);
    if (!np || !pp || !dup) {
        free(dup);
        cil_profile_free(p);
        cil_errorf(c->err, c->errlen, "%s: out of memory", c->name);
        return NULL;
    }
    env->profiles[env->nprofiles] = p;
    env->profile_paths[env->nprofiles++] = dup;
    return p;
}

static const cil_trace *get_trace(cil_env *env, const ctx *c, const char *job, const char *file,
                                  const char *path)
{
    for (size_t i = 0; i < env->ntraces; i++)
        if (strcmp(env->trace_paths[i], path) == 0)
            return env->traces[i];
    char e[512];
    cil_trace *t = cil_trace_load(path, e, sizeof e);
    if (!t) {
        char h[PATH_MAX + 128];
        cil_errorf(c->err, c->errlen, "%s: job '%s': load.trace: %s%s", c->name, job, e,
                   data_hint(file, path, h, sizeof h));
        return NULL;
    }
    cil_trace **nt = realloc(env->traces, (env->ntraces + 1) * sizeof *nt);
    if (nt)
        env->traces = nt;
    char **pp = realloc(env->trace_paths, (env->ntraces + 1) * sizeof *pp);
    if (pp)
        env->trace_paths = pp;
    char *dup = xstrdup(path);
    if (!nt || !pp || !dup) {
        free(dup);
        cil_trace_free(t);
        cil_errorf(c->err, c->errlen, "%s: out of memory", c->name);
        return NULL;
    }
    env->traces[env->ntraces] = t;
    env->trace_paths[env->ntraces++] = dup;
    return t;
}

/* Fails when obj has a key outside the NULL-terminated list allowed. */
static int check_keys(const ctx *c, const char *where, json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, key) == 0)
                ok = 1;
        if (!ok) {
            cil_errorf(c->err, c->errlen, "%s: %sunknown field '%s'", c->name, where, key);
            return -1;
        }
    }
    return 0;
}

/* A number field: 0 ok, 1 absent, -1 bad (message set). positive: require > 0. */
static int get_num(const ctx *c, const char *where, json_t *obj, const char *key, int required,
                   int positive, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required) {
            cil_errorf(c->err, c->errlen, "%s: %s%s: missing", c->name, where, key);
            return -1;
        }
        return 1;
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
        (positive && !(json_number_value(v) > 0))) {
        cil_errorf(c->err, c->errlen, "%s: %s%s: expected a %snumber", c->name, where, key,
               positive ? "positive " : "");
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

static int parse_job(cil_env *env, const ctx *c, size_t idx, json_t *jj)
{
    cil_job *j = &env->jobs[idx];
    char where[160];
    if (!json_is_object(jj)) {
        cil_errorf(c->err, c->errlen, "%s: jobs[%zu]: expected an object", c->name, idx);
        return -1;
    }
    json_t *nm = json_object_get(jj, "name");
    if (!json_is_string(nm) || json_string_length(nm) == 0) {
        cil_errorf(c->err, c->errlen, "%s: jobs[%zu]: name: expected a non-empty string", c->name,
               idx);
        return -1;
    }
    const char *name = json_string_value(nm);
    if (cil_env_find(env, name) >= 0) {
        cil_errorf(c->err, c->errlen, "%s: job '%s': name: duplicate", c->name, name);
        return -1;
    }
    snprintf(where, sizeof where, "job '%s': ", name);
    static const char *const job_keys[] = {"name", "curve", "load", "slo", "utility", "weight",
                                           "noise", NULL};
    if (check_keys(c, where, jj, job_keys))
        return -1;

    /* curve */
    json_t *cv = json_object_get(jj, "curve");
    if (!json_is_object(cv)) {
        cil_errorf(c->err, c->errlen, "%s: %scurve: %s", c->name, where,
               cv ? "expected an object" : "missing");
        return -1;
    }
    const char *ct = json_string_value(json_object_get(cv, "type"));
    char cw[200];
    snprintf(cw, sizeof cw, "%scurve.", where);
    if (!ct) {
        cil_errorf(c->err, c->errlen, "%s: %scurve.type: expected \"profile\", \"linear\" or \"sigmoid\"",
               c->name, where);
        return -1;
    }
    if (strcmp(ct, "profile") == 0) {
        static const char *const k[] = {"type", "file", NULL};
        if (check_keys(c, cw, cv, k))
            return -1;
        const char *file = json_string_value(json_object_get(cv, "file"));
        if (!file || !*file) {
            cil_errorf(c->err, c->errlen, "%s: %scurve.file: expected a path string", c->name, where);
            return -1;
        }
        char *path = resolve(c, file);
        if (!path) {
            cil_errorf(c->err, c->errlen, "%s: out of memory", c->name);
            return -1;
        }
        j->profile = get_profile(env, c, name, file, path);
        free(path);
        if (!j->profile)
            return -1;
        j->curve = CIL_CURVE_PROFILE;
        j->throughput = strcmp(j->profile->workload, "craymltrain") == 0;
    } else if (strcmp(ct, "linear") == 0) {
        static const char *const k[] = {"type", "demand", NULL};
        if (check_keys(c, cw, cv, k) || get_num(c, cw, cv, "demand", 1, 1, &j->demand))
            return -1;
        j->curve = CIL_CURVE_LINEAR;
    } else if (strcmp(ct, "sigmoid") == 0) {
        static const char *const k[] = {"type", "offset", NULL};
        if (check_keys(c, cw, cv, k) || get_num(c, cw, cv, "offset", 1, 0, &j->offset))
            return -1;
        j->curve = CIL_CURVE_SIGMOID;
    } else {
        cil_errorf(c->err, c->errlen,
               "%s: %scurve.type: expected \"profile\", \"linear\" or \"sigmoid\", got \"%s\"",
               c->name, where, ct);
        return -1;
    }

    /* load */
    json_t *ld = json_object_get(jj, "load");
    if (!ld) {
        cil_errorf(c->err, c->errlen, "%s: %sload: missing", c->name, where);
        return -1;
    }
    if (json_is_number(ld)) {
        if (get_num(c, where, jj, "load", 1, 1, &j->load))
            return -1;
        j->trace = NULL;
    } else if (json_is_object(ld)) {
        char lw[200];
        snprintf(lw, sizeof lw, "%sload.", where);
        static const char *const k[] = {"trace", "scale", NULL};
        if (check_keys(c, lw, ld, k))
            return -1;
        const char *file = json_string_value(json_object_get(ld, "trace"));
        if (!file || !*file) {
            cil_errorf(c->err, c->errlen, "%s: %sload.trace: expected a path string", c->name, where);
            return -1;
        }
        j->load = 1.0;
        if (get_num(c, lw, ld, "scale", 0, 1, &j->load) < 0)
            return -1;
        char *path = resolve(c, file);
        if (!path) {
            cil_errorf(c->err, c->errlen, "%s: out of memory", c->name);
            return -1;
        }
        j->trace = get_trace(env, c, name, file, path);
        free(path);
        if (!j->trace)
            return -1;
    } else {
        cil_errorf(c->err, c->errlen,
               "%s: %sload: expected a positive number or {\"trace\": FILE, \"scale\": S}",
               c->name, where);
        return -1;
    }

    if (get_num(c, where, jj, "slo", 1, 1, &j->slo))
        return -1;

    json_t *ut = json_object_get(jj, "utility");
    const char *us = json_string_value(ut);
    if (!us || (strcmp(us, "linear") && strcmp(us, "quadratic") && strcmp(us, "sqrt"))) {
        cil_errorf(c->err, c->errlen, "%s: %sutility: %s", c->name, where,
               ut ? "expected \"linear\", \"quadratic\" or \"sqrt\"" : "missing");
        return -1;
    }
    j->utility = strcmp(us, "linear") == 0      ? CIL_UTIL_LINEAR
                 : strcmp(us, "quadratic") == 0 ? CIL_UTIL_QUADRATIC
                                                : CIL_UTIL_SQRT;

    j->weight = 1.0;
    if (get_num(c, where, jj, "weight", 0, 1, &j->weight) < 0)
        return -1;

    j->noise = CIL_NOISE_DEFAULT;
    json_t *nz = json_object_get(jj, "noise");
    if (nz) {
        char nw[200];
        snprintf(nw, sizeof nw, "%snoise.", where);
        if (!json_is_object(nz)) {
            cil_errorf(c->err, c->errlen, "%s: %snoise: expected an object", c->name, where);
            return -1;
        }
        static const char *const k[] = {"type", "sd", NULL};
        if (check_keys(c, nw, nz, k))
            return -1;
        const char *nt = json_string_value(json_object_get(nz, "type"));
        if (!nt || strcmp(nt, "gaussian")) {
            cil_errorf(c->err, c->errlen, "%s: %snoise.type: expected \"gaussian\"", c->name, where);
            return -1;
        }
        if (get_num(c, nw, nz, "sd", 1, 1, &j->noise_sd))
            return -1;
        j->noise = CIL_NOISE_GAUSSIAN;
    }

    j->name = xstrdup(name);
    if (!j->name) {
        cil_errorf(c->err, c->errlen, "%s: out of memory", c->name);
        return -1;
    }
    return 0;
}

cil_env *cil_env_parse(const char *json_text, const char *base_dir, const char *name,
                       char *err, size_t errlen)
{
    ctx c = {name ? name : "env", base_dir ? base_dir : ".", err, errlen};
    if (!json_text) {
        cil_errorf(err, errlen, "%s: no text", c.name);
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loads(json_text, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        cil_errorf(err, errlen, "%s:%d:%d: invalid JSON: %s", c.name, je.line, je.column, je.text);
        return NULL;
    }
    cil_env *env = calloc(1, sizeof *env);
    if (!env) {
        json_decref(root);
        cil_errorf(err, errlen, "%s: out of memory", c.name);
        return NULL;
    }
    static const char *const top_keys[] = {"cpus", "round_s", "report_s", "jobs", NULL};
    double cpus;
    json_t *jobs;
    if (!json_is_object(root)) {
        cil_errorf(err, errlen, "%s: expected a JSON object at the top level", c.name);
        goto fail;
    }
    if (check_keys(&c, "", root, top_keys))
        goto fail;
    if (get_num(&c, "", root, "cpus", 1, 1, &cpus))
        goto fail;
    if (cpus != floor(cpus) || cpus > 1e9) {
        cil_errorf(err, errlen, "%s: cpus: expected a positive integer", c.name);
        goto fail;
    }
    env->cpus = (int)cpus;
    if (get_num(&c, "", root, "round_s", 1, 1, &env->round_s) ||
        get_num(&c, "", root, "report_s", 1, 1, &env->report_s))
        goto fail;
    if (env->report_s > env->round_s) {
        cil_errorf(err, errlen, "%s: report_s: must not exceed round_s", c.name);
        goto fail;
    }
    jobs = json_object_get(root, "jobs");
    if (!json_is_array(jobs) || json_array_size(jobs) == 0) {
        cil_errorf(err, errlen, "%s: jobs: %s", c.name,
               jobs ? "expected a non-empty array" : "missing");
        goto fail;
    }
    env->jobs = calloc(json_array_size(jobs), sizeof *env->jobs);
    if (!env->jobs) {
        cil_errorf(err, errlen, "%s: out of memory", c.name);
        goto fail;
    }
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        if (parse_job(env, &c, i, json_array_get(jobs, i)))
            goto fail;
        env->njobs++;
    }
    json_decref(root);
    return env;
fail:
    json_decref(root);
    cil_env_free(env);
    return NULL;
}

cil_env *cil_env_load(const char *path, char *err, size_t errlen)
{
    if (!path) {
        cil_errorf(err, errlen, "env: no path");
        return NULL;
    }
    char *text = slurp(path);
    if (!text) {
        cil_errorf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    char *base = xstrdup(path);
    if (!base) {
        free(text);
        cil_errorf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    char *slash = strrchr(base, '/');
    if (slash == base)
        base[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        strcpy(base, ".");
    cil_env *env = cil_env_parse(text, base, path, err, errlen);
    free(base);
    free(text);
    return env;
}
