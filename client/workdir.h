/* workdir.h: a job's working directory, shipped through the GCS key-value store.
 *
 * `escher job submit --working-dir DIR` packs DIR as a tar stream into namespace
 * ESC_JOBS_NS: chunks "<job_id>/workdir/<n>" (n from 0, at most ESC_WORKDIR_CHUNK bytes
 * each), then the manifest "<job_id>/workdir" ("escher-workdir 1 SIZE CHUNKS"), written
 * last so that a reader never sees half an upload. The node that runs the entrypoint
 * unpacks it (`escher job fetch-workdir`, run by escher-worker) into a fresh directory.
 *
 * Internal to client/ and the CLI: not part of the public escher.h API. */
#ifndef ESC_WORKDIR_H
#define ESC_WORKDIR_H

#include <stdint.h>

#include "escher/escher.h"

/* The KV namespace of submitted jobs: their records and working directories. */
#define ESC_JOBS_NS "_jobs"
/* Well under the GCS's message limit, and a size Redis holds without trouble. */
#define ESC_WORKDIR_CHUNK (1u << 20)

/* The size DIR will have as a tar stream, counted without reading file contents (one
 * 512-byte header per entry, file data in 512-byte blocks, symlinks not followed), so
 * that a directory over the limit is refused before anything is sent. */
int esc_workdir_measure(const char *dir, uint64_t *bytes, esc_status *st);

/* Packs dir (through `tar -C dir -cf - .`) into the KV under job_id. A stream over
 * limit bytes is RESOURCE_EXHAUSTED; tar failing is INTERNAL with its first line of
 * stderr. On failure the chunks already stored are removed. *size gets the stream's
 * size. */
int esc_workdir_upload(esc_client *c, const char *job_id, const char *dir, uint64_t limit,
                       uint64_t *size, esc_status *st);

/* Removes job_id's chunks and manifest (ESC_OK when there were none). */
int esc_workdir_delete(esc_client *c, const char *job_id, esc_status *st);

/* Unpacks job_id's working directory into dest (an existing, empty directory) through
 * `tar -C dest -xf - --no-same-owner`, reading the GCS at address with token directly:
 * no job is registered for it. NOT_FOUND when the job has no working directory. tar's
 * own messages go to this process's stderr. */
int esc_workdir_download(const char *address, const char *token, const char *job_id,
                         const char *dest, esc_status *st);

#endif
