/* actors.c: creating actors, calling their methods in order, killing them (escher.h).
 *
 * Creation is a task with actor_creation set, submitted to the local raylet like any
 * task (so it is placed by resources). Its host publishes its address in the GCS
 * key-value store (namespace "_actors"); a caller looks it up once and then sends every
 * method call straight to that raylet, one synchronous SubmitTask at a time, which is
 * what keeps a caller's calls in order (the order they start in, with max_concurrency
 * > 1). The host also publishes the actor's state line
 * (namespace "_actor_state"), which esc_actor_get_info reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "client_internal.h"
#include "ids.h"
#include "task.pb-c.h"
#include "xalloc.h"

#define ACTOR_KV_NS "_actors"
#define ACTOR_STATE_NS "_actor_state"
#define LOOKUP_TIMEOUT_MS 60000
#define CALL_TIMEOUT_MS 10000

struct esc_actor {
    char id[ESC_ID_HEX * 2 + 1];
    char *library;
    char address[300];       /* its raylet, once known */
    esc_ref *created;        /* the creation's return: an error object if it failed */
    uint64_t seq;            /* calls made, for actor_call_seq */
};

int esc_actor_create(esc_client *c, const esc_actor_spec *spec, esc_actor **out, esc_status *st)
{
    *out = NULL;
    if (!spec->library || !*spec->library)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "an actor needs its task library");
    /* The host keeps the init's arguments to run it again at each restart; a reference's
     * value is only lent to the first run. */
    for (size_t i = 0; i < spec->ninit_args; i++)
        if (spec->init_args[i].ref)
            return esc_status_set(st, ESC_INVALID_ARGUMENT,
                                  "an actor's init arguments are bytes, not references");
    if (spec->max_concurrency > ESC_ACTOR_MAX_CONCURRENCY)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "max_concurrency %u is over %d",
                              spec->max_concurrency, ESC_ACTOR_MAX_CONCURRENCY);
    esc_actor *a = esc_xcalloc(1, sizeof *a);
    esc_random_hex(a->id, ESC_ID_HEX);
    a->library = esc_xstrdup(spec->library);
    esc_task_spec t = {.name = spec->name ? spec->name : "actor", .library = spec->library,
                       .symbol = spec->init_symbol, .resources = spec->resources,
                       .nresources = spec->nresources, .args = spec->init_args,
                       .nargs = spec->ninit_args};
    esc_actor_creation how = {.actor_id = a->id, .max_restarts = spec->max_restarts,
                              .max_concurrency = spec->max_concurrency};
    int rc = esc_client_submit(c, &t, &how, &a->created, NULL, st);
    if (rc != ESC_OK) {
        esc_actor_free(a);
        return rc;
    }
    *out = a;
    return ESC_OK;
}

const char *esc_actor_id(const esc_actor *a)
{
    return a->id;
}

static const char *const STATE_NAMES[] = {"PENDING", "STARTING", "ALIVE", "RESTARTING",
                                          "DEAD"};

const char *esc_actor_state_name(esc_actor_state s)
{
    return (unsigned)s < sizeof STATE_NAMES / sizeof *STATE_NAMES ? STATE_NAMES[s] : "?";
}

/* Parses the host's line "<STATE> restarts=N max_restarts=M node=ID why=TEXT" (the
 * raylet's actor_manager.c writes it). Returns false when it is not one. */
static bool parse_info(const char *line, esc_actor_info *out)
{
    char state[16];
    int used = 0;
    if (sscanf(line, "%15s restarts=%u max_restarts=%u node=%127s why=%n", state,
               &out->restarts, &out->max_restarts, out->node_id, &used) != 4 || !used)
        return false;
    snprintf(out->why, sizeof out->why, "%s", line + used);
    for (size_t i = 1; i < sizeof STATE_NAMES / sizeof *STATE_NAMES; i++)
        if (!strcmp(state, STATE_NAMES[i])) {
            out->state = (esc_actor_state)i;
            return true;
        }
    return false;
}

