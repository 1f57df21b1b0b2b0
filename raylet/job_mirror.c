/* job_mirror.c: the running jobs, mirrored from the GCS event log (loop thread).
 *
 * The GCS sends a job's row (EV_JOB_UPDATED) when it registers and whenever its grants
 * change, EV_JOB_FINISHED when it ends, and every running job in a raylet's snapshot.
 * The rows carry the SHA-256 of each job's credential, never the credential: a task
 * proves its job by a credential whose hash matches. Hashing costs a few microseconds,
 * and a job sends the same credential with every task, so the last credential that
 * verified is kept per job: the hot path is a hash-map lookup and a constant-time
 * compare (docs/security.md, "Raylet checks"). */
#include "job_mirror.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "names.h"
#include "rpc.h"
#include "secret.h"
#include "strmap.h"
#include "xalloc.h"

#define MIRROR_MAX_CRED 128

/* A grant of the names that start with prefix (JobInfo.prefix_grants). */
typedef struct {
    char *grantee;
    char *prefix;
} mprefix;

typedef struct {
    char *job_id;
    char *ns;
    char hash[65];              /* SHA-256 of the credential, hex */
    char **grants;              /* jobs granted this job's whole namespace */
    size_t ngrants;
    mprefix *pgrants;           /* jobs granted only names with a prefix */
    size_t npgrants;
    char verified[MIRROR_MAX_CRED + 1]; /* last credential that matched hash; "" none */
} mjob;

struct job_mirror {
    esc_strmap *jobs;           /* job id -> mjob */
    esc_strmap *owners;         /* owned namespace -> mjob (not shared ones) */
};

/* Shared namespaces, as the GCS's gcs_ns_shared: "", `default`, the system's. */
static bool ns_shared(const char *ns)
{
    return !*ns || ns[0] == '_' || !strcmp(ns, "default");
}

static void mjob_free(mjob *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->ngrants; i++)
        free(j->grants[i]);
    free(j->grants);
    for (size_t i = 0; i < j->npgrants; i++) {
        free(j->pgrants[i].grantee);
        free(j->pgrants[i].prefix);
    }
    free(j->pgrants);
    free(j->job_id);
    free(j->ns);
    memset(j->verified, 0, sizeof j->verified);
    free(j);
}

job_mirror *job_mirror_new(void)
{
    job_mirror *m = esc_xcalloc(1, sizeof *m);
    m->jobs = esc_strmap_new();
    m->owners = esc_strmap_new();
    return m;
}

static void drop_all(job_mirror *m)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(m->jobs, &pos, &k, &v))
        mjob_free(v);
    esc_strmap_free(m->jobs);
    esc_strmap_free(m->owners);
    m->jobs = esc_strmap_new();
    m->owners = esc_strmap_new();
}

void job_mirror_free(job_mirror *m)
{
    if (!m)
        return;
    drop_all(m);
    esc_strmap_free(m->jobs);
    esc_strmap_free(m->owners);
    free(m);
}

static void forget(job_mirror *m, const char *job_id)
{
    mjob *j = esc_strmap_del(m->jobs, job_id);
    if (!j)
        return;
    if (esc_strmap_get(m->owners, j->ns) == j)
        esc_strmap_del(m->owners, j->ns);
    mjob_free(j);
}

/* Installs a running job's row, replacing what the mirror had for it; the verified
 * credential stays when the hash is unchanged (a grant change). */
