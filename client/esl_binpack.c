/* esl_binpack.c: bin-packing by growing the set of nodes that carry a resource (esl.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escher/esl.h"
#include "esl_internal.h"
#include "esl_monitor.h"
#include "xalloc.h"

#define APPLY_WAIT_MS 5000

struct esl_binpack {
    esc_client *c;
    char *name;
    char full[300];              /* <namespace>/<name>, as demand shapes name it */
    esl_request shape;
    esl_request request;
    pthread_mutex_t mu;
    char **active;
    size_t nactive;
    esl_monitor *monitor;
};

static bool is_active(esl_binpack *b, const char *id)
{
    for (size_t i = 0; i < b->nactive; i++)
        if (!strcmp(b->active[i], id))
            return true;
    return false;
}

/* Adds node_id to the active set (the resource goes there). */
static int activate(esl_binpack *b, const char *node_id, esc_status *st)
{
    esc_target t = ESC_NODE(node_id);
    uint64_t seq = 0;
    int rc = esc_resource_set_unbounded(b->c, b->name, &t, &seq, st);
    if (rc != ESC_OK)
        return rc;
    const char *ids[1] = {node_id};
    esc_wait_applied(b->c, seq, ids, 1, APPLY_WAIT_MS, NULL);
    pthread_mutex_lock(&b->mu);
    b->active = esc_xrealloc(b->active, (b->nactive + 1) * sizeof *b->active);
    b->active[b->nactive++] = esc_xstrdup(node_id);
    pthread_mutex_unlock(&b->mu);
    return ESC_OK;
}

/* One look: grow when tasks wait and no active node has room for one more. */
static void step(void *ud)
{
    esl_binpack *b = ud;
    esc_cluster_status *s = NULL;
    if (esc_get_cluster_status(b->c, &s, NULL) != ESC_OK)
        return;
    bool full = true;
    const esc_node_status *next = NULL;
    int64_t next_room = 0;
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *n = &s->nodes[i];
        if (!esl_alive(n))
            continue;
        int64_t r = esl_room(n, &b->shape);
        if (is_active(b, n->id))
            full &= r < 1;
        else if (r > next_room) {
            next = n;
            next_room = r;
        }
    }
    pthread_mutex_unlock(&b->mu);
    if (full && next && esl_waiting(s, b->full))
        activate(b, next->id, NULL);
    esc_cluster_status_free(s);
}

/* The first node: the local one when it has room for a task, else the first that has. */
static int first_node(esc_client *c, const esl_request *shape, char *out, size_t len,
                      esc_status *st)
{
    esc_cluster_status *s = NULL;
    int rc = esc_get_cluster_status(c, &s, st);
    if (rc != ESC_OK)
        return rc;
    const esc_node_status *pick = NULL;
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *n = &s->nodes[i];
        if (!esl_alive(n) || esl_room(n, shape) < 1)
            continue;
        if (!pick || !strcmp(n->id, esc_client_node_id(c)))
            pick = n;
    }
    if (pick)
        snprintf(out, len, "%s", pick->id);
    esc_cluster_status_free(s);
    return pick ? ESC_OK
                : esc_status_set(st, ESC_RESOURCE_EXHAUSTED, "no alive node has room for a task");
}

int esl_binpack_new(esc_client *c, const char *name, const esl_request *shape,
                    esl_binpack **out, esc_status *st)
{
    *out = NULL;
    char first[128];
    int rc = first_node(c, shape, first, sizeof first, st);
    if (rc != ESC_OK)
        return rc;
    esl_binpack *b = esc_xcalloc(1, sizeof *b);
    b->c = c;
    b->name = esc_xstrdup(name);
    snprintf(b->full, sizeof b->full, "%s/%s", esc_client_namespace(c), name);
    for (size_t i = 0; i < shape->n; i++)
        esl_request_add(&b->shape, shape->v[i].name, shape->v[i].value);
    esl_request_add(&b->request, b->full, ESC_QTY(1));
    pthread_mutex_init(&b->mu, NULL);
    if ((rc = activate(b, first, st)) != ESC_OK) {
        esl_binpack_free(b);
        return rc;
    }
    if ((rc = esl_monitor_start(c, b->full, false, step, b, &b->monitor, st)) != ESC_OK) {
        esl_binpack_free(b);
        return rc;
    }
    *out = b;
    return ESC_OK;
}

const esl_request *esl_binpack_request(const esl_binpack *b)
{
    return &b->request;
}

size_t esl_binpack_active(esl_binpack *b)
{
    pthread_mutex_lock(&b->mu);
    size_t n = b->nactive;
    pthread_mutex_unlock(&b->mu);
    return n;
}

void esl_binpack_free(esl_binpack *b)
{
    if (!b)
        return;
    esl_monitor_stop(b->monitor);
    esc_batch *batch = esc_batch_new();
    for (size_t i = 0; i < b->nactive; i++) {
        esc_target t = ESC_NODE(b->active[i]);
        esc_batch_delete(batch, b->name, &t);
        free(b->active[i]);
    }
    if (b->nactive)
        esc_batch_commit(b->c, batch, NULL, NULL);
    esc_batch_free(batch);
    free(b->active);
    esl_request_clear(&b->shape);
    esl_request_clear(&b->request);
    pthread_mutex_destroy(&b->mu);
    free(b->name);
    free(b);
}
