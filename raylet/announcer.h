/* announcer.h: telling the GCS object directory where objects are, in batches.
 *
 * Every object a raylet seals (a task's return, a put) is announced to the GCS, and every
 * one it frees is withdrawn. One call per object would cost a round trip per task; here
 * announcements queue on the loop thread and go out as one AddLocations (or
 * RemoveLocations) call with everything that queued while the previous call was out: one
 * call in flight at a time, so an add and a later remove of the same object reach the
 * GCS in that order. The GCS answers each entry on its own; each add's callback gets its
 * code. Calls go out on the raylet's outbound queue (rpc_async.h), never blocking the
 * loop. Loop thread only. */
#ifndef RAYLET_ANNOUNCER_H
#define RAYLET_ANNOUNCER_H

#include <stdbool.h>
#include <stdint.h>

#include "rpc.h"
#include "rpc_async.h"

typedef struct announcer announcer;

/* An add's outcome: ESC_OK; FAILED_PRECONDITION when the GCS refused it (the object's job
 * ended, or this node was declared dead); another code when the GCS could not be told
 * (the object stays here and is announced again with the next snapshot). */
typedef void (*announce_fn)(void *ud, int code, const char *why);

/* node_id points at the raylet's own id, read when each call is made. The sender and
 * the channel must outlive the announcer's last call (see announcer_stop). */
announcer *announcer_new(esc_rpc_async *sender, esc_rpc_channel *gcs, const char *node_id);

/* Queues an add; done (may be NULL) runs on the loop thread with the outcome. origin
 * (may be NULL) is the node that can make the object again (TaskSpec.origin). */
void announcer_add(announcer *a, const char *id, const char *job_id, const char *origin,
                   uint64_t size, bool is_error, announce_fn done, void *ud);
/* Queues a removal of this node's copy. */
void announcer_remove(announcer *a, const char *id);

/* No more calls go out (the sender is about to be freed): what is queued waits for
 * announcer_free. */
void announcer_stop(announcer *a);
/* Runs the callbacks of what never went out (code UNAVAILABLE) and frees. */
void announcer_free(announcer *a);

#endif