int esc_actor_get_info(esc_client *c, const esc_actor *a, esc_actor_info *out, esc_status *st)
{
    return esc_actor_info_of(c, a->id, out, st);
}

int esc_actor_info_of(esc_client *c, const char *actor_id, esc_actor_info *out,
                      esc_status *st)
{
    memset(out, 0, sizeof *out);
    out->state = ESC_ACTOR_PENDING;
    void *v = NULL;
    size_t len = 0;
    int rc = esc_kv_get(c, ACTOR_STATE_NS, actor_id, &v, &len, st);
    if (rc == ESC_NOT_FOUND)
        return esc_status_set(st, ESC_OK, "%s", "not placed yet");
    if (rc != ESC_OK)
        return rc;
    bool ok = parse_info(v, out); /* esc_kv_get ends the value with a NUL */
    free(v);
    if (!ok)
        return esc_status_set(st, ESC_INTERNAL, "actor %s: unreadable state line", actor_id);
    return ESC_OK;
}

int esc_actor_list(esc_client *c, char ***ids, size_t *n, esc_status *st)
{
    return esc_kv_keys(c, ACTOR_STATE_NS, NULL, ids, n, st);
}

/* One look: ESC_OK with a->address when the actor's raylet is known and alive;
 * FAILED_PRECONDITION when its creation failed (st says why); NOT_FOUND otherwise. */
static int look(esc_client *c, esc_actor *a, esc_status *st)
{
    void *v = NULL;
    size_t len = 0;
    if (esc_kv_get(c, ACTOR_KV_NS, a->id, &v, &len, st) == ESC_OK) {
        snprintf(a->address, sizeof a->address, "%.*s", (int)len, (char *)v);
        free(v);
        if (!esc_client_is_dead(c, a->address))
            return ESC_OK;
        a->address[0] = 0; /* where it was: not restarted yet */
    }
    void *err = NULL;
    size_t elen;
    if (esc_get(c, a->created, 0, &err, &elen, st) == ESC_ABORTED)
        return ESC_FAILED_PRECONDITION;
    free(err);
    return ESC_NOT_FOUND;
}

/* Finds the actor's raylet: waits for its address in the key-value store, giving up
 * early when its creation failed. Between looks it waits for an event that may change
 * the answer: a write of its address or state line (a watch of both keys), or a change
 * on the owner stream (its creation's error, when this client created it). */
static int locate(esc_client *c, esc_actor *a, esc_status *st)
{
    if (a->address[0] && !esc_client_is_dead(c, a->address))
        return ESC_OK;
    /* Its node died: wait for the address of its restart (the raylet that placed it
     * creates it again while its restarts last), or for its creation's error. */
    a->address[0] = 0;
    int rc = look(c, a, st);
    if (rc != ESC_NOT_FOUND)
        return rc;
    uint64_t end = esc_now_ms() + LOOKUP_TIMEOUT_MS;
    esc_kv_filter kv[] = {{ACTOR_KV_NS, a->id}, {ACTOR_STATE_NS, a->id}};
    esc_watch_filter f = {.kv = kv, .nkv = 2};
    esc_changes *w = NULL;
    rc = esc_changes_start(c, &f, NULL, NULL, true, LOOKUP_TIMEOUT_MS, &w, st);
    while (rc == ESC_OK) {
        uint64_t mark = esc_changes_mark(w);
        rc = look(c, a, st);
        if (rc != ESC_NOT_FOUND)
            break;
        rc = ESC_OK;
        if (!esc_changes_wait(w, mark, end))
            rc = esc_status_set(st, ESC_DEADLINE_EXCEEDED, "actor %s was not placed in %d s",
                                a->id, LOOKUP_TIMEOUT_MS / 1000);
    }
    esc_changes_stop(w);
    return rc;
}

