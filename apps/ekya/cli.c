/* cli.c: option helpers shared by the ekya subcommands (ekya/cli.h). */
#include "ekya/cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ekya_cli_number(const char *opt, const char *s, int allow_zero, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) || v < 0 ||
        (v == 0 && !allow_zero)) {
        fprintf(stderr, "ekya: %s: '%s' is not a %s number\n", opt, s,
                allow_zero ? "non-negative" : "positive");
        return -1;
    }
    *out = v;
    return 0;
}

int ekya_cli_delta(const char *s, ekya_params *prm)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    int per_gpu = end != s && (*end == 'G' || *end == 'g');
    if (end == s || end[per_gpu] != '\0' || errno == ERANGE || !isfinite(v) || !(v > 0)) {
        fprintf(stderr, "ekya: --delta: '%s' is not a positive number of GPUs (D) "
                "or fraction of G (FG)\n", s);
        return -1;
    }
    prm->delta = v;
    prm->delta_per_gpu = per_gpu;
    return 0;
}

void ekya_cli_params_default(ekya_params *prm)
{
    memset(prm, 0, sizeof *prm);
    prm->delta = EKYA_DEFAULT_DELTA;
    prm->rmax = EKYA_DEFAULT_RMAX;
}

int ekya_cli_param(int ch, const char *arg, ekya_params *prm)
{
    switch (ch) {
    case 'w': return ekya_cli_number("--window", arg, 0, &prm->length);
    case 'd': return ekya_cli_delta(arg, prm);
    case 'r': return ekya_cli_number("--rmax", arg, 0, &prm->rmax);
    case 'I': return ekya_cli_number("--sample", arg, 0, &prm->sample);
    default: return 1;
    }
}

void ekya_cli_note_sampling(const ekya_params *prm)
{
    int n = ekya_samples_per_window(prm->length, ekya_params_sample(prm));
    if (n < 20)
        fprintf(stderr, "ekya: note: accuracy is sampled %d times per %g-s window; "
                "--sample %g gives 200\n", n, prm->length, prm->length / 200);
}

int ekya_cli_acc_unit(const char *s, ekya_acc_unit *out)
{
    if (ekya_acc_unit_parse(s, out) != 0) {
        fprintf(stderr, "ekya: --accuracy-unit: '%s' is not fraction or percent\n", s);
        return -1;
    }
    return 0;
}

int ekya_cli_load(const char *profiles, const char *inference, ekya_profiles *p,
                  ekya_infer_profile *inf)
{
    return ekya_cli_load_unit(profiles, EKYA_ACC_AUTO, inference, p, inf);
}

int ekya_cli_load_unit(const char *profiles, ekya_acc_unit unit, const char *inference,
                       ekya_profiles *p, ekya_infer_profile *inf)
{
    char err[512];
    if (ekya_profiles_load_unit(profiles, unit, p, err, sizeof err) != 0) {
        fprintf(stderr, "ekya: %s\n", err);
        return -1;
    }
    if (ekya_infer_load(inference, inf, err, sizeof err) != 0) {
        fprintf(stderr, "ekya: %s\n", err);
        ekya_profiles_free(p);
        return -1;
    }
    return 0;
}
