/* synth_cmd.c: `ekya synth`: a synthetic profile CSV on stdout (the scale check). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ekya/cli.h"
#include "ekya/synth.h"

static int count(const char *opt, const char *s, int *out)
{
    double v;
    if (ekya_cli_number(opt, s, 0, &v) != 0)
        return -1;
    if (v != (int)v || v > 100000) {
        fprintf(stderr, "ekya: %s: '%s' is not a whole number up to 100000\n", opt, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int ekya_cmd_synth(int argc, char **argv)
{
    static const struct option longs[] = {
        {"streams", required_argument, 0, 's'}, {"windows", required_argument, 0, 'w'},
        {"configs", required_argument, 0, 'c'}, {"seed", required_argument, 0, 'r'},
        {0, 0, 0, 0}};
    int ns = 10, nw = 5, nc = 18, seed = 1, ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        int bad = ch == 's'   ? count("--streams", optarg, &ns)
                  : ch == 'w' ? count("--windows", optarg, &nw)
                  : ch == 'c' ? count("--configs", optarg, &nc)
                  : ch == 'r' ? count("--seed", optarg, &seed)
                              : -1;
        if (ch == '?' || bad) {
            if (ch == '?')
                fprintf(stderr, "ekya synth: unknown or incomplete option '%s'\n",
                        argv[optind - 1]);
            return 2;
        }
    }
    ekya_profiles p;
    if (ekya_profiles_synth(&p, ns, nw, nc, (uint64_t)seed) != 0) {
        fprintf(stderr, "ekya synth: out of memory\n");
        return 1;
    }
    int rc = ekya_profiles_write_csv(stdout, &p);
    ekya_profiles_free(&p);
    return rc == 0 ? 0 : 1;
}
