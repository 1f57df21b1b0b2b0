/* csv.c: a line-at-a-time CSV reader for the profile files (see ekya/csv.h). */
#include "ekya/csv.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int ekya_csv_open(ekya_csv *c, const char *path, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    c->f = fopen(path, "r");
    if (!c->f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void ekya_csv_close(ekya_csv *c)
{
    if (c->f)
        fclose(c->f);
    free(c->buf);
    c->f = NULL;
    c->buf = NULL;
}

void ekya_csv_error(const ekya_csv *c, int i, char *err, size_t errlen, const char *fmt, ...)
{
    int col = (i >= 0 && i < c->nfields) ? c->col[i] : 1;
    int n = snprintf(err, errlen, "%s:%d:%d: ", c->path, c->line, col);
    if (n < 0 || (size_t)n >= errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Trims blanks in place around [s, e) and returns the start; *e becomes NUL. */
static char *trim(char *s, char *e)
{
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    return s;
}

static int blank_or_comment(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0' || *s == '#';
}

/* Splits buf at commas into trimmed fields, recording each field's column. */
static int split(ekya_csv *c, char *err, size_t errlen)
{
    char *p = c->buf;
    c->nfields = 0;
    for (;;) {
        char *end = strchr(p, ',');
        char *stop = end ? end : p + strlen(p);
        if (c->nfields == EKYA_CSV_MAX_FIELDS) {
            ekya_csv_error(c, -1, err, errlen, "too many fields (at most %d)",
                           EKYA_CSV_MAX_FIELDS);
            return -1;
        }
        char *f = trim(p, stop);
        c->col[c->nfields] = (int)(f - c->buf) + 1;
        c->field[c->nfields++] = f;
        if (!end)
            return 0;
        p = end + 1;
    }
}

int ekya_csv_next(ekya_csv *c, char *err, size_t errlen)
{
    for (;;) {
        ssize_t n = getline(&c->buf, &c->cap, c->f);
        if (n < 0)
            return 0;
        c->line++;
        while (n > 0 && (c->buf[n - 1] == '\n' || c->buf[n - 1] == '\r'))
            c->buf[--n] = '\0';
        if (blank_or_comment(c->buf))
            continue;
        return split(c, err, errlen) == 0 ? 1 : -1;
    }
}

int ekya_csv_index(const ekya_csv *c, const char *name)
{
    for (int i = 0; i < c->nfields; i++)
        if (strcmp(c->field[i], name) == 0)
            return i;
    return -1;
}

int ekya_csv_double(const ekya_csv *c, int i, const char *what, double *out, char *err,
                    size_t errlen)
{
    if (i >= c->nfields || c->field[i][0] == '\0') {
        ekya_csv_error(c, i < c->nfields ? i : -1, err, errlen, "%s is missing", what);
        return -1;
    }
    char *end;
    errno = 0;
    double v = strtod(c->field[i], &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v)) {
        ekya_csv_error(c, i, err, errlen, "%s: '%s' is not a number", what, c->field[i]);
        return -1;
    }
    *out = v;
    return 0;
}
