/* esl_gang.c: gang reservations on one atomic batch of backed ephemeral resources.
 *
 * An attempt: read the cluster's resources (one GCS call), choose nodes, commit one
 * batch of backed SETs "<ns>/<name>" = members-on-that-node, wait until the nodes
 * applied it, then poll the nodes' reported rows until every part is carved. A part
 * that stays pending past the attempt's time (another gang or tasks hold the physical
 * resources) rolls the whole attempt back with one batch DELETE, and the next attempt
 * starts after a random backoff, so two gangs that each carved half of what both need
 * do not wait for each other forever and do not retry in lockstep. The ghost-task
 * variant (esl_gang_ghost.c) ends in the same state and shares the release. */
#include "changes.h"
#include "esl_gang_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ids.h"
#include "names.h"
#include "xalloc.h"

#define DEFAULT_TIMEOUT_MS 10000
#define MIN_ATTEMPT_MS 100
#define BACKOFF_BASE_MS 5

/* ------------------------------------------------------------------ the gang */

unsigned gang_rand(void)
{
    static _Thread_local unsigned long long s;
    if (s == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)getpid() ^
            (unsigned long long)(uintptr_t)&ts;
        s |= 1;
    }
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (unsigned)(s >> 11);
}

double gang_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

bool gang_wait_change(esc_changes *w, uint64_t mark, double deadline)
{
    double left = deadline - gang_now_ms();
    if (left <= 0)
        return false;
    return esc_changes_wait(w, mark, esc_now_ms() + (uint64_t)left + 1);
}

void gang_backoff_pause(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (time_t)(ms / 1e3) * 1e3) * 1e6)};
    nanosleep(&ts, NULL);
}

void gang_free_nodes(esl_gang *g)
{
    for (size_t i = 0; i < g->nnodes; i++)
        free(g->node_ids[i]);
    free(g->node_ids);
    free(g->counts);
    g->node_ids = NULL;
    g->counts = NULL;
    g->nnodes = 0;
}

void gang_free(esl_gang *g)
{
    if (!g)
        return;
    gang_free_nodes(g);
    esl_request_clear(&g->request);
    free(g->name);
    free(g);
}

const esl_request *esl_gang_request(const esl_gang *g)
{
    return &g->request;
}

size_t esl_gang_nnodes(const esl_gang *g)
{
    return g->nnodes;
}

const char *esl_gang_node(const esl_gang *g, size_t i, unsigned *members)
{
    if (i >= g->nnodes)
        return NULL;
    if (members)
        *members = g->counts[i];
    return g->node_ids[i];
}

unsigned esl_gang_attempts(const esl_gang *g)
{
    return g->attempts;
}

/* ------------------------------------------------------------------ checks */

int gang_check_args(esc_client *c, const char *name, unsigned members,
                    const esl_request *per_member, esc_status *st)
{
    if (!name || !esc_name_valid(name))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "invalid gang name \"%s\"",
                              name ? name : "(null)");
    if (members == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a gang needs at least one member");
    if (!per_member || per_member->n == 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "a gang member must request some physical resource");
    for (size_t i = 0; i < per_member->n; i++)
        if (strchr(per_member->v[i].name, '/') || per_member->v[i].value <= 0)
            return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                  "gang member resource %s must be physical and positive",
                                  per_member->v[i].name);
    (void)c;
    return ESC_OK;
}

esl_gang *gang_new(esc_client *c, const char *name)
{
    esl_gang *g = esc_xcalloc(1, sizeof *g);
    char full[ESC_FULLNAME_MAX];
    esc_name_join(esc_client_namespace(c), name, full, sizeof full);
    g->name = esc_xstrdup(name);
    esl_request_add(&g->request, full, ESC_QTY_UNIT);
    return g;
}

/* ------------------------------------------------------------------ placement */

/* How many members fit in `have` quantities of one node (total or available). */
static unsigned fit_count(const esc_node_status *n, const esl_request *pm, bool total)
{
    unsigned long long best = ~0ull;
    for (size_t i = 0; i < pm->n; i++) {
        const esc_resource_info *r = esc_node_resource(n, pm->v[i].name);
        if (!r || r->deleted)
            return 0;
        if (r->unbounded)
            continue;
        int64_t have = total ? r->total : r->available;
        unsigned long long k = have > 0 ? (unsigned long long)(have / pm->v[i].value) : 0;
        if (k < best)
            best = k;
    }
    return best > 1u << 30 ? 1u << 30 : (unsigned)best;
}

