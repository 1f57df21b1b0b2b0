/* profile_main.c: a stand-alone `ekya-profile` for tests and measurements, so the
 * workload layer can be exercised before (and without) the `ekya` dispatcher. */
#include "ekya/profile_cmd.h"

int main(int argc, char **argv) { return ekya_cmd_profile(argc, argv); }
