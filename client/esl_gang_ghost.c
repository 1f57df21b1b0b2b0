/* esl_gang_ghost.c: the ghost-task gang variant (the paper's application-level gang).
 *
 * One ghost task per member (escher-gang-ghost, a command task of the client's job)
 * asks for per_member through the plain scheduler. Each ghost that starts reports its
 * node in the KV store ("<name>.ghost.<i>") and waits for "<name>.go". When every
 * ghost has reported, the gang is placed: one batch of backed SETs gives each ghost
 * node its count. Those carves are pending while the ghosts hold the CPUs, so the
 * client writes "<name>.go"; each ghost exits, and the raylet carves the released
 * resources into the gang resource inside the release itself, before it re-examines
 * any queued task: the hand-off has no window in which another task could take a
 * ghost's place. (Where a node has free capacity besides its ghosts, the carve may
 * take that instead and the ghost's resources go back to the pool: the gang still gets
 * exactly its capacity.) The reservation completes once every part is carved AND
 * every ghost has exited (it removes its report as it goes), so no ghost outlives
 * the go key. On timeout the ghosts give up by themselves at the deadline
 * (wall clock: one machine, or synchronized clocks), queued ones that start later exit
 * at once, and the batch, if committed, is deleted. */
#include "esl_gang_internal.h"
#include "client_internal.h"
#include "changes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strmap.h"
#include "xalloc.h"

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void ghost_program(const esl_gang_opts *o, char *out, size_t len)
{
    const char *bin = getenv("ESCHER_BIN_DIR");
    if (o->ghost_program)
        snprintf(out, len, "%s", o->ghost_program);
    else if (bin)
        snprintf(out, len, "%s/client/escher-gang-ghost", bin);
    else
        snprintf(out, len, "escher-gang-ghost");
}

/* Submits the ghosts; refs[i] gets ghost i's return reference. */
static int submit_ghosts(esc_client *c, const esl_gang *g, unsigned members,
                         const esl_request *pm, const esl_gang_opts *o, double deadline_wall,
                         esc_ref **refs, esc_status *st)
{
    char prog[1024], idx[16], dl[32], addr[600], tok[600];
    ghost_program(o, prog, sizeof prog);
    snprintf(dl, sizeof dl, "%.0f", deadline_wall);
    snprintf(addr, sizeof addr, "ESCHER_ADDRESS=%s", c->address);
    snprintf(tok, sizeof tok, "ESCHER_TOKEN=%s", c->token ? c->token : "");
    const char *env[] = {addr, tok, NULL};
    for (unsigned i = 0; i < members; i++) {
        snprintf(idx, sizeof idx, "%u", i);
        const char *argv[] = {prog, g->name, idx, dl, NULL};
        esc_task_spec spec = {.name = "gang-ghost", .argv = argv, .env = env,
                              .resources = pm->v, .nresources = pm->n};
        int rc = esc_task_submit(c, &spec, &refs[i], NULL, st);
        if (rc != ESC_OK)
            return rc;
    }
    return ESC_OK;
}

/* Reads the ghosts' reports: ESC_OK with *placed of them; node counts into g when all
 * reported. */
static int read_reports(esc_client *c, esl_gang *g, unsigned members, unsigned *placed,
                        esc_status *st)
{
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%s.ghost.", g->name);
    char **keys = NULL;
    size_t n = 0;
    int rc = esc_kv_keys(c, NULL, prefix, &keys, &n, st);
    if (rc != ESC_OK)
        return rc;
    *placed = (unsigned)n;
    if (n >= members) {
        esc_strmap *count = esc_strmap_new();
        for (size_t i = 0; i < n && rc == ESC_OK; i++) {
            void *v = NULL;
            size_t len;
            rc = esc_kv_get(c, NULL, keys[i], &v, &len, st);
            if (rc == ESC_OK) {
                intptr_t k = (intptr_t)esc_strmap_get(count, v) + 1;
                esc_strmap_put(count, v, (void *)k);
                free(v);
            }
        }
        gang_free_nodes(g);
        g->node_ids = esc_xcalloc(esc_strmap_count(count) + 1, sizeof *g->node_ids);
        g->counts = esc_xcalloc(esc_strmap_count(count) + 1, sizeof *g->counts);
        size_t pos = 0;
        const char *key;
        void *val;
        while (esc_strmap_next(count, &pos, &key, &val)) {
            g->node_ids[g->nnodes] = esc_xstrdup(key);
            g->counts[g->nnodes++] = (unsigned)(intptr_t)val;
        }
        esc_strmap_free(count);
    }
    esc_kv_keys_free(keys, n);
    return rc;
}

/* Waits until every ghost reported (or the deadline, gang_now_ms clock); w follows the
 * reports' keys. */
