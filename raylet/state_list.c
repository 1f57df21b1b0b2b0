/* state_list.c: the state API's raylet side (docs/observability.md, "State API: escher
 * list"): TaskService.ListTasks and ListActors, ObjectStore.ListObjects.
 *
 * Each answers from this raylet's own tables only; libescher (client/list.c) asks every
 * alive node and merges. A task is listed by the raylet where it is: queued here,
 * waiting for its argument objects, running, or ended here lately (the ring of ended
 * rows, bounded by --ended-tasks). A task forwarded elsewhere is that node's row, so a
 * merged list counts it once.
 *
 * Visibility (the same rule as reading objects, docs/security.md): a caller in a job
 * (its metadata credential, checked against the mirror of the jobs) sees its own job's
 * rows and those of jobs that granted it their whole namespace; a caller with no job
 * (the CLI, an operator's tool) sees every row. No row carries a task's arguments,
 * environment or credential. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor_manager.h"
#include "config.h"
#include "ids.h"
#include "job_mirror.h"
#include "object.pb-c.h"
#include "object_service.h"
#include "object_store.h"
#include "task_internal.h"
#include "xalloc.h"

/* ------------------------------------------------------------ rows */

/* What a row calls the task: its name, else its function, else its program. Never
 * more of a command line than argv[0]: the rest may hold secrets. */
static const char *task_name(const Escher__TaskSpec *s)
{
    if (s->name && *s->name)
        return s->name;
    if (s->function && s->function->symbol && *s->function->symbol)
        return s->function->symbol;
    if (s->command && s->command->n_argv)
        return s->command->argv[0];
    return "";
}

static Escher__Amount **copy_amounts(Escher__Amount *const *in, size_t n)
{
    Escher__Amount **out = esc_xcalloc(n + 1, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i] = esc_xmalloc(sizeof *out[i]);
        escher__amount__init(out[i]);
        out[i]->name = esc_xstrdup(in[i]->name);
        out[i]->value = in[i]->value;
        out[i]->unbounded = in[i]->unbounded;
    }
    return out;
}

/* A new row for e (free with protobuf_c_message_free_unpacked). */
static Escher__TaskRow *task_row(const task_manager *tm, const task_entry *e,
                                 const char *state)
{
    const Escher__TaskSpec *s = e->spec;
    Escher__TaskRow *row = esc_xmalloc(sizeof *row);
    escher__task_row__init(row);
    row->task_id = esc_xstrdup(s->task_id);
    row->job_id = esc_xstrdup(s->job_id);
    row->name = esc_xstrdup(task_name(s));
    row->state = esc_xstrdup(state);
    row->node_id = esc_xstrdup(tm->r->node_id);
    row->resources = copy_amounts(s->resources, s->n_resources);
    row->n_resources = s->n_resources;
    row->attempt = s->attempt;
    row->max_retries = s->max_retries;
    row->start_ms = e->start_ms;
    row->actor_id = esc_xstrdup(s->actor_creation && s->actor_id ? s->actor_id : "");
    return row;
}

void task_list_record_end(task_manager *tm, const task_entry *e, bool ok)
{
    size_t cap = (size_t)tm->r->cfg.ended_tasks;
    if (cap == 0)
        return;
    if (!tm->ended_rows) {
        tm->ended_rows = esc_xcalloc(cap, sizeof *tm->ended_rows);
        tm->ended_cap = cap;
    }
    Escher__TaskRow *row = task_row(tm, e, ok ? "FINISHED" : "FAILED");
    row->end_ms = esc_wall_ms();
    Escher__TaskRow **slot = &tm->ended_rows[tm->ended_next];
    if (*slot)
        protobuf_c_message_free_unpacked(&(*slot)->base, NULL);
    *slot = row;
    tm->ended_next = (tm->ended_next + 1) % tm->ended_cap;
}

void task_list_free(task_manager *tm)
{
    for (size_t i = 0; i < tm->ended_cap; i++)
        if (tm->ended_rows[i])
            protobuf_c_message_free_unpacked(&tm->ended_rows[i]->base, NULL);
    free(tm->ended_rows);
}

/* ------------------------------------------------------------ filters */

static const char *const TASK_STATES[] = {"QUEUED", "WAITING_FOR_ARGS", "RUNNING", "FINISHED",
                                          "FAILED", NULL};
