/* esl_share.c: hierarchical max-min fair sharing of whole nodes (esl.h). The monitor
 * thread is the only writer of grants; submitters only count tasks in. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "escher/esl.h"
#include "esl_internal.h"
#include "esl_monitor.h"
#include "xalloc.h"

#define APPLY_WAIT_MS 5000

typedef struct {
    esc_ref **out;              /* its tasks not ended yet (first return of each) */
    size_t n, cap;
} user_tasks;

struct esl_share {
    esc_client *c;
    char *name;
    size_t nu;
    double *w;
    unsigned slots;
    esl_share *parent;          /* NULL for a root share */
    size_t parent_user;
    pthread_mutex_t mu;         /* guards nodes/owner and tasks */
    char **nodes;               /* the nodes shared */
    int *owner;                 /* per node: the user granted it, -1: none */
    size_t nnodes;
    user_tasks *tasks;
    esl_monitor *monitor;
};

static void user_res(const esl_share *s, size_t u, char *out, size_t len)
{
    snprintf(out, len, "%s_%zu", s->name, u);
}

/* ------------------------------------------------------------------ allocation */

/* Max-min fair whole-node grants by weight, each user capped by what it wants. */
static void fair_grants(const double *w, const size_t *want, size_t nu, size_t n,
                        size_t *grant)
{
    memset(grant, 0, nu * sizeof *grant);
    size_t left = n;
    while (left > 0) {
        /* The unsatisfied user furthest below its weighted share gets the next node. */
        ssize_t best = -1;
        double best_ratio = 0;
        for (size_t u = 0; u < nu; u++) {
            if (grant[u] >= want[u] || w[u] <= 0)
                continue;
            double ratio = (double)grant[u] / w[u];
            if (best < 0 || ratio < best_ratio) {
                best = (ssize_t)u;
                best_ratio = ratio;
            }
        }
        if (best < 0)
            break; /* nobody wants more: the rest stays free */
        grant[best]++;
        left--;
    }
}

/* ------------------------------------------------------------------ the thread */

/* Forgets the tasks that ended (a look, no waiting). Called unlocked. */
static void reap(esl_share *s, size_t *outstanding)
{
    for (size_t u = 0; u < s->nu; u++) {
        pthread_mutex_lock(&s->mu);
        size_t n = s->tasks[u].n;
        esc_ref **copy = esc_xcalloc(n + 1, sizeof *copy);
        if (n)
            memcpy(copy, s->tasks[u].out, n * sizeof *copy);
        pthread_mutex_unlock(&s->mu);
        bool *ready = esc_xcalloc(n + 1, sizeof *ready);
        size_t nready = 0;
        if (n)
            esc_wait(s->c, (const esc_ref *const *)copy, n, n, 0, ready, &nready, NULL);
        pthread_mutex_lock(&s->mu);
        user_tasks *t = &s->tasks[u];
        size_t kept = 0;
        for (size_t i = 0; i < t->n; i++) {
            if (i < n && ready[i])
                esc_ref_free(t->out[i]);
            else
                t->out[kept++] = t->out[i];
        }
        t->n = kept;
        outstanding[u] = kept;
        pthread_mutex_unlock(&s->mu);
        free(copy);
        free(ready);
    }
}

/* A child follows its parent's grant: nodes that left it are dropped (their grants
 * deleted into b), new ones join unowned. Called locked. */
static void follow_parent(esl_share *s, esc_batch *b)
{
    char **ids = NULL;
    size_t n = esl_share_nodes(s->parent, s->parent_user, &ids);
    size_t kept = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        bool still = false;
        for (size_t k = 0; k < n && !still; k++)
            still = !strcmp(ids[k], s->nodes[i]);
        if (still) {
            s->nodes[kept] = s->nodes[i];
            s->owner[kept++] = s->owner[i];
            continue;
        }
        if (s->owner[i] >= 0) {
            char res[200];
            user_res(s, (size_t)s->owner[i], res, sizeof res);
            esc_target t = ESC_NODE(s->nodes[i]);
            esc_batch_delete(b, res, &t);
        }
        free(s->nodes[i]);
    }
    s->nnodes = kept;
    for (size_t k = 0; k < n; k++) {
        bool known = false;
        for (size_t i = 0; i < s->nnodes && !known; i++)
            known = !strcmp(ids[k], s->nodes[i]);
        if (!known) {
            s->nodes = esc_xrealloc(s->nodes, (s->nnodes + 1) * sizeof *s->nodes);
            s->owner = esc_xrealloc(s->owner, (s->nnodes + 1) * sizeof *s->owner);
            s->nodes[s->nnodes] = esc_xstrdup(ids[k]);
            s->owner[s->nnodes++] = -1;
        }
        free(ids[k]);
    }
    free(ids);
}

