/* grants.c: GrantNamespace. A job lets another job use its namespace (resources, KV),
 * whole or only the names that start with a prefix, and can take that back; the grants
 * are part of the granting job's row (JobInfo.grants, JobInfo.prefix_grants), stored,
 * and end with it (docs/security.md). */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbutil.h"
#include "xalloc.h"

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

/* Removes every grant to grantee from row, whole and prefix. */
static void row_revoke(Escher__JobInfo *row, const char *grantee)
{
    size_t k = 0;
    for (size_t i = 0; i < row->n_grants; i++) {
        if (!strcmp(row->grants[i], grantee))
            free(row->grants[i]);
        else
            row->grants[k++] = row->grants[i];
    }
    row->n_grants = k;
    k = 0;
    for (size_t i = 0; i < row->n_prefix_grants; i++) {
        Escher__PrefixGrant *pg = row->prefix_grants[i];
        if (!strcmp(pg->grantee, grantee))
            protobuf_c_message_free_unpacked(&pg->base, NULL);
        else
            row->prefix_grants[k++] = pg;
    }
    row->n_prefix_grants = k;
}

static void row_add_prefix(Escher__JobInfo *row, const char *grantee, const char *prefix)
{
    Escher__PrefixGrant pg = ESCHER__PREFIX_GRANT__INIT;
    pg.grantee = (char *)grantee;
    pg.prefix = (char *)prefix;
    row->prefix_grants = esc_xrealloc(row->prefix_grants,
                                 (row->n_prefix_grants + 1) * sizeof *row->prefix_grants);
    row->prefix_grants[row->n_prefix_grants++] = (Escher__PrefixGrant *)esc_pb_dup(&pg.base);
}

/* The job's row after the request (a copy to store). A whole grant replaces the
 * grantee's prefix grants: it covers them, and a revoke removes both anyway. */
static Escher__JobInfo *row_with(const gcs_job *j, const Escher__GrantNamespaceRequest *req)
{
    Escher__JobInfo *row = (Escher__JobInfo *)esc_pb_dup(&j->info->base);
    if (req->revoke) {
        row_revoke(row, req->grantee);
    } else if (*req->prefix) {
        row_add_prefix(row, req->grantee, req->prefix);
    } else {
        row_revoke(row, req->grantee);
        row->grants = esc_xrealloc(row->grants, (row->n_grants + 1) * sizeof *row->grants);
        row->grants[row->n_grants++] = esc_xstrdup(req->grantee);
    }
    return row;
}

/* True when the row already says what the request asks: nothing to store. */
static bool grant_unchanged(const gcs_job *j, const Escher__GrantNamespaceRequest *req)
{
    if (!strcmp(req->grantee, j->info->job_id))
        return true; /* a job always uses its own namespace */
    bool whole = gcs_ns_granted(j, req->grantee), prefix = false, same = false;
    for (size_t i = 0; i < j->info->n_prefix_grants; i++) {
        const Escher__PrefixGrant *pg = j->info->prefix_grants[i];
        if (strcmp(pg->grantee, req->grantee))
            continue;
        prefix = true;
        same = same || !strcmp(pg->prefix, req->prefix);
    }
    if (req->revoke)
        return !whole && !prefix;
    return whole || (*req->prefix && same); /* a whole grant covers every prefix */
}

/* A prefix is at most as long as a KV key, printable; a job holds a bounded number of prefix grants
 * (its row travels whole in every grant change and snapshot). */
#define GRANT_MAX_PREFIX 1024
#define GRANT_MAX_PREFIX_GRANTS 256

static bool prefix_ok(esc_rpc_ctx *call, const gcs_job *j,
                      const Escher__GrantNamespaceRequest *req)
{
    if (strlen(req->prefix) > GRANT_MAX_PREFIX) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "grant prefix longer than 1024 bytes");
        return false;
    }
    /* Refusals quote the prefix on one line: no control characters in it. */
    for (const unsigned char *p = (const unsigned char *)req->prefix; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "grant prefix holds a control character");
            return false;
        }
    if (*req->prefix && j->info->n_prefix_grants >= GRANT_MAX_PREFIX_GRANTS) {
        esc_rpc_finish(call, ESC_RESOURCE_EXHAUSTED,
                       "this job holds 256 prefix grants already; revoke some first");
        return false;
    }
    return true;
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
    if (!req->revoke && !prefix_ok(call, j, req))
        return NULL;
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
    if (grant_unchanged(j, req)) {
        Escher__GrantNamespaceReply rep = ESCHER__GRANT_NAMESPACE_REPLY__INIT;
        esc_rpc_reply(call, &rep.base); /* already so: changed = false */
        return;
    }
    grant_call *c = esc_xcalloc(1, sizeof *c);
    c->call = call;
    c->job_id = esc_xstrdup(j->info->job_id);
    c->row = row_with(j, req);
    esc_storage_batch *b = esc_storage_batch_new();
    gcs_put_msg(b, GCS_T_JOBS, c->row->job_id, &c->row->base);
    /* Through the log: the raylets check tasks against the grants (job_mirror.c). */
    gcs_commit(g, gcs_job_event(c->row), b, NULL, grant_stored, c);
}

void gcs_grants_register(gcs *g)
{
    gcs_handle_write(g, &ESC_M_GCS_GRANT_NAMESPACE, handle_grant);
}
