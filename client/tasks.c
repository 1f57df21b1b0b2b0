/* tasks.c: submitting, cancelling and waiting for tasks (escher.h). The return
 * references are known before the task runs: return i of task T is object
 * esc_return_id(T, i), which the raylet creates when T ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "ids.h"
#include "object.pb-c.h"
#include "pbutil.h"
#include "qty.h"
#include "strmap.h"
#include "task.pb-c.h"
#include "xalloc.h"

#define SUBMIT_TIMEOUT_MS 10000
#define MAX_RETURNS 1024 /* as the raylet */

static size_t count_strings(const char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

/* The spec's pointers borrow from `in`; only the arrays are allocated here. */
typedef struct {
    Escher__TaskSpec spec;
    Escher__FunctionRef fn;
    Escher__CommandRef cmd;
    Escher__Amount *amounts;
    Escher__Amount **amount_ptrs;
    Escher__TaskArg *args;
    Escher__TaskArg **arg_ptrs;
    esc_update_msg *ops;            /* on_success, when set */
    char task_id[ESC_ID_HEX * 2 + 1];
} spec_msg;

static void spec_msg_free(spec_msg *m)
{
    free(m->amounts);
    free(m->amount_ptrs);
    free(m->args);
    free(m->arg_ptrs);
    esc_update_msg_free(m->ops);
}

/* An actor's creation may name only a library: its init symbol is optional (an actor
 * without an init is ready at once, raylet/actor_manager.c), so `creation` lets a
 * function spec have no symbol. */
static int build_spec(esc_client *c, const esc_task_spec *in, bool creation, spec_msg *m,
                      esc_status *st)
{
    memset(m, 0, sizeof *m);
    bool is_fn = (in->symbol && *in->symbol) || (creation && in->library && *in->library);
    bool is_cmd = in->argv && in->argv[0];
    if (is_fn == is_cmd)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "a task is exactly one of a function (library, symbol) or a command");
    escher__task_spec__init(&m->spec);
    esc_random_hex(m->task_id, ESC_ID_HEX); /* 32 hex: ids of returns extend it */
    m->spec.task_id = m->task_id;
    m->spec.job_id = (char *)esc_client_job_id(c);
    m->spec.job_credential = c->credential;
    m->spec.job_seq = c->job_seq; /* lets a raylet wait for the job's event (job_mirror.c) */
    m->spec.name = (char *)(in->name ? in->name : is_fn ? in->symbol : in->argv[0]);
    m->spec.num_returns = in->num_returns ? in->num_returns : 1;
    m->spec.max_retries = in->max_retries;
    if (atomic_load_explicit(&c->package_state, memory_order_acquire) == 2)
        m->spec.package = (char *)c->package;
    if (is_fn) {
        escher__function_ref__init(&m->fn);
        m->fn.library = (char *)(in->library ? in->library : "");
        m->fn.symbol = (char *)(in->symbol ? in->symbol : "");
        m->spec.function = &m->fn;
    } else {
        escher__command_ref__init(&m->cmd);
        m->cmd.argv = (char **)in->argv;
        m->cmd.n_argv = count_strings(in->argv);
        m->cmd.env = (char **)in->env;
        m->cmd.n_env = count_strings(in->env);
        m->cmd.cwd = (char *)(in->cwd ? in->cwd : "");
        m->spec.command = &m->cmd;
    }
    m->amounts = esc_xcalloc(in->nresources + 1, sizeof *m->amounts);
    m->amount_ptrs = esc_xcalloc(in->nresources + 1, sizeof *m->amount_ptrs);
    for (size_t i = 0; i < in->nresources; i++) {
        escher__amount__init(&m->amounts[i]);
        m->amounts[i].name = (char *)in->resources[i].name;
        m->amounts[i].value = in->resources[i].value;
        m->amount_ptrs[i] = &m->amounts[i];
    }
    m->spec.resources = m->amount_ptrs;
    m->spec.n_resources = in->nresources;
    m->args = esc_xcalloc(in->nargs + 1, sizeof *m->args);
    m->arg_ptrs = esc_xcalloc(in->nargs + 1, sizeof *m->arg_ptrs);
    for (size_t i = 0; i < in->nargs; i++) {
        escher__task_arg__init(&m->args[i]);
        if (in->args[i].ref)
            m->args[i].object_id = (char *)esc_ref_id(in->args[i].ref);
        else
            m->args[i].data = (ProtobufCBinaryData){in->args[i].len, (uint8_t *)in->args[i].data};
        m->arg_ptrs[i] = &m->args[i];
    }
    m->spec.args = m->arg_ptrs;
    m->spec.n_args = in->nargs;
    if (in->on_success) {
        Escher__UpdateResourcesRequest *req = NULL;
        if (!(m->ops = esc_client_task_ops(c, in->on_success, &req, st)))
            return st ? st->code : ESC_INVALID_ARGUMENT;
        m->spec.on_success = req;
    }
    return ESC_OK;
}