static void put_row(job_mirror *m, const Escher__JobInfo *row)
{
    if (row->state != ESCHER__JOB_STATE__JOB_RUNNING || !*row->job_id)
        return;
    mjob *old = esc_strmap_get(m->jobs, row->job_id);
    mjob *j = esc_xcalloc(1, sizeof *j);
    j->job_id = esc_xstrdup(row->job_id);
    j->ns = esc_xstrdup(row->namespace_);
    snprintf(j->hash, sizeof j->hash, "%s", row->credential_sha256);
    j->grants = esc_xcalloc(row->n_grants + 1, sizeof *j->grants);
    for (size_t i = 0; i < row->n_grants; i++)
        j->grants[i] = esc_xstrdup(row->grants[i]);
    j->ngrants = row->n_grants;
    j->pgrants = esc_xcalloc(row->n_prefix_grants + 1, sizeof *j->pgrants);
    for (size_t i = 0; i < row->n_prefix_grants; i++)
        j->pgrants[i] = (mprefix){esc_xstrdup(row->prefix_grants[i]->grantee),
                                  esc_xstrdup(row->prefix_grants[i]->prefix)};
    j->npgrants = row->n_prefix_grants;
    if (old && !strcmp(old->hash, j->hash))
        memcpy(j->verified, old->verified, sizeof j->verified);
    forget(m, row->job_id);
    esc_strmap_put(m->jobs, j->job_id, j);
    if (!ns_shared(j->ns))
        esc_strmap_put(m->owners, j->ns, j);
}

void job_mirror_apply(job_mirror *m, const Escher__Event *ev)
{
    if (ev->kind == ESCHER__EVENT_KIND__EV_SNAPSHOT)
        drop_all(m); /* its rows are every running job */
    if (ev->kind == ESCHER__EVENT_KIND__EV_SNAPSHOT ||
        ev->kind == ESCHER__EVENT_KIND__EV_JOB_UPDATED)
        for (size_t i = 0; i < ev->n_jobs; i++)
            put_row(m, ev->jobs[i]);
    else if (ev->kind == ESCHER__EVENT_KIND__EV_JOB_FINISHED)
        forget(m, ev->job_id);
}

bool job_mirror_knows(const job_mirror *m, const char *job_id)
{
    return esc_strmap_get(m->jobs, job_id) != NULL;
}

/* Constant time (esc_secret_equal), so a guess learns nothing of the secret. */
static bool same_secret(const char *given, const char *want)
{
    return esc_secret_equal(given, strlen(given), want);
}

int job_mirror_verify(job_mirror *m, const char *job_id, const char *credential, char *why,
                      size_t len)
{
    mjob *j = esc_strmap_get(m->jobs, job_id);
    if (!j) {
        snprintf(why, len, "job %.40s is not running", job_id);
        return ESC_PERMISSION_DENIED;
    }
    if (*j->verified && same_secret(credential, j->verified))
        return ESC_OK;
    char h[65];
    if (*credential && strlen(credential) <= MIRROR_MAX_CRED) {
        esc_sha256_hex(credential, h);
        if (same_secret(h, j->hash)) {
            snprintf(j->verified, sizeof j->verified, "%s", credential);
            return ESC_OK;
        }
    }
    snprintf(why, len, "the credential presented is not job %.40s's", job_id);
    return ESC_PERMISSION_DENIED;
}

/* May job_id use `rest` (the name after "ns/") of o's namespace by a prefix grant?
 * *some tells whether it holds any. */
static bool prefix_covers(const mjob *o, const char *job_id, const char *rest, bool *some)
{
    *some = false;
    for (size_t i = 0; i < o->npgrants; i++) {
        if (strcmp(o->pgrants[i].grantee, job_id))
            continue;
        *some = true;
        if (!strncmp(rest, o->pgrants[i].prefix, strlen(o->pgrants[i].prefix)))
            return true;
    }
    return false;
}

/* The prefixes o granted job_id, quoted, into out (cut to fit): for a reason. */
static void prefix_list(const mjob *o, const char *job_id, char *out, size_t len)
{
    size_t used = 0;
    *out = 0;
    for (size_t i = 0; i < o->npgrants && used + 1 < len; i++) {
        if (strcmp(o->pgrants[i].grantee, job_id))
            continue;
        int w = snprintf(out + used, len - used, "%s\"%.40s\"", used ? ", " : "",
                         o->pgrants[i].prefix);
        used += w > 0 ? (size_t)w : 0;
    }
}

