/* list.c: the state API (escher.h, "state API"; docs/observability.md).
 *
 * Nodes and resources come from one GetClusterStatus, jobs from one ListJobs. Tasks,
 * actors and objects come from the raylets (TaskService.ListTasks, ListActors,
 * ObjectStore.ListObjects): the alive nodes are read from GetClusterStatus, then each is
 * asked in turn, one after the other with a deadline each, so a list costs one call per
 * node and a dead or hung node delays it by at most ESC_LIST_NODE_TIMEOUT_MS. Each raylet
 * applies the job and state filters and the limit itself (it never sends more rows than
 * the limit) and says how many rows matched; the merged rows are sorted and cut to the
 * limit here. */
#include "client_internal.h"
#include "fanout.h"
#include "object.pb-c.h"
#include "task.pb-c.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "xalloc.h"

/* ------------------------------------------------------------ filters */

static const char *const NODE_STATES[] = {"ALIVE", "DRAINING", "DEAD", NULL};
static const char *const JOB_STATES[] = {"RUNNING", "FINISHED", "FAILED", NULL};
static const char *const RESOURCE_STATES[] = {"PHYSICAL", "EPHEMERAL", NULL};
static const char *const TASK_STATES[] = {"QUEUED", "WAITING_FOR_ARGS", "RUNNING", "FINISHED",
                                          "FAILED", NULL};
static const char *const ACTOR_STATES[] = {"STARTING", "ALIVE", "RESTARTING", "DEAD", NULL};
static const char *const OBJECT_STATES[] = {"SEALED", "UNSEALED", NULL};

/* A filter checked and normalized: empty strings for "any", the state upper-cased. */
typedef struct {
    const char *job_id;
    const char *node_id;
    char state[32];
    size_t limit;
} filter;

static int bad_state(const char *kind, const char *state, const char *const *names,
                     esc_status *st)
{
    char list[160] = "";
    for (size_t i = 0; names[i]; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    }
    return esc_status_set(st, ESC_INVALID_ARGUMENT, "unknown %s state '%.40s' (one of: %s)",
                          kind, state, list);
}

/* kind names the list in messages; no_job / no_node: that filter does not apply. */
static int filter_init(filter *out, const esc_list_filter *f, const char *kind,
                       const char *const *states, bool no_job, bool no_node, esc_status *st)
{
    static const esc_list_filter none = {0};
    if (!f)
        f = &none;
    out->job_id = f->job_id ? f->job_id : "";
    out->node_id = f->node_id ? f->node_id : "";
    out->limit = f->limit ? f->limit : ESC_LIST_DEFAULT_LIMIT;
    out->state[0] = 0;
    if (no_job && *out->job_id)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a job filter does not apply to %s",
                              kind);
    if (no_node && *out->node_id)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a node filter does not apply to %s",
                              kind);
    const char *s = f->state ? f->state : "";
    if (strlen(s) >= sizeof out->state)
        return bad_state(kind, s, states, st);
    for (size_t i = 0; s[i]; i++)
        out->state[i] = (char)toupper((unsigned char)s[i]);
    out->state[strlen(s)] = 0;
    if (!*out->state)
        return ESC_OK;
    for (size_t i = 0; states[i]; i++)
        if (!strcmp(out->state, states[i]))
            return ESC_OK;
    return bad_state(kind, s, states, st);
}

/* Sets total and truncated, and cuts *n to the limit. */
static void cut(esc_list_info *info, size_t total, size_t *n, size_t limit)
{
    info->total = total > *n ? total : *n;
    if (*n > limit)
        *n = limit;
    info->truncated = info->total > *n;
}

static void add_unreachable(esc_list_info *info, const char *node_id)
{
    info->unreachable = esc_xrealloc(info->unreachable, (info->nunreachable + 2) * sizeof(char *));
    info->unreachable[info->nunreachable++] = esc_xstrdup(node_id);
    info->unreachable[info->nunreachable] = NULL;
}