/* The raylet's checks, made here too: submission is asynchronous, and a mistake in the
 * spec is best reported by the call that made it. */
static int check_request(const esc_task_spec *in, esc_status *st)
{
    if (in->num_returns > MAX_RETURNS)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "at most %d returns", MAX_RETURNS);
    for (size_t i = 0; i < in->nresources; i++) {
        const esc_amount *a = &in->resources[i];
        if (!a->name || !*a->name || a->value <= 0 || a->value > ESC_QTY_MAX || a->unbounded)
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "bad resource request '%.80s'",
                                  a->name ? a->name : "");
    }
    for (size_t i = 0; i < in->nargs; i++)
        if (in->args[i].ref == NULL && in->args[i].len && !in->args[i].data)
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "argument %zu has no data", i);
    return ESC_OK;
}

static esc_rpc_channel *local_raylet(esc_client *c, esc_status *st)
{
    char addr[300];
    if (esc_client_raylet_address(c, NULL, addr, sizeof addr, st) != ESC_OK)
        return NULL;
    return esc_client_raylet_channel(c, addr);
}

/* refs to the spec's returns (when refs is not NULL), and its task id. */
static void give_refs(const spec_msg *m, esc_ref **refs, char *task_id)
{
    for (unsigned i = 0; refs && i < m->spec.num_returns; i++) {
        char id[ESC_OBJECT_ID_MAX];
        esc_return_id(m->task_id, i, id, sizeof id);
        refs[i] = esc_ref_from_id(id);
    }
    if (task_id)
        snprintf(task_id, ESC_OBJECT_ID_MAX, "%s", m->task_id);
}

/* Sends a built spec to the raylet on ch; on ESC_OK fills refs (and task_id). */
static int send_spec(esc_rpc_channel *ch, spec_msg *m, esc_ref **refs, char *task_id,
                     esc_status *st)
{
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_TASK_SERVICE_SUBMIT_TASK, &m->spec.base, &rep,
                          SUBMIT_TIMEOUT_MS, 0, st);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    if (rc != ESC_OK)
        return rc;
    give_refs(m, refs, task_id);
    return ESC_OK;
}

int esc_client_submit(esc_client *c, const esc_task_spec *in, const esc_actor_creation *actor,
                      esc_ref **refs, char *task_id, esc_status *st)
{
    spec_msg m;
    int rc = build_spec(c, in, actor != NULL, &m, st);
    esc_rpc_channel *ch = rc == ESC_OK ? local_raylet(c, st) : NULL;
    if (rc == ESC_OK && !ch)
        rc = st ? st->code : ESC_UNAVAILABLE;
    if (rc == ESC_OK) {
        if (actor) {
            m.spec.actor_id = (char *)actor->actor_id;
            m.spec.actor_creation = true;
            m.spec.max_restarts = actor->max_restarts;
            m.spec.max_concurrency = actor->max_concurrency;
        }
        rc = send_spec(ch, &m, refs, task_id, st);
    }
    spec_msg_free(&m);
    return rc;
}

