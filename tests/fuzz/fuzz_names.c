/* fuzz_names.c: resource-name validation (runtime/names.c), which every daemon and the
 * CLI apply to names from the network or the command line. A name that splits joins
 * back to the same text. */
#include "fuzz_util.h"

#include <stdbool.h>

#include "names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    bool valid = esc_name_valid(text);
    FUZZ_CHECK(!valid || (strlen(text) >= 1 && strlen(text) <= ESC_NAME_MAX));
    (void)esc_object_id_valid(text);
    (void)esc_name_is_physical(text);
    char ns[ESC_NAME_MAX + 1], name[ESC_NAME_MAX + 1];
    if (esc_name_split(text, ns, name) == 0) {
        FUZZ_CHECK(esc_name_valid(ns) && esc_name_valid(name));
        char full[ESC_FULLNAME_MAX];
        FUZZ_CHECK(esc_name_join(ns, name, full, sizeof full) == 0);
        FUZZ_CHECK(strcmp(full, text) == 0);
    }
    free(text);
    return 0;
}