static void info_free(esc_list_info *info)
{
    for (size_t i = 0; i < info->nunreachable; i++)
        free(info->unreachable[i]);
    free(info->unreachable);
}

/* ------------------------------------------------------------ nodes, resources */

static bool node_passes(const esc_node_status *n, const filter *f)
{
    return (!*f->node_id || !strcmp(f->node_id, n->id)) &&
           (!*f->state || !strcmp(f->state, n->state));
}

int esc_list_nodes(esc_client *c, const esc_list_filter *lf, esc_node_table **out,
                   esc_status *st)
{
    *out = NULL;
    filter f;
    int rc = filter_init(&f, lf, "nodes", NODE_STATES, true, false, st);
    esc_cluster_status *s = NULL;
    if (rc != ESC_OK || (rc = esc_get_cluster_resources(c, &s, st)) != ESC_OK)
        return rc;
    esc_node_table *l = esc_xcalloc(1, sizeof *l);
    l->status = s;
    l->nodes = esc_xcalloc(s->nnodes + 1, sizeof *l->nodes);
    for (size_t i = 0; i < s->nnodes; i++)
        if (node_passes(&s->nodes[i], &f))
            l->nodes[l->n++] = &s->nodes[i];
    cut(&l->info, l->n, &l->n, f.limit);
    *out = l;
    return esc_status_set(st, ESC_OK, NULL);
}

void esc_node_table_free(esc_node_table *l)
{
    if (!l)
        return;
    info_free(&l->info);
    free(l->nodes);
    esc_cluster_status_free(l->status);
    free(l);
}

static bool resource_passes(const esc_resource_info *r, const filter *f)
{
    if (*f->job_id && (!r->ephemeral || !r->owner || strcmp(f->job_id, r->owner) != 0))
        return false;
    if (!strcmp(f->state, "PHYSICAL"))
        return !r->ephemeral;
    if (!strcmp(f->state, "EPHEMERAL"))
        return r->ephemeral;
    return true;
}

int esc_list_resources(esc_client *c, const esc_list_filter *lf, esc_resource_table **out,
                       esc_status *st)
{
    *out = NULL;
    filter f;
    int rc = filter_init(&f, lf, "resources", RESOURCE_STATES, false, false, st);
    esc_cluster_status *s = NULL;
    if (rc != ESC_OK || (rc = esc_get_cluster_resources(c, &s, st)) != ESC_OK)
        return rc;
    esc_resource_table *l = esc_xcalloc(1, sizeof *l);
    l->status = s;
    size_t cap = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        cap += s->nodes[i].nresources;
    l->rows = esc_xcalloc(cap + 1, sizeof *l->rows);
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *n = &s->nodes[i];
        if (*f.node_id && strcmp(f.node_id, n->id) != 0)
            continue;
        for (size_t j = 0; j < n->nresources; j++)
            if (resource_passes(&n->resources[j], &f))
                l->rows[l->n++] = (esc_resource_row){n->id, &n->resources[j]};
    }
    cut(&l->info, l->n, &l->n, f.limit);
    *out = l;
    return esc_status_set(st, ESC_OK, NULL);
}

void esc_resource_table_free(esc_resource_table *l)
{
    if (!l)
        return;
    info_free(&l->info);
    free(l->rows);
    esc_cluster_status_free(l->status);
    free(l);
}

/* ------------------------------------------------------------ jobs */

/* Frees jobs[from..to) (the array itself stays). */
static void jobs_free_tail(esc_job_info *jobs, size_t from, size_t to)
{
    esc_job_info *tail = esc_xcalloc(to - from + 1, sizeof *tail);
    memcpy(tail, jobs + from, (to - from) * sizeof *tail);
    esc_jobs_free(tail, to - from);
}

static int job_newest_first(const void *a, const void *b)
{
    const esc_job_info *x = a, *y = b;
    if (x->start_ms != y->start_ms)
        return x->start_ms > y->start_ms ? -1 : 1;
    return strcmp(x->id, y->id);
}