int esc_actor_call(esc_client *c, esc_actor *a, const char *method, const esc_task_arg *args,
                   size_t nargs, unsigned num_returns, esc_ref **refs, esc_status *st)
{
    int rc = locate(c, a, st);
    if (rc != ESC_OK)
        return rc;
    esc_task_spec t = {.name = method, .library = a->library, .symbol = method, .args = args,
                       .nargs = nargs, .num_returns = num_returns};
    return esc_client_submit_to(c, a->address, &t, a->id, ++a->seq, refs, st);
}

int esc_actor_kill(esc_client *c, esc_actor *a, esc_status *st)
{
    int rc = locate(c, a, st);
    if (rc != ESC_OK)
        return rc;
    Escher__KillActorRequest req = ESCHER__KILL_ACTOR_REQUEST__INIT;
    req.actor_id = a->id;
    Escher__KillActorReply *rep = NULL;
    rc = esc_rpc_call(esc_client_raylet_channel(c, a->address), &ESC_M_TASK_SERVICE_KILL_ACTOR,
                      &req.base, (ProtobufCMessage **)&rep, CALL_TIMEOUT_MS, 0, st);
    if (rc == ESC_OK && !rep->found)
        rc = esc_status_set(st, ESC_NOT_FOUND, "actor %s is not alive", a->id);
    if (rep)
        protobuf_c_message_free_unpacked(&rep->base, NULL);
    return rc;
}

/* The reply's holding as the caller's array of amounts (names copied). */
static void copy_holding(const Escher__ResizeActorReply *rep, esc_amount **held, size_t *nheld)
{
    esc_amount *v = esc_xcalloc(rep->n_resources + 1, sizeof *v);
    for (size_t i = 0; v && i < rep->n_resources; i++)
        v[i] = (esc_amount){.name = esc_xstrdup(rep->resources[i]->name),
                            .value = rep->resources[i]->value};
    *held = v;
    *nheld = v ? rep->n_resources : 0;
}

int esc_actor_resize(esc_client *c, esc_actor *a, const esc_amount *resources, size_t n,
                     int timeout_ms, esc_amount **held, size_t *nheld, esc_status *st)
{
    if (held)
        *held = NULL;
    if (nheld)
        *nheld = 0;
    if (!c || !a || (n && !resources) || timeout_ms < 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "esc_actor_resize: NULL client, actor or resources, or a "
                              "negative timeout");
    int rc = locate(c, a, st);
    if (rc != ESC_OK)
        return rc;
    Escher__ResizeActorRequest req = ESCHER__RESIZE_ACTOR_REQUEST__INIT;
    Escher__Amount *amounts = esc_xcalloc(n + 1, sizeof *amounts);
    Escher__Amount **ptrs = esc_xcalloc(n + 1, sizeof *ptrs);
    for (size_t i = 0; i < n; i++) {
        escher__amount__init(&amounts[i]);
        amounts[i].name = (char *)(resources[i].name ? resources[i].name : "");
        amounts[i].value = resources[i].value;
        ptrs[i] = &amounts[i];
    }
    req.actor_id = a->id;
    req.resources = ptrs;
    req.n_resources = n;
    req.timeout_ms = (uint32_t)timeout_ms;
    Escher__ResizeActorReply *rep = NULL;
    rc =
        esc_rpc_call(esc_client_raylet_channel(c, a->address), &ESC_M_TASK_SERVICE_RESIZE_ACTOR,
                     &req.base, (ProtobufCMessage **)&rep, CALL_TIMEOUT_MS + timeout_ms, 0, st);
    free(ptrs);
    free(amounts);
    if (rc == ESC_OK && held && nheld)
        copy_holding(rep, held, nheld);
    if (rep)
        protobuf_c_message_free_unpacked(&rep->base, NULL);
    return rc;
}

void esc_amounts_free(esc_amount *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free((char *)v[i].name);
    free(v);
}

void esc_actor_free(esc_actor *a)
{
    if (!a)
        return;
    esc_ref_free(a->created);
    free(a->library);
    free(a);
}
