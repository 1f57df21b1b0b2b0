/* log.h: one-line log records on stderr: time, process, level, message. */
#ifndef ESC_LOG_H
#define ESC_LOG_H

enum { ESC_LOG_DEBUG, ESC_LOG_INFO, ESC_LOG_WARN, ESC_LOG_ERROR };

/* Sets the process name printed in each record and the lowest level printed
 * (ESCHER_LOG_LEVEL=debug|info|warn|error in the environment overrides). */
void esc_log_init(const char *process, int level);

/* Sends the records to fd instead of stderr (a worker, whose stderr captures its
 * tasks' output). fd stays the caller's. */
void esc_log_set_fd(int fd);

/* The process name given to esc_log_init ("escher" before it). */
const char *esc_log_process(void);

void esc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ESC_DEBUG(...) esc_log(ESC_LOG_DEBUG, __VA_ARGS__)
#define ESC_INFO(...) esc_log(ESC_LOG_INFO, __VA_ARGS__)
#define ESC_WARN(...) esc_log(ESC_LOG_WARN, __VA_ARGS__)
#define ESC_ERROR(...) esc_log(ESC_LOG_ERROR, __VA_ARGS__)

#endif