int esc_list_jobs_filtered(esc_client *c, const esc_list_filter *lf, esc_job_table **out,
                           esc_status *st)
{
    *out = NULL;
    filter f;
    int rc = filter_init(&f, lf, "jobs", JOB_STATES, false, true, st);
    esc_job_info *jobs = NULL;
    size_t n = 0;
    if (rc != ESC_OK || (rc = esc_list_jobs(c, &jobs, &n, st)) != ESC_OK)
        return rc;
    /* Keep the matching rows at the front; free the others. */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        bool pass = (!*f.job_id || !strcmp(f.job_id, jobs[i].id)) &&
                    (!*f.state || !strcmp(f.state, jobs[i].state));
        esc_job_info tmp = jobs[kept];
        jobs[kept] = jobs[i];
        jobs[i] = tmp;
        kept += pass;
    }
    jobs_free_tail(jobs, kept, n);
    if (kept)
        qsort(jobs, kept, sizeof *jobs, job_newest_first);
    esc_job_table *l = esc_xcalloc(1, sizeof *l);
    l->jobs = jobs;
    l->n = kept;
    cut(&l->info, kept, &l->n, f.limit);
    jobs_free_tail(jobs, l->n, kept);
    *out = l;
    return esc_status_set(st, ESC_OK, NULL);
}

void esc_job_table_free(esc_job_table *l)
{
    if (!l)
        return;
    info_free(&l->info);
    esc_jobs_free(l->jobs, l->n);
    free(l);
}

/* ------------------------------------------------------------ asking the raylets */

/* The alive nodes to ask: every alive (or draining) one, or the filter's. */
typedef struct {
    char **ids, **addresses;
    size_t n;
} node_set;

static void node_set_free(node_set *ns)
{
    for (size_t i = 0; i < ns->n; i++) {
        free(ns->ids[i]);
        free(ns->addresses[i]);
    }
    free(ns->ids);
    free(ns->addresses);
}

static int nodes_to_ask(esc_client *c, const filter *f, node_set *out, esc_status *st)
{
    memset(out, 0, sizeof *out);
    esc_cluster_status *s = NULL;
    int rc = esc_get_cluster_resources(c, &s, st);
    if (rc != ESC_OK)
        return rc;
    out->ids = esc_xcalloc(s->nnodes + 1, sizeof *out->ids);
    out->addresses = esc_xcalloc(s->nnodes + 1, sizeof *out->addresses);
    for (size_t i = 0; i < s->nnodes; i++) {
        const esc_node_status *n = &s->nodes[i];
        if (!strcmp(n->state, "DEAD") || !*n->address ||
            (*f->node_id && strcmp(f->node_id, n->id) != 0))
            continue;
        out->ids[out->n] = esc_xstrdup(n->id);
        out->addresses[out->n++] = esc_xstrdup(n->address);
    }
    esc_cluster_status_free(s);
    if (*f->node_id && out->n == 0) {
        node_set_free(out);
        return esc_status_set(st, ESC_NOT_FOUND, "node %.80s is not an alive node of the cluster",
                              f->node_id);
    }
    return esc_status_set(st, ESC_OK, NULL);
}

/* One node's reply, handed to the kind's merge; returns ESC_OK, or a code that ends the
 * list (PERMISSION_DENIED, INVALID_ARGUMENT: every node would say the same). An
 * unreachable node is recorded and skipped. */
typedef void (*merge_fn)(void *acc, const ProtobufCMessage *reply);

