/* cmd_stop.c: `escher stop [--force] [--grace-period S]`: stops the processes recorded
 * in this session's pid files, and nothing else. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../session.h"
#include "procs.h"
#include "stale_sockets.h"

static const char usage[] =
    "usage: escher stop [--force] [--grace-period S] [--session-dir DIR]\n"
    "\n"
    "Stops the processes this machine's session started (its pids/*.pid files): SIGTERM,\n"
    "then SIGKILL to any still running after the grace period.\n"
    "\n"
    "  --force           SIGKILL at once\n"
    "  --grace-period S  seconds to wait after SIGTERM (default 10)\n";

#define DEFAULT_GRACE_S 10.0

static int parse_grace(const char *text, double *out)
{
    *out = DEFAULT_GRACE_S;
    if (!text)
        return 0;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= 0 && v <= 3600))
        return cli_usage("--grace-period wants seconds from 0 to 3600, not \"%s\"", text);
    *out = v;
    return 0;
}

static int nothing_running(const char *dir)
{
    printf("no escher session is running (%s)\n", dir);
    return CLI_EXIT_OK;
}

/* A pid file we can not parse is never guessed at: acting on a misread pid could
 * signal someone else's process. One line each; the files are kept for the user. */
static size_t report_malformed(const cli_proc *procs, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (!procs[i].malformed)
            continue;
        cli_fail("malformed pid file %s (%s; want one line \"PID START_TICKS EXE\"): "
                 "nothing signalled; remove it once its process is gone",
                 procs[i].pidfile, procs[i].why);
        bad++;
    }
    return bad;
}

int cmd_stop(const cli_globals *g, int argc, char **argv)
{
    bool force = false;
    const char *grace_text = NULL;
    const cli_opt opts[] = {
        {"--force", NULL, &force},
        {"--grace-period", &grace_text, NULL},
        {NULL, NULL, NULL},
    };
    const char *pos[1];
    int npos;
    double grace;
    int rc = cli_parse(argc, argv, opts, pos, 0, &npos, usage);
    if (rc == 0)
        rc = parse_grace(grace_text, &grace);
    if (rc != 0)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;

    const char *dir = esc_session_dir(g->session_dir);
    char real[PATH_MAX];
    cli_proc *procs = NULL;
    size_t n = 0;
    if (!realpath(dir, real) || cli_procs_load(real, &procs, &n) != 0 || n == 0) {
        free(procs);
        return nothing_running(dir);
    }
    size_t bad = report_malformed(procs, n);
    size_t stopped = cli_procs_stop(procs, n, grace, force, true);
    free(procs);
    /* Our raylet is gone now; its socket, and those of raylets killed earlier, too. */
    size_t sockets = esc_remove_stale_sockets(ESC_SOCKET_DIR);
    if (sockets)
        printf("removed %zu worker socket%s of raylets that are gone (%s)\n", sockets,
               sockets == 1 ? "" : "s", ESC_SOCKET_DIR);
    if (bad)
        return CLI_EXIT_FAIL;
    if (stopped == 0)
        return nothing_running(real);
    return CLI_EXIT_OK;
}