static int wait_placed(esc_client *c, esl_gang *g, unsigned members, double deadline,
                       esc_changes *w, esc_status *st)
{
    for (;;) {
        uint64_t mark = esc_changes_mark(w);
        unsigned placed = 0;
        int rc = read_reports(c, g, members, &placed, st);
        if (rc != ESC_OK || placed >= members)
            return rc;
        if (!gang_wait_change(w, mark, deadline))
            return esc_status_set(st, ESC_DEADLINE_EXCEEDED,
                                  "gang %s: %u of %u ghosts placed in time", g->name, placed,
                                  members);
    }
}

/* Waits until every ghost removed its report, which it does as it exits: a carve can
 * take free capacity instead of a ghost's, so "carved" alone does not mean the ghosts
 * are gone, and the go key must outlive them. */
static int wait_ghosts_gone(esc_client *c, const esl_gang *g, double deadline, esc_changes *w,
                            esc_status *st)
{
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%s.ghost.", g->name);
    for (;;) {
        uint64_t mark = esc_changes_mark(w);
        char **keys = NULL;
        size_t n = 0;
        int rc = esc_kv_keys(c, NULL, prefix, &keys, &n, st);
        esc_kv_keys_free(keys, n);
        if (rc != ESC_OK || n == 0)
            return rc;
        if (!gang_wait_change(w, mark, deadline))
            return esc_status_set(st, ESC_DEADLINE_EXCEEDED,
                                  "gang %s: %zu ghosts did not hand over in time", g->name, n);
    }
}

void gang_ghost_forget(esc_client *c, const esl_gang *g)
{
    char key[96];
    snprintf(key, sizeof key, "%s.go", g->name);
    esc_kv_del(c, NULL, key, NULL, NULL);
}

/* Places, commits and hands off; on failure the caller rolls back. */
static int reserve_once(esc_client *c, esl_gang *g, unsigned members, const esl_request *pm,
                        double deadline, esc_changes *w, bool *committed, esc_status *st)
{
    int rc = wait_placed(c, g, members, deadline, w, st);
    uint64_t seq = 0;
    if (rc == ESC_OK)
        rc = gang_commit(c, g, pm, &seq, st);
    *committed = rc == ESC_OK;
    if (rc == ESC_OK) {
        int left = (int)(deadline - gang_now_ms());
        rc = esc_wait_applied(c, seq, (const char *const *)g->node_ids, g->nnodes,
                              left > 1 ? left : 1, st);
    }
    if (rc == ESC_OK) {
        char key[96];
        snprintf(key, sizeof key, "%s.go", g->name);
        rc = esc_kv_put(c, NULL, key, "1", 1, true, NULL, st);
    }
    if (rc == ESC_OK)
        rc = gang_wait_carved(c, g, seq, deadline, st);
    if (rc == ESC_OK)
        rc = wait_ghosts_gone(c, g, deadline, w, st);
    return rc;
}

int esl_gang_reserve_ghost(esc_client *c, const char *name, unsigned members,
                           const esl_request *per_member, const esl_gang_opts *opts,
                           esl_gang **out, esc_status *st)
{
    *out = NULL;
    int rc = gang_check_args(c, name, members, per_member, st);
    if (rc != ESC_OK)
        return rc;
    esl_gang_opts o;
    gang_resolve_opts(opts, &o);
    double deadline = gang_now_ms() + o.timeout_ms;
    esl_gang *g = gang_new(c, name);
    g->ghost = true;
    g->attempts = 1;
    esc_ref **refs = esc_xcalloc(members, sizeof *refs);
    bool committed = false;
    /* The ghosts' reports, followed from before the first can be written. */
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%s.ghost.", name);
    esc_kv_filter kv = {.prefix = prefix};
    esc_watch_filter f = {.kv = &kv, .nkv = 1};
    esc_changes *w = NULL;
    rc = esc_changes_start(c, &f, NULL, NULL, false, o.timeout_ms, &w, st);
    if (rc == ESC_OK)
        rc = submit_ghosts(c, g, members, per_member, &o, wall_ms() + o.timeout_ms, refs, st);
    if (rc == ESC_OK)
        rc = reserve_once(c, g, members, per_member, deadline, w, &committed, st);
    esc_changes_stop(w);
    for (unsigned i = 0; i < members; i++) {
        /* Ghosts still queued on this client's raylet never need to start. */
        if (rc != ESC_OK && refs[i])
            esc_cancel(c, refs[i], NULL);
        esc_ref_free(refs[i]);
    }
    free(refs);
    /* The go key has done its work (every ghost is gone), or the ghosts give up by
     * the deadline anyway. */
    gang_ghost_forget(c, g);
    if (rc != ESC_OK) {
        if (committed)
            gang_undo(c, g, NULL, NULL);
        gang_free(g);
        return rc;
    }
    *out = g;
    return esc_status_set(st, ESC_OK, NULL);
}