static int ask_nodes(esc_client *c, const filter *f, const esc_rpc_method *method,
                     const ProtobufCMessage *req, esc_list_info *info, merge_fn merge,
                     void *acc, esc_status *st)
{
    node_set ns;
    int rc = nodes_to_ask(c, f, &ns, st);
    if (rc != ESC_OK)
        return rc;
    /* All nodes at once (fanout.h); the replies are merged in node order. */
    esc_fanout_result *r = esc_fanout_call(c, (const char *const *)ns.addresses, ns.n, method,
                                           req, ESC_LIST_NODE_TIMEOUT_MS, ESC_RPC_IDEMPOTENT);
    for (size_t i = 0; i < ns.n && rc == ESC_OK; i++) {
        if (r[i].code == ESC_OK)
            merge(acc, r[i].reply);
        else if (r[i].code == ESC_PERMISSION_DENIED || r[i].code == ESC_INVALID_ARGUMENT)
            rc = esc_status_set(st, r[i].code, "node %.40s: %s", ns.ids[i], r[i].st.message);
        else
            add_unreachable(info, ns.ids[i]);
    }
    esc_fanout_free(r, ns.n);
    node_set_free(&ns);
    return rc == ESC_OK ? esc_status_set(st, ESC_OK, NULL) : rc;
}

static esc_amount *copy_amounts(Escher__Amount *const *in, size_t n)
{
    esc_amount *out = esc_xcalloc(n + 1, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = (esc_amount){esc_xstrdup(in[i]->name), in[i]->value, in[i]->unbounded};
    return out;
}

static void amounts_free(esc_amount *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free((char *)a[i].name);
    free(a);
}

/* ------------------------------------------------------------ tasks */

typedef struct {
    esc_task_row *rows;
    size_t n, cap, total;
} task_acc;

static void merge_tasks(void *ud, const ProtobufCMessage *m)
{
    task_acc *a = ud;
    const Escher__ListTasksReply *r = (const Escher__ListTasksReply *)m;
    a->total += r->total;
    if (a->n + r->n_tasks + 1 > a->cap) {
        a->cap = 2 * (a->n + r->n_tasks + 1);
        a->rows = esc_xrealloc(a->rows, a->cap * sizeof *a->rows);
    }
    for (size_t i = 0; i < r->n_tasks; i++) {
        const Escher__TaskRow *t = r->tasks[i];
        a->rows[a->n++] = (esc_task_row){
            .task_id = esc_xstrdup(t->task_id), .job_id = esc_xstrdup(t->job_id),
            .name = esc_xstrdup(t->name), .state = esc_xstrdup(t->state), .node_id = esc_xstrdup(t->node_id),
            .actor_id = esc_xstrdup(t->actor_id),
            .resources = copy_amounts(t->resources, t->n_resources),
            .nresources = t->n_resources, .attempt = t->attempt,
            .max_retries = t->max_retries, .start_ms = t->start_ms, .end_ms = t->end_ms};
    }
}

/* Not ended first, by task id; then ended ones, latest end first. */
static int task_order(const void *x, const void *y)
{
    const esc_task_row *a = x, *b = y;
    if ((a->end_ms == 0) != (b->end_ms == 0))
        return a->end_ms == 0 ? -1 : 1;
    if (a->end_ms != b->end_ms)
        return a->end_ms > b->end_ms ? -1 : 1;
    return strcmp(a->task_id, b->task_id);
}

static void task_rows_free(esc_task_row *rows, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        esc_task_row *t = &rows[i];
        free(t->task_id);
        free(t->job_id);
        free(t->name);
        free(t->state);
        free(t->node_id);
        free(t->actor_id);
        amounts_free(t->resources, t->nresources);
    }
}

int esc_list_tasks(esc_client *c, const esc_list_filter *lf, esc_task_table **out,
                   esc_status *st)
{
    *out = NULL;
    filter f;
    int rc = filter_init(&f, lf, "tasks", TASK_STATES, false, false, st);
    if (rc != ESC_OK)
        return rc;
    Escher__ListStateRequest req = ESCHER__LIST_STATE_REQUEST__INIT;
    req.job_id = (char *)f.job_id;
    req.state = f.state;
    req.limit = (uint32_t)(f.limit > UINT32_MAX ? UINT32_MAX : f.limit);
    esc_task_table *l = esc_xcalloc(1, sizeof *l);
    task_acc acc = {0};
    rc = ask_nodes(c, &f, &ESC_M_TASK_SERVICE_LIST_TASKS, &req.base, &l->info, merge_tasks,
                   &acc, st);
    if (acc.n)
        qsort(acc.rows, acc.n, sizeof *acc.rows, task_order);
    l->rows = acc.rows;
    l->n = acc.n;
    cut(&l->info, acc.total, &l->n, f.limit);
    task_rows_free(acc.rows, l->n, acc.n);
    if (rc != ESC_OK) {
        esc_task_table_free(l);
        return rc;
    }
    *out = l;
    return ESC_OK;
}

