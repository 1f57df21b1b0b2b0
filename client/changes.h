/* changes.h: a watch that pokes a waker, for the SDK's own waits (internal).
 *
 * A wait that depends on cluster state (a key appearing, a node carving its part, a
 * queue's demand) reads that state by RPC, then waits for the next event that may have
 * changed it, never for a period: take a mark, look, and wait for an event after the
 * mark. The events poke one esc_waker (client_internal.h), the same mechanism the data
 * plane's waits use; with follow_owner the client's owner stream pokes it too (one of
 * its tasks ended), so one wait covers both. Events that arrive between the mark and
 * the wait are not lost (the waker's generation counts them), and esc_changes_start
 * returns only once the watch is established (its first event came), so a change made
 * after it returns is always seen.
 */
#ifndef ESC_CHANGES_H
#define ESC_CHANGES_H

#include <stdbool.h>
#include <stdint.h>

#include "escher/escher.h"

typedef struct esc_changes esc_changes;

/* Which events count (on the watch's thread); NULL: all of them. */
typedef bool (*esc_changes_keep)(void *ud, const esc_event *ev);

/* Starts a watch with filter f (see esc_subscribe; from_seq must be 0) and waits up to
 * wait_ms for it to be established. follow_owner: the client's owner stream (created
 * if need be) counts too. Returns ESC_OK; UNAVAILABLE when it was not in time (the GCS
 * unreachable, or the filter refused); the codes of esc_subscribe and of the owner's
 * creation. */
int esc_changes_start(esc_client *c, const esc_watch_filter *f, esc_changes_keep keep,
                      void *ud, bool follow_owner, int wait_ms, esc_changes **out,
                      esc_status *st);

/* The count of events (and owner changes and pokes) so far. */
uint64_t esc_changes_mark(esc_changes *w);

/* Waits until the count passes mark or deadline_ms (esc_now_ms clock; UINT64_MAX: no
 * deadline) comes. Returns true when it passed. */
bool esc_changes_wait(esc_changes *w, uint64_t mark, uint64_t deadline_ms);

/* The waker the events poke, for esc_wait_woken (client_internal.h): a wait for tasks'
 * ends that these events also end (start the watch without follow_owner then: the wait
 * listens to the owner itself). */
struct esc_waker *esc_changes_waker(esc_changes *w);

/* Counts as an event: wakes the waiters (a submission, a stop). */
void esc_changes_poke(esc_changes *w);

/* Stops the watch. NULL is a no-op. */
void esc_changes_stop(esc_changes *w);

#endif
