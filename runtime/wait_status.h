/* wait_status.h: process exit statuses in words, for task and worker error messages. */
#ifndef ESC_WAIT_STATUS_H
#define ESC_WAIT_STATUS_H

#include <stddef.h>

/* Writes "signal 11 (SIGSEGV)" for sig into buf (truncated to len, NUL-terminated) and
 * returns buf. Unknown numbers read "signal 99 (SIG?)". */
char *esc_signal_desc(int sig, char *buf, size_t len);

/* Writes a waitpid() status as "exit code 2" or "signal 9 (SIGKILL)" and returns buf. */
char *esc_wait_status_desc(int status, char *buf, size_t len);

#endif