void esc_task_table_free(esc_task_table *l)
{
    if (!l)
        return;
    info_free(&l->info);
    task_rows_free(l->rows, 0, l->n);
    free(l->rows);
    free(l);
}

/* ------------------------------------------------------------ actors */

typedef struct {
    esc_actor_row *rows;
    size_t n, cap, total;
} actor_acc;

static void merge_actors(void *ud, const ProtobufCMessage *m)
{
    actor_acc *a = ud;
    const Escher__ListActorsReply *r = (const Escher__ListActorsReply *)m;
    a->total += r->total;
    if (a->n + r->n_actors + 1 > a->cap) {
        a->cap = 2 * (a->n + r->n_actors + 1);
        a->rows = esc_xrealloc(a->rows, a->cap * sizeof *a->rows);
    }
    for (size_t i = 0; i < r->n_actors; i++) {
        const Escher__ActorRow *x = r->actors[i];
        a->rows[a->n++] = (esc_actor_row){
            .actor_id = esc_xstrdup(x->actor_id), .job_id = esc_xstrdup(x->job_id),
            .name = esc_xstrdup(x->name), .node_id = esc_xstrdup(x->node_id), .state = esc_xstrdup(x->state),
            .resources = copy_amounts(x->resources, x->n_resources),
            .nresources = x->n_resources, .pending_calls = x->pending_calls,
            .running_calls = x->running_calls, .restarts = x->restarts};
    }
}

static int actor_order(const void *x, const void *y)
{
    const esc_actor_row *a = x, *b = y;
    int d = strcmp(a->actor_id, b->actor_id);
    return d ? d : strcmp(a->node_id, b->node_id);
}

static void actor_rows_free(esc_actor_row *rows, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        esc_actor_row *a = &rows[i];
        free(a->actor_id);
        free(a->job_id);
        free(a->name);
        free(a->node_id);
        free(a->state);
        amounts_free(a->resources, a->nresources);
    }
}

int esc_list_actors(esc_client *c, const esc_list_filter *lf, esc_actor_table **out,
                    esc_status *st)
{
    *out = NULL;
    filter f;
    int rc = filter_init(&f, lf, "actors", ACTOR_STATES, false, false, st);
    if (rc != ESC_OK)
        return rc;
    Escher__ListStateRequest req = ESCHER__LIST_STATE_REQUEST__INIT;
    req.job_id = (char *)f.job_id;
    req.state = f.state;
    req.limit = (uint32_t)(f.limit > UINT32_MAX ? UINT32_MAX : f.limit);
    esc_actor_table *l = esc_xcalloc(1, sizeof *l);
    actor_acc acc = {0};
    rc = ask_nodes(c, &f, &ESC_M_TASK_SERVICE_LIST_ACTORS, &req.base, &l->info, merge_actors,
                   &acc, st);
    if (acc.n)
        qsort(acc.rows, acc.n, sizeof *acc.rows, actor_order);
    l->rows = acc.rows;
    l->n = acc.n;
    cut(&l->info, acc.total, &l->n, f.limit);
    actor_rows_free(acc.rows, l->n, acc.n);
    if (rc != ESC_OK) {
        esc_actor_table_free(l);
        return rc;
    }
    *out = l;
    return ESC_OK;
}

void esc_actor_table_free(esc_actor_table *l)
{
    if (!l)
        return;
    info_free(&l->info);
    actor_rows_free(l->rows, 0, l->n);
    free(l->rows);
    free(l);
}

