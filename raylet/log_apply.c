/* log_apply.c: applies the GCS event stream to the local accounting (loop thread).
 *
 *  - Any event may carry ops (EV_RESOURCES, EV_NODE_DEAD, EV_JOB_FINISHED): those aimed
 *    at this node are applied with accounting_apply in one pass, in order.
 *  - EV_SNAPSHOT replaces this node's ephemeral resources by the registry rows for it
 *    and sets the applied seq to the snapshot's, even when that is lower (a GCS that
 *    restarted with memory storage counts from the start again).
 *  - Other events at or below the applied seq were applied already (a resubscription
 *    may repeat the tail) and are skipped.
 *  - EV_JOB_FINISHED then releases the job's leases and frees its objects.
 *  - EV_SNAPSHOT also makes the node announce all its objects again: a snapshot follows
 *    a GCS restart, and the object directory is not persisted.
 *  - EV_NODE_DEAD of another node stops calls to it and places again the tasks forwarded
 *    there. So does a snapshot listing as dead a node this raylet still held alive: a
 *    GCS that stored a death and stopped before sending its event announces it only so.
 *  - EV_SNAPSHOT, EV_JOB_UPDATED and EV_JOB_FINISHED change the mirror of the running
 *    jobs (job_mirror.h); submissions held for their job's event are judged again after
 *    every applied event (task_submit.c).
 *  - EV_NODE_LOAD (other nodes' availability) is not a log entry: it carries the last
 *    committed seq, changes only the cluster view and never the applied seq, and is
 *    applied whatever its seq (availability that just freed elsewhere may let queued
 *    tasks spill).
 * After each event the queue and the report thread are told (raylet_changed). Freeing
 * a big event costs as much as applying it, so that waits until the ack is on its way
 * (raylet_flush). */
#include "log_apply.h"
#include "results.h"
#include "job_mirror.h"
#include "packages.h"
#include "raylet.h"
#include "lease_service.h"
#include "object_service.h"
#include "cluster_view.h"
#include "peers.h"
#include "task_manager.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"

static void apply_snapshot(raylet *r, const Escher__Event *ev)
{
    size_t n = 0;
    for (size_t i = 0; i < ev->n_registry; i++)
        if (!strcmp(ev->registry[i]->node_id, r->node_id))
            n++;
    const char **names = esc_xmalloc((n ? n : 1) * sizeof *names);
    int64_t *totals = esc_xmalloc((n ? n : 1) * sizeof *totals);
    bool *unb = esc_xmalloc((n ? n : 1) * sizeof *unb);
    accounting_backing *backing = esc_xmalloc((n ? n : 1) * sizeof *backing);
    size_t k = 0;
    for (size_t i = 0; i < ev->n_registry; i++) {
        const Escher__RegistryEntry *e = ev->registry[i];
        if (strcmp(e->node_id, r->node_id) != 0)
            continue;
        names[k] = e->name;
        totals[k] = e->total;
        unb[k] = e->unbounded;
        backing[k] = (accounting_backing){e->backing, e->n_backing};
        k++;
    }
    accounting_reset_ephemeral_backed(r->acct, names, totals, unb, backing, k);
    free(backing);
    free(names);
    free(totals);
    free(unb);
    if (ev->seq < r->applied_seq)
        ESC_INFO("snapshot at seq %" PRIu64 " replaces state at seq %" PRIu64
                 " (GCS restarted); %zu ephemeral resources",
                 ev->seq, r->applied_seq, k);
    else
        ESC_DEBUG("snapshot at seq %" PRIu64 ": %zu ephemeral resources", ev->seq, k);
    r->applied_seq = ev->seq;
}

/* Another node was declared dead: calls to it stop, notices kept for it go, and the
 * tasks forwarded there run again (or are found to have ended). */
static void node_died(raylet *r, const Escher__NodeInfo *node)
{
    if (!strcmp(node->node_id, r->node_id))
        return;
    ESC_INFO("node %s (%s) is dead", node->node_id, node->address);
    peers_node_dead(r->peers, node->address);
    results_peer_dead(r->results, node->address);
    task_manager_node_dead(r->tasks, node->node_id);
}

static void apply_ops(raylet *r, const Escher__Event *ev)
{
    size_t refused = 0;
    for (size_t i = 0; i < ev->n_ops; i++) {
        const Escher__LogOp *op = ev->ops[i];
        if (strcmp(op->node_id, r->node_id) != 0)
            continue;
        if (accounting_apply(r->acct, op) != 0)
            refused++;
    }
    if (refused)
        ESC_WARN("seq %" PRIu64 ": ignored %zu ops on physical or malformed names", ev->seq,
                 refused);
}

static void keep_spent(raylet *r, Escher__Event *ev)
{
    if (r->nspent == r->spent_cap) {
        r->spent_cap = r->spent_cap ? r->spent_cap * 2 : 16;
        r->spent = esc_xrealloc(r->spent, r->spent_cap * sizeof *r->spent);
    }
    r->spent[r->nspent++] = ev;
}

void log_apply_free_spent(raylet *r)
{
    for (size_t i = 0; i < r->nspent; i++)
        protobuf_c_message_free_unpacked(&r->spent[i]->base, NULL);
    r->nspent = 0;
}

void log_apply_event(raylet *r, Escher__Event *ev)
{
    if (ev->kind == ESCHER__EVENT_KIND__EV_CLUSTER_STOPPING) {
        raylet_cluster_stopping(r, ev->stop_all);
        keep_spent(r, ev);
        return;
    }
    /* Nothing follows EV_CLUSTER_STOPPING on its stream: any event after it comes
     * from a GCS that is back. */
    raylet_cluster_back(r);
    if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_LOAD) {
        cluster_view_apply(r->view, ev);
    } else if (ev->kind == ESCHER__EVENT_KIND__EV_SNAPSHOT) {
        size_t ndead;
        const Escher__NodeInfo **dead = cluster_view_missed_deaths(r->view, ev, &ndead);
        apply_snapshot(r, ev);
        job_mirror_apply(r->jobs, ev);
        cluster_view_apply(r->view, ev);
        object_service_reannounce(r->objects);
        for (size_t i = 0; i < ndead; i++)
            node_died(r, dead[i]);
        free(dead);
    } else if (ev->seq <= r->applied_seq) {
        ESC_DEBUG("skipping event seq %" PRIu64 " (applied %" PRIu64 ")", ev->seq,
                  r->applied_seq);
        keep_spent(r, ev);
        return;
    } else {
        apply_ops(r, ev);
        job_mirror_apply(r->jobs, ev);
        cluster_view_apply(r->view, ev);
        if (ev->kind == ESCHER__EVENT_KIND__EV_JOB_FINISHED) {
            lease_service_job_finished(r->leases, ev->job_id);
            task_manager_job_finished(r->tasks, ev->job_id);
            packages_job_ended(r->packages, ev->job_id); /* its workers are gone */
            object_service_job_finished(r->objects, ev->job_id);
        }
        else if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_DEAD && ev->node &&
                 !strcmp(ev->node->node_id, r->node_id))
            ESC_WARN("the GCS declared this node dead at seq %" PRIu64, ev->seq);
        else if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_DEAD && ev->node)
            node_died(r, ev->node);
        r->applied_seq = ev->seq;
    }
    if (ev->kind != ESCHER__EVENT_KIND__EV_NODE_LOAD)
        task_manager_log_applied(r->tasks);
    keep_spent(r, ev);
    raylet_changed(r, true);
}
