/* fuzz_qty.c: the quantity parser (runtime/qty.c), which reads every quantity a user
 * types (CLI, cluster files, job submissions). Beyond not crashing: whatever parses
 * is within range and survives format -> parse unchanged. */
#include "fuzz_util.h"

#include <stdbool.h>

#include "qty.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    int64_t q = 0;
    bool unbounded = false;
    if (esc_qty_parse(text, &q, &unbounded) == 0) {
        FUZZ_CHECK(q >= -ESC_QTY_MAX && q <= ESC_QTY_MAX);
        FUZZ_CHECK(!unbounded || q == 0);
        char buf[48];
        esc_qty_format(q, buf, sizeof buf);
        int64_t back = -1;
        bool unb2 = true;
        FUZZ_CHECK(esc_qty_parse(buf, &back, &unb2) == 0 && back == q && !unb2);
        int64_t sum = esc_qty_add(q, q);
        FUZZ_CHECK(sum >= -ESC_QTY_MAX && sum <= ESC_QTY_MAX);
        (void)esc_qty_to_double(q);
    }
    free(text);
    return 0;
}
