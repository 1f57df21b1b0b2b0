/* object_dir.c: the object directory (service ObjectDirectory): object id -> {size,
 * is_error, owner job, set of nodes holding a copy}.
 *
 * Raylets add a location when an object is sealed in their store and remove it when it
 * is freed. GetLocations with wait_ms holds the call until some node holds the object:
 * AddLocation wakes exactly the waiters of that id (event driven), a timer answers
 * found=false at the deadline, and a caller that goes away is dropped. Locations on a
 * node that dies go with it. An object with no location left leaves the directory (a
 * reader then waits: a retried task may put it again), except one that has an origin
 * (TaskSpec.origin: the raylet keeping the lineage of the task that made it) and lost
 * its last copy to a node's death: it stays as *lost*, so a reader that asks with
 * report_lost learns at once that it must ask the origin to make it again
 * (docs/tasks.md, "Lost results"); other readers wait for it as for any absent object.
 * A reader that could not reach the copies it was told of waits (not_on) for a copy
 * elsewhere, or for the object to be lost when those nodes are declared dead.
 * WaitObjects holds one call for many ids (esc_wait's refs that only the directory can
 * tell of): a waiter per id not settled yet on the same lists, woken by the same events
 * (a location added, a loss), the call answered once enough settled or at its timer.
 * A job's entries go when it ends.
 *
 * Locations are not persisted: an object lives in a raylet's memory and dies with it,
 * so a stored location could only outlive the thing it points to. A GCS that restarts
 * starts with no locations, and each raylet, which gets a snapshot after the restart,
 * announces all its objects again. Lost objects are persisted (table "lost"): no raylet
 * could announce them again, and a reader that asks after a restart must still learn
 * that it should ask the origin. Their writes are batched per event (a node's death,
 * a job's end) and go through the write queue like every internal write.
 *
 * Indexes: every location is on its object's list and on its node's list, and every
 * object on its job's list, so node death and job end cost what they remove. */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"
#include "object.pb-c.h"
#include "xalloc.h"

typedef struct dir_obj dir_obj;

typedef struct dir_loc {
    dir_obj *obj;
    struct dir_loc *next_in_obj;
    struct dir_loc *prev_in_node, *next_in_node;
    char *node_id;
} dir_loc;

struct dir_obj {
    char *id;
    char *job_id;                  /* "" when the object has no owner job */
    uint64_t size;
    bool is_error;
    char *origin;                  /* node id that can make it again, "" none */
    bool lost;                     /* every copy died with its node; no location */
    dir_loc *locs;
    dir_obj *prev_in_job, *next_in_job;
};

typedef struct dir_list {          /* a bucket of a node's locations or a job's objects */
    void *head;
} dir_list;

typedef struct dir_group dir_group;

/* One held GetLocations, or one id of a held WaitObjects (group set: the call, the
 * reader and the timer are the group's). */
typedef struct dir_waiter {
    struct dir_waiter *prev, *next;
    gcs *g;
    esc_rpc_ctx *call;
    char *object_id;
    char reader[80];               /* the caller's job, checked; "" none */
    ev_timer timer;
    bool report_lost;              /* GetLocations: answered when the object is lost */
    char **not_on;                 /* GetLocations: copies there do not answer it */
    size_t n_not_on;
    dir_group *group;              /* WaitObjects: its call, and this id's index in it */
    size_t index;
} dir_waiter;

/* A held WaitObjects: one waiter per id not settled yet. */
struct dir_group {
    dir_group *prev, *next;        /* every held group (gcs_objdir.groups) */
    gcs *g;
    esc_rpc_ctx *call;
    char reader[80];
    size_t n, need, settled;
    uint8_t *state;                /* per id: GROUP_WAITING, GROUP_READY, GROUP_LOST */
    dir_waiter **regs;             /* per id: its waiter while waiting, else NULL */
    ev_timer timer;
};

enum { GROUP_WAITING, GROUP_READY, GROUP_LOST };
#define WAIT_OBJECTS_MAX 100000

struct gcs_objdir {
    esc_strmap *objects;           /* object id -> dir_obj */
    esc_strmap *by_node;           /* node id -> dir_list of dir_loc */
    esc_strmap *by_job;            /* job id -> dir_list of dir_obj */
    esc_strmap *waiting;           /* object id -> first dir_waiter */
    dir_group *groups;             /* held WaitObjects calls */
    esc_strmap *lost_unstored;     /* ids whose "lost" rows are to be written (lost_flush) */
    bool lost_writing;             /* a batch of them is queued or in flight */
};