int esc_client_submit_to(esc_client *c, const char *address, const esc_task_spec *in,
                         const char *actor_id, uint64_t seq, esc_ref **refs, esc_status *st)
{
    spec_msg m;
    int rc = build_spec(c, in, false, &m, st);
    if (rc == ESC_OK) {
        m.spec.actor_id = (char *)actor_id;
        m.spec.actor_call_seq = seq;
        /* The actor's raylet tells the local one, which tells this client; if the actor's
         * node dies first, the client fails the call itself (client.c, node events). */
        esc_owner *o = esc_owner_get(c, NULL);
        if (o) {
            m.spec.owner_id = c->owner_id;
            m.spec.reply_to = (char *)esc_owner_raylet(o);
            esc_owner_expect(o, m.task_id, m.spec.num_returns, address);
        }
        rc = send_spec(esc_client_raylet_channel(c, address), &m, refs, NULL, st);
        for (unsigned i = 0; o && rc != ESC_OK && i < m.spec.num_returns; i++) {
            char id[ESC_OBJECT_ID_MAX];
            esc_return_id(m.task_id, i, id, sizeof id);
            esc_owner_forget(o, id);
        }
    }
    spec_msg_free(&m);
    return rc;
}

/* Packs the spec into a new buffer; NULL when it cannot be allocated. Its size is mostly
 * the caller's arguments: a checked malloc (escher.h, "Out of memory"). */
static void *pack_spec(const spec_msg *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(&m->spec.base);
    uint8_t *packed = malloc(*len ? *len : 1);
    if (packed)
        protobuf_c_message_pack(&m->spec.base, packed);
    return packed;
}

int esc_task_submit(esc_client *c, const esc_task_spec *in, esc_ref **refs, char *task_id,
                    esc_status *st)
{
    esc_status local;
    if (!st)
        st = &local; /* the owner's failure is read back */
    spec_msg m;
    if (check_request(in, st) != ESC_OK)
        return st->code;
    if (build_spec(c, in, false, &m, st) != ESC_OK) {
        spec_msg_free(&m);
        return st->code;
    }
    esc_owner *o = esc_owner_get(c, st);
    if (o) {
        m.spec.owner_id = c->owner_id;
        size_t len;
        void *packed = pack_spec(&m, &len);
        if (!packed) {
            spec_msg_free(&m);
            return esc_client_out_of_memory(st, len);
        }
        give_refs(&m, refs, task_id);
        esc_owner_submit(o, m.task_id, m.spec.num_returns, packed, len);
        esc_status_set(st, ESC_OK, NULL);
    }
    spec_msg_free(&m);
    return o ? ESC_OK : st->code;
}

/* CancelTask for the task that produces ref (if_queued: withdraw only if not started).
 * Fills *rep_out's flags. */
static int cancel_call(esc_client *c, const esc_ref *ref, bool if_queued, bool *found,
                       bool *started, esc_status *st)
{
    char task_id[ESC_OBJECT_ID_MAX];
    const char *id = esc_ref_id(ref);
    size_t len = strlen(id);
    if (len <= 4 || len - 4 >= sizeof task_id)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "not the return of a task");
    memcpy(task_id, id, len - 4);
    task_id[len - 4] = 0;
    /* A task still queued in this client must reach the raylet before it can be found. */
    esc_owner *o = esc_owner_peek(c);
    if (o)
        esc_owner_flush(o);
    esc_rpc_channel *ch = local_raylet(c, st);
    if (!ch)
        return st ? st->code : ESC_UNAVAILABLE;
    Escher__CancelTaskRequest req = ESCHER__CANCEL_TASK_REQUEST__INIT;
    req.task_id = task_id;
    req.if_queued = if_queued;
    Escher__CancelTaskReply *rep = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_TASK_SERVICE_CANCEL_TASK, &req.base,
                          (ProtobufCMessage **)&rep, SUBMIT_TIMEOUT_MS, 0, st);
    if (rc == ESC_OK) {
        *found = rep->found;
        *started = rep->started;
    }
    if (rep)
        protobuf_c_message_free_unpacked(&rep->base, NULL);
    return rc;
}

int esc_cancel(esc_client *c, const esc_ref *ref, esc_status *st)
{
    bool found = false, started = false;
    int rc = cancel_call(c, ref, false, &found, &started, st);
    if (rc == ESC_OK && !found)
        rc = esc_status_set(st, ESC_NOT_FOUND, "task of %s is not queued or running here",
                            esc_ref_id(ref));
    return rc;
}

