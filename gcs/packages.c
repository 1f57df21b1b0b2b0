/* packages.c: jobs' packages (docs/tasks.md, "Packages"). The bytes are ordinary KV
 * entries in namespace "_packages", put by the driver (client/workdir.c); this module
 * names a package a job's own (SetJobPackage, stored in the job's row) and removes a
 * package's keys when the last job that names it ends, so content shared by many jobs
 * is stored once and lives exactly as long as one of them runs. */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pbutil.h"
#include "xalloc.h"

#define PKG_NS "_packages"
#define HASH_HEX 64

static bool hash_valid(const char *h)
{
    if (strlen(h) != HASH_HEX)
        return false;
    for (const char *p = h; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

static bool manifest_stored(gcs *g, const char *hash)
{
    char key[sizeof PKG_NS + HASH_HEX + 1];
    snprintf(key, sizeof key, PKG_NS "\n%s", hash);
    return esc_strmap_get(g->kv, key) != NULL;
}

/* A job row's package: rows are freed with protobuf_c_message_free_unpacked, which
 * leaves alone the static empty string of an unset field and frees anything else. */
static void row_set_package(Escher__JobInfo *info, const char *hash)
{
    if (info->package && info->package != protobuf_c_empty_string)
        free(info->package);
    info->package = esc_xstrdup(hash);
}

typedef struct {
    esc_rpc_ctx *call;
    Escher__JobInfo *info; /* the job's new row, owned until applied */
} pkg_call;

static void package_set(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)seq;
    pkg_call *c = ud;
    gcs_job *j = gcs_job_find(g, c->info->job_id);
    if (err) {
        esc_rpc_finish(c->call, ESC_UNAVAILABLE, err);
    } else {
        if (j)
            row_set_package(j->info, c->info->package);
        Escher__SetJobPackageReply rep = ESCHER__SET_JOB_PACKAGE_REPLY__INIT;
        esc_rpc_reply(c->call, &rep.base);
    }
    protobuf_c_message_free_unpacked(&c->info->base, NULL);
    free(c);
}

/* Why the request cannot be granted, or NULL (then *done tells a no-op). */
static const char *check_request(gcs *g, const Escher__SetJobPackageRequest *req, int *code,
                                 bool *done)
{
    gcs_job *j = gcs_job_find(g, req->job_id);
    *code = ESC_INVALID_ARGUMENT;
    *done = false;
    if (!hash_valid(req->hash))
        return "a package hash is 64 lowercase hex digits (SHA-256)";
    *code = ESC_NOT_FOUND;
    if (!j)
        return "unknown job";
    *code = ESC_FAILED_PRECONDITION;
    if (j->info->state != ESCHER__JOB_STATE__JOB_RUNNING)
        return "the job has ended";
    if (!strcmp(j->info->package, req->hash)) {
        *done = true;
        return NULL;
    }
    if (*j->info->package)
        return "the job has another package already";
    *code = ESC_NOT_FOUND;
    if (!manifest_stored(g, req->hash))
        return "no such package in the GCS (upload it first)";
    return NULL;
}

static void handle_set(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__SetJobPackageRequest *req = (const Escher__SetJobPackageRequest *)msg;
    int code;
    bool done;
    /* A package is the code the job's tasks run: only the job names it. */
    gcs_job *j = gcs_job_find(g, req->job_id);
    if (j && !gcs_auth_is_job(call, j, NULL)) {
        esc_rpc_finish(call, ESC_PERMISSION_DENIED,
                       "only the job itself (its credential) sets its package");
        return;
    }
    const char *why = check_request(g, req, &code, &done);
    if (why) {
        esc_rpc_finish(call, code, why);
        return;
    }
    if (done) {
        Escher__SetJobPackageReply rep = ESCHER__SET_JOB_PACKAGE_REPLY__INIT;
        esc_rpc_reply(call, &rep.base);
        return;
    }
    pkg_call *c = esc_xmalloc(sizeof *c);
    c->call = call;
    c->info = (Escher__JobInfo *)esc_pb_dup(&gcs_job_find(g, req->job_id)->info->base);
    row_set_package(c->info, req->hash);
    esc_storage_batch *b = esc_storage_batch_new();
    gcs_put_msg(b, GCS_T_JOBS, c->info->job_id, &c->info->base);
    gcs_write(g, b, package_set, c);
}

/* ------------------------------------------------------------------ removal */

static bool still_used(gcs *g, const char *hash)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->jobs, &pos, &k, &v)) {
        const gcs_job *j = v;
        if (j->info->state == ESCHER__JOB_STATE__JOB_RUNNING && !strcmp(j->info->package, hash))
            return true;
    }
    return false;
}

static void removed(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)g;
    (void)seq;
    char *hash = ud;
    if (err)
        ESC_WARN("package %s: its keys stay in storage: %s", hash, err);
    free(hash);
}

/* Its turn among the writes: the keys leave memory at once, so that a job naming the
 * package from now on is told to upload it again rather than find it gone later, and
 * storage follows. */
static void remove_run(gcs *g, void *ud)
{
    char *hash = ud;
    if (still_used(g, hash)) {
        free(hash);
        return;
    }
    char prefix[sizeof PKG_NS + HASH_HEX + 2];
    int plen = snprintf(prefix, sizeof prefix, PKG_NS "\n%s", hash);
    esc_storage_batch *b = esc_storage_batch_new();
    size_t pos = 0, n = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->kv, &pos, &k, &v)) {
        if (strncmp(k, prefix, (size_t)plen) || (k[plen] && k[plen] != '/'))
            continue;
        esc_storage_del(b, GCS_T_KV, k);
        free(esc_strmap_del(g->kv, k)); /* deleting the entry just returned is allowed */
        n++;
    }
    ESC_DEBUG("package %s: no job uses it, %zu keys removed", hash, n);
    gcs_write(g, b, removed, hash);
}

static void remove_expire(gcs *g, void *ud)
{
    (void)g;
    free(ud);
}

void gcs_packages_job_ended(gcs *g, const char *hash)
{
    if (hash && *hash && !still_used(g, hash))
        gcs_queue_write(g, remove_run, remove_expire, esc_xstrdup(hash));
}

void gcs_packages_register(gcs *g)
{
    gcs_handle_write(g, &ESC_M_GCS_SET_JOB_PACKAGE, handle_set);
}
