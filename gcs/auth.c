/* auth.c: who a call comes from, and what it may touch (docs/security.md).
 *
 * The cluster token (rpc_server.c) only admits a caller. A job proves that it is itself
 * with the credential the GCS issued at RegisterJob, sent on every call as metadata
 * (x-escher-job, x-escher-job-credential); the GCS keeps only its SHA-256. A namespace
 * is owned by the running job registered in it: only that job, and jobs it granted the
 * namespace, touch its resources and KV. `default`, namespaces starting with '_' (the
 * system's: _actors, _jobs, _packages...) and namespaces no running job owns are
 * shared. */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "secret.h"
#include "xalloc.h"

#define AUTH_MAX_CRED 128
#define AUTH_MAX_ID 80

void gcs_auth_hash(const char *credential, char out[65])
{
    esc_sha256_hex(credential, out);
}

char *gcs_auth_new_credential(char hash_out[65])
{
    char *cred = esc_xmalloc(2 * GCS_CREDENTIAL_BYTES + 1);
    if (esc_random_hex(cred, GCS_CREDENTIAL_BYTES) != 0) {
        free(cred);
        return NULL;
    }
    gcs_auth_hash(cred, hash_out);
    return cred;
}

/* Constant time (esc_secret_equal), so a wrong guess learns nothing of the stored hash. */
static bool same_hash(const char *a, const char *b)
{
    return strlen(b) == 64 && esc_secret_equal(a, strlen(a), b);
}

bool gcs_auth_matches(const gcs_job *j, const char *credential)
{
    if (!j || !credential || !*credential || !j->info->credential_sha256)
        return false;
    char h[65];
    gcs_auth_hash(credential, h);
    return same_hash(h, j->info->credential_sha256);
}

bool gcs_auth_is_job(const esc_rpc_ctx *call, const gcs_job *j, const char *body_credential)
{
    if (body_credential && *body_credential)
        return gcs_auth_matches(j, body_credential);
    char id[AUTH_MAX_ID], cred[AUTH_MAX_CRED];
    if (!esc_rpc_ctx_metadata(call, ESC_RPC_JOB_KEY, id, sizeof id) ||
        !esc_rpc_ctx_metadata(call, ESC_RPC_CREDENTIAL_KEY, cred, sizeof cred))
        return false;
    bool ok = j && !strcmp(id, j->info->job_id) && gcs_auth_matches(j, cred);
    memset(cred, 0, sizeof cred);
    return ok;
}

bool gcs_auth_is_operator(gcs *g, const esc_rpc_ctx *call, char *why, size_t len)
{
    if (!g->cfg.operator_key) {
        snprintf(why, len, "operator stops are off: this GCS was started without an operator "
                 "key (--operator-key-file)");
        return false;
    }
    if (esc_rpc_ctx_secret_is(call, ESC_RPC_OPERATOR_KEY, g->cfg.operator_key))
        return true;
    snprintf(why, len, "an operator stop needs the operator key (%s: $ESCHER_OPERATOR_KEY or "
             "the session's `operator` file)", ESC_RPC_OPERATOR_KEY);
    return false;
}

int gcs_auth_caller(gcs *g, const esc_rpc_ctx *call, gcs_job **out, char *why, size_t len)
{
    *out = NULL;
    char id[AUTH_MAX_ID];
    if (!esc_rpc_ctx_metadata(call, ESC_RPC_JOB_KEY, id, sizeof id) || !*id)
        return ESC_OK; /* no job: a reader, a daemon */
    gcs_job *j = gcs_job_find(g, id);
    if (!gcs_auth_is_job(call, j, NULL)) {
        snprintf(why, len, "the call names job %.40s without its credential", id);
        return ESC_PERMISSION_DENIED;
    }
    *out = j;
    return ESC_OK;
}

