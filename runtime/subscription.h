/* subscription.h: a Subscribe stream to the GCS kept open by its own thread.
 *
 * Raylets subscribe by node id (they apply the events); drivers subscribe by job id (the
 * open stream is what keeps their job alive). When the stream ends — the GCS restarted
 * or is unreachable — the thread waits 200 ms and subscribes again from the last
 * sequence number it received, until stopped. It never gives up.
 */
#ifndef ESC_SUBSCRIPTION_H
#define ESC_SUBSCRIPTION_H

#include <stdint.h>

#include "gcs.pb-c.h"
#include "rpc.h"

typedef struct esc_subscription esc_subscription;

/* Called on the subscription thread for every event, in order; the callee owns ev (free
 * with protobuf_c_message_free_unpacked). */
typedef void (*esc_subscription_fn)(void *ud, Escher__Event *ev);

/* Starts the thread. Exactly one of node_id, job_id is set. who names the subscriber in
 * log lines; NULL keeps stream interruptions at debug level (drivers). The channel must
 * outlive the subscription. Returns NULL when the thread cannot start. */
esc_subscription *esc_subscription_start(esc_rpc_channel *ch, const char *node_id,
                                         const char *job_id, uint64_t from_seq,
                                         esc_subscription_fn fn, void *ud, const char *who);

/* Starts an application's watch (SubscribeRequest.watch) as job_id ("" or NULL: none)
 * with filter's prefixes, kv and loads (copied; its ids and watch flag are ignored): node
 * and job events, the resource entries and key-value rows it follows, availability when
 * asked. It resumes like the others; filter->from_seq 0 starts from a snapshot of the
 * rows it follows. Returns NULL when the thread cannot start. */
esc_subscription *esc_subscription_watch(esc_rpc_channel *ch, const char *job_id,
                                         const Escher__SubscribeRequest *filter,
                                         esc_subscription_fn fn, void *ud);

/* Cancels the open stream, joins the thread and frees the subscription. NULL is allowed.
 * No callback runs after it returns. */
void esc_subscription_stop(esc_subscription *s);

#endif
