/* daemon.h: finding the escher-gcs and escher-raylet executables and starting them
 * detached from the terminal, with their output in the session's logs. */
#ifndef ESC_CLI_DAEMON_H
#define ESC_CLI_DAEMON_H

#include <stddef.h>
#include <sys/types.h>

#include "procs.h"

/* Finds executable `name` (built in the build directory's `subdir`): in
 * $ESCHER_BIN_DIR/subdir, next to the escher binary, in ../subdir from the escher
 * binary's directory, then on PATH. Writes its path into out; returns 0 or -1. */
int cli_daemon_find(const char *name, const char *subdir, char *out, size_t len);

/* Forks and execs argv (argv[0] is the path) in a new session (its own process group,
 * away from the terminal's signals), stdin from /dev/null and stdout and stderr
 * appended to log_path, with the signal mask and dispositions reset. Once the child
 * has exec'd, fills p's pid, start time and executable and writes them to p->pidfile
 * (procs.h). Returns the pid, or -1 with errno (a failed exec's own errno included). */
pid_t cli_daemon_spawn(char *const argv[], const char *log_path, cli_proc *p);

/* The last non-empty line of a file (a daemon's last words in its log), "" when none. */
const char *cli_last_line(const char *path, char *buf, size_t len);
/* (cli_last_line: the last line that logs an ERROR when there is one, else the last
 * line.) */

#endif
