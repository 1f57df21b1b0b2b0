/* procs.h: the processes a session started, as recorded in its pids/ directory, and
 * stopping them (SIGTERM, a grace period, then SIGKILL).
 *
 * A pid alone does not name a process: pids are reused, and a pid file outlives a
 * daemon killed with -9. So a pid file records the process exactly, in one line:
 *
 *     PID START_TICKS EXE\n
 *
 *   PID          decimal process id;
 *   START_TICKS  field 22 of /proc/PID/stat: when the process started, in clock ticks
 *                (sysconf(_SC_CLK_TCK), usually 100 a second) since boot; two processes
 *                with the same pid never share it within one boot;
 *   EXE          the rest of the line: the absolute path /proc/PID/exe named once the
 *                daemon had exec'd (it may hold spaces).
 *
 * A process is the recorded one only when all three match (EXE also matches the
 * kernel's "EXE (deleted)", a binary replaced by a rebuild while it runs). Anything else
 * in a pid file (e.g. the bare pid that older versions wrote) is malformed: it is
 * reported and never acted on. */
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
    unsigned long long start_ticks;
    char exe[PATH_MAX];
    bool malformed;       /* the pid file could not be parsed: why says how */
    char why[160];
} cli_proc;

/* Fills p's pid, start_ticks and exe from /proc for the running (or not yet reaped)
 * process pid; exe falls back to fallback_exe (may be NULL) when /proc/PID/exe can not
 * be read (a child that already exited). Returns 0, or -1 when pid has no /proc entry. */
int cli_proc_identify(cli_proc *p, pid_t pid, const char *fallback_exe);

/* Writes p's identity into p->pidfile in the format above, atomically (a reader never
 * sees half a file). Returns 0, or -1 with errno. */
int cli_pidfile_write(const cli_proc *p);

/* Parses the pid file p->pidfile into p. Returns 0; -1 when it can not be read (errno);
 * 1 when it is malformed (p->malformed set, p->why says what is wrong). */
int cli_pidfile_read(cli_proc *p);

/* Reads every DIR/pids/NAME.pid into a malloc'd array (*n entries; caller frees),
 * malformed ones included, flagged. Returns 0, or -1 when DIR/pids can not be read
 * (errno ENOENT: no session there). */
int cli_procs_load(const char *dir, cli_proc **out, size_t *n);

/* True when the process p records is running (not a zombie) and is that very process:
 * same pid, start time and executable. Never true for a malformed entry. */
bool cli_proc_running(const cli_proc *p);

/* Stops procs: SIGTERM to each one's process group (so workers it forked go too),
 * waits up to grace_s seconds for all, then SIGKILL to those left; force skips straight
 * to SIGKILL. A process that is not the recorded one (a stale pid file: the pid is gone
 * or now another process's) is left alone and its pid file removed. Malformed entries
 * are skipped, their files kept (the caller reports them). When report is set, prints
 * one line per process on stdout. Returns the count of processes stopped. */
size_t cli_procs_stop(const cli_proc *procs, size_t n, double grace_s, bool force,
                      bool report);

#endif
