/* session_new.h: creating a session directory for `escher start` (docs/processes.md). */
#ifndef ESC_CLI_SESSION_NEW_H
#define ESC_CLI_SESSION_NEW_H

#include <stdbool.h>
#include <stddef.h>

/* True when a process recorded in dir's pid files still runs. */
bool cli_session_live(const char *dir);

/* Creates the session directory with pids/ and logs/: dir when not NULL (parents made
 * as needed), else <runtime root>/session_<wall-ms>_<pid> (user_dirs.h). An existing
 * directory is reused after its stale files (token, readiness files, pid files) are
 * removed; one whose processes still run is refused. Writes the absolute path into out
 * and sets *created when the directory did not exist before. Prints the error and
 * returns an exit code. */
int cli_session_create(const char *dir, char *out, size_t len, bool *created);

/* Undoes cli_session_create after a failed start: removes the directory when it was
 * created (created), else only the files a start writes. */
void cli_session_discard(const char *dir, bool created);

/* Creates dir/name (mode 0600, must not exist) holding a secret (the token, the daemon
 * key, the operator key), no newline. */
int cli_session_write_secret(const char *dir, const char *name, const char *secret);

/* Writes dir/name atomically (temporary file, then rename). Returns 0 or -1. */
int cli_session_write(const char *dir, const char *name, const char *content);

#endif
