/* task_cancel.c: cancel, withdraw and kill (task_internal.h). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor_manager.h"
#include "ids.h"
#include "peers.h"
#include "results.h"
#include "secret.h"
#include "task_internal.h"
#include "worker_pool.h"
#include "xalloc.h"

/* Constant time (esc_secret_equal), so a guess learns nothing of the credential. */
static bool same_secret(const char *given, const char *want)
{
    return esc_secret_equal(given, strlen(given), want);
}

/* Only the task's job cancels or withdraws it (docs/security.md): the caller shows the
 * credential that the task's spec carries, in the request (a raylet passing a withdraw
 * on) or as metadata (the job's client). A task this raylet does not hold, or one whose
 * spec has no credential, has nothing to check here. */
static bool cancel_allowed(task_manager *tm, esc_rpc_ctx *call,
                           const Escher__CancelTaskRequest *req)
{
    task_entry *e = task_find_queued(tm, req->task_id);
    if (!e)
        e = esc_strmap_get(tm->fetching, req->task_id);
    if (!e)
        e = esc_strmap_get(tm->running, req->task_id);
    if (!e)
        e = esc_strmap_get(tm->spilled, req->task_id);
    if (!e || !*e->spec->job_credential)
        return true;
    char cred[160];
    const char *given = req->job_credential;
    if (!*given) {
        esc_rpc_ctx_metadata(call, ESC_RPC_CREDENTIAL_KEY, cred, sizeof cred);
        given = cred;
    }
    bool ok = same_secret(given, e->spec->job_credential);
    memset(cred, 0, sizeof cred);
    return ok;
}

typedef struct {
    task_manager *tm;
    esc_rpc_ctx *call;
    char task_id[ESC_OBJECT_ID_MAX];
} withdraw_ctx;
/* The raylet the task was forwarded to answered: pass it on; withdrawn there means
 * forgotten here too. */
static void on_withdrawn_there(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    withdraw_ctx *w = ud;
    const Escher__CancelTaskReply *r = (const Escher__CancelTaskReply *)reply;
    if (code != ESC_OK) {
        esc_rpc_finish(w->call, code, st->message);
    } else {
        if (r->found && !r->started) {
            task_entry *e = esc_strmap_del(w->tm->spilled, w->task_id);
            if (e)
                task_entry_free(e);
        }
        esc_rpc_reply(w->call, &r->base);
    }
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    free(w);
}

/* Withdraws a task that has not started: queued, waiting for arguments, or forwarded
 * (then the raylet it went to decides, once it holds the task: task_spill.c). */
void task_cancel_withdraw(task_manager *tm, esc_rpc_ctx *call, const char *task_id)
{
    Escher__CancelTaskReply rep = ESCHER__CANCEL_TASK_REPLY__INIT;
    task_entry *e = task_find_queued(tm, task_id);
    if (e)
        task_dequeue(tm, e);
    else
        e = esc_strmap_del(tm->fetching, task_id);
    if (e) {
        task_entry_free(e);
        rep.found = true;
    } else if (esc_strmap_get(tm->running, task_id)) {
        rep.found = rep.started = true;
    } else if ((e = esc_strmap_get(tm->spilled, task_id)) && e->spilled_addr) {
        if (task_spill_hold_withdraw(e, call))
            return;
        withdraw_ctx *w = esc_xcalloc(1, sizeof *w);
        *w = (withdraw_ctx){.tm = tm, .call = call};
        snprintf(w->task_id, sizeof w->task_id, "%s", task_id);
        Escher__CancelTaskRequest fwd = ESCHER__CANCEL_TASK_REQUEST__INIT;
        fwd.task_id = w->task_id;
        fwd.if_queued = true;
        fwd.job_credential = e->spec->job_credential;
        peers_call(tm->r->peers, peers_get(tm->r->peers, e->spilled_addr),
                   &ESC_M_TASK_SERVICE_CANCEL_TASK, &fwd.base, 0, 0, on_withdrawn_there, w);
        return;
    }
    esc_rpc_reply(call, &rep.base);
}

void task_cancel_handle(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__CancelTaskRequest *req = (const Escher__CancelTaskRequest *)msg;
    if (!cancel_allowed(tm, call, req)) {
        char why[200];
        snprintf(why, sizeof why, "task %.80s belongs to another job (its credential is needed)",
                 req->task_id);
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    if (req->if_queued) {
        char id[ESC_OBJECT_ID_MAX];
        snprintf(id, sizeof id, "%s", req->task_id);
        task_cancel_withdraw(tm, call, id);
        return;
    }
    Escher__CancelTaskReply rep = ESCHER__CANCEL_TASK_REPLY__INIT;
    task_entry *e = task_find_queued(tm, req->task_id);
    if (e) {
        task_dequeue(tm, e);
        task_list_record_end(tm, e, false);
        results_store_error(tm->r->results, e->spec, "cancelled");
        task_entry_free(e);
        rep.found = true;
    } else {
        rep.found = worker_pool_cancel(tm->r->pool, req->task_id);
    }
    esc_rpc_reply(call, &rep.base);
}

bool task_actor_caller_ok(task_manager *tm, esc_rpc_ctx *call, const char *actor_id, char *why,
                          size_t len)
{
    /* Only the actor's job: the caller shows the credential of its creation. */
    const char *want = actor_manager_credential(tm->r->actors, actor_id);
    char cred[160];
    esc_rpc_ctx_metadata(call, ESC_RPC_CREDENTIAL_KEY, cred, sizeof cred);
    bool ok = !want || !*want || same_secret(cred, want);
    memset(cred, 0, sizeof cred);
    if (!ok)
        snprintf(why, len, "actor %.80s belongs to another job (its credential is needed)",
                 actor_id);
    return ok;
}

void task_cancel_handle_kill_actor(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    task_manager *tm = ud;
    const Escher__KillActorRequest *req = (const Escher__KillActorRequest *)msg;
    char why[200];
    if (!task_actor_caller_ok(tm, call, req->actor_id, why, sizeof why)) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, why);
        return;
    }
    Escher__KillActorReply rep = ESCHER__KILL_ACTOR_REPLY__INIT;
    rep.found = actor_manager_kill(tm->r->actors, req->actor_id, "killed");
    esc_rpc_reply(call, &rep.base);
}
