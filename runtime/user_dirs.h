/* user_dirs.h: the per-user directories of escher on this machine, so that two users
 * never share (or fight over) a session, a worker socket or a log.
 *
 *   runtime root  $XDG_RUNTIME_DIR/escher when XDG_RUNTIME_DIR is set and a writable
 *                 directory, else /tmp/escher-<uid>: where `escher start` makes its
 *                 session directories and where commands look for the newest live one;
 *   user tmp      /tmp/escher-<uid>: raylets' worker sockets (sockets/, short paths for
 *                 sun_path) and default log directories (logs/).
 *
 * Each is made 0700 and must be a directory (not a link) owned by the calling user:
 * a directory planted by someone else in /tmp is refused, never used. */
#ifndef ESC_USER_DIRS_H
#define ESC_USER_DIRS_H

#include <stdbool.h>
#include <stddef.h>

/* /tmp/escher-<uid>, into out. */
const char *esc_user_tmp_dir(char *out, size_t len);

/* The runtime root (see above), into out. Creates nothing. */
const char *esc_runtime_root(char *out, size_t len);

/* Makes path (mode 0700, the parent must exist) unless it exists, then checks that it
 * is a directory owned by this user that nobody else may write to. Returns 0, or -1
 * with a one-line reason in err. */
int esc_user_dir_make(const char *path, char *err, size_t errlen);

#endif
