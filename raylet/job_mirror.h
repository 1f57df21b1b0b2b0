/* job_mirror.h: the running jobs as this raylet knows them from the GCS event log
 * (job_mirror.c): namespace, credential hash and grants, to check locally who a task,
 * an actor call or an object read comes from (docs/security.md, "Raylet checks"). */
#ifndef RAYLET_JOB_MIRROR_H
#define RAYLET_JOB_MIRROR_H

#include <stdbool.h>
#include <stddef.h>

#include "gcs.pb-c.h"
#include "rpc.h"

typedef struct job_mirror job_mirror;

job_mirror *job_mirror_new(void);
void job_mirror_free(job_mirror *m);
/* Applies an event that changes the jobs (EV_JOB_UPDATED, EV_JOB_FINISHED,
 * EV_SNAPSHOT); other events are ignored. */
void job_mirror_apply(job_mirror *m, const Escher__Event *ev);
/* True when job_id is a running job of the mirror. */
bool job_mirror_knows(const job_mirror *m, const char *job_id);
/* ESC_OK when credential is running job job_id's; else PERMISSION_DENIED with a one-line
 * why. The last credential that verified is kept per job, so a repeat costs one
 * constant-time compare instead of a SHA-256. */
int job_mirror_verify(job_mirror *m, const char *job_id, const char *credential, char *why,
                      size_t len);
/* ESC_OK when job_id may consume resource `name` (a full "ns/name", or a physical name):
 * a shared namespace, one no running job owns, its own, one whose owner granted it to
 * job_id, or a name (after "ns/") starting with a prefix its owner granted job_id
 * (JobInfo.prefix_grants). Else PERMISSION_DENIED with why. *per_name (may be NULL) is
 * set when the verdict holds for this name only (a prefix grant), not for every name of
 * its namespace. */
int job_mirror_resource_ok(const job_mirror *m, const char *job_id, const char *name,
                           bool *per_name, char *why, size_t len);
/* True when job_id may touch what job `owner` made (actors, objects): the same job, or
 * a job that owner granted its whole namespace (a prefix grant does not count). */
bool job_mirror_may_use(const job_mirror *m, const char *job_id, const char *owner);

/* The job a call acts for, verified, into out (80 bytes; "" when the call names none):
 * body_job with body_credential when body_job is set (a raylet acting for a task's job),
 * else the call's metadata (a client). PERMISSION_DENIED with why when the credential is
 * not that running job's. */
int job_mirror_caller(job_mirror *m, const esc_rpc_ctx *call, const char *body_job,
                      const char *body_credential, char *out, char *why, size_t len);
/* ESC_OK when the call (job_mirror_caller's) may read or free an object of job `owner`
 * ("" none: everyone's); else PERMISSION_DENIED with why. */
int job_mirror_object_ok(job_mirror *m, const esc_rpc_ctx *call, const char *body_job,
                         const char *body_credential, const char *object_id,
                         const char *owner, char *why, size_t len);
/* The same for a reader already verified (job_mirror_caller's out; "" none). */
int job_mirror_reader_ok(const job_mirror *m, const char *reader, const char *object_id,
                         const char *owner, char *why, size_t len);

#endif
