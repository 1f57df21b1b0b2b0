/* grants.c: GrantNamespace. A job lets another job use its namespace (resources, KV)
 * and can take that back; the grants are part of the granting job's row, stored, and
 * end with it (docs/security.md). */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbutil.h"

/* A grant change on its way to storage: the row to install once stored. */
typedef struct {
    esc_rpc_ctx *call;
    char *job_id;
    Escher__JobInfo *row; /* owned until installed */
} grant_call;

static void grant_stored(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)seq;
    grant_call *c = ud;
    gcs_job *j = gcs_job_find(g, c->job_id);
    if (err) {
        esc_rpc_finish(c->call, ESC_UNAVAILABLE, err);
    } else {
        if (j) {
            protobuf_c_message_free_unpacked(&j->info->base, NULL);
            j->info = c->row;
            c->row = NULL;
        }
        Escher__GrantNamespaceReply rep = ESCHER__GRANT_NAMESPACE_REPLY__INIT;
        rep.changed = true;
        esc_rpc_reply(c->call, &rep.base);
    }
    if (c->row)
        protobuf_c_message_free_unpacked(&c->row->base, NULL);
    free(c->job_id);
    free(c);
}

/* The job's row with grantee added or removed (a copy to store). */
static Escher__JobInfo *row_with(const gcs_job *j, const char *grantee, bool revoke)
{
    Escher__JobInfo *row = (Escher__JobInfo *)esc_pb_dup(&j->info->base);
    if (revoke) {
        size_t k = 0;
        for (size_t i = 0; i < row->n_grants; i++) {
            if (!strcmp(row->grants[i], grantee))
                free(row->grants[i]);
            else
                row->grants[k++] = row->grants[i];
        }
        row->n_grants = k;
    } else {
        row->grants = realloc(row->grants, (row->n_grants + 1) * sizeof *row->grants);
        row->grants[row->n_grants++] = strdup(grantee);
    }
    return row;
}

/* Refuses what is not a change a running job may make; returns the job or NULL. */
static gcs_job *grant_check(gcs *g, esc_rpc_ctx *call, const Escher__GrantNamespaceRequest *req)
{
    gcs_job *j = gcs_job_find(g, req->job_id);
    char msg[300];
    if (!j || j->info->state != ESCHER__JOB_STATE__JOB_RUNNING) {
        snprintf(msg, sizeof msg, "job %.40s is not running", req->job_id);
        esc_rpc_finish(call, ESC_FAILED_PRECONDITION, msg);
        return NULL;
    }
    if (!gcs_auth_is_job(call, j, NULL)) {
        snprintf(msg, sizeof msg, "only job %.40s itself (its credential) grants its namespace",
                 req->job_id);
        esc_rpc_finish(call, ESC_PERMISSION_DENIED, msg);
        return NULL;
    }
    if (gcs_ns_shared(j->info->namespace_)) {
        snprintf(msg, sizeof msg, "namespace %.64s is shared already; nothing to grant",
                 j->info->namespace_);
        esc_rpc_finish(call, ESC_FAILED_PRECONDITION, msg);
        return NULL;
    }
    gcs_job *to = gcs_job_find(g, req->grantee);
    if (!req->revoke && (!to || to->info->state != ESCHER__JOB_STATE__JOB_RUNNING)) {
        snprintf(msg, sizeof msg, "no running job %.40s to grant to", req->grantee);
        esc_rpc_finish(call, ESC_NOT_FOUND, msg);
        return NULL;
    }
    return j;
}

static void handle_grant(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__GrantNamespaceRequest *req = (const Escher__GrantNamespaceRequest *)msg;
    gcs_job *j = grant_check(g, call, req);
    if (!j)
        return;
    if (gcs_ns_granted(j, req->grantee) != req->revoke ||
        !strcmp(req->grantee, j->info->job_id)) {
        Escher__GrantNamespaceReply rep = ESCHER__GRANT_NAMESPACE_REPLY__INIT;
        esc_rpc_reply(call, &rep.base); /* already so: changed = false */
        return;
    }
    grant_call *c = calloc(1, sizeof *c);
    c->call = call;
    c->job_id = strdup(j->info->job_id);
    c->row = row_with(j, req->grantee, req->revoke);
    esc_storage_batch *b = esc_storage_batch_new();
    gcs_put_msg(b, GCS_T_JOBS, c->row->job_id, &c->row->base);
    /* Through the log: the raylets check tasks against the grants (job_mirror.c). */
    gcs_commit(g, gcs_job_event(c->row), b, NULL, grant_stored, c);
}

void gcs_grants_register(gcs *g)
{
    gcs_handle_write(g, "GrantNamespace", handle_grant);
}
