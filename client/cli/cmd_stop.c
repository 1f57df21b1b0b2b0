/* cmd_stop.c: `escher stop [--force] [--grace-period S]`: stops the processes recorded
 * in this session's pid files, and nothing else. */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../session.h"
#include "procs.h"
#include "stale_sockets.h"
#include "xalloc.h"

static const char usage[] =
    "usage: escher stop [--all] [--force] [--grace-period S] [--session-dir DIR]\n"
    "\n"
    "Stops the processes this machine's session started (its pids/*.pid files): SIGTERM,\n"
    "then SIGKILL to any still running after the grace period. On the head, the GCS\n"
    "tells the raylets that joined: each exits 3 s later unless the GCS is back by then\n"
    "(or it was started with --keep).\n"
    "\n"
    "  --all             (on the head) stop the whole cluster: every raylet, joined ones\n"
    "                    and --keep ones included, exits first, then the GCS\n"
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

/* --all: SIGUSR1 makes the GCS tell every raylet to exit and stop once they did
 * (gcs/main.c); waits for that up to grace_s. The processes of this session that
 * exited meanwhile are reported and dropped from procs (*n shrinks; *gone counts
 * them); the rest are left to the ordinary stop. */
static int signal_gcs(const cli_proc *procs, size_t n, double grace_s);

static int stop_cluster(cli_proc *procs, size_t *n, double grace_s, size_t *gone)
{
    bool *was = esc_xcalloc(*n + 1, sizeof *was);
    for (size_t i = 0; i < *n; i++)
        was[i] = !procs[i].malformed && cli_proc_running(&procs[i]);
    int rc = signal_gcs(procs, *n, grace_s);
    size_t keep = 0;
    for (size_t i = 0; i < *n; i++) {
        if (rc == 0 && was[i] && !cli_proc_running(&procs[i])) {
            printf("stopped %s (pid %d)\n", procs[i].name, (int)procs[i].pid);
            unlink(procs[i].pidfile);
            ++*gone;
            continue;
        }
        procs[keep++] = procs[i];
    }
    *n = keep;
    free(was);
    return rc;
}

static int signal_gcs(const cli_proc *procs, size_t n, double grace_s)
{
    const cli_proc *gcs = NULL;
    for (size_t i = 0; i < n; i++)
        if (!procs[i].malformed && !strcmp(procs[i].name, "escher-gcs") &&
            cli_proc_running(&procs[i]))
            gcs = &procs[i];
    if (!gcs)
        return cli_fail("--all stops a cluster from its head: this session runs no GCS");
    if (kill(gcs->pid, SIGUSR1) != 0)
        return cli_fail("cannot signal escher-gcs (pid %d): %s", (int)gcs->pid,
                        strerror(errno));
    printf("stopping the whole cluster: the GCS tells every raylet to exit\n");
    fflush(stdout);
    for (double waited = 0; waited < grace_s && cli_proc_running(gcs); waited += 0.05) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int cmd_stop(const cli_globals *g, int argc, char **argv)
{
    bool force = false, all = false;
    const char *grace_text = NULL;
    const cli_opt opts[] = {
        {"--force", NULL, &force},
        {"--all", NULL, &all},
        {"--grace-period", &grace_text, NULL},
        {NULL, NULL, NULL},
    };
    const char *pos[1];
    int npos;
    double grace;
    int rc = cli_parse(argc, argv, opts, pos, 0, &npos, usage);
    if (rc == 0)
        rc = parse_grace(grace_text, &grace);
    if (rc == 0 && all && force)
        rc = cli_usage("--all and --force exclude each other (--force kills only this "
                       "machine's processes)");
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
    size_t gone = 0;
    if (all && stop_cluster(procs, &n, grace, &gone) != 0) {
        free(procs);
        return CLI_EXIT_FAIL;
    }
    size_t stopped = gone + cli_procs_stop(procs, n, grace, force, true);
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