/* ------------------------------------------------------------ buckets */

static dir_list *bucket(esc_strmap *m, const char *key)
{
    dir_list *l = esc_strmap_get(m, key);
    if (!l) {
        l = esc_xcalloc(1, sizeof *l);
        esc_strmap_put(m, key, l);
    }
    return l;
}

static void bucket_drop_if_empty(esc_strmap *m, const char *key)
{
    dir_list *l = esc_strmap_get(m, key);
    if (l && !l->head)
        free(esc_strmap_del(m, key));
}

/* ------------------------------------------------------------ objects and locations */

static void loc_unlink_node(gcs_objdir *d, dir_loc *l)
{
    if (l->prev_in_node) {
        l->prev_in_node->next_in_node = l->next_in_node;
    } else {
        dir_list *b = esc_strmap_get(d->by_node, l->node_id);
        b->head = l->next_in_node;
    }
    if (l->next_in_node)
        l->next_in_node->prev_in_node = l->prev_in_node;
    bucket_drop_if_empty(d->by_node, l->node_id);
}

/* ------------------------------------------------------------ the lost table */

/* The lost table follows memory. A change marks its object's id; a batch then writes
 * each marked id as it is when the batch is built (a put while its object is lost, else
 * a delete), one batch at a time. A batch that fails marks its ids again and the sweep
 * retries them: a loss that never reached storage would be forgotten by a restart, and
 * the object's readers would wait forever for an object no raylet can announce. */
static void lost_mark(gcs_objdir *d, const char *id)
{
    esc_strmap_put(d->lost_unstored, id, d);
}

typedef struct {
    char **ids;
    size_t n;
} lost_batch_ids;

static void lost_flush(gcs *g);

static void lost_written(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)seq;
    lost_batch_ids *w = ud;
    gcs_objdir *d = g->objdir;
    if (err)
        ESC_WARN("cannot store %zu lost-object rows yet (retried): %s", w->n, err);
    for (size_t i = 0; i < w->n; i++) {
        if (err)
            lost_mark(d, w->ids[i]);
        free(w->ids[i]);
    }
    free(w->ids);
    free(w);
    d->lost_writing = false;
    if (!err) /* what changed meanwhile; after a failure, the sweep's turn */
        lost_flush(g);
}

static void lost_write_run(gcs *g, void *ud)
{
    lost_batch_ids *w = ud;
    gcs_objdir *d = g->objdir;
    esc_storage_batch *b = esc_storage_batch_new();
    for (size_t i = 0; i < w->n; i++) {
        const dir_obj *o = esc_strmap_get(d->objects, w->ids[i]);
        if (o && o->lost) {
            Escher__ObjectLocation row = ESCHER__OBJECT_LOCATION__INIT;
            row.object_id = o->id;
            row.job_id = o->job_id;
            row.size = o->size;
            row.is_error = o->is_error;
            row.origin = o->origin;
            gcs_put_msg(b, GCS_T_LOST, o->id, &row.base);
        } else {
            esc_storage_del(b, GCS_T_LOST, w->ids[i]);
        }
    }
    gcs_write(g, b, lost_written, w);
}

static void lost_write_expired(gcs *g, void *ud)
{
    lost_written(g, 0, "storage timeout", ud);
}

/* Queues the marked ids as one write, unless one is queued or in flight (its end
 * flushes again). */
static void lost_flush(gcs *g)
{
    gcs_objdir *d = g->objdir;
    size_t n = esc_strmap_count(d->lost_unstored);
    if (d->lost_writing || n == 0)
        return;
    lost_batch_ids *w = esc_xcalloc(1, sizeof *w);
    w->ids = esc_xcalloc(n, sizeof *w->ids);
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(d->lost_unstored, &pos, &k, &v)) {
        w->ids[w->n++] = esc_xstrdup(k);
        esc_strmap_del(d->lost_unstored, k); /* deleting the entry just returned is allowed */
    }
    d->lost_writing = true;
    gcs_queue_write(g, lost_write_run, lost_write_expired, w);
}

void gcs_objects_sweep(gcs *g)
{
    if (g->objdir)
        lost_flush(g);
}

