/* format.c: quantities as text for tables and as JSON values. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "qty.h"

/* Memory is counted in bytes; a table reads better in binary units. */
static bool is_bytes(const char *name)
{
    return name && (!strcmp(name, "memory") || !strcmp(name, "object_store_memory"));
}

static const char *fmt_bytes(int64_t q, char *buf, size_t len)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = esc_qty_to_double(q);
    size_t u = 0;
    while ((v >= 1024.0 || v <= -1024.0) && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

const char *cli_fmt_qty(const char *name, int64_t q, bool unbounded, bool human, char *buf,
                        size_t len)
{
    if (unbounded) {
        snprintf(buf, len, "inf");
        return buf;
    }
    if (human && is_bytes(name))
        return fmt_bytes(q, buf, len);
    return esc_qty_format(q, buf, len);
}

json_t *cli_json_qty(int64_t q, bool unbounded)
{
    if (unbounded)
        return json_string("inf");
    /* Whole numbers stay exact as integers (memory in bytes exceeds a double's
     * comfortable precision once a fraction is added). */
    if (q % ESC_QTY_SCALE == 0)
        return json_integer(q / ESC_QTY_SCALE);
    return json_real(esc_qty_to_double(q));
}

int cli_json_print(json_t *v)
{
    if (!v)
        return cli_fail("out of memory building JSON");
    int rc = json_dumpf(v, stdout, JSON_REAL_PRECISION(15));
    json_decref(v);
    if (rc != 0)
        return cli_fail("cannot write JSON output");
    fputc('\n', stdout);
    return CLI_EXIT_OK;
}
