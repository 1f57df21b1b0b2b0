/* args.c: a small option parser for the CLI.
 *
 * getopt_long is not used because it takes "-0.5" for a cluster of short options, and
 * `escher resource add foo -0.5` must read the delta as a positional argument. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cli_opt *find_opt(const cli_opt *opts, const char *name, size_t len)
{
    for (; opts->name; opts++)
        if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
            return opts;
    return NULL;
}

/* Handles one "--name[=value]" at argv[*i]; advances *i past a separate value. */
static int parse_long(int argc, char **argv, int *i, const cli_opt *opts)
{
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    const cli_opt *o = find_opt(opts, arg, len);
    if (!o)
        return cli_usage("unknown option %.*s (see --help)", (int)len, arg);
    if (o->flag) {
        if (eq)
            return cli_usage("option %s takes no value", o->name);
        *o->flag = true;
        return 0;
    }
    if (eq) {
        *o->value = eq + 1;
        return 0;
    }
    if (*i + 1 >= argc)
        return cli_usage("option %s needs a value", o->name);
    *o->value = argv[++*i];
    return 0;
}

/* A dash followed by a digit or '.' is a negative number, not an option. */
static bool is_number_like(const char *arg)
{
    return arg[0] == '-' && ((arg[1] >= '0' && arg[1] <= '9') || arg[1] == '.');
}

static int add_positional(const char *arg, const char **pos, int maxpos, int *npos)
{
    if (*npos >= maxpos)
        return cli_usage("unexpected argument \"%s\" (see --help)", arg);
    pos[(*npos)++] = arg;
    return 0;
}

int cli_parse(int argc, char **argv, const cli_opt *opts, const char **pos, int maxpos,
              int *npos, const char *usage)
{
    *npos = 0;
    bool options_done = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        int rc = 0;
        if (options_done || arg[0] != '-' || arg[1] == '\0' || is_number_like(arg)) {
            rc = add_positional(arg, pos, maxpos, npos);
        } else if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            fputs(usage, stdout);
            return CLI_HELP;
        } else if (!strcmp(arg, "--")) {
            options_done = true;
        } else if (arg[1] == '-') {
            rc = parse_long(argc, argv, &i, opts);
        } else {
            rc = cli_usage("unknown option %s (see --help)", arg);
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

int cli_parse_uint(const char *opt, const char *text, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < 0 || v > max)
        return cli_usage("%s wants a whole number from 0 to %lld, not \"%s\"", opt, max, text);
    *out = v;
    return 0;
}