int gcs_auth_reader(gcs *g, const esc_rpc_ctx *call, const char *body_job,
                    const char *body_credential, char *out, size_t outlen, char *why,
                    size_t len)
{
    *out = 0;
    if (body_job && *body_job) {
        if (!gcs_auth_matches(gcs_job_find(g, body_job), body_credential)) {
            snprintf(why, len, "the call acts for job %.40s without its credential", body_job);
            return ESC_PERMISSION_DENIED;
        }
        snprintf(out, outlen, "%s", body_job);
        return ESC_OK;
    }
    gcs_job *j = NULL;
    int rc = gcs_auth_caller(g, call, &j, why, len);
    if (rc == ESC_OK && j)
        snprintf(out, outlen, "%s", j->info->job_id);
    return rc;
}

bool gcs_ns_shared(const char *ns)
{
    return !*ns || ns[0] == '_' || !strcmp(ns, GCS_SHARED_NS);
}

gcs_job *gcs_ns_owner(gcs *g, const char *ns)
{
    if (gcs_ns_shared(ns))
        return NULL;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->jobs, &pos, &k, &v)) {
        gcs_job *j = v;
        if (j->info->state == ESCHER__JOB_STATE__JOB_RUNNING && !strcmp(j->info->namespace_, ns))
            return j;
    }
    return NULL;
}

bool gcs_ns_granted(const gcs_job *owner, const char *job_id)
{
    for (size_t i = 0; owner && job_id && i < owner->info->n_grants; i++)
        if (!strcmp(owner->info->grants[i], job_id))
            return true;
    return false;
}

/* The prefixes owner granted job_id, quoted, into out (cut to fit): for a reason. */
static void prefix_list(const gcs_job *owner, const char *job_id, char *out, size_t len)
{
    size_t used = 0;
    *out = 0;
    for (size_t i = 0; i < owner->info->n_prefix_grants && used + 1 < len; i++) {
        const Escher__PrefixGrant *pg = owner->info->prefix_grants[i];
        if (strcmp(pg->grantee, job_id))
            continue;
        int w = snprintf(out + used, len - used, "%s\"%.40s\"", used ? ", " : "", pg->prefix);
        used += w > 0 ? (size_t)w : 0;
    }
}

int gcs_grant_covers(const gcs_job *owner, const char *job_id, const char *name, char *why,
                     size_t len)
{
    if (gcs_ns_granted(owner, job_id))
        return ESC_OK;
    bool some = false;
    for (size_t i = 0; job_id && i < owner->info->n_prefix_grants; i++) {
        const Escher__PrefixGrant *pg = owner->info->prefix_grants[i];
        if (strcmp(pg->grantee, job_id))
            continue;
        some = true;
        if (name && !strncmp(name, pg->prefix, strlen(pg->prefix)))
            return ESC_OK;
    }
    if (!some) {
        snprintf(why, len, "namespace %.64s belongs to job %.40s, which has not granted it to "
                 "%s%.40s", owner->info->namespace_, owner->info->job_id,
                 job_id ? "job " : "a caller with no job", job_id ? job_id : "");
        return ESC_PERMISSION_DENIED;
    }
    char prefixes[160];
    prefix_list(owner, job_id, prefixes, sizeof prefixes);
    if (name)
        snprintf(why, len, "job %.40s granted job %.40s only names starting with %s in "
                 "namespace %.64s, not \"%.80s\"", owner->info->job_id, job_id, prefixes,
                 owner->info->namespace_, name);
    else
        snprintf(why, len, "job %.40s granted job %.40s only names starting with %s in "
                 "namespace %.64s, not the whole namespace", owner->info->job_id, job_id,
                 prefixes, owner->info->namespace_);
    return ESC_PERMISSION_DENIED;
}

int gcs_ns_access(gcs *g, const gcs_job *caller, const char *ns, const char *name, char *why,
                  size_t len)
{
    gcs_job *owner = gcs_ns_owner(g, ns);
    if (!owner || owner == caller)
        return ESC_OK;
    if (caller && !strcmp(caller->info->namespace_, ns))
        return ESC_OK;
    return gcs_grant_covers(owner, caller ? caller->info->job_id : NULL, name, why, len);
}