static bool alive(const esc_node_status *n)
{
    return !strcmp(n->state, "ALIVE");
}

/* Deals members out to nodes with room, from a random first node: round-robin, or
 * filling each node in turn (pack). counts[i] gets node i's share. */
static void deal(const unsigned *room, size_t n, unsigned members, bool pack, unsigned *counts)
{
    size_t start = n ? gang_rand() % n : 0;
    unsigned left = members;
    while (left > 0) {
        bool placed = false;
        for (size_t k = 0; k < n && left > 0; k++) {
            size_t i = (start + k) % n;
            unsigned take = pack ? room[i] - counts[i] : (room[i] > counts[i] ? 1 : 0);
            if (take > left)
                take = left;
            counts[i] += take;
            left -= take;
            placed |= take > 0;
        }
        if (!placed)
            break;    /* the caller checked the sum: not reached */
    }
}

int gang_place(esc_client *c, esl_gang *g, unsigned members, const esl_request *pm, bool pack,
               bool check_name, esc_status *st)
{
    esc_cluster_status *s = NULL;
    int rc = esc_get_cluster_resources(c, &s, st);
    if (rc != ESC_OK)
        return rc;
    unsigned *room_now = esc_xcalloc(s->nnodes + 1, sizeof *room_now);
    unsigned *room_ever = esc_xcalloc(s->nnodes + 1, sizeof *room_ever);
    unsigned long long now = 0, ever = 0;
    bool in_use = false;
    for (size_t i = 0; i < s->nnodes; i++) {
        if (!alive(&s->nodes[i]))
            continue;
        /* Only before the first attempt: later ones may still see the row that the
         * previous attempt deleted, in a report not yet refreshed. */
        in_use |= check_name && esc_node_resource(&s->nodes[i], g->request.v[0].name);
        room_now[i] = fit_count(&s->nodes[i], pm, false);
        room_ever[i] = fit_count(&s->nodes[i], pm, true);
        now += room_now[i];
        ever += room_ever[i];
    }
    if (in_use)
        rc = esc_status_set(st, ESC_FAILED_PRECONDITION, "gang name %s is in use",
                            g->request.v[0].name);
    else if (ever < members)
        rc = esc_status_set(st, ESC_FAILED_PRECONDITION,
                            "a gang of %u can never fit: the alive nodes hold at most %llu",
                            members, ever);
    if (rc == ESC_OK) {
        /* Room now if there is; else queue for the physical capacity by totals: pending
         * carves are served before other work as tasks release. */
        const unsigned *room = now >= members ? room_now : room_ever;
        unsigned *counts = esc_xcalloc(s->nnodes + 1, sizeof *counts);
        deal(room, s->nnodes, members, pack, counts);
        gang_free_nodes(g);
        g->node_ids = esc_xcalloc(s->nnodes + 1, sizeof *g->node_ids);
        g->counts = esc_xcalloc(s->nnodes + 1, sizeof *g->counts);
        for (size_t i = 0; i < s->nnodes; i++) {
            if (counts[i] == 0)
                continue;
            g->node_ids[g->nnodes] = esc_xstrdup(s->nodes[i].id);
            g->counts[g->nnodes++] = counts[i];
        }
        free(counts);
    }
    free(room_now);
    free(room_ever);
    esc_cluster_status_free(s);
    return rc;
}

/* ------------------------------------------------------------------ commit, wait, undo */

int gang_commit(esc_client *c, const esl_gang *g, const esl_request *pm, uint64_t *seq,
                esc_status *st)
{
    esc_batch *b = esc_batch_new();
    for (size_t i = 0; i < g->nnodes; i++) {
        esc_target t = ESC_NODE(g->node_ids[i]);
        esc_batch_set_backed(b, g->name, (int64_t)g->counts[i] * ESC_QTY_UNIT, pm->v, pm->n,
                             &t);
    }
    int rc = esc_batch_commit(c, b, seq, st);
    esc_batch_free(b);
    return rc;
}

