/* alloc.c: `cilantro alloc`: one allocation from the true curves at the loads of a
 * given time, for the policies that need no feedback. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int cmd_alloc(int argc, char **argv)
{
    cli_opts o;
    if (cli_parse("alloc", argc - 1, argv + 1, OPT_ENV | OPT_POLICY | OPT_AT | OPT_JSON, &o) != 0)
        return 2;
    cil_policy_kind pol;
    if (cil_policy_parse(o.policy, &pol) != 0) {
        fprintf(stderr, "cilantro alloc: unknown policy '%s' (see cilantro --help)\n", o.policy);
        return 2;
    }
    cil_env *env = cli_load_env("alloc", o.env);
    if (!env)
        return 1;
    long *a = calloc(env->njobs, sizeof *a);
    char err[512];
    int rc = 1;
    if (!a) {
        fprintf(stderr, "cilantro alloc: out of memory\n");
    } else if (cil_sim_alloc_once(env, pol, o.at, NULL, a, err, sizeof err) != 0) {
        fprintf(stderr, "cilantro %s\n", err);
        rc = 2;
    } else if (o.json) {
        json_t *m = json_object();
        for (size_t j = 0; j < env->njobs; j++)
            json_object_set_new(m, env->jobs[j].name, json_integer(a[j]));
        json_t *root = json_pack("{s:o}", "alloc", m);
        rc = root && json_dumpf(root, stdout, 0) == 0 ? 0 : 1;
        printf("\n");
        json_decref(root);
    } else {
        long total = 0;
        for (size_t j = 0; j < env->njobs; j++) {
            printf("%-16s %6ld\n", env->jobs[j].name, a[j]);
            total += a[j];
        }
        printf("%-16s %6ld of %d\n", "total", total, env->cpus);
        rc = 0;
    }
    free(a);
    cil_env_free(env);
    return rc;
}
