/* alloc_time.c: how long one Cilantro allocation takes on the paper's 20-job, 1000-CPU
 * environment (the targets: NJC <= 1 ms, SW and EW <= 100 ms with 20 jobs; the
 * paper's Python: 8 ms, 2.9 s and 2.1 s). Runs each policy through the simulator for
 * HOURS simulated hours (default 2, 60 rounds), so the learners hold realistic data,
 * and prints one JSON object: per policy the median and p99 of the per-round decision
 * time, and the median time of a round's load forecasts (20 ARIMA fits), which run when
 * the loads arrive rather than in the decision.
 *   usage: alloc_time [ENV.json] [HOURS] */
#include <stdio.h>
#include <stdlib.h>

#include "../bench_stats.h"
#include "cilantro/sim.h"

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : CILANTRO_ENV_DIR "/paper20.json";
    double hours = argc > 2 ? atof(argv[2]) : 2;
    char err[512];
    cil_env *env = cil_env_load(path, err, sizeof err);
    if (!env) {
        fprintf(stderr, "alloc_time: %s\n", err);
        return 1;
    }
    static const cil_policy_kind pols[] = {CIL_POL_CILANTRO_NJC, CIL_POL_CILANTRO_SW,
                                      CIL_POL_CILANTRO_EW, CIL_POL_ORACLE_SW,
                                      CIL_POL_ORACLE_EW};
    printf("{\"env\": \"%s\", \"jobs\": %zu, \"cpus\": %d, \"hours\": %g, \"policies\": {", path,
           env->njobs, env->cpus, hours);
    int rc = 0;
    for (size_t k = 0; k < sizeof pols / sizeof pols[0]; k++) {
        cil_sim_params prm;
        cil_sim_params_default(&prm);
        prm.duration_s = hours * 3600;
        cil_sim_result r;
        if (cil_sim_run(env, pols[k], &prm, &r, err, sizeof err) != 0) {
            fprintf(stderr, "alloc_time: %s\n", err);
            rc = 1;
            break;
        }
        int n = (int)r.rounds;
        double med = pct(r.alloc_s, n, 50) * 1e3, p99 = pct(r.alloc_s, n, 99) * 1e3;
        double fc = pct(r.forecast_s, n, 50) * 1e3;
        printf("%s\"%s\": {\"rounds\": %d, \"alloc_ms_median\": %.3f, \"alloc_ms_p99\": %.3f, "
               "\"forecast_ms_median\": %.3f}",
               k ? ", " : "", cil_policy_name(pols[k]), n, med, p99, fc);
        cil_sim_result_free(&r);
    }
    printf("}}\n");
    cil_env_free(env);
    return rc;
}
