/* spec_args.h: a spec's argument objects on this node. A task (task_args.c) and an actor's
 * method call (actor_manager.c) both wait until every argument object is here, fetching
 * the missing ones, and then lend them to their worker as inline bytes: views into this
 * node's store, valid only while worker_pool_run copies the spec.
 *
 * Owned by the raylet's loop thread, like the store it reads. */
#ifndef RAYLET_SPEC_ARGS_H
#define RAYLET_SPEC_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "task.pb-c.h"

struct raylet;

/* True when some argument object of spec is not on this node. */
bool spec_args_missing(struct raylet *r, const Escher__TaskSpec *spec);

/* Starts fetching spec's missing argument objects (as spec's job); true when any is
 * missing. The raylet's object waiters hear when each arrives or fails. */
bool spec_args_fetch(struct raylet *r, const Escher__TaskSpec *spec);

/* True when spec has the object `id` among its arguments and it is not here. */
bool spec_args_waits_for(struct raylet *r, const Escher__TaskSpec *spec, const char *id);

/* Lends every argument object to spec's inline data. Returns NULL, or why the spec
 * cannot run (written to why): an object not here, one of a job that did not grant
 * spec's job its namespace, or a failed task's error object. */
const char *spec_args_lend(struct raylet *r, Escher__TaskSpec *spec, char *why, size_t len);

/* Takes back what spec_args_lend lent. */
void spec_args_unlend(Escher__TaskSpec *spec);

#endif
