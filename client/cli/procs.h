/* procs.h: the processes a session started, as recorded in its pids/ directory, and
 * stopping them (SIGTERM, a grace period, then SIGKILL). */
#ifndef ESC_CLI_PROCS_H
#define ESC_CLI_PROCS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
    char name[64];        /* "escher-gcs", from pids/gcs.pid */
    char pidfile[PATH_MAX];
    pid_t pid;
} cli_proc;

/* Reads every DIR/pids/NAME.pid into a malloc'd array (*n entries; caller frees).
 * Unparsable pid files are removed. Returns 0, or -1 when DIR/pids can not be read
 * (errno ENOENT: no session there). */
int cli_procs_load(const char *dir, cli_proc **out, size_t *n);

/* True when pid is running (not a zombie) and is this session's: its command line,
 * when readable, mentions session_dir (our daemons get their session's files as
 * arguments), which guards against a pid reused by an unrelated process. */
bool cli_proc_running(pid_t pid, const char *session_dir);

/* Stops procs: SIGTERM to each one's process group (so workers it forked go too),
 * waits up to grace_s seconds for all, then SIGKILL to those left; force skips straight
 * to SIGKILL. Processes not running or not this session's are left alone. Removes the
 * pid files. When report is set, prints one line per process on stdout. Returns the
 * count of processes that were running and were stopped. */
size_t cli_procs_stop(const cli_proc *procs, size_t n, const char *session_dir, double grace_s,
                      bool force, bool report);

#endif
