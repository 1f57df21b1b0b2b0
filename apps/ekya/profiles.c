/* profiles.c: loading the retraining profile CSV (format in ekya/profiles.h). The
 * file is read into raw rows first, then names become indices, so duplicate and
 * consistency checks can still point at the offending line. */
#include "ekya/profiles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ekya/csv.h"

typedef struct {
    char *stream, *config;
    int window, epochs, line;
    double start, end, gpu, pend, pgpu;
    int s, w, c; /* indices once resolved */
} raw_row;

typedef struct {
    raw_row *v;
    int n, cap;
} raw_rows;

enum { C_STREAM, C_WINDOW, C_CONFIG, C_EPOCHS, C_START, C_END, C_GPU, C_PEND, C_PGPU, C_N };
/* Column names; an accuracy column (C_START, C_END, C_PEND) is named with the stem
 * and _acc (fraction 0..1) or _pct (percent 0..100). */
static const char *const col_names[C_N] = {"stream",   "window",      "config",
                                           "epochs",   "start",       "end",
                                           "gpu_seconds", "pred_end", "pred_gpu_seconds"};

static int is_acc_col(int k)
{
    return k == C_START || k == C_END || k == C_PEND;
}

/* What the header says: column positions, their names as written, the unit. */
typedef struct {
    int idx[C_N];
    char name[C_N][32];     /* e.g. "start_pct"; for messages */
    int has_pred;
    ekya_acc_unit unit;     /* the unit values are read in (never AUTO) */
    int overridden;         /* unit came from the caller, not from the names */
    int first_line, first_col; /* first data row's start field, for the <= 1 rule */
    double max_acc;         /* largest accuracy value in the file */
} header;

int ekya_profiles_alloc(ekya_profiles *p, int ns, int nw, int nc)
{
    memset(p, 0, sizeof *p);
    p->nstreams = ns;
    p->nwindows = nw;
    p->nconfigs = nc;
    p->streams = calloc((size_t)ns, sizeof *p->streams);
    p->window_ids = calloc((size_t)nw, sizeof *p->window_ids);
    p->configs = calloc((size_t)nc, sizeof *p->configs);
    p->start_acc = calloc((size_t)ns * (size_t)nw, sizeof *p->start_acc);
    p->cells = calloc((size_t)ns * (size_t)nw * (size_t)nc, sizeof *p->cells);
    if (!p->streams || !p->window_ids || !p->configs || !p->start_acc || !p->cells) {
        ekya_profiles_free(p);
        return -1;
    }
    for (int w = 0; w < nw; w++)
        p->window_ids[w] = w;
    for (int i = 0; i < ns * nw; i++)
        p->start_acc[i] = -1; /* marks "no row yet" for the loader */
    return 0;
}

void ekya_profiles_free(ekya_profiles *p)
{
    if (p->streams)
        for (int i = 0; i < p->nstreams; i++)
            free(p->streams[i]);
    if (p->configs)
        for (int i = 0; i < p->nconfigs; i++)
            free(p->configs[i].name);
    free(p->streams);
    free(p->window_ids);
    free(p->configs);
    free(p->start_acc);
    free(p->cells);
    memset(p, 0, sizeof *p);
}

const ekya_cell *ekya_profiles_cell(const ekya_profiles *p, int s, int w, int c)
{
    return &p->cells[((size_t)s * (size_t)p->nwindows + (size_t)w) * (size_t)p->nconfigs +
                     (size_t)c];
}

int ekya_profiles_find_config(const ekya_profiles *p, const char *name, int epochs)
{
    for (int c = 0; c < p->nconfigs; c++)
        if (p->configs[c].epochs == epochs && strcmp(p->configs[c].name, name) == 0)
            return c;
    return -1;
}

int ekya_profiles_find_stream(const ekya_profiles *p, const char *name)
{
    for (int s = 0; s < p->nstreams; s++)
        if (strcmp(p->streams[s], name) == 0)
            return s;
    return -1;
}

static void rows_free(raw_rows *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->v[i].stream);
        free(r->v[i].config);
    }
    free(r->v);
}

/* A non-negative value; an accuracy must also fit its unit: at most 1 read as a
 * fraction, at most 100 read as percent. */