/* Takes o out of every index and frees it with its locations. */
static void obj_drop(gcs_objdir *d, dir_obj *o)
{
    while (o->locs) {
        dir_loc *l = o->locs;
        o->locs = l->next_in_obj;
        loc_unlink_node(d, l);
        free(l->node_id);
        free(l);
    }
    if (o->prev_in_job) {
        o->prev_in_job->next_in_job = o->next_in_job;
    } else {
        dir_list *b = esc_strmap_get(d->by_job, o->job_id);
        b->head = o->next_in_job;
    }
    if (o->next_in_job)
        o->next_in_job->prev_in_job = o->prev_in_job;
    bucket_drop_if_empty(d->by_job, o->job_id);
    esc_strmap_del(d->objects, o->id);
    free(o->id);
    free(o->job_id);
    free(o->origin);
    free(o);
}

/* Removes one location; the object goes too when it was the last, unless the location
 * died with its node and the object has an origin: then it stays, lost. */
static void loc_remove(gcs_objdir *d, dir_loc *l, bool node_died)
{
    dir_obj *o = l->obj;
    dir_loc **pp = &o->locs;
    while (*pp != l)
        pp = &(*pp)->next_in_obj;
    *pp = l->next_in_obj;
    loc_unlink_node(d, l);
    free(l->node_id);
    free(l);
    if (!o->locs && node_died && *o->origin) {
        o->lost = true;
        lost_mark(d, o->id);
    } else if (!o->locs)
        obj_drop(d, o);
}

static dir_obj *obj_new(gcs_objdir *d, const Escher__ObjectLocation *in)
{
    dir_obj *o = esc_xcalloc(1, sizeof *o);
    o->id = esc_xstrdup(in->object_id);
    o->job_id = esc_xstrdup(in->job_id);
    o->size = in->size;
    o->is_error = in->is_error;
    o->origin = esc_xstrdup(in->origin ? in->origin : "");
    dir_list *b = bucket(d->by_job, o->job_id);
    o->next_in_job = b->head;
    if (o->next_in_job)
        o->next_in_job->prev_in_job = o;
    b->head = o;
    esc_strmap_put(d->objects, o->id, o);
    return o;
}

static bool obj_has_node(const dir_obj *o, const char *node_id)
{
    for (const dir_loc *l = o->locs; l; l = l->next_in_obj)
        if (!strcmp(l->node_id, node_id))
            return true;
    return false;
}

static void loc_add(gcs_objdir *d, dir_obj *o, const char *node_id)
{
    dir_loc *l = esc_xcalloc(1, sizeof *l);
    l->obj = o;
    if (o->lost)
        lost_mark(d, o->id);
    o->lost = false;
    l->node_id = esc_xstrdup(node_id);
    l->next_in_obj = o->locs;
    o->locs = l;
    dir_list *b = bucket(d->by_node, node_id);
    l->next_in_node = b->head;
    if (l->next_in_node)
        l->next_in_node->prev_in_node = l;
    b->head = l;
}

/* ------------------------------------------------------------ answers */

/* An object is its job's, and its grantees': a reader with no job (or another job) is
 * refused (docs/security.md, "Objects"). Objects of no job are everyone's. */
static bool may_read(gcs *g, const char *reader, const dir_obj *o)
{
    if (!*o->job_id || !strcmp(reader, o->job_id))
        return true;
    const gcs_job *owner = gcs_job_find(g, o->job_id);
    return *reader && owner && gcs_ns_granted(owner, reader);
}

