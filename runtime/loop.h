/* loop.h: the event loop that owns a daemon's state (libev), and the one way other
 * threads hand work to it.
 *
 * All tables of a daemon are touched only by the loop thread, so they need no locks;
 * gRPC threads call esc_loop_post to run a function on the loop thread.
 */
#ifndef ESC_LOOP_H
#define ESC_LOOP_H

#include <ev.h>

typedef struct esc_loop esc_loop;

/* Creates a loop (not yet running). */
esc_loop *esc_loop_new(void);

/* Makes SIGINT and SIGTERM stop the loop (for a daemon's one main loop: libev lets
 * only one loop per process watch signals). */
void esc_loop_stop_on_signals(esc_loop *l);

/* Frees the loop; functions posted but not run are dropped. */
void esc_loop_free(esc_loop *l);

/* The libev loop, for timers and watchers owned by the loop thread. */
struct ev_loop *esc_loop_ev(esc_loop *l);

/* Queues fn(arg) to run on the loop thread, in posting order. Thread-safe; also
 * matches esc_rpc_post_fn with l as post_ud. */
void esc_loop_post(void *l, void (*fn)(void *), void *arg);

/* Runs until esc_loop_stop or a stop signal. */
void esc_loop_run(esc_loop *l);

/* Makes esc_loop_run return. Thread-safe. */
void esc_loop_stop(esc_loop *l);

/* Runs the functions queued now, on the calling thread; owners call it after their
 * servers stopped so that every posted function still runs exactly once. */
void esc_loop_drain(esc_loop *l);

#endif