static const char *const ACTOR_STATES[] = {"STARTING", "ALIVE", "RESTARTING", "DEAD", NULL};
static const char *const OBJECT_STATES[] = {"SEALED", "UNSEALED", NULL};

/* One request's filters, with the caller's verified job. */
typedef struct {
    raylet *r;
    char caller[80];     /* "" no job: sees every row */
    const char *job_id;  /* "" any */
    const char *state;   /* "" any */
    uint32_t limit;      /* 0 every row */
    uint32_t total;      /* rows that matched */
} list_filter;

static bool state_known(const char *state, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(state, *names))
            return true;
    return false;
}

/* Checks the request and the caller; answers the call and returns false when refused. */
static bool filter_init(list_filter *f, raylet *r, esc_rpc_ctx *call, const char *job_id,
                        const char *state, uint32_t limit, const char *const *states)
{
    *f = (list_filter){.r = r, .job_id = job_id ? job_id : "", .state = state ? state : "",
                       .limit = limit};
    char why[300];
    if (*f->state && !state_known(f->state, states)) {
        snprintf(why, sizeof why, "unknown state '%.40s'", f->state);
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, why);
        return false;
    }
    if (job_mirror_caller(r->jobs, call, NULL, NULL, f->caller, why, sizeof why) != ESC_OK) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return false;
    }
    return true;
}

/* Whether a row of job `owner` in `state` passes: visible to the caller, and matching. */
static bool filter_pass(list_filter *f, const char *owner, const char *state)
{
    if (*f->caller && !job_mirror_may_use(f->r->jobs, f->caller, owner))
        return false;
    if (*f->job_id && strcmp(f->job_id, owner) != 0)
        return false;
    if (*f->state && strcmp(f->state, state) != 0)
        return false;
    f->total++;
    return true;
}

/* Whether a passing row still goes into the reply (the limit counts them). */
static bool filter_room(const list_filter *f, size_t n)
{
    return f->limit == 0 || n < f->limit;
}

/* ------------------------------------------------------------ ListTasks */

typedef struct {
    list_filter f;
    task_manager *tm;
    Escher__TaskRow **rows;
    size_t n, cap;
} task_rows;

static void add_task_row(task_rows *t, Escher__TaskRow *row)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->rows = esc_xrealloc(t->rows, t->cap * sizeof *t->rows);
    }
    t->rows[t->n++] = row;
}

static void add_live_task(task_rows *t, const task_entry *e, const char *state)
{
    if (filter_pass(&t->f, e->spec->job_id, state) && filter_room(&t->f, t->n))
        add_task_row(t, task_row(t->tm, e, state));
}

static void add_map(task_rows *t, esc_strmap *m, const char *state)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(m, &pos, &k, &v))
        add_live_task(t, v, state);
}

/* Ended rows are copied into the reply: the ring keeps its own. */
static Escher__TaskRow *copy_row(const Escher__TaskRow *in)
{
    size_t len = protobuf_c_message_get_packed_size(&in->base);
    uint8_t *buf = esc_xmalloc(len ? len : 1);
    protobuf_c_message_pack(&in->base, buf);
    Escher__TaskRow *out = escher__task_row__unpack(NULL, len, buf);
    free(buf);
    return out;
}

static void add_ended(task_rows *t)
{
    task_manager *tm = t->tm;
    /* Newest first: the ring's slot before ended_next is the latest end. */
    for (size_t i = 1; i <= tm->ended_cap; i++) {
        const Escher__TaskRow *row =
            tm->ended_rows[(tm->ended_next + tm->ended_cap - i) % tm->ended_cap];
        if (row && filter_pass(&t->f, row->job_id, row->state) && filter_room(&t->f, t->n))
            add_task_row(t, copy_row(row));
    }
}

void task_list_handle_tasks(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__ListStateRequest *rq = (const Escher__ListStateRequest *)msg;
    task_rows t = {.tm = tm};
    if (!filter_init(&t.f, tm->r, call, rq->job_id, rq->state, rq->limit, TASK_STATES))
        return;
    for (task_entry *e = task_queued_from(admission_first(tm->r->admission)); e;
         e = task_queued_from(e->q.next))
        add_live_task(&t, e, "QUEUED");
    add_map(&t, tm->fetching, "WAITING_FOR_ARGS");
    add_map(&t, tm->running, "RUNNING");
    add_ended(&t);
    Escher__ListTasksReply rep = ESCHER__LIST_TASKS_REPLY__INIT;
    rep.tasks = t.rows;
    rep.n_tasks = t.n;
    rep.total = t.f.total;
    esc_rpc_reply(call, &rep.base);
    for (size_t i = 0; i < t.n; i++)
        protobuf_c_message_free_unpacked(&t.rows[i]->base, NULL);
    free(t.rows);
}

