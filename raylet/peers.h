/* peers.h: calls to other raylets, one queue per peer, and which peers are suspect.
 *
 * A raylet calls its peers to forward tasks (SubmitTask), withdraw them (CancelTask) and
 * tell them that tasks they forwarded ended (TasksDone). Each peer has its own sender
 * thread (rpc_async.h), so a peer that is slow or dead holds up only the calls meant for
 * it, never those for live peers.
 *
 * A call that fails for want of the peer (UNAVAILABLE, DEADLINE_EXCEEDED) makes the peer
 * *suspect* at once: the calls queued behind it fail immediately (their callbacks place
 * the work elsewhere), the cluster view skips the peer when placing tasks
 * (cluster_view_set_suspects), and the peer is probed (GetNodeState, with backoff from
 * PROBE_FIRST_MS to PROBE_MAX_MS) until it answers, which clears the suspicion and
 * re-examines the task queue, or until the GCS declares its node dead (peers_node_dead).
 * Suspicion is local to this raylet and never reported: only the GCS declares deaths.
 * Loop thread only, except the sender threads inside. */
#ifndef RAYLET_PEERS_H
#define RAYLET_PEERS_H

#include <stdbool.h>

#include "rpc.h"
#include "rpc_async.h"

struct raylet;
typedef struct peers peers;
typedef struct peer peer;

/* timeout_ms bounds forwards and probes (--forward-timeout-ms). */
peers *peers_new(struct raylet *r, int timeout_ms);

/* The peer whose raylet listens at address, created on first use. */
peer *peers_get(peers *ps, const char *address);
const char *peer_address(const peer *p);
/* True while p is suspect: from a failure for want of it until it answers a probe or
 * its node is declared dead. */
bool peer_suspect(const peer *p);

/* Queues a call of method (a TaskService handle, &ESC_M_TASK_SERVICE_SUBMIT_TASK) to p on
 * p's own sender. timeout_ms 0 means the forward timeout. fn runs on the loop thread
 * exactly once; a failure for want of the peer has already made it suspect when fn runs.
 * req is copied now. */
void peers_call(peers *ps, peer *p, const esc_rpc_method *method, const ProtobufCMessage *req,
                int timeout_ms, int flags, esc_rpc_async_fn fn, void *ud);

/* The GCS declared the node at address dead: stop probing it and forget the suspicion
 * (a new node may come back at that address). */
void peers_node_dead(peers *ps, const char *address);

/* Stops every sender: queued calls end UNAVAILABLE, posted to the loop. Call before the
 * loop's last drain. */
void peers_stop(peers *ps);
void peers_free(peers *ps);

#endif
