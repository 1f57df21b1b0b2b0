/* fuzz_cil_env.c: cilantro's environment JSON (apps/cilantro/env.c, cil_env_parse):
 * the jobs, their curves and loads. Files it names resolve in FUZZ_CIL_DATA
 * (tests/fuzz/data/cilantro: one small profile and trace).
 *
 * Inputs holding '/' or a \u escape are skipped: they could name any file on the
 * machine (an absolute path, "..", "data:../"), and reading /dev/zero would only
 * measure the memory limit. */
#include "fuzz_util.h"

#include "cilantro/env.h"

static int names_files_elsewhere(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '/')
            return 1;
        if (data[i] == '\\' && i + 1 < size && data[i + 1] == 'u')
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (names_files_elsewhere(data, size))
        return 0;
    char *text = fuzz_cstr(data, size);
    char err[1024];
    cil_env *env = cil_env_parse(text, FUZZ_CIL_DATA, "fuzz", err, sizeof err);
    if (env) {
        FUZZ_CHECK(env->njobs >= 1 && env->cpus >= 1);
        FUZZ_CHECK(env->report_s <= env->round_s);
        cil_env_free(env);
    }
    free(text);
    return 0;
}
