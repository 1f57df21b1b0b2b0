/* ekya/profiles.h: the retraining profiles and the inference profile the Ekya
 * schedulers and the simulator read.
 *
 * Retraining profile CSV (columns located by header name, any order, extra columns
 * ignored): stream,window,config,epochs,start_pct,end_pct,gpu_seconds and optionally
 * pred_end_pct,pred_gpu_seconds. One row per (stream, window, config, epochs).
 * The accuracy columns name their unit: start_pct,end_pct,pred_end_pct hold percent
 * (0..100), start_acc,end_acc,pred_end_acc fractions (0..1); a file uses one kind.
 * In memory accuracies are 0..1. When the pred_ columns are present the schedulers
 * plan with them and the simulator scores with the actual end/gpu_seconds; otherwise
 * both see the actual values.
 *
 * Inference profile CSV: subsampling,accuracy_multiplier (subsampling >= 1, multiplier
 * in 0..1): the accuracy factor when one frame in `subsampling` is processed.
 */
#ifndef EKYA_PROFILES_H
#define EKYA_PROFILES_H

#include <stddef.h>

/* A retraining configuration: a named hyper-parameter set trained for some epochs. */
typedef struct {
    char *name;
    int epochs;
} ekya_rcfg;

/* What one configuration gives one stream in one window. */
typedef struct {
    int present;             /* 0: no row, the configuration is unavailable there */
    double end_acc;          /* actual accuracy after retraining, 0..1 */
    double gpu_seconds;      /* actual cost */
    double pred_end_acc;     /* what the scheduler is told (= actual without pred_) */
    double pred_gpu_seconds;
} ekya_cell;

typedef struct {
    int nstreams, nwindows, nconfigs;
    char **streams;          /* in order of first appearance */
    int *window_ids;         /* the file's window numbers, ascending */
    ekya_rcfg *configs;      /* in order of first appearance */
    double *start_acc;       /* [s * nwindows + w], 0..1 */
    ekya_cell *cells;        /* [(s * nwindows + w) * nconfigs + c] */
    int has_pred;            /* the file had pred_ columns */
} ekya_profiles;

/* The unit of the accuracy values in a profile file. AUTO: the one the column names
 * say (_acc fraction, _pct percent). */
typedef enum { EKYA_ACC_AUTO = 0, EKYA_ACC_FRACTION = 1, EKYA_ACC_PERCENT = 2 } ekya_acc_unit;

/* "fraction" or "percent" (the --accuracy-unit values) into *out; 0, or -1. */
int ekya_acc_unit_parse(const char *s, ekya_acc_unit *out);

/* Loads a retraining profile CSV into *out (owned by the caller; release with
 * ekya_profiles_free). Returns 0, or -1 with a one-line "path:line:col: message" in
 * err for missing columns, a header with both or mixed _acc/_pct names, non-numeric or
 * negative values, an accuracy above its unit's range (1 for fractions, 100 for
 * percent), a percent file whose every accuracy is <= 1 (fractions, surely),
 * duplicate rows, start accuracy differing between rows of one (stream, window), or a
 * stream without rows for some window. Lines that are blank or start with '#' are
 * skipped; fields are not quoted. */
int ekya_profiles_load(const char *path, ekya_profiles *out, char *err, size_t errlen);

/* The same with the unit given: FRACTION or PERCENT read every accuracy column in that
 * unit whatever its name says (for files named in the other convention); AUTO is
 * ekya_profiles_load. */
int ekya_profiles_load_unit(const char *path, ekya_acc_unit unit, ekya_profiles *out,
                            char *err, size_t errlen);

/* Allocates an empty profile set of the given shape (all cells absent, names NULL).
 * Used by the loader and the synthetic generator. Returns 0 or -1 (out of memory). */
int ekya_profiles_alloc(ekya_profiles *p, int nstreams, int nwindows, int nconfigs);

/* Frees everything *p owns and zeroes it; safe on a zeroed struct. */
void ekya_profiles_free(ekya_profiles *p);

/* The cell for stream s, window index w (0-based, not the file's id), config c. */
const ekya_cell *ekya_profiles_cell(const ekya_profiles *p, int s, int w, int c);

/* Index of the configuration (name, epochs), or -1 when the profiles have none. */
int ekya_profiles_find_config(const ekya_profiles *p, const char *name, int epochs);

/* Index of the stream called name, or -1. */
int ekya_profiles_find_stream(const ekya_profiles *p, const char *name);

/* Inference profile: sorted by subsampling, strictly increasing. */
typedef struct {
    int n;
    double *subsampling;
    double *multiplier;
} ekya_infer_profile;

/* Loads an inference profile CSV into *out (free with ekya_infer_free). Returns 0 or
 * -1 with a one-line "path:line:col: message" (missing column, non-numeric,
 * subsampling < 1, multiplier outside 0..1, duplicate subsampling, no rows). */
int ekya_infer_load(const char *path, ekya_infer_profile *out, char *err, size_t errlen);

/* Builds an inference profile from arrays (copied; need not be sorted). 0 or -1. */
int ekya_infer_from_arrays(ekya_infer_profile *out, int n, const double *sub,
                           const double *mult);

void ekya_infer_free(ekya_infer_profile *p);

/* The table entry a share can run: a stream whose inference gets `share` GPUs while
 * every frame needs `rmax` must process one frame in rmax/share; inference
 * configurations are discrete, so it runs the smallest tabled subsampling >= that
 * ratio (steps up, never interpolates). Returns that subsampling, 1 when share >= rmax
 * (no subsampling needed), or 0 when even the largest entry is too costly or share is
 * 0 (the stream cannot keep up: accuracy 0). */
double ekya_infer_subsampling(const ekya_infer_profile *p, double share, double rmax);

/* The accuracy multiplier for `share` GPUs: the multiplier of the entry above, 1.0
 * when no subsampling is needed and the table has no entry 1, 0 when it cannot keep up. */
double ekya_infer_multiplier(const ekya_infer_profile *p, double share, double rmax);

#endif
