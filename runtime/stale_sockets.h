/* stale_sockets.h: worker sockets left behind by raylets that died.
 *
 * A raylet listens for its workers on ESC_SOCKET_DIR/raylet-<pid>.sock. One killed with
 * -9 can not remove its own, and the files pile up in a directory shared by every
 * raylet of the user on this machine. A later raylet (at start) and `escher stop` remove those they
 * can prove stale: the pid in the name no longer runs. A socket whose pid was reused
 * by another process is kept (it can not be told apart from a live raylet's without
 * connecting to it) until that process is gone too. */
#ifndef ESC_STALE_SOCKETS_H
#define ESC_STALE_SOCKETS_H

#include <stddef.h>

/* This user's socket directory, /tmp/escher-<uid>/sockets (user_dirs.h); a static
 * string. */
const char *esc_socket_dir(void);
#define ESC_SOCKET_DIR esc_socket_dir()

/* Removes each dir/raylet-<pid>.sock that is a socket, is owned by this user, and
 * whose pid runs no process. Anything else in dir is left alone. Returns how many were
 * removed (0 when dir can not be read). */
size_t esc_remove_stale_sockets(const char *dir);

#endif