/* Moves node i to user u (or to nobody when u < 0), into b. Called locked. */
static void move_node(esl_share *s, size_t i, int u, esc_batch *b)
{
    esc_target t = ESC_NODE(s->nodes[i]);
    char res[200];
    if (s->owner[i] >= 0) {
        user_res(s, (size_t)s->owner[i], res, sizeof res);
        esc_batch_delete(b, res, &t);
    }
    if (u >= 0) {
        user_res(s, (size_t)u, res, sizeof res);
        esc_batch_set(b, res, ESC_QTY(1) * s->slots, &t);
    }
    s->owner[i] = u;
}

/* Makes the grants match: over-granted users give nodes back first, then the
 * under-granted take free ones. Grants that need not move stay. Called locked. */
static void regrant(esl_share *s, const size_t *grant, esc_batch *b)
{
    size_t *have = esc_xcalloc(s->nu, sizeof *have);
    for (size_t i = 0; i < s->nnodes; i++)
        if (s->owner[i] >= 0)
            have[s->owner[i]]++;
    for (size_t i = 0; i < s->nnodes; i++) {
        int u = s->owner[i];
        if (u >= 0 && have[u] > grant[u]) {
            have[u]--;
            move_node(s, i, -1, b);
        }
    }
    for (size_t i = 0; i < s->nnodes; i++) {
        if (s->owner[i] >= 0)
            continue;
        for (size_t u = 0; u < s->nu; u++) {
            if (have[u] < grant[u]) {
                have[u]++;
                move_node(s, i, (int)u, b);
                break;
            }
        }
    }
    free(have);
}

static void step(void *ud)
{
    esl_share *s = ud;
    size_t *outstanding = esc_xcalloc(s->nu, sizeof *outstanding);
    size_t *want = esc_xcalloc(s->nu, sizeof *want), *grant = esc_xcalloc(s->nu, sizeof *grant);
    reap(s, outstanding);
    esc_batch *b = esc_batch_new();
    pthread_mutex_lock(&s->mu);
    if (s->parent)
        follow_parent(s, b);
    for (size_t u = 0; u < s->nu; u++)
        want[u] = (outstanding[u] + s->slots - 1) / s->slots;
    fair_grants(s->w, want, s->nu, s->nnodes, grant);
    regrant(s, grant, b);
    pthread_mutex_unlock(&s->mu);
    uint64_t seq = 0;
    if (esc_batch_size(b) && esc_batch_commit(s->c, b, &seq, NULL) == ESC_OK)
        esc_wait_applied(s->c, seq, NULL, 0, APPLY_WAIT_MS, NULL);
    esc_batch_free(b);
    free(outstanding);
    free(want);
    free(grant);
}

/* ------------------------------------------------------------------ api */

static esl_share *share_alloc(esc_client *c, const char *name, const double *weights,
                              size_t nusers, unsigned slots)
{
    esl_share *s = esc_xcalloc(1, sizeof *s);
    s->c = c;
    s->name = esc_xstrdup(name);
    s->nu = nusers;
    s->w = esc_xmalloc(nusers * sizeof *s->w);
    memcpy(s->w, weights, nusers * sizeof *weights);
    s->slots = slots;
    s->tasks = esc_xcalloc(nusers, sizeof *s->tasks);
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

static int check(const double *weights, size_t nusers, unsigned slots, esc_status *st)
{
    if (nusers == 0 || slots == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a share needs users and slots");
    for (size_t u = 0; u < nusers; u++)
        if (!(weights[u] > 0) || !isfinite(weights[u]))
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "weight %zu must be positive", u);
    return ESC_OK;
}

static int start(esl_share *s, esl_share **out, esc_status *st)
{
    /* Its whole namespace: a child share follows its parent's grants too. */
    char ns[160];
    snprintf(ns, sizeof ns, "%s/", esc_client_namespace(s->c));
    int rc = esl_monitor_start(s->c, ns, true, step, s, &s->monitor, st);
    if (rc != ESC_OK) {
        esl_share_free(s);
        return rc;
    }
    *out = s;
    return esc_status_set(st, ESC_OK, NULL);
}

int esl_share_new(esc_client *c, const char *name, const char *const *nodes, size_t nnodes,
                  const double *weights, size_t nusers, unsigned slots, esl_share **out,
                  esc_status *st)
{
    *out = NULL;
    int rc = check(weights, nusers, slots, st);
    if (rc != ESC_OK)
        return rc;
    esl_share *s = share_alloc(c, name, weights, nusers, slots);
    if (nodes) {
        for (size_t i = 0; i < nnodes; i++) {
            s->nodes = esc_xrealloc(s->nodes, (s->nnodes + 1) * sizeof *s->nodes);
            s->nodes[s->nnodes++] = esc_xstrdup(nodes[i]);
        }
    } else {
        esc_cluster_status *cs = NULL;
        if ((rc = esc_get_cluster_status(c, &cs, st)) != ESC_OK) {
            esl_share_free(s);
            return rc;
        }
        for (size_t i = 0; i < cs->nnodes; i++) {
            if (!esl_alive(&cs->nodes[i]))
                continue;
            s->nodes = esc_xrealloc(s->nodes, (s->nnodes + 1) * sizeof *s->nodes);
            s->nodes[s->nnodes++] = esc_xstrdup(cs->nodes[i].id);
        }
        esc_cluster_status_free(cs);
    }
    s->owner = esc_xmalloc((s->nnodes + 1) * sizeof *s->owner);
    for (size_t i = 0; i < s->nnodes; i++)
        s->owner[i] = -1;
    return start(s, out, st);
}

int esl_share_child(esl_share *parent, size_t user, const char *name, const double *weights,
                    size_t nusers, unsigned slots, esl_share **out, esc_status *st)
{
    *out = NULL;
    if (user >= parent->nu)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "the parent has no user %zu", user);
    int rc = check(weights, nusers, slots, st);
    if (rc != ESC_OK)
        return rc;
    esl_share *s = share_alloc(parent->c, name, weights, nusers, slots);
    s->parent = parent;
    s->parent_user = user;
    return start(s, out, st);
}

