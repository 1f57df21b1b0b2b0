/* liveness.h: the Subscribe stream that keeps a long-lived client's job alive.
 *
 * The GCS ends a job whose driver has had no Subscribe stream (with its job_id) for
 * longer than the job timeout; this thread keeps one open, reopening it 200 ms after it
 * drops (a GCS restart, a network blip). Events on the stream are read and dropped. */
#ifndef ESC_LIVENESS_H
#define ESC_LIVENESS_H

#include "rpc.h"

typedef struct esc_liveness esc_liveness;

/* Starts the thread. ch must outlive esc_liveness_stop; job_id is copied. Returns NULL
 * when the thread can not be created. */
esc_liveness *esc_liveness_start(esc_rpc_channel *ch, const char *job_id);

/* Cancels the stream, joins the thread and frees l (NULL is a no-op). */
void esc_liveness_stop(esc_liveness *l);

#endif
