/* object_fetch.h: brings objects that tasks here need as arguments from other nodes.
 *
 * A fetch waits at the GCS object directory until some node holds the object (its
 * producing task may still be running), pulls it from one of them in chunks, and hands
 * it to the loop, which stores the copy here (announcing the new location) and tells
 * the task manager. Fetches of one object are merged. Each fetch runs on its own thread
 * because it mostly waits; the loop never blocks.
 */
#ifndef RAYLET_OBJECT_FETCH_H
#define RAYLET_OBJECT_FETCH_H

struct raylet;
typedef struct object_fetcher object_fetcher;

object_fetcher *object_fetch_new(struct raylet *r);

/* Starts fetching id (job_id: the owner, for the local copy) unless a fetch of it runs.
 * When it ends, on the loop thread: the object service's waiters are told
 * (object_service_arrived, or object_service_fetch_failed with the reason). */
void object_fetch_start(object_fetcher *f, const char *id, const char *job_id);

/* Stops every fetch and waits until each has posted its result (within about a second);
 * the owner then drains its loop, which delivers them. */
void object_fetch_stop(object_fetcher *f);

/* Frees the fetcher (stopping it first if needed; undelivered results are dropped). */
void object_fetch_free(object_fetcher *f);

#endif
