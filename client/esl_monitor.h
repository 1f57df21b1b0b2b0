/* esl_monitor.h: a thread that runs one step of a policy whenever something it depends
 * on may have changed (ESL internal): the policies that adapt capacities to demand
 * (bin-packing, dynamic load balancing, fair sharing). No period: a step runs at start,
 * after every event of a watch on the policy's resources and the nodes' availability and
 * demand (changes.h), and (follow_owner) after each end of the client's tasks. */
#ifndef ESL_MONITOR_H
#define ESL_MONITOR_H

#include "escher/escher.h"

typedef struct esl_monitor esl_monitor;

/* Starts calling step(ud) on a new thread: at once, then after each event that came
 * since the previous step began (events during a step are folded into one more step).
 * prefix ("ns/name") names the resources the policy writes; node events and every
 * node's availability and demand count too, and with follow_owner the client's owner
 * stream (one of the tasks the policy submitted ended). Returns ESC_OK; the codes of
 * esc_changes_start; INTERNAL when the thread cannot start. */
int esl_monitor_start(esc_client *c, const char *prefix, bool follow_owner,
                      void (*step)(void *ud), void *ud, esl_monitor **out, esc_status *st);

/* Stops it: a step in progress finishes, none starts after this returns. NULL: no-op. */
void esl_monitor_stop(esl_monitor *m);

#endif
