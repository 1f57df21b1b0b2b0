/* esl_internal.h: what the ESL's policies share (not public). */
#ifndef ESL_INTERNAL_H
#define ESL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "escher/esl.h"

/* How many tasks requesting `shape` fit the node's available resources now: INT64_MAX
 * when shape is empty or everything it names is unbounded, 0 when a name is missing. */
int64_t esl_room(const esc_node_status *n, const esl_request *shape);

/* True when tasks that request `full` (a full resource name) wait on some node. */
bool esl_waiting(const esc_cluster_status *s, const char *full);

/* True when the node is alive. */
bool esl_alive(const esc_node_status *n);

#endif