int esc_task_withdraw(esc_client *c, const esc_ref *ref, esc_status *st)
{
    bool found = false, started = false;
    int rc = cancel_call(c, ref, true, &found, &started, st);
    if (rc != ESC_OK)
        return rc;
    if (started)
        return esc_status_set(st, ESC_FAILED_PRECONDITION, "the task of %s has started",
                              esc_ref_id(ref));
    if (!found)
        return esc_status_set(st, ESC_NOT_FOUND,
                              "the task of %s is not waiting (finished, or on its way to "
                              "another node)", esc_ref_id(ref));
    return esc_status_set(st, ESC_OK, NULL);
}

/* ------------------------------------------------------------------ prepared specs */

struct esc_prepared {
    Escher__TaskSpec *spec;         /* owned copy, with the caller's own resources */
};

esc_prepared *esc_task_prepare(esc_client *c, const esc_task_spec *in, esc_ref **refs,
                               esc_status *st)
{
    spec_msg m;
    if (check_request(in, st) != ESC_OK)
        return NULL;
    if (build_spec(c, in, false, &m, st) != ESC_OK) {
        spec_msg_free(&m);
        return NULL;
    }
    m.spec.owner_id = c->owner_id;
    esc_prepared *p = esc_xcalloc(1, sizeof *p);
    p->spec = (Escher__TaskSpec *)esc_pb_dup(&m.spec.base);
    give_refs(&m, refs, NULL);
    spec_msg_free(&m);
    return p;
}

int esc_prepared_submit(esc_client *c, esc_prepared *p, const esc_amount *extra, size_t n,
                        esc_status *st)
{
    esc_owner *o = esc_owner_get(c, st);
    if (!o)
        return st ? st->code : ESC_UNAVAILABLE;
    Escher__TaskSpec *s = p->spec;
    size_t own = s->n_resources;
    Escher__Amount *more = esc_xcalloc(n + 1, sizeof *more);
    Escher__Amount **all = esc_xcalloc(own + n + 1, sizeof *all);
    if (own)
        memcpy(all, s->resources, own * sizeof *all);
    for (size_t i = 0; i < n; i++) {
        escher__amount__init(&more[i]);
        more[i].name = (char *)extra[i].name;
        more[i].value = extra[i].value;
        all[own + i] = &more[i];
    }
    Escher__Amount **saved = s->resources;
    s->resources = all;
    s->n_resources = own + n;
    size_t len = protobuf_c_message_get_packed_size(&s->base);
    /* Mostly the caller's arguments: a checked malloc (escher.h, "Out of memory"). */
    uint8_t *packed = malloc(len ? len : 1);
    if (packed)
        protobuf_c_message_pack(&s->base, packed);
    s->resources = saved;
    s->n_resources = own;
    free(all);
    free(more);
    if (!packed)
        return esc_client_out_of_memory(st, len);
    esc_owner_submit(o, s->task_id, s->num_returns, packed, len);
    return esc_status_set(st, ESC_OK, NULL);
}

void esc_prepared_mark_entrypoint(esc_prepared *p, char *task_id)
{
    p->spec->job_entrypoint = true;
    snprintf(task_id, ESC_ID_MAX, "%s", p->spec->task_id);
}

void esc_prepared_free(esc_prepared *p)
{
    if (p) {
        protobuf_c_message_free_unpacked(&p->spec->base, NULL);
        free(p);
    }
}

/* ------------------------------------------------------------------ waiting */

#define DIR_ROUND_MS 60000  /* one WaitObjects of a wait without a limit */
#define CALL_SLACK_MS 2000  /* over a server-side wait, so the server answers first */

/* What esc_wait waits on, and how: each ref not ready yet is pending on the owner's
 * stream (the owner's poke wakes the wait) or unknown to it (only the directory can tell:
 * a WaitObjects call, cancelled by a poke when pokes matter).
 *
 * Why nothing is re-checked periodically. A pending ref waits on the stream alone, as
 * the stream's notice can only fail to come when:
 *  - the stream ends (the local raylet died or dropped it): the reader's end pokes the
 *    owner, the ref turns unknown and goes to the directory;
 *  - the raylet that was to pass the notice on died (an actor's raylet: its death,
 *    esc_owner_node_dead, fails the ref; a node further down a spill path: the local
 *    raylet sees the death and either runs the task again, which notifies, or finds it
 *    ended in the directory and notifies the owner itself, see task_manager.c
 *    on_checked);
 *  - a raylet on the way back could not be reached with the TasksDone: the sender keeps
 *    the notice and tells again once that raylet answers its probe, or drops it when the
 *    GCS declares that raylet's node dead, which is the case above (raylet/results.h).
 * So every lost notice ends in an event the owner sees, with no period. */
