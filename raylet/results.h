/* results.h: a task's returns: storing them and telling owners that the task ended.
 *
 * A client that submits tasks holds a WatchResults stream with its local raylet, keyed
 * by its owner id. When a task ends, the raylet that ran it describes each return in a
 * ReadyObject (small values inline) and either pushes them to the owner's stream, when
 * the owner watches here, or, when the task was forwarded to it, sends them back to the
 * raylet that forwarded it (TasksDone), which relays them the same way. So the owner
 * learns of a result without asking the GCS, and its small values without a Pull.
 *
 * Notices are batched: they collect while the loop works and go out in results_flush
 * (called once per loop turn), one stream message per owner while none of its earlier
 * ones is still in flight (flow control: a slow owner gets bigger batches, never an
 * unbounded outbox of small ones), and one TasksDone call per peer raylet.
 *
 * A TasksDone that fails for want of the peer is kept and sent again once the peer
 * answers again (peers.h: it is suspect until then), and dropped when its node is
 * declared dead (results_peer_dead): then the forwarding raylet's death tells instead
 * (the owner's stream ends, or the origin finds the task ended in the directory and
 * tells the owner itself). So the owner waits on its stream alone, with no periodic look
 * at the directory (client/tasks.c). An owner that is not watching learns of its
 * returns from the GCS directory (docs/tasks.md, "Results"). Loop thread only. */
#ifndef RAYLET_RESULTS_H
#define RAYLET_RESULTS_H

#include <stdbool.h>
#include <stddef.h>

#include "peers.h"
#include "rpc.h"
#include "task.pb-c.h"

/* Values up to this size travel inline in the notice. */
#define ESC_INLINE_RESULT_MAX (64u * 1024u)

typedef struct results results;

struct raylet;

/* Creates the registry; notices to peer raylets go out through r->peers (it must
 * outlive the registry). */
results *results_new(struct raylet *r);

/* Stores a finished task's returns in this node's object store (announced with the
 * task's origin), commits the operations it carries for its success (on_success), and
 * delivers their notice: back to the raylet that forwarded the task, else to its
 * owner's stream here. A failed result (res->ok false) becomes error objects. */
void results_store(results *rs, const Escher__TaskSpec *spec, const Escher__TaskResult *res);
/* Every return of the task becomes an error object carrying why, delivered the same way. */
void results_store_error(results *rs, const Escher__TaskSpec *spec, const char *why);
/* Registers the WatchResults handler. Returns 0 or -1. */
int results_serve(results *rs, esc_rpc_server *srv);

/* A new ReadyObject (malloc'd; free with protobuf_c_message_free_unpacked(m, NULL)):
 * data is copied when it is small enough to inline. */
Escher__ReadyObject *results_object_new(const char *id, const void *data, size_t len,
                                        bool is_error, const char *error,
                                        const char *address);

/* Delivers a finished task's returns (taking objs[0..n) and the array): sent back to
 * the raylet `back` when it is not NULL (with the task's job credential, which proves
 * there that the notice comes from the task's path), else pushed to owner_id's stream
 * when it watches here, else dropped. */
void results_deliver(results *rs, peer *back, const char *task_id, const char *owner_id,
                     const char *credential, Escher__ReadyObject **objs, size_t n);

/* Sends what collected since the last flush. */
void results_flush(results *rs);
/* The node of the raylet at address was declared dead: the notices kept for it go. */
void results_peer_dead(results *rs, const char *address);

/* Ends every stream (UNAVAILABLE) and drops what was not sent. */
void results_stop(results *rs);
void results_free(results *rs);

#endif