static void reply_locations(gcs *g, esc_rpc_ctx *call, const dir_obj *o, const char *reader)
{
    if (o && !may_read(g, reader, o)) {
        char why[300];
        snprintf(why, sizeof why, "object %.80s belongs to job %.40s, which did not grant its "
                 "namespace to %s%.40s", o->id, o->job_id, *reader ? "job " : "a caller with no job",
                 reader);
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    Escher__GetLocationsReply rep = ESCHER__GET_LOCATIONS_REPLY__INIT;
    size_t n = 0;
    for (const dir_loc *l = o ? o->locs : NULL; l; l = l->next_in_obj)
        n++;
    rep.node_ids = esc_xcalloc(n + 1, sizeof *rep.node_ids);
    rep.addresses = esc_xcalloc(n + 1, sizeof *rep.addresses);
    for (const dir_loc *l = o ? o->locs : NULL; l; l = l->next_in_obj) {
        gcs_node *node = gcs_node_find(g, l->node_id);
        if (!gcs_node_alive(node))
            continue; /* cannot happen: a node's death drops its locations */
        rep.node_ids[rep.n_node_ids++] = l->node_id;
        rep.addresses[rep.n_addresses++] = node->info->address;
    }
    rep.found = rep.n_node_ids > 0;
    if (rep.found) {
        rep.size = o->size;
        rep.is_error = o->is_error;
    }
    rep.lost = o && o->lost;
    gcs_node *origin = rep.lost ? gcs_node_find(g, o->origin) : NULL;
    if (rep.lost)
        rep.origin = o->origin;
    if (gcs_node_alive(origin))
        rep.origin_address = origin->info->address;
    esc_rpc_reply(call, &rep.base);
    free(rep.node_ids);
    free(rep.addresses);
}

/* ------------------------------------------------------------ waiters */

static void waiter_unlink(gcs_objdir *d, dir_waiter *w)
{
    if (w->prev) {
        w->prev->next = w->next;
    } else if (w->next) {
        esc_strmap_put(d->waiting, w->object_id, w->next);
    } else {
        esc_strmap_del(d->waiting, w->object_id);
    }
    if (w->next)
        w->next->prev = w->prev;
}

static void waiter_free(gcs *g, dir_waiter *w)
{
    ev_timer_stop(esc_loop_ev(g->loop), &w->timer);
    for (size_t i = 0; i < w->n_not_on; i++)
        free(w->not_on[i]);
    free(w->not_on);
    free(w->object_id);
    free(w);
}

static void on_wait_timeout(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    dir_waiter *w = t->data;
    gcs *g = w->g;
    waiter_unlink(g->objdir, w);
    reply_locations(g, w->call, NULL, w->reader);
    waiter_free(g, w);
}

static void on_wait_cancel(esc_rpc_ctx *call, void *ud)
{
    dir_waiter *w = ud;
    gcs *g = w->g;
    waiter_unlink(g->objdir, w);
    esc_rpc_finish(call, ESC_CANCELLED, NULL);
    waiter_free(g, w);
}

/* A new waiter for object_id, on its list. */
static dir_waiter *waiter_new(gcs *g, const char *object_id, const char *reader)
{
    dir_waiter *w = esc_xcalloc(1, sizeof *w);
    snprintf(w->reader, sizeof w->reader, "%s", reader);
    w->g = g;
    w->object_id = esc_xstrdup(object_id);
    w->next = esc_strmap_put(g->objdir->waiting, object_id, w);
    if (w->next)
        w->next->prev = w;
    ev_timer_init(&w->timer, on_wait_timeout, 0., 0.);
    w->timer.data = w;
    return w;
}

static void wait_for(gcs *g, esc_rpc_ctx *call, const Escher__GetLocationsRequest *rq,
                     const char *reader)
{
    dir_waiter *w = waiter_new(g, rq->object_id, reader);
    w->call = call;
    w->report_lost = rq->report_lost;
    w->not_on = esc_xcalloc(rq->n_not_on + 1, sizeof *w->not_on);
    for (size_t i = 0; i < rq->n_not_on; i++)
        w->not_on[i] = esc_xstrdup(rq->not_on[i]);
    w->n_not_on = rq->n_not_on;
    struct ev_loop *ev = esc_loop_ev(g->loop);
    ev_now_update(ev);
    ev_timer_set(&w->timer, rq->wait_ms / 1000.0, 0.);
    ev_timer_start(ev, &w->timer);
    esc_rpc_ctx_on_cancel(call, on_wait_cancel, w);
}

static bool in_list(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], s))
            return true;
    return false;
}

/* Does o answer a GetLocations that waits with these terms? A copy on a node outside
 * not_on does; a lost object does for a reader that asked to hear of it. */
static bool answers_get(const dir_obj *o, bool report_lost, char *const *not_on, size_t n)
{
    if (o->lost)
        return report_lost;
    for (const dir_loc *l = o->locs; l; l = l->next_in_obj)
        if (!in_list(not_on, n, l->node_id))
            return true;
    return false;
}

/* ------------------------------------------------------------ WaitObjects groups */

static void group_answer(dir_group *gr);

/* An id of the group settled (state: GROUP_READY or GROUP_LOST); answers the group when
 * enough did. */
static void group_settle(dir_group *gr, size_t i, uint8_t state)
{
    gr->state[i] = state;
    gr->settled++;
    if (gr->settled >= gr->need)
        group_answer(gr);
}

