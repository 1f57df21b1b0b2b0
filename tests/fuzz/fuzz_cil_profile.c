/* fuzz_cil_profile.c: cilantro's profile CSV reader (apps/cilantro/env.c,
 * cil_profile_parse): what it accepts has rows, a non-decreasing grid, and evaluates
 * anywhere. */
#include "fuzz_util.h"

#include <math.h>

#include "cilantro/env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    char err[512];
    cil_profile *p = cil_profile_parse(text, "fuzz", err, sizeof err);
    if (p) {
        FUZZ_CHECK(p->n >= 1);
        for (size_t i = 1; i < p->n; i++)
            FUZZ_CHECK(p->grid[i] >= p->grid[i - 1]);
        (void)cil_profile_eval(p, p->grid[0] - 1);
        (void)cil_profile_eval(p, (p->grid[0] + p->grid[p->n - 1]) / 2);
        (void)cil_profile_eval(p, p->grid[p->n - 1] + 1);
        (void)cil_profile_eval(p, NAN);
        cil_profile_free(p);
    }
    free(text);
    return 0;
}