/* ------------------------------------------------------------ ListActors */

typedef struct {
    list_filter f;
    task_manager *tm;
    Escher__ActorRow **rows;
    size_t n, cap;
} actor_rows;

static void add_actor(void *ud, const actor_row *a)
{
    actor_rows *t = ud;
    if (!filter_pass(&t->f, a->job_id, a->state) || !filter_room(&t->f, t->n))
        return;
    Escher__ActorRow *row = esc_xmalloc(sizeof *row);
    escher__actor_row__init(row);
    row->actor_id = esc_xstrdup(a->actor_id);
    row->job_id = esc_xstrdup(a->job_id);
    row->name = esc_xstrdup(a->name ? a->name : "");
    row->node_id = esc_xstrdup(t->tm->r->node_id);
    row->state = esc_xstrdup(a->state);
    row->pending_calls = a->pending_calls;
    row->running_calls = a->running_calls;
    row->restarts = a->restarts;
    /* What it holds: its creation's entry while it lives (a resize changes it there). */
    const task_entry *e = esc_strmap_get(t->tm->actors, a->actor_id);
    if (e) {
        row->resources = copy_amounts(e->spec->resources, e->spec->n_resources);
        row->n_resources = e->spec->n_resources;
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->rows = esc_xrealloc(t->rows, t->cap * sizeof *t->rows);
    }
    t->rows[t->n++] = row;
}

void task_list_handle_actors(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__ListStateRequest *rq = (const Escher__ListStateRequest *)msg;
    actor_rows t = {.tm = tm};
    if (!filter_init(&t.f, tm->r, call, rq->job_id, rq->state, rq->limit, ACTOR_STATES))
        return;
    actor_manager_each(tm->r->actors, add_actor, &t);
    Escher__ListActorsReply rep = ESCHER__LIST_ACTORS_REPLY__INIT;
    rep.actors = t.rows;
    rep.n_actors = t.n;
    rep.total = t.f.total;
    esc_rpc_reply(call, &rep.base);
    for (size_t i = 0; i < t.n; i++)
        protobuf_c_message_free_unpacked(&t.rows[i]->base, NULL);
    free(t.rows);
}

/* ------------------------------------------------------------ ListObjects */

typedef struct {
    list_filter f;
    Escher__ObjectRow **rows;
    size_t n, cap;
} object_rows;

static void add_object(void *ud, const object_row *o)
{
    object_rows *t = ud;
    if (!filter_pass(&t->f, o->job_id, o->sealed ? "SEALED" : "UNSEALED") ||
        !filter_room(&t->f, t->n))
        return;
    Escher__ObjectRow *row = esc_xmalloc(sizeof *row);
    escher__object_row__init(row);
    row->object_id = esc_xstrdup(o->id);
    row->job_id = esc_xstrdup(o->job_id);
    row->size = o->size;
    row->node_id = esc_xstrdup(t->f.r->node_id);
    row->sealed = o->sealed;
    row->pinned = o->pinned;
    row->is_error = o->is_error;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->rows = esc_xrealloc(t->rows, t->cap * sizeof *t->rows);
    }
    t->rows[t->n++] = row;
}

void state_list_handle_objects(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    raylet *r = ud;
    const Escher__ListObjectsRequest *rq = (const Escher__ListObjectsRequest *)msg;
    object_rows t = {0};
    if (!filter_init(&t.f, r, call, rq->job_id, rq->state, rq->limit, OBJECT_STATES))
        return;
    object_service_each(r->objects, add_object, &t);
    Escher__ListObjectsReply rep = ESCHER__LIST_OBJECTS_REPLY__INIT;
    rep.objects = t.rows;
    rep.n_objects = t.n;
    rep.total = t.f.total;
    esc_rpc_reply(call, &rep.base);
    for (size_t i = 0; i < t.n; i++)
        protobuf_c_message_free_unpacked(&t.rows[i]->base, NULL);
    free(t.rows);
}
