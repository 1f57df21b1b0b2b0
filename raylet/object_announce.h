/* object_announce.h: tells the GCS object directory where this node's objects are.
 *
 * AddLocation and RemoveLocation are blocking calls, and the raylet's loop must never
 * block, so one sender thread takes them from a FIFO queue (which keeps an add and a
 * later remove of the same object in order) and makes each call with
 * ESC_RPC_IDEMPOTENT: both are idempotent at the GCS, so a retry after a lost reply is
 * harmless. A call is retried while the GCS is unreachable, for up to
 * ANNOUNCE_TOTAL_MS, then given up with a warning (the GCS, when it comes back, sends
 * a snapshot and the raylet announces all its objects again).
 *
 * Queuing is thread-safe; the outcome of an add may be reported back on the loop.
 */
#ifndef RAYLET_OBJECT_ANNOUNCE_H
#define RAYLET_OBJECT_ANNOUNCE_H

#include <stdbool.h>
#include <stdint.h>

#include "loop.h"

#define ANNOUNCE_ATTEMPT_MS 1000  /* one call; short, so shutdown never waits long */
#define ANNOUNCE_TOTAL_MS 5000    /* retries of one announcement while the GCS is away */

typedef struct object_announcer object_announcer;

/* Runs on the loop thread with the status code of an add (ESC_UNAVAILABLE when the
 * announcer stopped before sending it). */
typedef void (*announce_done_fn)(void *arg, int code);

/* A stopped announcer that will call the GCS at gcs_address with token (copied). */
object_announcer *object_announcer_new(esc_loop *loop, const char *gcs_address,
                                       const char *token);

/* Starts the sender thread. Returns 0 or -1. */
int object_announcer_start(object_announcer *a);

/* Queues AddLocation(object_id on node_id). done (may be NULL) is posted to the loop
 * with the outcome, exactly once (after object_announcer_stop: called at once with
 * ESC_UNAVAILABLE). Strings are copied. */
void object_announcer_add(object_announcer *a, const char *object_id, const char *node_id,
                          const char *job_id, uint64_t size, bool is_error,
                          announce_done_fn done, void *arg);

/* Queues RemoveLocation(object_id on node_id). */
void object_announcer_remove(object_announcer *a, const char *object_id, const char *node_id);

/* Stops and joins the thread (a call in flight ends first: at most ANNOUNCE_ATTEMPT_MS);
 * what was not sent is dropped, each add's done posted with ESC_UNAVAILABLE. Call on
 * the loop thread before the loop's last drain. */
void object_announcer_stop(object_announcer *a);

/* Frees a stopped (or never started) announcer. */
void object_announcer_free(object_announcer *a);

#endif
