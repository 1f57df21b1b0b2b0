/* common.c: option parsing and helpers the `cilantro` subcommands share. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    unsigned bit;
} options[] = {
    {"--env", OPT_ENV},   {"--policy", OPT_POLICY}, {"--policies", OPT_POLICIES},
    {"--hours", OPT_HOURS}, {"--seed", OPT_SEED},   {"--json", OPT_JSON},
    {"--out", OPT_OUT},   {"--at", OPT_AT},       {"--live", OPT_LIVE},
};

static int parse_double(const char *cmd, const char *opt, const char *s, double *v)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(d)) {
        fprintf(stderr, "cilantro %s: %s: '%s' is not a number\n", cmd, opt, s);
        return -1;
    }
    *v = d;
    return 0;
}

static int set_option(const char *cmd, unsigned bit, const char *opt, const char *val,
                      cli_opts *o)
{
    switch (bit) {
    case OPT_ENV: o->env = val; return 0;
    case OPT_POLICY: o->policy = val; return 0;
    case OPT_POLICIES: o->policies = val; return 0;
    case OPT_OUT: o->out = val; return 0;
    case OPT_LIVE: o->live = val; return 0;
    case OPT_AT: return parse_double(cmd, opt, val, &o->at);
    case OPT_HOURS:
        if (parse_double(cmd, opt, val, &o->hours) != 0)
            return -1;
        if (!(o->hours > 0) || o->hours > 24 * 365) {
            fprintf(stderr, "cilantro %s: --hours must be in (0, 8760], got %s\n", cmd, val);
            return -1;
        }
        return 0;
    case OPT_SEED: {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(val, &end, 10);
        if (errno || end == val || *end || val[0] == '-') {
            fprintf(stderr, "cilantro %s: --seed: '%s' is not a non-negative integer\n", cmd, val);
            return -1;
        }
        o->seed = s;
        return 0;
    }
    default: return -1;
    }
}

int cli_parse(const char *cmd, int argc, char **argv, unsigned allowed, cli_opts *o)
{
    memset(o, 0, sizeof *o);
    o->hours = 6;
    o->seed = 1;
    for (int i = 0; i < argc; i++) {
        unsigned bit = 0;
        for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
            if (strcmp(argv[i], options[k].name) == 0)
                bit = options[k].bit;
        if (!(bit & allowed)) {
            fprintf(stderr, "cilantro %s: unknown option '%s' (see cilantro --help)\n", cmd,
                    argv[i]);
            return -1;
        }
        if (bit == OPT_JSON) {
            o->json = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "cilantro %s: %s needs a value\n", cmd, argv[i]);
            return -1;
        }
        if (set_option(cmd, bit, argv[i], argv[i + 1], o) != 0)
            return -1;
        i++;
    }
    const struct {
        unsigned bit;
        const char *val, *name;
    } required[] = {{OPT_ENV, o->env, "--env"},
                    {OPT_POLICY, o->policy, "--policy"},
                    {OPT_POLICIES, o->policies, "--policies"},
                    {OPT_OUT, o->out, "--out"},
                    {OPT_LIVE, o->live, "--live"}};
    for (size_t k = 0; k < sizeof required / sizeof required[0]; k++)
        if ((allowed & required[k].bit) && !required[k].val) {
            fprintf(stderr, "cilantro %s: %s is required\n", cmd, required[k].name);
            return -1;
        }
    return 0;
}

cil_env *cli_load_env(const char *cmd, const char *path)
{
    char err[512];
    cil_env *env = cil_env_load(path, err, sizeof err);
    if (!env)
        fprintf(stderr, "cilantro %s: %s\n", cmd, err);
    return env;
}

int cli_policy_list(const char *cmd, const char *list, cil_policy_kind *p)
{
    if (strcmp(list, "all") == 0) {
        for (int k = 0; k < CIL_POL_COUNT; k++)
            p[k] = (cil_policy_kind)k;
        return CIL_POL_COUNT;
    }
    int n = 0;
    const char *s = list;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char name[64];
        if (len == 0 || len >= sizeof name || n >= CIL_POL_COUNT) {
            fprintf(stderr, "cilantro %s: --policies: malformed list '%s'\n", cmd, list);
            return -1;
        }
        memcpy(name, s, len);
        name[len] = 0;
        if (cil_policy_parse(name, &p[n]) != 0) {
            fprintf(stderr, "cilantro %s: --policies: unknown policy '%s'\n", cmd, name);
            return -1;
        }
        n++;
        if (!comma)
            return n;
        s = comma + 1;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int cli_run(const char *cmd, const cil_env *env, cil_policy_kind pol, const cli_opts *o,
            cil_sim_result *r)
{
    cil_sim_params prm;
    cil_sim_params_default(&prm);
    prm.duration_s = o->hours * 3600;
    prm.seed = o->seed;
    char err[512];
    if (cil_sim_run(env, pol, &prm, r, err, sizeof err) != 0) {
        fprintf(stderr, "cilantro %s: %s\n", cmd, err);
        return -1;
    }
    return 0;
}
