/* ekya/synth.h: synthetic retraining profiles, for the scale check and the
 * randomized scheduler tests. Deterministic for a seed. */
#ifndef EKYA_SYNTH_H
#define EKYA_SYNTH_H

#include <stdint.h>
#include <stdio.h>

#include "ekya/profiles.h"

/* Fills *out (free with ekya_profiles_free) with nstreams streams "s0".., nwindows
 * windows and nconfigs configurations ("hpK" with epochs 5, 15, 30 in turn). Start
 * accuracies are 30..80%; a configuration's gain and cost grow with its epochs (the
 * gain with diminishing returns); gpu_seconds are 10..~400. Predictions equal the
 * actual values. Returns 0 or -1 (bad sizes or out of memory). */
int ekya_profiles_synth(ekya_profiles *out, int nstreams, int nwindows, int nconfigs,
                        uint64_t seed);

/* Writes p as a profile CSV (accuracies in percent, pred_ columns when p->has_pred).
 * Returns 0 or -1 on a write error. */
int ekya_profiles_write_csv(FILE *f, const ekya_profiles *p);

#endif