/* True when every chosen node reports its part carved. */
static int all_carved(esc_client *c, const esl_gang *g, bool *done, esc_status *st)
{
    esc_cluster_status *s = NULL;
    int rc = esc_get_cluster_resources(c, &s, st);
    if (rc != ESC_OK)
        return rc;
    size_t ok = 0;
    for (size_t i = 0; i < g->nnodes; i++) {
        for (size_t k = 0; k < s->nnodes; k++) {
            if (strcmp(s->nodes[k].id, g->node_ids[i]) != 0)
                continue;
            const esc_resource_info *r = esc_node_resource(&s->nodes[k], g->request.v[0].name);
            if (r && r->backed && !r->pending && !r->deleted &&
                r->total == (int64_t)g->counts[i] * ESC_QTY_UNIT)
                ok++;
            break;
        }
    }
    esc_cluster_status_free(s);
    *done = ok == g->nnodes;
    return ESC_OK;
}

/* Carves that complete on a release reach the GCS in the raylet's next report: the
 * wait follows the gang's rows in the nodes' availability (ESC_EVENT_LOAD) and looks
 * again after each change. */
static int wait_all_carved(esc_client *c, const esl_gang *g, double deadline, esc_status *st)
{
    bool done = false;
    int rc = all_carved(c, g, &done, st);
    if (rc != ESC_OK || done)
        return rc; /* the usual case: no watch needed */
    const char *prefixes[] = {g->request.v[0].name};
    esc_watch_filter f = {.resources = prefixes, .nresources = 1, .loads = true};
    esc_changes *w = NULL;
    int left = (int)(deadline - gang_now_ms());
    rc = esc_changes_start(c, &f, NULL, NULL, false, left > 0 ? left : 1, &w, st);
    while (rc == ESC_OK) {
        uint64_t mark = esc_changes_mark(w);
        rc = all_carved(c, g, &done, st);
        if (rc != ESC_OK || done)
            break;
        if (!gang_wait_change(w, mark, deadline))
            rc = esc_status_set(st, ESC_DEADLINE_EXCEEDED,
                                "gang %s: not every node carved its part in time", g->name);
    }
    esc_changes_stop(w);
    return rc;
}

int gang_wait_carved(esc_client *c, const esl_gang *g, uint64_t seq, double deadline,
                     esc_status *st)
{
    int left = (int)(deadline - gang_now_ms());
    if (left <= 0)
        return esc_status_set(st, ESC_DEADLINE_EXCEEDED, "gang %s: no time left", g->name);
    int rc = esc_wait_applied(c, seq, (const char *const *)g->node_ids, g->nnodes, left, st);
    return rc == ESC_OK ? wait_all_carved(c, g, deadline, st) : rc;
}

int gang_undo(esc_client *c, const esl_gang *g, uint64_t *seq, esc_status *st)
{
    if (seq)
        *seq = 0;
    if (g->nnodes == 0)
        return ESC_OK;
    esc_batch *b = esc_batch_new();
    for (size_t i = 0; i < g->nnodes; i++) {
        esc_target t = ESC_NODE(g->node_ids[i]);
        esc_batch_delete(b, g->name, &t);
    }
    int rc = ESC_UNAVAILABLE;
    /* A dead node makes the whole batch fail; its rows went with it, so then delete
     * per node and ignore NOT_FOUND and dead nodes. */
    for (int tries = 0; tries < 3 && rc == ESC_UNAVAILABLE; tries++)
        rc = esc_batch_commit(c, b, seq, st);
    esc_batch_free(b);
    if (rc == ESC_OK || rc == ESC_UNAVAILABLE)
        return rc;
    rc = ESC_OK;
    for (size_t i = 0; i < g->nnodes; i++) {
        esc_target t = ESC_NODE(g->node_ids[i]);
        esc_status one;
        int r = esc_resource_delete(c, g->name, &t, NULL, &one);
        if (r != ESC_OK && r != ESC_NOT_FOUND && r != ESC_INVALID_ARGUMENT && rc == ESC_OK) {
            rc = r;
            if (st)
                *st = one;
        }
    }
    return rc;
}

/* ------------------------------------------------------------------ reserve */

static void resolve_opts(const esl_gang_opts *in, esl_gang_opts *out)
{
    *out = in ? *in : (esl_gang_opts){0};
    if (out->timeout_ms <= 0)
        out->timeout_ms = DEFAULT_TIMEOUT_MS;
    if (out->attempt_ms <= 0) {
        out->attempt_ms = out->timeout_ms / 4;
        if (out->attempt_ms < MIN_ATTEMPT_MS)
            out->attempt_ms = MIN_ATTEMPT_MS;
    }
    if (out->attempt_ms > out->timeout_ms)
        out->attempt_ms = out->timeout_ms;
}

