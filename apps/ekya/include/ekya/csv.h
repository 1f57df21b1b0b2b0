/* ekya/csv.h: the small CSV reader behind the profile loaders: unquoted fields,
 * header by name, positions kept so every error can name path:line:column. */
#ifndef EKYA_CSV_H
#define EKYA_CSV_H

#include <stdio.h>
#include <stddef.h>

#define EKYA_CSV_MAX_FIELDS 64

typedef struct {
    FILE *f;
    const char *path;
    int line;                          /* 1-based number of the current line */
    char *buf;                         /* the current line, split in place */
    size_t cap;
    int nfields;
    char *field[EKYA_CSV_MAX_FIELDS];  /* trimmed, NUL-terminated, point into buf */
    int col[EKYA_CSV_MAX_FIELDS];      /* 1-based character column of each field */
} ekya_csv;

/* Opens path. Returns 0, or -1 with "path: cannot open: reason" in err. */
int ekya_csv_open(ekya_csv *c, const char *path, char *err, size_t errlen);

/* Reads the next non-blank line not starting with '#'. Returns 1 with the fields
 * set, 0 at end of file, -1 with "path:line:col: too many fields" in err. */
int ekya_csv_next(ekya_csv *c, char *err, size_t errlen);

/* Closes the file and frees the line buffer. */
void ekya_csv_close(ekya_csv *c);

/* Index of the header field called name in the current line, or -1. */
int ekya_csv_index(const ekya_csv *c, const char *name);

/* Parses field i of the current line as a finite double. Returns 0, or -1 with
 * "path:line:col: <what>: 'text' is not a number" (or "is missing") in err. */
int ekya_csv_double(const ekya_csv *c, int i, const char *what, double *out, char *err,
                    size_t errlen);

/* Formats "path:line:col: message" into err for field i (col 1 when i < 0). */
void ekya_csv_error(const ekya_csv *c, int i, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
