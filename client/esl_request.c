/* esl_request.c: the resource requests that ESL policies hand to tasks, and AND. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escher/esl.h"
#include "esl_internal.h"
#include "xalloc.h"

#define DELETE_APPLIED_MS 5000

void esl_request_add(esl_request *r, const char *name, int64_t qty)
{
    for (size_t i = 0; i < r->n; i++) {
        if (!strcmp(r->v[i].name, name)) {
            r->v[i].value += qty;
            return;
        }
    }
    esc_amount *v = esc_xrealloc(r->v, (r->n + 1) * sizeof *v);
    r->v = v;
    r->v[r->n++] = (esc_amount){.name = esc_xstrdup(name), .value = qty};
}

void esl_request_clear(esl_request *r)
{
    for (size_t i = 0; i < r->n; i++)
        free((char *)r->v[i].name);
    free(r->v);
    r->v = NULL;
    r->n = 0;
}

/* True when node n has every ephemeral name of r with total >= the quantity (or
 * unbounded); physical names are left to the scheduler. */
static bool node_holds(const esc_node_status *n, const esl_request *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (!strchr(r->v[i].name, '/'))
            continue;
        const esc_resource_info *ri = esc_node_resource(n, r->v[i].name);
        if (!ri || (!ri->unbounded && ri->total < r->v[i].value))
            return false;
    }
    return true;
}

/* True when some node has the name at all. */
static bool exists_somewhere(const esc_cluster_status *s, const char *name)
{
    for (size_t k = 0; k < s->nnodes; k++)
        if (!strcmp(s->nodes[k].state, "ALIVE") && esc_node_resource(&s->nodes[k], name))
            return true;
    return false;
}

/* The union restricted to names that exist somewhere now: those are the ones whose
 * places are known, so the ones that can conflict. */
static void existing_part(const esc_cluster_status *s, const esl_request *r, esl_request *out)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strchr(r->v[i].name, '/') || exists_somewhere(s, r->v[i].name))
            esl_request_add(out, r->v[i].name, r->v[i].value);
}

int esl_request_and(esc_client *c, const esl_request *a, const esl_request *b,
                    esl_request *out, esc_status *st)
{
    esl_request_clear(out);
    for (size_t i = 0; i < a->n; i++)
        esl_request_add(out, a->v[i].name, a->v[i].value);
    for (size_t i = 0; i < b->n; i++)
        esl_request_add(out, b->v[i].name, b->v[i].value);
    esc_cluster_status *s = NULL;
    int rc = esc_get_cluster_status(c, &s, st);
    if (rc != ESC_OK) {
        esl_request_clear(out);
        return rc;
    }
    esl_request known = {0};
    existing_part(s, out, &known);
    bool placeable = false;
    for (size_t k = 0; k < s->nnodes && !placeable; k++)
        placeable = !strcmp(s->nodes[k].state, "ALIVE") && node_holds(&s->nodes[k], &known);
    esc_cluster_status_free(s);
    if (!placeable && known.n) {
        char names[200] = "";
        size_t off = 0;
        for (size_t i = 0; i < known.n && off < sizeof names; i++) {
            int w = snprintf(names + off, sizeof names - off, "%s%s", i ? ", " : "",
                             known.v[i].name);
            off += w > 0 ? (size_t)w : 0;
        }
        esl_request_clear(&known);
        esl_request_clear(out);
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "conflicting composition: no node has all of %s", names);
    }
    esl_request_clear(&known);
    return esc_status_set(st, ESC_OK, NULL);
}

/* ------------------------------------------------------------------ shared by policies */

int64_t esl_room(const esc_node_status *n, const esl_request *shape)
{
    int64_t best = INT64_MAX;
    for (size_t i = 0; shape && i < shape->n; i++) {
        const esc_resource_info *r = esc_node_resource(n, shape->v[i].name);
        if (!r)
            return 0;
        if (r->unbounded || shape->v[i].value <= 0)
            continue;
        int64_t k = r->available > 0 ? r->available / shape->v[i].value : 0;
        best = k < best ? k : best;
    }
    return best;
}

bool esl_waiting(const esc_cluster_status *s, const char *full)
{
    for (size_t i = 0; i < s->nnodes; i++)
        for (size_t k = 0; k < s->nodes[i].ndemand; k++)
            for (size_t j = 0; j < s->nodes[i].demand[k].nshape; j++)
                if (!strcmp(s->nodes[i].demand[k].shape[j].name, full))
                    return true;
    return false;
}

bool esl_alive(const esc_node_status *n)
{
    return !strcmp(n->state, "ALIVE");
}

/* Adds a delete of every name to b on each node that is not dead and lists it (not
 * counting rows deleted while held, which the registry no longer has). Returns the
 * count of deletes added. */
static size_t add_present_deletes(esc_client *c, const esc_cluster_status *s,
                                  const char *const *names, size_t n, esc_batch *b)
{
    size_t added = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *node = &s->nodes[i];
        if (!strcmp(node->state, "DEAD"))
            continue;
        esc_target t = ESC_NODE(node->id);
        for (size_t k = 0; k < n; k++) {
            char full[300];
            snprintf(full, sizeof full, "%s/%s", esc_client_namespace(c), names[k]);
            const esc_resource_info *r = esc_node_resource(node, full);
            if (r && !r->deleted) {
                esc_batch_delete(b, names[k], &t);
                added++;
            }
        }
    }
    return added;
}

int esl_delete_present(esc_client *c, const char *const *names, size_t n)
{
    int rc = ESC_OK;
    /* NOT_FOUND or INVALID_ARGUMENT: a row or a node went between the look and the
     * commit; look again. */
    for (int tries = 0; tries < 3; tries++) {
        esc_cluster_status *s = NULL;
        rc = esc_get_cluster_resources(c, &s, NULL);
        if (rc != ESC_OK)
            return rc;
        esc_batch *b = esc_batch_new();
        size_t added = add_present_deletes(c, s, names, n, b);
        esc_cluster_status_free(s);
        uint64_t seq = 0;
        rc = added ? esc_batch_commit(c, b, &seq, NULL) : ESC_OK;
        esc_batch_free(b);
        /* Gone when this returns: every node admits against the delete, and the rows
         * it reports (status) no longer have the names. */
        if (rc == ESC_OK && added)
            return esc_wait_applied(c, seq, NULL, 0, DELETE_APPLIED_MS, NULL);
        if (rc != ESC_NOT_FOUND && rc != ESC_INVALID_ARGUMENT)
            return rc;
    }
    return rc;
}