typedef struct {
    esc_client *c;
    esc_owner *o;
    const esc_ref *const *refs;
    size_t n, num_ready;
    uint64_t end;               /* esc_now_ms; UINT64_MAX: no limit */
    esc_waker *w;
    bool external;              /* return on w's pokes from outside the owner */
    uint64_t ext;
    bool *ready, *unknown;
    size_t nready;
    bool directory;             /* false once the directory refused for good */
} waiting;

/* Looks at the refs not ready yet in the owner's table. Returns how many only the
 * directory can tell of (unknown[i] set); *pending when some will come on the stream. */
static size_t look(waiting *wt, bool *pending)
{
    size_t nunknown = 0;
    *pending = false;
    wt->nready = 0;
    for (size_t i = 0; i < wt->n; i++) {
        if (!wt->ready[i]) {
            const char *id = esc_ref_id(wt->refs[i]);
            int s = wt->o ? esc_owner_state(wt->o, id) : ESC_OWNED_UNKNOWN;
            wt->ready[i] = s == ESC_OWNED_READY;
            wt->unknown[i] = s == ESC_OWNED_UNKNOWN;
            *pending |= s == ESC_OWNED_PENDING;
            nunknown += wt->unknown[i];
        }
        wt->nready += wt->ready[i];
    }
    return nunknown;
}

/* The distinct ids of the unknown refs (into ids, indexes by id in *index as i + 1). */
static size_t distinct_unknown(const waiting *wt, const char **ids, esc_strmap *index,
                               bool *repeats)
{
    size_t k = 0;
    *repeats = false;
    for (size_t i = 0; i < wt->n; i++) {
        if (wt->ready[i] || !wt->unknown[i])
            continue;
        const char *id = esc_ref_id(wt->refs[i]);
        if (esc_strmap_get(index, id)) {
            *repeats = true;
            continue;
        }
        ids[k] = id;
        esc_strmap_put(index, id, (void *)(uintptr_t)(k + 1));
        k++;
    }
    return k;
}

/* Marks the refs whose ids the reply names (a location, or lost: esc_get makes a lost
 * one again, so its task's end is what the reader waited for). */
static void take_answer(waiting *wt, const Escher__WaitObjectsReply *r, esc_strmap *index,
                        size_t k)
{
    bool *settled = esc_xcalloc(k + 1, sizeof *settled);
    for (size_t j = 0; j < r->n_ready; j++)
        if (r->ready[j] < k)
            settled[r->ready[j]] = true;
    for (size_t j = 0; j < r->n_lost; j++)
        if (r->lost[j] < k)
            settled[r->lost[j]] = true;
    for (size_t i = 0; i < wt->n; i++) {
        uintptr_t at = (uintptr_t)esc_strmap_get(index, esc_ref_id(wt->refs[i]));
        if (!wt->ready[i] && at && settled[at - 1]) {
            wt->ready[i] = true;
            wt->nready++;
        }
    }
    free(settled);
}

/* One WaitObjects call, as a stream so that a poke can cancel it (registered with the
 * waker when cancellable). Returns its code: CANCELLED when poked. */
static int directory_call(waiting *wt, const Escher__WaitObjectsRequest *req, uint64_t gen,
                          bool cancellable, Escher__WaitObjectsReply **out)
{
    esc_status st = {0};
    *out = NULL;
    esc_rpc_stream *s =
        esc_rpc_stream_open_timeout(wt->c->gcs, &ESC_M_OBJECT_DIRECTORY_WAIT_OBJECTS,
                                    &req->base, (int)req->wait_ms + CALL_SLACK_MS, &st);
    if (!s)
        return st.code;
    if (cancellable && !esc_waker_begin_call(wt->w, gen, s)) {
        esc_rpc_stream_free(s);
        return ESC_CANCELLED;
    }
    ProtobufCMessage *m = NULL;
    bool got = esc_rpc_stream_next(s, &m, &st);
    if (cancellable)
        esc_waker_end_call(wt->w);
    esc_rpc_stream_free(s);
    *out = (Escher__WaitObjectsReply *)m;
    return got ? ESC_OK : st.code ? st.code : ESC_INTERNAL;
}

