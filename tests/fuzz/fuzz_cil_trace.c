/* fuzz_cil_trace.c: cilantro's load trace CSV reader (apps/cilantro/env.c,
 * cil_trace_parse): what it accepts has rows of non-negative load, readable at any
 * time, negative included. */
#include "fuzz_util.h"

#include "cilantro/env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    char err[512];
    cil_trace *t = cil_trace_parse(text, "fuzz", err, sizeof err);
    if (t) {
        FUZZ_CHECK(t->n >= 1);
        for (size_t i = 0; i < t->n; i++)
            FUZZ_CHECK(t->data[i] >= 0);
        FUZZ_CHECK(cil_trace_at(t, -1.5) >= 0);
        FUZZ_CHECK(cil_trace_at(t, (double)t->n * 3 + 0.5) >= 0);
        cil_trace_free(t);
    }
    free(text);
    return 0;
}
