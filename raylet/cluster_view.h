/* cluster_view.h: what this raylet knows of the other nodes, from the GCS event stream.
 *
 * Every raylet receives every event; besides applying its own node's ops it keeps, per
 * node, the address, whether it is alive, its physical resources and the capacities of
 * its ephemeral resources. That is enough to decide where a task that cannot run here
 * could run at all (spillback on feasibility).
 *
 * It also keeps each node's advertised availability (EV_NODE_LOAD: total - held of every
 * row its raylet reported, unbounded stays unbounded, deleted rows have none), so a task
 * that is feasible here but busy can go where it fits now. Advertisements lag (one
 * report plus the GCS's 50 ms coalescing), so when this raylet sends a task somewhere it
 * debits its copy of that node's availability until the node's next advertisement (or
 * for at most 1 s): a burst of tasks spreads over the idle nodes instead of all going
 * to the one that looked idlest. Owned by the loop thread.
 */
#ifndef RAYLET_CLUSTER_VIEW_H
#define RAYLET_CLUSTER_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "accounting.h"
#include "gcs.pb-c.h"
#include "strmap.h"

typedef struct cluster_view cluster_view;

cluster_view *cluster_view_new(void);
void cluster_view_free(cluster_view *v);

/* Folds one event in (any kind; a snapshot replaces everything). */
void cluster_view_apply(cluster_view *v, const Escher__Event *ev);

/* The nodes that snapshot `snap` lists as dead and this view still holds alive: deaths
 * whose own event (EV_NODE_DEAD) this raylet never received, because the GCS stored the
 * death and stopped before sending it. Call before applying snap. Returns a new array of
 * *n pointers into snap (free the array, not the nodes). */
const Escher__NodeInfo **cluster_view_missed_deaths(const cluster_view *v,
                                                    const Escher__Event *snap, size_t *n);

/* The address of an alive node other than `self` whose capacities cover the request
 * (each name present with total >= qty, or unbounded), the first in node-id order; NULL
 * when none. *node_id (may be NULL) gets that node's id. Strings are owned by the view
 * and valid until the next event. */
const char *cluster_view_find_feasible(const cluster_view *v, const char *self,
                                       const accounting_req *req, size_t n, const char **node_id);

/* The address of an alive node other than `self` and `exclude_node` (either may be
 * NULL) whose advertised availability, less this raylet's debits, covers the request;
 * NULL when none. Among several, the one with the most headroom (how many times the
 * request fits, over the requested names; unbounded names do not limit it), ties broken
 * at random so raylets with the same view do not all pick the same node. *node_id (may
 * be NULL) gets its id. Strings are owned by the view and valid until the next event. */
const char *cluster_view_find_available(cluster_view *v, const char *self,
                                        const accounting_req *req, size_t n,
                                        const char *exclude_node, const char **node_id);

/* This raylet sent a task holding req to node_id: count it against that node's
 * availability until the node advertises again. */
void cluster_view_debit(cluster_view *v, const char *node_id, const accounting_req *req, size_t n);

/* Nodes whose raylet address is a key of suspects (may be NULL; the map is owned by the
 * caller, peers.h, and read at each search) are skipped by both searches above: this
 * raylet could not reach them lately. */
void cluster_view_set_suspects(cluster_view *v, const esc_strmap *suspects);

/* This raylet learned that node_id's raylet is gone (another node answered at its
 * address): it is skipped from now on, as if dead, until an event says otherwise. */
void cluster_view_node_gone(cluster_view *v, const char *node_id);

/* The id of the node whose raylet listens at address; NULL when none is known. */
const char *cluster_view_node_at(const cluster_view *v, const char *address);

/* True when some alive node (self included) has the resource at all. */
bool cluster_view_has_name(const cluster_view *v, const char *name);

#endif
