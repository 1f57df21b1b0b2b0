/* cluster_view.h: what this raylet knows of the other nodes, from the GCS event stream.
 *
 * Every raylet receives every event; besides applying its own node's ops it keeps, per
 * node, the address, whether it is alive, its physical resources and the capacities of
 * its ephemeral resources. That is enough to decide where a task that cannot run here
 * could run at all (spillback on feasibility). Owned by the loop thread.
 */
#ifndef RAYLET_CLUSTER_VIEW_H
#define RAYLET_CLUSTER_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "accounting.h"
#include "gcs.pb-c.h"

typedef struct cluster_view cluster_view;

cluster_view *cluster_view_new(void);
void cluster_view_free(cluster_view *v);

/* Folds one event in (any kind; a snapshot replaces everything). */
void cluster_view_apply(cluster_view *v, const Escher__Event *ev);

/* The address of an alive node other than `self` whose capacities cover the request
 * (each name present with total >= qty, or unbounded), the first in node-id order; NULL
 * when none. *node_id (may be NULL) gets that node's id. Strings are owned by the view
 * and valid until the next event. */
const char *cluster_view_find_feasible(const cluster_view *v, const char *self,
                                       const esc_acct_req *req, size_t n, const char **node_id);

/* True when some alive node (self included) has the resource at all. */
bool cluster_view_has_name(const cluster_view *v, const char *name);

#endif
