/* main.c: the `cilantro` command: Cilantro's policies on a simulated cluster.
 *   cilantro simulate --env FILE --policy NAME [--hours H] [--seed S] [--json]
 *   cilantro alloc    --env FILE --policy NAME [--at SECONDS] [--json]
 *   cilantro compare  --env FILE --policies a,b,c|all [--hours H] [--seed S] [--json]
 *   cilantro plot     --env FILE --policies a,b,c|all --out DIR [--hours H] [--seed S]
 *   cilantro micro    ... (the microservices comparison, when built)
 *   cilantro serve    --cluster [ADDRESS] --config FILE [--rounds N] (live on escher)
 * Details: docs/cilantro.md. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#ifdef CILANTRO_HAVE_MICRO
#include "cilantro/micro.h"
#endif
#ifdef CILANTRO_HAVE_LIVE
#include "live.h"
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cilantro simulate --env FILE --policy NAME [--hours H] [--seed S] [--json]\n"
            "       cilantro alloc --env FILE --policy NAME [--at SECONDS] [--json]\n"
            "       cilantro compare --env FILE --policies a,b,c|all [--hours H] [--seed S] [--json]\n"
            "       cilantro plot --env FILE --policies a,b,c|all --out DIR [--hours H] [--seed S]\n"
#ifdef CILANTRO_HAVE_MICRO
            "       cilantro micro --policy ucb|evoalg|egreedy|resource-fair|all [--hours H] [--seed S] [--json]\n"
#endif
#ifdef CILANTRO_HAVE_LIVE
            "       cilantro serve --cluster [ADDRESS] --config FILE [--rounds N]\n"
#endif
            "policies:");
    for (int k = 0; k < CIL_POL_COUNT; k++)
        fprintf(f, " %s", cil_policy_name((cil_policy_kind)k));
    fprintf(f, "\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {
        {"simulate", cmd_simulate}, {"alloc", cmd_alloc}, {"compare", cmd_compare},
        {"plot", cmd_plot},
#ifdef CILANTRO_HAVE_MICRO
        {"micro", cil_micro_cmd},
#endif
#ifdef CILANTRO_HAVE_LIVE
        {"serve", cil_serve_cmd},
#endif
    };
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++)
        if (!strcmp(cmd, cmds[k].name))
            return cmds[k].fn(argc - 1, argv + 1); /* argv[0]: the command */
    fprintf(stderr, "cilantro: unknown command '%s' (see cilantro --help)\n", cmd);
    return 2;
}
