/* esl_dynamic.c: dynamic load balancing by per-node deltas (esl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escher/esl.h"
#include "esl_internal.h"
#include "esl_monitor.h"
#include "xalloc.h"


struct esl_dynamic {
    esc_client *c;
    char *name;
    char full[300];             /* <namespace>/<name> */
    esl_request shape;
    esl_request request;
    esl_monitor *monitor;
};

/* The delta for one node (see esl.h). */
static int64_t delta_for(const esl_dynamic *d, const esc_node_status *n, bool demand)
{
    const esc_resource_info *mine = esc_node_resource(n, d->full);
    if (!mine)
        return ESC_QTY(1); /* joined */
    int64_t r = esl_room(n, &d->shape);
    if (demand && mine->available <= 0 && r >= 1)
        return ESC_QTY(1);
    if (r < 1 && mine->available >= ESC_QTY(1))
        return -ESC_QTY(1);
    return 0;
}

static void step(void *ud)
{
    esl_dynamic *d = ud;
    esc_cluster_status *s = NULL;
    if (esc_get_cluster_status(d->c, &s, NULL) != ESC_OK)
        return;
    bool demand = esl_waiting(s, d->full);
    esc_batch *b = esc_batch_new();
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *n = &s->nodes[i];
        if (!esl_alive(n))
            continue;
        int64_t delta = delta_for(d, n, demand);
        if (delta) {
            esc_target t = ESC_NODE(n->id);
            esc_batch_add(b, d->name, delta, &t);
        }
    }
    uint64_t seq = 0;
    /* One batch, then wait until applied: the next look sees its effect, not a stale
     * report that would ask for the same change twice. */
    if (esc_batch_size(b) && esc_batch_commit(d->c, b, &seq, NULL) == ESC_OK)
        esc_wait_applied(d->c, seq, NULL, 0, 5000, NULL);
    esc_batch_free(b);
    esc_cluster_status_free(s);
}

int esl_dynamic_new(esc_client *c, const char *name, const esl_request *shape,
                    esl_dynamic **out, esc_status *st)
{
    *out = NULL;
    esc_target all = ESC_ALL_NODES;
    uint64_t seq = 0;
    int rc = esc_resource_set(c, name, ESC_QTY(1), &all, &seq, st);
    if (rc != ESC_OK)
        return rc;
    esc_wait_applied(c, seq, NULL, 0, 5000, NULL);
    esl_dynamic *d = esc_xcalloc(1, sizeof *d);
    d->c = c;
    d->name = esc_xstrdup(name);
    snprintf(d->full, sizeof d->full, "%s/%s", esc_client_namespace(c), name);
    for (size_t i = 0; shape && i < shape->n; i++)
        esl_request_add(&d->shape, shape->v[i].name, shape->v[i].value);
    esl_request_add(&d->request, d->full, ESC_QTY(1));
    if ((rc = esl_monitor_start(c, d->full, false, step, d, &d->monitor, st)) != ESC_OK) {
        esl_dynamic_free(d);
        return rc;
    }
    *out = d;
    return ESC_OK;
}

const esl_request *esl_dynamic_request(const esl_dynamic *d)
{
    return &d->request;
}

void esl_dynamic_free(esl_dynamic *d)
{
    if (!d)
        return;
    esl_monitor_stop(d->monitor);
    const char *names[] = {d->name};
    esl_delete_present(d->c, names, 1);
    esl_request_clear(&d->shape);
    esl_request_clear(&d->request);
    free(d->name);
    free(d);
}