int job_mirror_resource_ok(const job_mirror *m, const char *job_id, const char *name,
                           bool *per_name, char *why, size_t len)
{
    if (per_name)
        *per_name = false;
    const char *slash = strchr(name, '/');
    if (!slash) /* physical, or a name without a namespace: nobody's */
        return ESC_OK;
    char ns[ESC_FULLNAME_MAX];
    size_t n = (size_t)(slash - name);
    if (n >= sizeof ns)
        n = sizeof ns - 1;
    memcpy(ns, name, n);
    ns[n] = 0;
    if (ns_shared(ns))
        return ESC_OK;
    const mjob *owner = esc_strmap_get(m->owners, ns);
    if (!owner || job_mirror_may_use(m, job_id, owner->job_id))
        return ESC_OK;
    bool some;
    bool ok = prefix_covers(owner, job_id, slash + 1, &some);
    if (per_name)
        *per_name = some; /* the verdict depends on the name: check each */
    if (ok)
        return ESC_OK;
    char prefixes[160];
    prefix_list(owner, job_id, prefixes, sizeof prefixes);
    if (some)
        snprintf(why, len, "resource %.130s is in namespace %.64s of job %.40s, which granted "
                 "job %.40s only names starting with %s", name, ns, owner->job_id, job_id,
                 prefixes);
    else
        snprintf(why, len, "resource %.130s is in namespace %.64s of job %.40s, which did not "
                 "grant it to job %.40s", name, ns, owner->job_id, job_id);
    return ESC_PERMISSION_DENIED;
}

bool job_mirror_may_use(const job_mirror *m, const char *job_id, const char *owner)
{
    if (!strcmp(job_id, owner))
        return true;
    const mjob *o = esc_strmap_get(m->jobs, owner);
    if (!o)
        return false;
    for (size_t i = 0; i < o->ngrants; i++)
        if (!strcmp(o->grants[i], job_id))
            return true;
    return false;
}

int job_mirror_caller(job_mirror *m, const esc_rpc_ctx *call, const char *body_job,
                      const char *body_credential, char *out, char *why, size_t len)
{
    char id[80] = "", cred[MIRROR_MAX_CRED + 1] = "";
    if (body_job && *body_job) {
        snprintf(id, sizeof id, "%s", body_job);
        snprintf(cred, sizeof cred, "%s", body_credential ? body_credential : "");
    } else if (!esc_rpc_ctx_metadata(call, ESC_RPC_JOB_KEY, id, sizeof id) || !*id) {
        *out = 0;
        return ESC_OK;
    } else {
        esc_rpc_ctx_metadata(call, ESC_RPC_CREDENTIAL_KEY, cred, sizeof cred);
    }
    int rc = job_mirror_verify(m, id, cred, why, len);
    memset(cred, 0, sizeof cred);
    snprintf(out, 80, "%s", rc == ESC_OK ? id : "");
    return rc;
}

int job_mirror_object_ok(job_mirror *m, const esc_rpc_ctx *call, const char *body_job,
                         const char *body_credential, const char *object_id,
                         const char *owner, char *why, size_t len)
{
    if (!*owner)
        return ESC_OK;
    char reader[80];
    int rc = job_mirror_caller(m, call, body_job, body_credential, reader, why, len);
    return rc != ESC_OK ? rc : job_mirror_reader_ok(m, reader, object_id, owner, why, len);
}

int job_mirror_reader_ok(const job_mirror *m, const char *reader, const char *object_id,
                         const char *owner, char *why, size_t len)
{
    if (!*owner || (*reader && job_mirror_may_use(m, reader, owner)))
        return ESC_OK;
    snprintf(why, len, "object %.80s belongs to job %.40s, which did not grant its namespace "
             "to %s%.40s", object_id, owner, *reader ? "job " : "a caller with no job", reader);
    return ESC_PERMISSION_DENIED;
}