/* Takes the group out of every list and frees it (its call is answered already). */
static void group_free(dir_group *gr)
{
    gcs *g = gr->g;
    gcs_objdir *d = g->objdir;
    for (size_t i = 0; i < gr->n; i++) {
        if (gr->regs[i]) {
            waiter_unlink(d, gr->regs[i]);
            waiter_free(g, gr->regs[i]);
        }
    }
    if (gr->prev)
        gr->prev->next = gr->next;
    else
        d->groups = gr->next;
    if (gr->next)
        gr->next->prev = gr->prev;
    ev_timer_stop(esc_loop_ev(g->loop), &gr->timer);
    free(gr->state);
    free(gr->regs);
    free(gr);
}

/* Replies with the ids settled so far and frees the group. */
static void group_answer(dir_group *gr)
{
    Escher__WaitObjectsReply rep = ESCHER__WAIT_OBJECTS_REPLY__INIT;
    rep.ready = esc_xcalloc(gr->n + 1, sizeof *rep.ready);
    rep.lost = esc_xcalloc(gr->n + 1, sizeof *rep.lost);
    for (size_t i = 0; i < gr->n; i++) {
        if (gr->state[i] == GROUP_READY)
            rep.ready[rep.n_ready++] = (uint32_t)i;
        else if (gr->state[i] == GROUP_LOST)
            rep.lost[rep.n_lost++] = (uint32_t)i;
    }
    esc_rpc_ctx_on_cancel(gr->call, NULL, NULL);
    esc_rpc_reply(gr->call, &rep.base);
    free(rep.ready);
    free(rep.lost);
    group_free(gr);
}

static void on_group_timeout(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    group_answer(t->data);
}

static void on_group_cancel(esc_rpc_ctx *call, void *ud)
{
    esc_rpc_finish(call, ESC_CANCELLED, NULL);
    group_free(ud);
}

/* What o is to a group's reader: GROUP_WAITING while it is neither readable nor settled
 * (an object the reader may not read never counts). */
static uint8_t group_state_of(gcs *g, const dir_obj *o, const char *reader)
{
    if (!o || !may_read(g, reader, o))
        return GROUP_WAITING;
    return o->lost ? GROUP_LOST : o->locs ? GROUP_READY : GROUP_WAITING;
}

/* Answers everyone waiting for o whom o now answers; the others wait on. */
static void wake(gcs *g, const dir_obj *o)
{
    gcs_objdir *d = g->objdir;
    dir_waiter *w = esc_strmap_get(d->waiting, o->id);
    while (w) {
        /* Distinct ids per group: answering one frees no other waiter of this list. */
        dir_waiter *next = w->next;
        dir_group *gr = w->group;
        uint8_t state = gr ? group_state_of(g, o, gr->reader) : GROUP_WAITING;
        if (gr && state != GROUP_WAITING) {
            gr->regs[w->index] = NULL;
            waiter_unlink(d, w);
            size_t i = w->index;
            waiter_free(g, w);
            group_settle(gr, i, state);
        } else if (!gr && answers_get(o, w->report_lost, w->not_on, w->n_not_on)) {
            waiter_unlink(d, w);
            reply_locations(g, w->call, o, w->reader);
            waiter_free(g, w);
        }
        w = next;
    }
}

/* ------------------------------------------------------------ handlers */

static int check_location(gcs *g, const Escher__ObjectLocation *in, esc_status *st)
{
    if (!esc_object_id_valid(in->object_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "invalid object id (1-79 of A-Z a-z 0-9 _ . -)");
    if (!*in->node_id)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "node id is empty");
    gcs_node *n = gcs_node_find(g, in->node_id);
    if (!n)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "unknown node %.64s", in->node_id);
    if (!gcs_node_alive(n))
        return esc_status_set(st, ESC_FAILED_PRECONDITION, "node %.64s is dead", in->node_id);
    return ESC_OK;
}

static int check_add(gcs *g, const Escher__ObjectLocation *in, esc_status *st)
{
    if (check_location(g, in, st) != ESC_OK)
        return st->code;
    if (*in->job_id && !esc_name_valid(in->job_id))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "invalid job id");
    if (*in->origin && !esc_name_valid(in->origin))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "invalid origin node id");
    gcs_job *j = gcs_job_find(g, in->job_id);
    /* A put racing with the end of its job: refused, so the raylet frees it too. */
    if (j && j->info->state != ESCHER__JOB_STATE__JOB_RUNNING)
        return esc_status_set(st, ESC_FAILED_PRECONDITION, "job %s has ended", in->job_id);
    const dir_obj *o = esc_strmap_get(g->objdir->objects, in->object_id);
    /* A lost object made again may differ (a task need not be deterministic). */
    if (o && !o->lost && (o->size != in->size || o->is_error != in->is_error || strcmp(o->job_id, in->job_id)))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "object %s is known with another size, kind or job",
                              in->object_id);
    return ESC_OK;
}