/* Asks the directory about the unknown refs, held there up to wait_ms or until a poke
 * (when the owner may bring the rest, or the caller's pokes matter). */
static void ask_directory(waiting *wt, uint64_t gen, bool pending, int wait_ms)
{
    const char **ids = esc_xcalloc(wt->n + 1, sizeof *ids);
    esc_strmap *index = esc_strmap_new();
    bool repeats;
    size_t k = distinct_unknown(wt, ids, index, &repeats);
    size_t left = wt->num_ready - wt->nready;
    Escher__WaitObjectsRequest req = ESCHER__WAIT_OBJECTS_REQUEST__INIT;
    req.object_ids = (char **)ids;
    req.n_object_ids = k;
    /* A repeated id settles several refs: then each one that settles is looked at. */
    req.num_ready = (uint32_t)(repeats ? 1 : left < k ? left : k);
    req.wait_ms = wait_ms > 0 ? (uint32_t)wait_ms : 0;
    Escher__WaitObjectsReply *r = NULL;
    int rc = directory_call(wt, &req, gen, pending || wt->external, &r);
    if (rc == ESC_OK)
        take_answer(wt, r, index, k);
    else if (rc != ESC_CANCELLED && rc != ESC_UNAVAILABLE && rc != ESC_DEADLINE_EXCEEDED)
        wt->directory = false; /* refused (its objects never count): the rest still may */
    if (r)
        protobuf_c_message_free_unpacked(&r->base, NULL);
    esc_strmap_free(index);
    free(ids);
}

static int left_ms(uint64_t end, uint64_t now)
{
    if (end == UINT64_MAX)
        return DIR_ROUND_MS;
    return now >= end ? 0 : end - now > DIR_ROUND_MS ? DIR_ROUND_MS : (int)(end - now);
}

/* Until num_ready are ready, the deadline, or (external) a poke from outside. The
 * directory is asked at least once even with no time left: a wait of 0 is a look. */
static void wait_loop(waiting *wt)
{
    for (bool first = true;; first = false) {
        uint64_t ext;
        uint64_t gen = esc_waker_gen(wt->w, &ext);
        bool pending;
        size_t nunknown = look(wt, &pending);
        uint64_t now = esc_now_ms();
        if (wt->nready >= wt->num_ready || wt->nready == wt->n ||
            (wt->external && ext != wt->ext))
            return;
        bool over = now >= wt->end;
        if (nunknown && wt->directory && (first || !over)) {
            ask_directory(wt, gen, pending, left_ms(wt->end, now));
            if (wt->nready >= wt->num_ready)
                return;
            continue;
        }
        if (over)
            return;
        esc_waker_wait(wt->w, gen, wt->end);
    }
}

int esc_wait_woken(esc_client *c, const esc_ref *const *refs, size_t n, size_t num_ready,
                   int timeout_ms, esc_waker *w, uint64_t ext, bool *ready, size_t *nready,
                   esc_status *st)
{
    waiting wt = {.c = c, .o = esc_owner_peek(c), .refs = refs, .n = n,
                  .num_ready = num_ready, .w = w, .external = ext != UINT64_MAX, .ext = ext,
                  .ready = ready, .directory = true};
    wt.end = timeout_ms < 0 ? UINT64_MAX : esc_now_ms() + (uint64_t)timeout_ms;
    wt.unknown = esc_xcalloc(n + 1, sizeof *wt.unknown);
    if (wt.o)
        esc_owner_listen(wt.o, w);
    wait_loop(&wt);
    if (wt.o)
        esc_owner_unlisten(wt.o, w);
    free(wt.unknown);
    *nready = wt.nready;
    return esc_status_set(st, ESC_OK, NULL);
}

int esc_wait(esc_client *c, const esc_ref *const *refs, size_t n, size_t num_ready,
             int timeout_ms, bool *ready, size_t *nready, esc_status *st)
{
    esc_waker w;
    esc_waker_init(&w);
    int rc = esc_wait_woken(c, refs, n, num_ready, timeout_ms, &w, UINT64_MAX, ready, nready,
                            st);
    esc_waker_destroy(&w);
    return rc;
}
