/* common.c: error reporting and connecting, shared by the CLI's commands. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../session.h"
#include "xalloc.h"

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
    fputs(prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("escher: ", fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

int cli_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("escher: ", fmt, ap);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("escher: warning: ", fmt, ap);
    va_end(ap);
}

bool cli_pathf(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < len;
}

int cli_status_fail(const esc_status *st)
{
    return cli_fail("%s: %s", esc_status_name(st->code), st->message);
}

/* gRPC's "failed to connect to all addresses" does not say which cluster was meant. */
static int unreachable(const cli_globals *g, const esc_status *st)
{
    const char *env = getenv("ESCHER_ADDRESS");
    char *from_session = g->address || (env && *env)
                             ? NULL
                             : esc_session_read(esc_session_dir(g->session_dir), "gcs_address");
    const char *addr = g->address         ? g->address
                       : (env && *env)    ? env
                       : from_session     ? from_session
                                          : "?";
    cli_fail("%s: no GCS answers at %s (is the cluster running?): %s",
             esc_status_name(st->code), addr, st->message);
    free(from_session);
    return CLI_EXIT_FAIL;
}

static int connect_with(const cli_globals *g, esc_connect_opts *o, esc_client **out)
{
    o->address = g->address;
    o->token = g->token;
    o->session_dir = g->session_dir;
    esc_status st;
    int rc = esc_connect(o, out, &st);
    if (rc == ESC_UNAVAILABLE && strncmp(st.message, "no cluster address", 18) != 0)
        return unreachable(g, &st);
    return rc == ESC_OK ? CLI_EXIT_OK : cli_status_fail(&st);
}

int cli_connect(const cli_globals *g, const char *ns, esc_client **out)
{
    /* A CLI call is over in a moment; what it creates must outlive it. It is its own
     * job even when a job's entrypoint runs it. */
    esc_connect_opts o = {.namespace_ = ns, .detached = true, .short_lived = true,
                          .new_job = true};
    return connect_with(g, &o, out);
}

int cli_connect_reader(const cli_globals *g, esc_client **out)
{
    esc_connect_opts o = {.short_lived = true, .no_job = true};
    return connect_with(g, &o, out);
}

int cli_connect_driver(const cli_globals *g, const char *ns, esc_client **out)
{
    esc_connect_opts o = {.namespace_ = ns, .new_job = true}; /* `job submit` makes a job */
    return connect_with(g, &o, out);
}

/* The first of an explicit value, an environment variable and a session file. */
static char *resolve(const char *explicit_value, const char *env, const cli_globals *g,
                     const char *file)
{
    if (explicit_value && *explicit_value)
        return esc_xstrdup(explicit_value);
    const char *e = getenv(env);
    if (e && *e)
        return esc_xstrdup(e);
    return esc_session_read(esc_session_dir(g->session_dir), file);
}

char *cli_address(const cli_globals *g)
{
    return resolve(g->address, "ESCHER_ADDRESS", g, "gcs_address");
}

char *cli_token(const cli_globals *g)
{
    if (g->token && *g->token)
        return esc_xstrdup(g->token);
    const char *e = getenv("ESCHER_TOKEN");
    if (e && *e)
        return esc_xstrdup(e);
    /* The session's token file, read as every program reads one (runtime/token_file.h). */
    char err[1024];
    char *t = esc_session_read_secret(esc_session_dir(g->session_dir), "token", err, sizeof err);
    if (!t && errno != ENOENT)
        fprintf(stderr, "escher: %s\n", err);
    return t;
}
