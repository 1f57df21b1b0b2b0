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

/* Deletes each of names (short names in the client's namespace) on every node that has
 * it, in one batch. A delete aimed at all nodes is refused when some node lacks the
 * name (docs/resources.md), as a node that joined after the resource was made
 * everywhere does. Looks again (3 tries) when a node or row went between the look and
 * the commit, and waits (up to 5 s) until every node applied the delete. Returns the
 * commit's code or the wait's, ESC_OK when nothing was left to delete. */
int esl_delete_present(esc_client *c, const char *const *names, size_t n);

#endif
