/* object_service.h: the node's object store and its ObjectStore gRPC service (object_service.c). */
#ifndef RAYLET_OBJECT_SERVICE_H
#define RAYLET_OBJECT_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "object_store.h"
#include "rpc.h"

struct raylet;
typedef struct object_service object_service;

/* The node's object store of `capacity` bytes (object_store_memory) and the state of the
 * ObjectStore service. */
object_service *object_service_new(struct raylet *r, uint64_t capacity);
/* Registers the ObjectStore service's handlers. Returns 0 or -1. Locations are announced
 * in batches through r->async (announcer.h). */
int object_service_serve(object_service *o, esc_rpc_server *srv);
/* Stores a sealed object (a task's return value, or with is_error its error text) and
 * announces its location to the GCS, with origin (may be NULL: none), the node that can
 * make it again if every copy is lost (TaskSpec.origin). data is copied. Returns ESC_OK, or the store's
 * code (RESOURCE_EXHAUSTED when full, ALREADY_EXISTS), logged; UNAVAILABLE once
 * object_service_free ran (so whatever stores results must be freed before it). Loop
 * thread. */
int object_service_store(struct raylet *r, const char *id, const char *job_id, const char *origin,
                        const void *data, size_t len, bool is_error, const char *error);
/* A read-only view of a sealed object in this node's store (valid until the store
 * changes); false when this node does not hold it. */
bool object_service_get(struct raylet *r, const char *id, object_view *out);
/* Frees every object of the job (its EV_JOB_FINISHED was applied). */
/* The state API: fn for every object in the store (object_store_each); NULL o: none. */
void object_service_each(object_service *o, void (*fn)(void *ud, const object_row *row),
                         void *ud);
/* ObjectStore.ListObjects (raylet/state_list.c; ud is the raylet). */
void state_list_handle_objects(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud);

void object_service_job_finished(object_service *o, const char *job_id);
/* The store's figures (metrics). */
void object_service_stats(const object_service *o, object_store_stats *out);
/* Announces every sealed object again (after a snapshot: the GCS may have restarted and
 * lost its directory, which lives only in memory). */
void object_service_reannounce(object_service *o);
/* Sends no more location calls (before r->async is freed); later ones wait for free. */
void object_service_stop(object_service *o);
/* Ends streams in progress, answers puts whose locations never went out, frees the
 * store. */
void object_service_free(object_service *o);

/* Who waits for objects to arrive here (the task manager, for its tasks' arguments):
 * arrived runs when an object is sealed in this store or turned up here, failed when a
 * fetch of it gave up. Set by the raylet's wiring; loop thread. */
typedef struct {
    void (*arrived)(void *ud, const char *id);
    void (*failed)(void *ud, const char *id, const char *why);
    void *ud;
} object_waiters;

void object_service_set_waiters(object_service *o, const object_waiters *w);
/* Tells the waiters (object_fetch.c: the object is here, or cannot be had). */
void object_service_arrived(object_service *o, const char *id);
void object_service_fetch_failed(object_service *o, const char *id, const char *why);

#endif
