/* cilantro/env.h: the simulator's environment (item 5 of the Cilantro issue).
 *
 * An environment file (JSON, format in docs/cilantro.md) names R CPUs, the round and
 * report periods, and jobs: each with a true performance curve (a profile CSV or a
 * built-in form), a load (constant or a trace), an SLO, a utility and a weight, and
 * an optional noise model for its feedback. This header loads such a file, evaluates
 * the true performance p(a, load) and the load at time t, and draws noisy feedback
 * reports from a small seeded PRNG (xoshiro256** seeded through splitmix64), so a
 * simulation is deterministic for a given seed.
 */
#ifndef CILANTRO_ENV_H
#define CILANTRO_ENV_H

#include <stddef.h>
#include <stdint.h>

/* ---- PRNG: xoshiro256** (Blackman & Vigna), state filled by splitmix64(seed). ---- */
typedef struct {
    uint64_t s[4];
} cil_rng;

void cil_rng_seed(cil_rng *r, uint64_t seed);
uint64_t cil_rng_next(cil_rng *r);
/* Uniform in [0, 1), 53 bits. */
double cil_rng_uniform(cil_rng *r);
/* Standard normal (Box-Muller, one value per two uniforms, no cached state). */
double cil_rng_gauss(cil_rng *r);
/* Binomial(n, p): exact sum of Bernoulli draws for n <= 4096, a rounded and clamped
 * normal approximation above. p is clamped to [0, 1]. */
uint64_t cil_rng_binomial(cil_rng *r, uint64_t n, double p);

/* ---- Profiles and traces ---- */
typedef struct {
    char workload[64];  /* workload_type from the '#' line ("" when absent) */
    double lip_const;   /* NAN when absent */
    double int_ub;      /* NAN when absent */
    double p50_load;    /* NAN when absent */
    double p99_load;    /* NAN when absent */
    size_t n;           /* rows, >= 1; grid non-decreasing */
    double *grid;       /* x = CPUs per unit load */
    double *ests;       /* measured performance (ground truth) */
} cil_profile;

/* Loads a profile CSV: optional first line "# key=value ..." (workload_type, lip_const,
 * int_ub, p50_load, p99_load; other keys ignored), a header naming at least the
 * columns grid and ests, then rows. NULL and a one-line message in err on error. */
cil_profile *cil_profile_load(const char *path, char *err, size_t errlen);
/* The same from text in memory (NUL-terminated; modified in place, still the caller's);
 * name stands for the path in messages. */
cil_profile *cil_profile_parse(char *text, const char *name, char *err, size_t errlen);
void cil_profile_free(cil_profile *p);
/* interp(x, grid, ests), linear between rows, clamped to the end values outside. */
double cil_profile_eval(const cil_profile *p, double x);

typedef struct {
    size_t n;      /* rows, >= 1; row i is the load during second i */
    double *data;  /* column "data" */
} cil_trace;

/* Loads a trace CSV with a header naming a column "data" (e.g. timestamp,data). */
cil_trace *cil_trace_load(const char *path, char *err, size_t errlen);
/* The same from text in memory, as cil_profile_parse. */
cil_trace *cil_trace_parse(char *text, const char *name, char *err, size_t errlen);
void cil_trace_free(cil_trace *t);
/* data[floor(t) mod n] (t in seconds; negative t wraps too). */
double cil_trace_at(const cil_trace *t, double t_s);

/* ---- Environment ---- */
typedef enum { CIL_CURVE_PROFILE = 0, CIL_CURVE_LINEAR, CIL_CURVE_SIGMOID } cil_curve_type;
typedef enum { CIL_UTIL_LINEAR = 0, CIL_UTIL_QUADRATIC, CIL_UTIL_SQRT } cil_utility_kind;
typedef enum { CIL_NOISE_DEFAULT = 0, CIL_NOISE_GAUSSIAN } cil_noise_kind;

typedef struct {
    char *name;
    cil_curve_type curve;
    const cil_profile *profile; /* CIL_CURVE_PROFILE; owned by the env */
    double demand;              /* CIL_CURVE_LINEAR: d > 0 */
    double offset;              /* CIL_CURVE_SIGMOID: b */
    /* 1 for throughput jobs (profile workload "craymltrain"), 0 for latency jobs:
     * selects the default noise model. */
    int throughput;
    const cil_trace *trace;     /* NULL for a constant load; owned by the env */
    double load;                /* the constant load, or the trace's scale */
    double slo;                 /* > 0 */
    cil_utility_kind utility;
    double weight;              /* > 0, default 1 */
    cil_noise_kind noise;
    double noise_sd;            /* CIL_NOISE_GAUSSIAN: sd > 0 */
} cil_job;

typedef struct {
    int cpus;
    double round_s;
    double report_s;
    size_t njobs;
    cil_job *jobs;
    /* loaded files, shared by jobs naming the same resolved path */
    size_t nprofiles, ntraces;
    cil_profile **profiles;
    cil_trace **traces;
    char **profile_paths, **trace_paths;
} cil_env;

/* Loads an environment file. Relative paths inside are relative to the file's
 * directory; paths starting with "data:" are resolved against cil_env_data_dir().
 * Returns NULL and a one-line message (naming the job and field) in err on error; a
 * "data:" file that cannot be read also names the data folder and CILANTRO_DATA_DIR. */
cil_env *cil_env_load(const char *path, char *err, size_t errlen);
/* The same from JSON text; base_dir resolves relative paths (NULL: "."); name
 * prefixes error messages (NULL: "env"). */
cil_env *cil_env_parse(const char *json_text, const char *base_dir, const char *name,
                       char *err, size_t errlen);
void cil_env_free(cil_env *env);
/* Index of the job called name, or -1. */
int cil_env_find(const cil_env *env, const char *name);

/* Directory "data:" paths resolve against: $CILANTRO_DATA_DIR when set and non-empty;
 * else, for a program inside the build directory, the source tree's apps/cilantro/data;
 * else (an installed program) <the program's folder>/../share/escher/cilantro. */
const char *cil_env_data_dir(void);

/* True performance at a CPUs and the given load: profile interp(a/load, grid, ests)
 * clamped at the ends; linear min(1, a/d) (>= 0); sigmoid 1/(1 + exp(-(a/load - b))).
 * A load <= 0 is treated as a/load = +infinity. */
double cil_job_perf(const cil_job *j, double a, double load);
/* Load at time t seconds: the constant, or trace row floor(t) mod n times scale. */
double cil_job_load(const cil_job *j, double t_s);
/* Mean load over [t0, t1): the load at t0 and at every later whole second before t1
 * (the load at t0 when t1 <= t0; the constant for a constant load). */
double cil_job_mean_load(const cil_job *j, double t0, double t1);
/* Utility g(min(1, p / slo)), g = v, v^2 or sqrt(v); p < 0 counts as 0. */
double cil_job_utility(const cil_job *j, double p);

/* One feedback report for a span of span_s seconds at performance p and load:
 *  - gaussian override: reward = p + sd * N(0,1), sigma = sd;
 *  - latency jobs: N = max(1, round(load * span_s)), reward = Binomial(N, p) / N,
 *    sigma = min(0.5, 10 / sqrt(2N));
 *  - throughput jobs: reward = max(0, p * (1 + 0.03 * N(0,1))), sigma = max(p, 1e-6).
 * Returns 0, or -1 on a NULL argument or non-finite input. */
int cil_job_report(const cil_job *j, cil_rng *r, double p, double load, double span_s,
                   double *reward, double *sigma);

#define CIL_THROUGHPUT_REL_NOISE 0.03

#endif
