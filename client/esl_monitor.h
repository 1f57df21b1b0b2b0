/* esl_monitor.h: a thread that runs one step of a policy every period (ESL internal):
 * the policies that adapt capacities to demand (bin-packing, dynamic load balancing). */
#ifndef ESL_MONITOR_H
#define ESL_MONITOR_H

typedef struct esl_monitor esl_monitor;

/* Starts calling step(ud) every period_ms (the first call at once) on a new thread.
 * Returns NULL when the thread cannot start. */
esl_monitor *esl_monitor_start(void (*step)(void *ud), void *ud, int period_ms);

/* Stops it: a step in progress finishes, none starts after this returns. NULL: no-op. */
void esl_monitor_stop(esl_monitor *m);

#endif