/* ------------------------------------------------------------ objects */

/* Copies of one object on several nodes merge into one row (object id -> row index). */
typedef struct {
    esc_object_row *rows;
    size_t n, cap, total;
    esc_strmap *index;
} object_acc;

static void merge_object(object_acc *a, const Escher__ObjectRow *o)
{
    void *at = esc_strmap_get(a->index, o->object_id);
    esc_object_row *row;
    if (at) {
        row = &a->rows[(size_t)(uintptr_t)at - 1];
        a->total--; /* counted once per object, not per copy */
        row->sealed = row->sealed && o->sealed;
    } else {
        if (a->n + 1 > a->cap) {
            a->cap = 2 * (a->n + 1);
            a->rows = esc_xrealloc(a->rows, a->cap * sizeof *a->rows);
        }
        row = &a->rows[a->n++];
        *row = (esc_object_row){.object_id = esc_xstrdup(o->object_id), .job_id = esc_xstrdup(o->job_id),
                                .size = o->size, .sealed = o->sealed, .is_error = o->is_error};
        esc_strmap_put(a->index, o->object_id, (void *)(uintptr_t)a->n);
    }
    row->pinned = row->pinned || o->pinned;
    row->spilled = row->spilled || o->spilled;
    row->node_ids = esc_xrealloc(row->node_ids, (row->nnodes + 2) * sizeof *row->node_ids);
    row->node_ids[row->nnodes++] = esc_xstrdup(o->node_id);
    row->node_ids[row->nnodes] = NULL;
}

static void merge_objects(void *ud, const ProtobufCMessage *m)
{
    object_acc *a = ud;
    const Escher__ListObjectsReply *r = (const Escher__ListObjectsReply *)m;
    a->total += r->total;
    for (size_t i = 0; i < r->n_objects; i++)
        merge_object(a, r->objects[i]);
}

static int object_order(const void *x, const void *y)
{
    return strcmp(((const esc_object_row *)x)->object_id, ((const esc_object_row *)y)->object_id);
}

static void object_rows_free(esc_object_row *rows, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        free(rows[i].object_id);
        free(rows[i].job_id);
        for (size_t k = 0; k < rows[i].nnodes; k++)
            free(rows[i].node_ids[k]);
        free(rows[i].node_ids);
    }
}

int esc_list_objects(esc_client *c, const esc_list_filter *lf, esc_object_table **out,
                     esc_status *st)
{
    *out = NULL;
    filter f;
    int rc = filter_init(&f, lf, "objects", OBJECT_STATES, false, false, st);
    if (rc != ESC_OK)
        return rc;
    Escher__ListObjectsRequest req = ESCHER__LIST_OBJECTS_REQUEST__INIT;
    req.job_id = (char *)f.job_id;
    req.state = f.state;
    req.limit = (uint32_t)(f.limit > UINT32_MAX ? UINT32_MAX : f.limit);
    esc_object_table *l = esc_xcalloc(1, sizeof *l);
    object_acc acc = {.index = esc_strmap_new()};
    rc = ask_nodes(c, &f, &ESC_M_OBJECT_STORE_LIST_OBJECTS, &req.base, &l->info, merge_objects,
                   &acc, st);
    esc_strmap_free(acc.index);
    if (acc.n)
        qsort(acc.rows, acc.n, sizeof *acc.rows, object_order);
    l->rows = acc.rows;
    l->n = acc.n;
    cut(&l->info, acc.total, &l->n, f.limit);
    object_rows_free(acc.rows, l->n, acc.n);
    if (rc != ESC_OK) {
        esc_object_table_free(l);
        return rc;
    }
    *out = l;
    return ESC_OK;
}

void esc_object_table_free(esc_object_table *l)
{
    if (!l)
        return;
    info_free(&l->info);
    object_rows_free(l->rows, 0, l->n);
    free(l->rows);
    free(l);
}
