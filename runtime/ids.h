/* ids.h: random identifiers and the cluster token. */
#ifndef ESC_IDS_H
#define ESC_IDS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define ESC_ID_HEX 16     /* node and job ids: 8 random bytes as hex */
#define ESC_TOKEN_HEX 64  /* cluster token: 32 random bytes as hex */

/* Writes nbytes random bytes from the kernel as 2*nbytes hex chars plus NUL into out.
 * Returns 0, or -1 when the kernel gives no randomness. */
int esc_random_hex(char *out, size_t nbytes);

/* The id of return value i of a task: the task id followed by i as 4 hex digits, so a
 * submitter knows its return references before the task runs. out: ESC_OBJECT_ID_MAX. */
#define ESC_OBJECT_ID_MAX 80
void esc_return_id(const char *task_id, unsigned i, char *out, size_t len);

/* Monotonic and wall clocks in milliseconds. */
uint64_t esc_now_ms(void);

/* The time ms milliseconds from now on `clock` (CLOCK_REALTIME for a default condition
 * variable, CLOCK_MONOTONIC for one set up with it): an absolute timed-wait deadline. */
struct timespec esc_time_after_ms(clockid_t clock, uint64_t ms);
uint64_t esc_wall_ms(void);
double esc_now_s(void);

#endif
