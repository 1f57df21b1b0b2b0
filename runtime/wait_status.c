/* wait_status.c: process exit statuses in words. */
#include "wait_status.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

char *esc_signal_desc(int sig, char *buf, size_t len)
{
    const char *abbrev = sigabbrev_np(sig); /* "SEGV"; NULL when unknown */
    snprintf(buf, len, "signal %d (SIG%s)", sig, abbrev ? abbrev : "?");
    return buf;
}

char *esc_wait_status_desc(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        return esc_signal_desc(WTERMSIG(status), buf, len);
    if (WIFEXITED(status))
        snprintf(buf, len, "exit code %d", WEXITSTATUS(status));
    else
        snprintf(buf, len, "status 0x%x", (unsigned)status);
    return buf;
}
