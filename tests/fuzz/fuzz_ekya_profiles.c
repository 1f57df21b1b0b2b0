/* fuzz_ekya_profiles.c: ekya's retraining profile CSV (apps/ekya/csv.c, profiles.c),
 * read by path as `ekya simulate` does, from a memfd. */
#include "fuzz_util.h"

#include "ekya/profiles.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = fuzz_memfd(data, size, path, sizeof path);
    ekya_profiles p;
    /* Each accuracy unit once: AUTO guesses it from the values, the others force it. */
    static const ekya_acc_unit units[] = {EKYA_ACC_AUTO, EKYA_ACC_FRACTION, EKYA_ACC_PERCENT};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (lseek(fd, 0, SEEK_SET) != 0)
            abort();
        if (ekya_profiles_load_unit(path, units[i], &p, err, sizeof err) == 0)
            ekya_profiles_free(&p);
    }
    close(fd);
    return 0;
}
