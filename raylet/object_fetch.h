/* object_fetch.h: brings objects that tasks here need as arguments from other nodes.
 *
 * A fetch waits at the GCS object directory until some node holds the object (its
 * producing task may still be running), pulls it from one of them in chunks, and hands
 * it to the loop, which stores the copy here (announcing the new location) and tells
 * the task manager. Fetches of one object are merged. A bounded pool of threads
 * (FETCH_THREADS) does the fetching, a round per fetch at a time (a round waits at the
 * GCS up to a second), so the loop never blocks and the thread count does not grow with
 * the number of objects awaited.
 */
#ifndef RAYLET_OBJECT_FETCH_H
#define RAYLET_OBJECT_FETCH_H

struct raylet;
typedef struct object_fetcher object_fetcher;

/* Starts the pool; NULL when not even one thread could start. */
object_fetcher *object_fetch_new(struct raylet *r);

/* Starts fetching id for a task of job_id, proven by credential (the task's spec: the
 * directory and the raylet that holds the object check that the job may read it),
 * unless a fetch of it runs. The local copy keeps the object's own job. When it ends,
 * on the loop thread: the object service's waiters are told (object_service_arrived,
 * or object_service_fetch_failed with the reason). */
void object_fetch_start(object_fetcher *f, const char *id, const char *job_id,
                        const char *credential);

/* Stops the pool (each thread ends its round: about a second) and posts every fetch not
 * settled as failed ("raylet shutting down"); the owner then drains its loop, which
 * delivers them. A fetch started after this fails the same way at once. */
void object_fetch_stop(object_fetcher *f);

/* Frees the fetcher (stopping it first if needed; undelivered results are dropped). */
void object_fetch_free(object_fetcher *f);

#endif