void gang_resolve_opts(const esl_gang_opts *in, esl_gang_opts *out)
{
    resolve_opts(in, out);
}

/* Random backoff before attempt n (n >= 1): up to BACKOFF_BASE_MS x 2^n, capped by
 * the attempt time, so competing gangs spread out instead of colliding again. */
static double backoff_ms(unsigned n, int attempt_ms)
{
    double cap = BACKOFF_BASE_MS * (double)(1u << (n < 8 ? n : 8));
    if (cap > attempt_ms)
        cap = attempt_ms;
    return cap * (gang_rand() % 1000) / 1000.0;
}

/* One attempt: place, commit, wait; rolled back on any failure after the commit. */
static int attempt(esc_client *c, esl_gang *g, unsigned members, const esl_request *pm,
                   const esl_gang_opts *o, double deadline, esc_status *st)
{
    int rc = gang_place(c, g, members, pm, o->pack, g->attempts == 1, st);
    if (rc != ESC_OK)
        return rc;
    uint64_t seq = 0;
    rc = gang_commit(c, g, pm, &seq, st);
    if (rc != ESC_OK)
        return rc;
    double until = gang_now_ms() + o->attempt_ms;
    rc = gang_wait_carved(c, g, seq, until < deadline ? until : deadline, st);
    if (rc != ESC_OK) {
        esc_status ust;
        if (gang_undo(c, g, NULL, &ust) != ESC_OK)
            return esc_status_set(st, ust.code, "gang %s: rollback failed: %s", g->name,
                                  ust.message);
    }
    return rc;
}

/* Codes after which another attempt may succeed: a timed-out attempt, a GCS away. A
 * name in use or a gang that can never fit does not get better by waiting. */
static bool retryable(int rc)
{
    return rc == ESC_DEADLINE_EXCEEDED || rc == ESC_UNAVAILABLE;
}

int esl_gang_reserve_opts(esc_client *c, const char *name, unsigned members,
                          const esl_request *per_member, const esl_gang_opts *opts,
                          esl_gang **out, esc_status *st)
{
    *out = NULL;
    int rc = gang_check_args(c, name, members, per_member, st);
    if (rc != ESC_OK)
        return rc;
    esl_gang_opts o;
    resolve_opts(opts, &o);
    double deadline = gang_now_ms() + o.timeout_ms;
    esl_gang *g = gang_new(c, name);
    for (;;) {
        g->attempts++;
        rc = attempt(c, g, members, per_member, &o, deadline, st);
        if (rc == ESC_OK || !retryable(rc))
            break;
        double pause = backoff_ms(g->attempts, o.attempt_ms);
        if (gang_now_ms() + pause + 1 >= deadline) {
            rc = esc_status_set(st, ESC_DEADLINE_EXCEEDED,
                                "gang %s of %u not reserved in %d ms (%u attempts)", name,
                                members, o.timeout_ms, g->attempts);
            break;
        }
        gang_backoff_pause(pause);
    }
    if (rc != ESC_OK) {
        gang_free(g);
        return rc;
    }
    *out = g;
    return esc_status_set(st, ESC_OK, NULL);
}

int esl_gang_reserve(esc_client *c, const char *name, unsigned members,
                     const esl_request *per_member, int timeout_ms, esl_gang **out,
                     esc_status *st)
{
    esl_gang_opts o = {.timeout_ms = timeout_ms};
    return esl_gang_reserve_opts(c, name, members, per_member, &o, out, st);
}

int esl_gang_release(esc_client *c, esl_gang *g, esc_status *st)
{
    if (!g)
        return ESC_OK;
    uint64_t seq = 0;
    int rc = gang_undo(c, g, &seq, st);
    /* Waiting for the nodes to apply the delete makes the name free for the next gang
     * at once (the check in gang_place reads the nodes' reports). */
    if (rc == ESC_OK && seq)
        rc = esc_wait_applied(c, seq, (const char *const *)g->node_ids, g->nnodes, 0, st);
    gang_free(g);
    return rc == ESC_OK ? esc_status_set(st, ESC_OK, NULL) : rc;
}