/* One location added (and its waiters woken). Returns ESC_OK or the refusal. */
static int add_one(gcs *g, const Escher__ObjectLocation *in, esc_status *st)
{
    if (check_add(g, in, st) != ESC_OK)
        return st->code;
    gcs_objdir *d = g->objdir;
    dir_obj *o = esc_strmap_get(d->objects, in->object_id);
    if (!o) {
        o = obj_new(d, in);
    } else if (o->lost) {
        o->size = in->size;
        o->is_error = in->is_error;
    }
    if (!*o->origin && in->origin && *in->origin) {
        free(o->origin);
        o->origin = esc_xstrdup(in->origin);
    }
    if (!obj_has_node(o, in->node_id))
        loc_add(d, o, in->node_id);
    lost_flush(g); /* one that was lost is not any more */
    wake(g, o);
    return esc_status_set(st, ESC_OK, NULL);
}

/* One location removed. A dead node's locations are gone already: removing one is a
 * no-op, not an error. */
static int remove_one(gcs *g, const Escher__ObjectLocation *in, esc_status *st)
{
    if (check_location(g, in, st) != ESC_OK && st->code != ESC_FAILED_PRECONDITION)
        return st->code;
    dir_obj *o = esc_strmap_get(g->objdir->objects, in->object_id);
    for (dir_loc *l = o ? o->locs : NULL; l; l = l->next_in_obj) {
        if (!strcmp(l->node_id, in->node_id)) {
            loc_remove(g->objdir, l, false);
            break;
        }
    }
    return esc_status_set(st, ESC_OK, NULL);
}

static void handle_add(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    esc_status st = {0};
    if (add_one(ud, (const Escher__ObjectLocation *)msg, &st) != ESC_OK) {
        esc_rpc_finish(call, st.code, st.message);
        return;
    }
    Escher__AddLocationReply rep = ESCHER__ADD_LOCATION_REPLY__INIT;
    esc_rpc_reply(call, &rep.base);
}

static void handle_remove(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    esc_status st = {0};
    if (remove_one(ud, (const Escher__ObjectLocation *)msg, &st) != ESC_OK) {
        esc_rpc_finish(call, st.code, st.message);
        return;
    }
    Escher__RemoveLocationReply rep = ESCHER__REMOVE_LOCATION_REPLY__INIT;
    esc_rpc_reply(call, &rep.base);
}

/* A batch: each entry through one_fn, answered in order; a bad entry stops nothing. */
static void handle_batch(esc_rpc_ctx *call, const ProtobufCMessage *msg, gcs *g,
                         int (*one_fn)(gcs *, const Escher__ObjectLocation *, esc_status *))
{
    const Escher__ObjectLocations *in = (const Escher__ObjectLocations *)msg;
    size_t n = in->n_locations; /* the request goes with the reply */
    int32_t *codes = esc_xcalloc(n + 1, sizeof *codes);
    char **errors = esc_xcalloc(n + 1, sizeof *errors);
    for (size_t i = 0; i < n; i++) {
        esc_status st = {0};
        codes[i] = one_fn(g, in->locations[i], &st);
        errors[i] = esc_xstrdup(codes[i] == ESC_OK ? "" : st.message);
    }
    Escher__ObjectLocationsReply rep = ESCHER__OBJECT_LOCATIONS_REPLY__INIT;
    rep.codes = codes;
    rep.n_codes = n;
    rep.errors = errors;
    rep.n_errors = n;
    esc_rpc_reply(call, &rep.base);
    for (size_t i = 0; i < n; i++)
        free(errors[i]);
    free(errors);
    free(codes);
}

static void handle_add_batch(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    handle_batch(call, msg, ud, add_one);
}

static void handle_remove_batch(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    handle_batch(call, msg, ud, remove_one);
}

