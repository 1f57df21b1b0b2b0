/* packages.h: the node's package cache (docs/tasks.md, "Packages").
 *
 * A task that names a package (TaskSpec.package, a SHA-256) runs only once the package
 * is unpacked here, in <root>/<hash>. The first task of a job that needs it starts one
 * fetch (runtime/package.h: downloaded from the GCS, hash checked, unpacked, renamed
 * into place), on a thread of its own; the tasks wait without holding resources and are
 * woken through the ready callback. Each package remembers the jobs that used it here;
 * when the last of them ends, its directory is removed. A failed fetch is not cached:
 * its waiting tasks fail with the one-line reason, and the next task tries again.
 *
 * The root is this raylet's own (one raylet per root): leftovers of an earlier raylet
 * there are removed at start. Owned by the loop thread; the callback runs on it.
 */
#ifndef RAYLET_PACKAGES_H
#define RAYLET_PACKAGES_H

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>

typedef struct packages packages;

/* A fetch ended: error is NULL when the package is ready, else one line. */
typedef void (*packages_ready_fn)(void *ud, const char *hash, const char *error);

/* Creates the cache at root (created if missing, emptied of what an earlier raylet
 * left) that fetches from the GCS at gcs_address with token (may be NULL). NULL with a
 * one-line reason in err when root cannot be made. */
packages *packages_new(struct ev_loop *loop, const char *root, const char *gcs_address,
                       const char *token, packages_ready_fn fn, void *ud, char *err,
                       size_t errlen);

/* The cache directory (owned). */
const char *packages_root(const packages *pk);

/* job_id needs package hash (valid: esc_package_hash_valid). Returns true when it is
 * ready here; false when a fetch runs (started now, or earlier): the callback tells its
 * end. NULL pk (shutting down) answers true: the task then fails at the worker. */
bool packages_use(packages *pk, const char *hash, const char *job_id);

/* True when hash is unpacked here. */
bool packages_ready(const packages *pk, const char *hash);

/* The job ended: packages no running job of this node uses any more are removed (one
 * still being fetched, once its fetch ends). */
void packages_job_ended(packages *pk, const char *job_id);

/* Waits for the fetches under way (their callbacks do not run), removes the cache
 * directory, frees. NULL is a no-op. */
void packages_free(packages *pk);

#endif
