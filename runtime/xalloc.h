/* xalloc.h: allocation that cannot fail, for the daemons, the CLI and the SDK's
 * bookkeeping (docs/architecture.md, "Out of memory").
 *
 * A daemon that cannot allocate cannot keep its invariants: half a table update, a
 * reply never sent, a task neither run nor failed. Like Redis's zmalloc, these stop the
 * process at once with one line on stderr ("escher-gcs: out of memory (allocating 4096
 * bytes)") and abort(); the cluster already survives a dead raylet (its node is declared
 * dead, its tasks retried) and a dead GCS (restarted on durable storage). gRPC core,
 * under all of it, does the same in gpr_malloc.
 *
 * What a peer or a file sizes is bounded before it is allocated (frames, packages,
 * stored rows: each has its limit and a one-line refusal), so no input can make a
 * daemon abort here. The SDK's buffers that its caller sizes (esc_put's copy, task
 * arguments, esc_buf) use a checked malloc and return ESC_RESOURCE_EXHAUSTED instead. */
#ifndef ESC_XALLOC_H
#define ESC_XALLOC_H

#include <stddef.h>

/* malloc, calloc, realloc, strdup, strndup, or abort after the one line. esc_xcalloc
 * refuses an n * size that overflows (abort too); a size of 0 returns a valid pointer
 * to free, never NULL. */
void *esc_xmalloc(size_t size);
void *esc_xcalloc(size_t n, size_t size);
void *esc_xrealloc(void *p, size_t size);
char *esc_xstrdup(const char *s);
char *esc_xstrndup(const char *s, size_t n);

/* Prints "<process>: out of memory (allocating N bytes)" and aborts: for the callers
 * of an allocator these do not wrap (protobuf-c's unpack, libraries). */
_Noreturn void esc_out_of_memory(size_t size);

#endif