static void handle_get(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__GetLocationsRequest *rq = (const Escher__GetLocationsRequest *)msg;
    if (!esc_object_id_valid(rq->object_id)) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT,
                       "invalid object id (1-79 of A-Z a-z 0-9 _ . -)");
        return;
    }
    char reader[80], why[200];
    if (gcs_auth_reader(g, call, rq->job_id, rq->job_credential, reader, sizeof reader, why,
                        sizeof why) != ESC_OK) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    const dir_obj *o = esc_strmap_get(g->objdir->objects, rq->object_id);
    if ((o && answers_get(o, rq->report_lost, rq->not_on, rq->n_not_on)) || rq->wait_ms == 0)
        reply_locations(g, call, o, reader);
    else
        wait_for(g, call, rq, reader);
}

/* INVALID_ARGUMENT's reason when the ids are not a valid WaitObjects list, else NULL. */
static const char *bad_wait_ids(char *const *ids, size_t n)
{
    if (n > WAIT_OBJECTS_MAX)
        return "too many object ids in one WaitObjects";
    esc_strmap *seen = esc_strmap_new();
    const char *why = NULL;
    for (size_t i = 0; i < n && !why; i++) {
        if (!esc_object_id_valid(ids[i]))
            why = "invalid object id (1-79 of A-Z a-z 0-9 _ . -)";
        else if (esc_strmap_get(seen, ids[i]))
            why = "object ids repeat";
        else
            esc_strmap_put(seen, ids[i], ids[i]);
    }
    esc_strmap_free(seen);
    return why;
}

/* A group for the request, with the ids settled now marked (not on any list yet). */
static dir_group *group_new(gcs *g, esc_rpc_ctx *call, const Escher__WaitObjectsRequest *rq,
                            const char *reader)
{
    dir_group *gr = esc_xcalloc(1, sizeof *gr);
    gr->g = g;
    gr->call = call;
    snprintf(gr->reader, sizeof gr->reader, "%s", reader);
    gr->n = rq->n_object_ids;
    gr->need = rq->num_ready == 0 || rq->num_ready > gr->n ? gr->n : rq->num_ready;
    gr->state = esc_xcalloc(gr->n + 1, sizeof *gr->state);
    gr->regs = esc_xcalloc(gr->n + 1, sizeof *gr->regs);
    for (size_t i = 0; i < gr->n; i++) {
        const dir_obj *o = esc_strmap_get(g->objdir->objects, rq->object_ids[i]);
        gr->state[i] = group_state_of(g, o, reader);
        gr->settled += gr->state[i] != GROUP_WAITING;
    }
    gr->next = g->objdir->groups;
    if (gr->next)
        gr->next->prev = gr;
    g->objdir->groups = gr;
    ev_timer_init(&gr->timer, on_group_timeout, 0., 0.);
    gr->timer.data = gr;
    return gr;
}

/* Holds the group: a waiter on each id not settled, the timer, the cancel hook. */
static void group_hold(dir_group *gr, char *const *ids, uint32_t wait_ms)
{
    for (size_t i = 0; i < gr->n; i++) {
        if (gr->state[i] != GROUP_WAITING)
            continue;
        dir_waiter *w = waiter_new(gr->g, ids[i], gr->reader);
        w->group = gr;
        w->index = i;
        gr->regs[i] = w;
    }
    struct ev_loop *ev = esc_loop_ev(gr->g->loop);
    ev_now_update(ev);
    ev_timer_set(&gr->timer, wait_ms / 1000.0, 0.);
    ev_timer_start(ev, &gr->timer);
    esc_rpc_ctx_on_cancel(gr->call, on_group_cancel, gr);
}

static void handle_wait_objects(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__WaitObjectsRequest *rq = (const Escher__WaitObjectsRequest *)msg;
    const char *bad = bad_wait_ids(rq->object_ids, rq->n_object_ids);
    if (bad) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, bad);
        return;
    }
    char reader[80], why[200];
    if (gcs_auth_reader(g, call, rq->job_id, rq->job_credential, reader, sizeof reader, why,
                        sizeof why) != ESC_OK) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    dir_group *gr = group_new(g, call, rq, reader);
    if (gr->settled >= gr->need || rq->wait_ms == 0)
        group_answer(gr);
    else
        group_hold(gr, rq->object_ids, rq->wait_ms);
}

/* ------------------------------------------------------------ hooks and lifetime */

