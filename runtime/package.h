/* package.h: a job's package, the content-addressed tar stream of its files (docs/tasks.md,
 * "Packages"), as stored in the GCS and unpacked on a node.
 *
 * In the GCS key-value store, namespace ESC_PACKAGE_NS: chunks "<hash>/<n>" (n from 0,
 * at most ESC_PACKAGE_CHUNK bytes each) and the manifest "<hash>" ("escher-package 1
 * SIZE CHUNKS"), written last so that a reader never sees half an upload. <hash> is the
 * SHA-256 of the whole stream in lowercase hex: a reader recomputes it and refuses bytes
 * that do not match before anything is unpacked. */
#ifndef ESC_PACKAGE_H
#define ESC_PACKAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc.h"

#define ESC_PACKAGE_NS "_packages"
#define ESC_PACKAGE_CHUNK (1u << 20)
#define ESC_PACKAGE_HEX 64 /* SHA-256 in hex, without the NUL */
#define ESC_PACKAGE_MAGIC "escher-package 1"

/* True when h is 64 lowercase hex digits. */
bool esc_package_hash_valid(const char *h);

/* Fetches package hash from the GCS on ch into dest, which must not exist: the stream
 * is downloaded into a temporary file beside dest and hashed; a size or hash that
 * differs from the name is refused (INTERNAL "hash mismatch"), else it is unpacked with
 * `tar -xf --no-same-owner` (which refuses members that leave the directory) into a
 * temporary directory that is then renamed to dest, so dest appears whole or not at
 * all. NOT_FOUND when the GCS has no such package. *bytes (may be NULL) gets the size. */
int esc_package_fetch(esc_rpc_channel *ch, const char *hash, const char *dest,
                      uint64_t *bytes, esc_status *st);

/* Removes dir and everything under it (symlinks not followed). 0, or -1 with errno. */
int esc_package_remove_tree(const char *dir);

#endif
