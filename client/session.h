/* session.h: the session directory (docs/processes.md), shared by the SDK and the CLI.
 *
 * Internal to client/: not part of the public escher.h API. */
#ifndef ESC_SESSION_H
#define ESC_SESSION_H

#include <stddef.h>

#define ESC_SESSION_ROOT "/tmp/escher"
#define ESC_SESSION_LATEST ESC_SESSION_ROOT "/session_latest"

/* The session directory to use: explicit_dir when not NULL, else $ESCHER_SESSION_DIR,
 * else ESC_SESSION_LATEST. The result is explicit_dir, the environment's string or a
 * static string: never NULL, never to be freed. */
const char *esc_session_dir(const char *explicit_dir);

/* Reads the small file dir/name with trailing whitespace removed. Returns a malloc'd
 * string (caller frees), or NULL with errno set when the file can not be read or is
 * empty (errno ENODATA). */
char *esc_session_read(const char *dir, const char *name);

/* Writes "dir/name" into out; returns out, or NULL when it does not fit. */
char *esc_session_path(const char *dir, const char *name, char *out, size_t outlen);

#endif