int esl_share_submit(esl_share *s, size_t u, const esc_task_spec *spec, esc_ref **refs,
                     esc_status *st)
{
    if (u >= s->nu)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "no user %zu", u);
    /* The user's unit here, and at every level above the unit of the user whose grant
     * the level below divides. */
    esl_request units = {0};
    char res[200];
    user_res(s, u, res, sizeof res);
    esl_request_for(s->c, res, ESC_QTY(1), &units);
    for (const esl_share *child = s; child->parent; child = child->parent) {
        user_res(child->parent, child->parent_user, res, sizeof res);
        esl_request_for(s->c, res, ESC_QTY(1), &units);
    }
    esc_amount *all = esc_xcalloc(spec->nresources + units.n + 1, sizeof *all);
    if (spec->nresources)
        memcpy(all, spec->resources, spec->nresources * sizeof *all);
    memcpy(all + spec->nresources, units.v, units.n * sizeof *all);
    esc_task_spec t = *spec;
    t.resources = all;
    t.nresources = spec->nresources + units.n;
    int rc = esc_task_submit(s->c, &t, refs, NULL, st);
    free(all);
    esl_request_clear(&units);
    if (rc != ESC_OK)
        return rc;
    pthread_mutex_lock(&s->mu);
    user_tasks *ut = &s->tasks[u];
    if (ut->n == ut->cap) {
        ut->cap = ut->cap ? ut->cap * 2 : 16;
        ut->out = esc_xrealloc(ut->out, ut->cap * sizeof *ut->out);
    }
    ut->out[ut->n++] = esc_ref_from_id(esc_ref_id(refs[0]));
    pthread_mutex_unlock(&s->mu);
    /* No poke: the task waits for its user's unit, and the raylets' next demand report
     * wakes the monitor (within their 20 ms report and the GCS's 50 ms advertisement),
     * so a burst of submissions is seen in one step and grants the nodes it needs at
     * once, not one node for the first task and more later. */
    return ESC_OK;
}

size_t esl_share_nodes(esl_share *s, size_t u, char ***ids)
{
    pthread_mutex_lock(&s->mu);
    *ids = esc_xcalloc(s->nnodes + 1, sizeof **ids);
    size_t n = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        if (s->owner[i] == (int)u)
            (*ids)[n++] = esc_xstrdup(s->nodes[i]);
    pthread_mutex_unlock(&s->mu);
    return n;
}

void esl_share_free(esl_share *s)
{
    if (!s)
        return;
    esl_monitor_stop(s->monitor);
    esc_batch *b = esc_batch_new();
    for (size_t i = 0; i < s->nnodes; i++) {
        if (s->owner && s->owner[i] >= 0)
            move_node(s, i, -1, b);
        free(s->nodes[i]);
    }
    if (esc_batch_size(b))
        esc_batch_commit(s->c, b, NULL, NULL);
    esc_batch_free(b);
    for (size_t u = 0; u < s->nu; u++) {
        for (size_t i = 0; i < s->tasks[u].n; i++)
            esc_ref_free(s->tasks[u].out[i]);
        free(s->tasks[u].out);
    }
    free(s->tasks);
    free(s->nodes);
    free(s->owner);
    free(s->w);
    pthread_mutex_destroy(&s->mu);
    free(s->name);
    free(s);
}
