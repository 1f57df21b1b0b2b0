/* qty.h: resource quantities in signed 64-bit fixed point (1/10000 units).
 *
 * 0.25 GPU is 2500. A capacity may also be unbounded; that is a separate flag
 * wherever it is stored, never a magic value of the number.
 */
#ifndef ESC_QTY_H
#define ESC_QTY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ESC_QTY_SCALE 10000LL
/* The largest magnitude accepted: about 2.3e14 whole units (memory is counted in
 * bytes, so 230 TB per node), leaving headroom so sums of a few values never overflow. */
#define ESC_QTY_MAX (INT64_MAX / 4)

/* Parses a decimal ("3", "0.25", "-1.5", "1e3" is not accepted) into fixed point.
 * "inf" sets *unbounded and *out = 0. At most 4 decimals. Returns 0, or -1 when the
 * text is not a valid quantity or is out of range (|q| > ESC_QTY_MAX). */
int esc_qty_parse(const char *text, int64_t *out, bool *unbounded);

/* Formats q as the shortest decimal ("3", "0.25", "-1.5") into buf (at least 32
 * bytes) and returns buf. */
char *esc_qty_format(int64_t q, char *buf, size_t len);

/* q as a double (for JSON output and display). */
double esc_qty_to_double(int64_t q);

/* Saturating addition within [-ESC_QTY_MAX, ESC_QTY_MAX]. */
int64_t esc_qty_add(int64_t a, int64_t b);

#endif
