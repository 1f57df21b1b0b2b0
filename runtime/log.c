/* log.c: one-line records on stderr (or another fd). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *g_process = "escher";
static int g_level = ESC_LOG_INFO;
static int g_fd = -1; /* -1: stderr */

static int level_from_env(int dflt)
{
    const char *v = getenv("ESCHER_LOG_LEVEL");
    if (!v)
        return dflt;
    if (!strcmp(v, "debug"))
        return ESC_LOG_DEBUG;
    if (!strcmp(v, "info"))
        return ESC_LOG_INFO;
    if (!strcmp(v, "warn"))
        return ESC_LOG_WARN;
    if (!strcmp(v, "error"))
        return ESC_LOG_ERROR;
    return dflt;
}

const char *esc_log_process(void)
{
    return g_process;
}

void esc_log_init(const char *process, int level)
{
    g_process = process;
    g_level = level_from_env(level);
}

void esc_log_set_fd(int fd)
{
    g_fd = fd;
}

void esc_log(int level, const char *fmt, ...)
{
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    if (level < g_level)
        return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    char line[1024];
    int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld %s[%d] %s ", tm.tm_hour,
                     tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000), g_process, (int)getpid(),
                     names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (g_fd >= 0)
        dprintf(g_fd, "%s\n", line);
    else
        fprintf(stderr, "%s\n", line);
}
