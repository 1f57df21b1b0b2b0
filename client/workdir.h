/* workdir.h: a job's working directory, which is the job's package (esc_job_package,
 * runtime/package.h).
 *
 * `escher job submit --working-dir DIR` makes DIR the driver's job package: packed as a
 * tar stream, hashed with SHA-256 and stored once in the GCS (KV namespace
 * ESC_PACKAGE_NS). Every node that runs a task of the job fetches and verifies it once
 * into its package cache; the entrypoint (a command task whose env has
 * ESCHER_JOB_WORKDIR_KEY) starts in a fresh copy of it, <log_dir>/jobs/<job id>, and the
 * job's other tasks see the same files in the cache (docs/tasks.md, "Packages").
 *
 * Internal to client/ and the CLI: not part of the public escher.h API. */
#ifndef ESC_WORKDIR_H
#define ESC_WORKDIR_H

#include <stdint.h>

#include "escher/escher.h"

/* The KV namespace of submitted jobs' records. */
#define ESC_JOBS_NS "_jobs"

/* The size DIR will have as a tar stream, counted without reading file contents (one
 * 512-byte header per entry, file data in 512-byte blocks, symlinks not followed), so
 * that a directory over the limit is refused before anything is sent. */
int esc_workdir_measure(const char *dir, uint64_t *bytes, esc_status *st);

/* Makes dir the package of c's job, job_id (esc_job_package with limit bytes as the
 * largest stream). A stream over limit bytes is RESOURCE_EXHAUSTED; tar failing is
 * INTERNAL with its first line of stderr; a job_id other than c's is INVALID_ARGUMENT.
 * *size gets the stream's size. */
int esc_workdir_upload(esc_client *c, const char *job_id, const char *dir, uint64_t limit,
                       uint64_t *size, esc_status *st);

/* Nothing to remove any more (ESC_OK): the GCS drops a package when the last job that
 * names it ends. Kept for the callers of the old layout. */
int esc_workdir_delete(esc_client *c, const char *job_id, esc_status *st);

/* Unpacks job_id's package into dest (an existing, empty directory), verified against
 * its hash, reading the GCS at address with token directly: no job is registered for
 * it. NOT_FOUND when the job is not running or has no package. */
int esc_workdir_download(const char *address, const char *token, const char *job_id,
                         const char *dest, esc_status *st);

#endif
