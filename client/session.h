/* session.h: the session directory (docs/processes.md), shared by the SDK and the CLI.
 *
 * Sessions live under the calling user's runtime root (runtime/user_dirs.h:
 * $XDG_RUNTIME_DIR/escher, else /tmp/escher-<uid>), one directory each. Which one a
 * command uses (docs/deploy.md, "Addresses, ports and sessions"): the one given
 * (--session-dir, else $ESCHER_SESSION_DIR), else the newest live session under the
 * root. A directory elsewhere is only ever used when given.
 *
 * Internal to client/: not part of the public escher.h API. */
#ifndef ESC_SESSION_H
#define ESC_SESSION_H

#include <stdbool.h>
#include <stddef.h>

/* The session directory to use: explicit_dir when not NULL, else $ESCHER_SESSION_DIR,
 * else the newest live session under the runtime root, else the runtime root itself
 * (which holds no session files, so reads from it fail). Never NULL, never to be freed;
 * the last two are a thread-local buffer, valid until the next call. */
const char *esc_session_dir(const char *explicit_dir);

/* The newest live session under the runtime root, into out (len bytes). Returns out,
 * or NULL when there is none. */
const char *esc_session_newest(char *out, size_t len);

/* True when a process recorded in dir/pids/NAME.pid (PID START_TICKS EXE) still runs:
 * the pid exists, is not a zombie, and started at START_TICKS. */
bool esc_session_is_live(const char *dir);

/* Reads the small file dir/name with trailing whitespace removed. Returns a malloc'd
 * string (caller frees), or NULL with errno set when the file can not be read or is
 * empty (errno ENODATA). */
char *esc_session_read(const char *dir, const char *name);

/* Reads the secret (token, daemon key, operator key) in dir/name the way every program
 * reads one (runtime/token_file.h): trimmed, non-empty, bounded, printable. Returns a
 * malloc'd string, or NULL with errno set and one line in err. */
char *esc_session_read_secret(const char *dir, const char *name, char *err, size_t errlen);

/* Writes "dir/name" into out; returns out, or NULL when it does not fit. */
char *esc_session_path(const char *dir, const char *name, char *out, size_t outlen);

#endif