void gcs_objects_node_dead(gcs *g, const char *node_id)
{
    gcs_objdir *d = g->objdir;
    size_t n = 0;
    dir_list *b;
    /* Looked up again each time: loc_remove frees the bucket with its last location. */
    while (d && (b = esc_strmap_get(d->by_node, node_id)) != NULL) {
        dir_loc *l = b->head;
        dir_obj *o = l->obj;
        bool lost = o->locs == l && !l->next_in_obj && *o->origin; /* else o may go */
        loc_remove(d, l, true);
        if (lost) /* it stays, lost: who waits to hear of that is told */
            wake(g, o);
        n++;
    }
    if (d)
        lost_flush(g);
    if (n)
        ESC_INFO("node %s died: dropped %zu object locations", node_id, n);
}

void gcs_objects_job_ended(gcs *g, const char *job_id)
{
    gcs_objdir *d = g->objdir;
    size_t n = 0;
    dir_list *b;
    /* Looked up again each time: obj_drop frees the bucket with its last object. */
    while (d && job_id && *job_id && (b = esc_strmap_get(d->by_job, job_id)) != NULL) {
        dir_obj *o = b->head;
        if (o->lost)
            lost_mark(d, o->id);
        obj_drop(d, o);
        n++;
    }
    if (d)
        lost_flush(g);
    if (n)
        ESC_INFO("job %s ended: dropped %zu objects from the directory", job_id, n);
}

void gcs_objects_init(gcs *g)
{
    gcs_objdir *d = esc_xcalloc(1, sizeof *d);
    d->objects = esc_strmap_new();
    d->by_node = esc_strmap_new();
    d->by_job = esc_strmap_new();
    d->waiting = esc_strmap_new();
    d->lost_unstored = esc_strmap_new();
    g->objdir = d;
}

void gcs_objects_load_lost(gcs *g, Escher__ObjectLocation *row)
{
    gcs_objdir *d = g->objdir;
    const gcs_job *j = gcs_job_find(g, row->job_id);
    bool valid = esc_object_id_valid(row->object_id) && *row->origin &&
                 !esc_strmap_get(d->objects, row->object_id);
    if (valid && j && j->info->state == ESCHER__JOB_STATE__JOB_RUNNING) {
        dir_obj *o = obj_new(d, row);
        o->lost = true;
    } else {
        lost_mark(d, row->object_id); /* its job ended while the GCS was down */
    }
    protobuf_c_message_free_unpacked(&row->base, NULL);
}

void gcs_objects_register(gcs *g)
{
    lost_flush(g); /* the rows of ended jobs found at load */
    esc_rpc_server_handle(g->server, &ESC_M_OBJECT_DIRECTORY_ADD_LOCATION, handle_add, g);
    esc_rpc_server_handle(g->server, &ESC_M_OBJECT_DIRECTORY_ADD_LOCATIONS, handle_add_batch,
                          g);
    esc_rpc_server_handle(g->server, &ESC_M_OBJECT_DIRECTORY_REMOVE_LOCATIONS,
                          handle_remove_batch, g);
    esc_rpc_server_handle(g->server, &ESC_M_OBJECT_DIRECTORY_REMOVE_LOCATION, handle_remove, g);
    esc_rpc_server_handle(g->server, &ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS, handle_get, g);
    esc_rpc_server_handle(g->server, &ESC_M_OBJECT_DIRECTORY_WAIT_OBJECTS, handle_wait_objects,
                          g);
}

void gcs_objects_close_all(gcs *g)
{
    gcs_objdir *d = g->objdir;
    size_t pos = 0;
    const char *k;
    void *v;
    while (d && d->groups) {
        esc_rpc_ctx_on_cancel(d->groups->call, NULL, NULL);
        esc_rpc_finish(d->groups->call, ESC_UNAVAILABLE, "gcs shutting down");
        group_free(d->groups);
    }
    while (d && esc_strmap_next(d->waiting, &pos, &k, &v)) {
        esc_strmap_del(d->waiting, k); /* deleting the entry just returned is allowed */
        for (dir_waiter *w = v, *next; w; w = next) {
            next = w->next;
            esc_rpc_finish(w->call, ESC_UNAVAILABLE, "gcs shutting down");
            waiter_free(g, w);
        }
    }
}

void gcs_objects_free(gcs *g)
{
    gcs_objdir *d = g->objdir;
    if (!d)
        return;
    gcs_objects_close_all(g);
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(d->objects, &pos, &k, &v))
        obj_drop(d, v); /* deleting the entry just returned is allowed */
    esc_strmap_free(d->objects);
    esc_strmap_free(d->by_node);
    esc_strmap_free(d->by_job);
    esc_strmap_free(d->waiting);
    esc_strmap_free(d->lost_unstored);
    free(d);
    g->objdir = NULL;
}