static int value(const ekya_csv *c, int i, header *h, int which, double *out, char *err,
                 size_t errlen)
{
    const char *name = h->name[which];
    if (ekya_csv_double(c, i, name, out, err, errlen) != 0)
        return -1;
    if (*out < 0) {
        ekya_csv_error(c, i, err, errlen, "%s must not be negative (got %s)", name,
                       c->field[i]);
        return -1;
    }
    if (!is_acc_col(which))
        return 0;
    if (h->unit == EKYA_ACC_FRACTION && *out > 1) {
        if (h->overridden)
            ekya_csv_error(c, i, err, errlen, "%s holds %s, but --accuracy-unit fraction "
                           "reads accuracies as fractions 0..1", name, c->field[i]);
        else
            ekya_csv_error(c, i, err, errlen, "%s is a fraction 0..1 but holds %s; did you "
                           "mean %s_pct?", name, c->field[i], col_names[which]);
        return -1;
    }
    if (h->unit == EKYA_ACC_PERCENT && *out > 100) {
        ekya_csv_error(c, i, err, errlen, "%s is a percentage, 0..100 (got %s)", name,
                       c->field[i]);
        return -1;
    }
    if (*out > h->max_acc)
        h->max_acc = *out;
    return 0;
}

static int integer(const ekya_csv *c, int i, int which, int min, int *out, char *err,
                   size_t errlen)
{
    double v;
    if (ekya_csv_double(c, i, col_names[which], &v, err, errlen) != 0)
        return -1;
    if (v != floor(v) || v < min || v > 1e9) {
        ekya_csv_error(c, i, err, errlen, "%s must be an integer >= %d (got %s)",
                       col_names[which], min, c->field[i]);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Parses one data line into r using the header's column indices. */
static int parse_row(const ekya_csv *c, header *h, raw_row *r, char *err, size_t errlen)
{
    const int *idx = h->idx;
    memset(r, 0, sizeof *r);
    r->line = c->line;
    for (int k = 0; k < C_N; k++)
        if (idx[k] >= c->nfields) {
            ekya_csv_error(c, -1, err, errlen, "%s is missing (row has %d fields)",
                           h->name[k], c->nfields);
            return -1;
        }
    if (c->field[idx[C_STREAM]][0] == '\0' || c->field[idx[C_CONFIG]][0] == '\0') {
        int k = c->field[idx[C_STREAM]][0] == '\0' ? C_STREAM : C_CONFIG;
        ekya_csv_error(c, idx[k], err, errlen, "%s is empty", col_names[k]);
        return -1;
    }
    if (integer(c, idx[C_WINDOW], C_WINDOW, 0, &r->window, err, errlen) ||
        integer(c, idx[C_EPOCHS], C_EPOCHS, 1, &r->epochs, err, errlen) ||
        value(c, idx[C_START], h, C_START, &r->start, err, errlen) ||
        value(c, idx[C_END], h, C_END, &r->end, err, errlen) ||
        value(c, idx[C_GPU], h, C_GPU, &r->gpu, err, errlen))
        return -1;
    r->pend = r->end;
    r->pgpu = r->gpu;
    if (h->has_pred && (value(c, idx[C_PEND], h, C_PEND, &r->pend, err, errlen) ||
                        value(c, idx[C_PGPU], h, C_PGPU, &r->pgpu, err, errlen)))
        return -1;
    if (h->first_line == 0) {
        h->first_line = c->line;
        h->first_col = c->col[idx[C_START]];
    }
    r->stream = strdup(c->field[idx[C_STREAM]]);
    r->config = strdup(c->field[idx[C_CONFIG]]);
    if (!r->stream || !r->config) {
        free(r->stream);
        free(r->config);
        ekya_csv_error(c, -1, err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Finds accuracy column k under its _acc or _pct name. Returns the unit its name
 * means (0 when absent), or -1 with an error when both names are there. */
static int find_acc(ekya_csv *c, header *h, int k, char *err, size_t errlen)
{
    char acc[32], pct[32];
    snprintf(acc, sizeof acc, "%s_acc", col_names[k]);
    snprintf(pct, sizeof pct, "%s_pct", col_names[k]);
    int ia = ekya_csv_index(c, acc), ip = ekya_csv_index(c, pct);
    if (ia >= 0 && ip >= 0) {
        ekya_csv_error(c, ip, err, errlen, "header has both %s (fraction 0..1) and %s "
                       "(percent 0..100); keep one", acc, pct);
        return -1;
    }
    h->idx[k] = ia >= 0 ? ia : ip;
    snprintf(h->name[k], sizeof h->name[k], "%s", ip >= 0 ? pct : acc);
    return ia >= 0 ? EKYA_ACC_FRACTION : ip >= 0 ? EKYA_ACC_PERCENT : 0;
}

/* Locates the columns and settles the unit; the pred_ pair is all-or-nothing, and
 * the accuracy columns are all _acc or all _pct. */
static int read_header(ekya_csv *c, header *h, ekya_acc_unit unit, char *err, size_t errlen)
{
    int r = ekya_csv_next(c, err, errlen);
    if (r <= 0) {
        if (r == 0)
            snprintf(err, errlen, "%s:1:1: empty file, expected header %s", c->path,
                     "stream,window,config,epochs,start_pct,end_pct,gpu_seconds");
        return -1;
    }
    int named = 0, named_k = -1;
    for (int k = 0; k < C_N; k++) {
        if (!is_acc_col(k)) {
            h->idx[k] = ekya_csv_index(c, col_names[k]);
            snprintf(h->name[k], sizeof h->name[k], "%s", col_names[k]);
            continue;
        }
        int u = find_acc(c, h, k, err, errlen);
        if (u < 0)
            return -1;
        if (u && named && u != named) {
            ekya_csv_error(c, h->idx[k], err, errlen, "header mixes %s (%s) with %s (%s); "
                           "name every accuracy column _pct (percent 0..100) or every one "
                           "_acc (fraction 0..1)", h->name[named_k],
                           named == EKYA_ACC_PERCENT ? "percent" : "fraction", h->name[k],
                           u == EKYA_ACC_PERCENT ? "percent" : "fraction");
            return -1;
        }
        if (u && !named) {
            named = u;
            named_k = k;
        }
    }
    if (h->idx[C_PEND] < 0) /* named after the file's other columns in messages */
        snprintf(h->name[C_PEND], sizeof h->name[C_PEND], "pred_end_%s",
                 named == EKYA_ACC_FRACTION ? "acc" : "pct");
    for (int k = 0; k < C_PEND; k++)
        if (h->idx[k] < 0) {
            if (is_acc_col(k))
                ekya_csv_error(c, -1, err, errlen, "header lacks column '%s_pct' (percent "
                               "0..100) or '%s_acc' (fraction 0..1)", col_names[k],
                               col_names[k]);
            else
                ekya_csv_error(c, -1, err, errlen, "header lacks column '%s'", col_names[k]);
            return -1;
        }
    if ((h->idx[C_PEND] < 0) != (h->idx[C_PGPU] < 0)) {
        ekya_csv_error(c, -1, err, errlen, "header has only one of %s and pred_gpu_seconds; "
                       "give both or neither", h->name[C_PEND]);
        return -1;
    }
    h->has_pred = h->idx[C_PEND] >= 0;
    if (!h->has_pred)
        h->idx[C_PEND] = h->idx[C_PGPU] = 0;
    h->overridden = unit != EKYA_ACC_AUTO;
    h->unit = h->overridden ? unit : (ekya_acc_unit)named;
    return 0;
}

static int read_rows(ekya_csv *c, raw_rows *rows, header *h, ekya_acc_unit unit, char *err,
                     size_t errlen)
{
    if (read_header(c, h, unit, err, errlen) != 0)
        return -1;
    int r;
    while ((r = ekya_csv_next(c, err, errlen)) == 1) {
        if (rows->n == rows->cap) {
            int cap = rows->cap ? 2 * rows->cap : 64;
            raw_row *v = realloc(rows->v, (size_t)cap * sizeof *v);
            if (!v) {
                ekya_csv_error(c, -1, err, errlen, "out of memory");
                return -1;
            }
            rows->v = v;
            rows->cap = cap;
        }
        if (parse_row(c, h, &rows->v[rows->n], err, errlen) != 0)
            return -1;
        rows->n++;
    }
    if (r < 0)
        return -1;
    if (rows->n == 0) {
        snprintf(err, errlen, "%s:%d:1: no data rows", c->path, c->line);
        return -1;
    }
    /* No model is at most 1% accurate everywhere: such a file holds fractions. */
    if (h->unit == EKYA_ACC_PERCENT && h->max_acc <= 1) {
        snprintf(err, errlen, "%s:%d:%d: every accuracy is <= 1, but %s percent 0..100; "
                 "these look like fractions: %s", c->path, h->first_line, h->first_col,
                 h->overridden ? "--accuracy-unit percent reads them as" : "_pct columns hold",
                 h->overridden ? "use --accuracy-unit fraction"
                               : "name the columns start_acc, end_acc, pred_end_acc");
        return -1;
    }
    return 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Gives every row its stream, window and config index; collects the names. */
static int resolve(raw_rows *rows, ekya_profiles *p)
{
    int n = rows->n, ns = 0, nw = 0, nc = 0;
    int *sfirst = malloc((size_t)n * sizeof *sfirst), *cfirst = malloc((size_t)n * sizeof *cfirst);
    int *wids = malloc((size_t)n * sizeof *wids);
    int rc = -1;
    if (!sfirst || !cfirst || !wids)
        goto out;
    for (int i = 0; i < n; i++) {
        raw_row *r = &rows->v[i];
        int s = 0, c = 0, w = 0;
        while (s < ns && strcmp(rows->v[sfirst[s]].stream, r->stream) != 0)
            s++;
        if (s == ns)
            sfirst[ns++] = i;
        while (c < nc && (rows->v[cfirst[c]].epochs != r->epochs ||
                          strcmp(rows->v[cfirst[c]].config, r->config) != 0))
            c++;
        if (c == nc)
            cfirst[nc++] = i;
        while (w < nw && wids[w] != r->window)
            w++;
        if (w == nw)
            wids[nw++] = r->window;
        r->s = s;
        r->c = c;
    }
    qsort(wids, (size_t)nw, sizeof *wids, cmp_int);
    if (ekya_profiles_alloc(p, ns, nw, nc) != 0)
        goto out;
    for (int s = 0; s < ns; s++)
        if (!(p->streams[s] = strdup(rows->v[sfirst[s]].stream)))
            goto out;
    for (int c = 0; c < nc; c++) {
        p->configs[c].epochs = rows->v[cfirst[c]].epochs;
        if (!(p->configs[c].name = strdup(rows->v[cfirst[c]].config)))
            goto out;
    }
    memcpy(p->window_ids, wids, (size_t)nw * sizeof *wids);
    for (int i = 0; i < n; i++) {
        int *hit = bsearch(&rows->v[i].window, wids, (size_t)nw, sizeof *wids, cmp_int);
        rows->v[i].w = (int)(hit - wids);
    }
    rc = 0;
out:
    free(sfirst);
    free(cfirst);
    free(wids);
    return rc;
}

/* Fills the cells, rejecting duplicates, inconsistent start accuracies and holes. */
static int fill(const raw_rows *rows, const header *h, ekya_profiles *p, const char *path,
                char *err, size_t errlen)
{
    double scale = h->unit == EKYA_ACC_PERCENT ? 100 : 1; /* file value / scale = 0..1 */
    for (int i = 0; i < rows->n; i++) {
        const raw_row *r = &rows->v[i];
        ekya_cell *cell = (ekya_cell *)ekya_profiles_cell(p, r->s, r->w, r->c);
        double *start = &p->start_acc[r->s * p->nwindows + r->w];
        if (cell->present) {
            snprintf(err, errlen, "%s:%d:1: duplicate row for stream '%s', window %d, "
                     "config '%s' with %d epochs", path, r->line, r->stream, r->window,
                     r->config, r->epochs);
            return -1;
        }
        if (*start >= 0 && fabs(*start - r->start / scale) > 1e-9) {
            snprintf(err, errlen, "%s:%d:1: %s %g differs from %g given earlier for "
                     "stream '%s', window %d", path, r->line, h->name[C_START], r->start,
                     *start * scale, r->stream, r->window);
            return -1;
        }
        *start = r->start / scale;
        *cell = (ekya_cell){1, r->end / scale, r->gpu, r->pend / scale, r->pgpu};
    }
    for (int s = 0; s < p->nstreams; s++)
        for (int w = 0; w < p->nwindows; w++)
            if (p->start_acc[s * p->nwindows + w] < 0) {
                snprintf(err, errlen, "%s:1:1: stream '%s' has no rows for window %d", path,
                         p->streams[s], p->window_ids[w]);
                return -1;
            }
    return 0;
}

int ekya_profiles_load_unit(const char *path, ekya_acc_unit unit, ekya_profiles *out,
                            char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    ekya_csv c;
    if (ekya_csv_open(&c, path, err, errlen) != 0)
        return -1;
    raw_rows rows = {0};
    header h;
    memset(&h, 0, sizeof h);
    int rc = -1;
    if (read_rows(&c, &rows, &h, unit, err, errlen) != 0)
        goto out;
    if (resolve(&rows, out) != 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    out->has_pred = h.has_pred;
    rc = fill(&rows, &h, out, path, err, errlen);
out:
    if (rc != 0)
        ekya_profiles_free(out);
    rows_free(&rows);
    ekya_csv_close(&c);
    return rc;
}

int ekya_profiles_load(const char *path, ekya_profiles *out, char *err, size_t errlen)
{
    return ekya_profiles_load_unit(path, EKYA_ACC_AUTO, out, err, errlen);
}

int ekya_acc_unit_parse(const char *s, ekya_acc_unit *out)
{
    if (strcmp(s, "fraction") == 0)
        *out = EKYA_ACC_FRACTION;
    else if (strcmp(s, "percent") == 0)
        *out = EKYA_ACC_PERCENT;
    else
        return -1;
    return 0;
}
