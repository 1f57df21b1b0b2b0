/* gcs_link.h: registration with the GCS, the report thread and the subscription thread (gcs_link.c). */
#ifndef RAYLET_GCS_LINK_H
#define RAYLET_GCS_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "common.pb-c.h"
#include "resource_rows.h"

struct raylet;
typedef struct gcs_link gcs_link;

/* Creates the link (channel to the GCS, the registration message). */
gcs_link *gcs_link_new(struct raylet *r);
/* Starts the report thread, which registers the node first. Returns 0 or -1. */
int gcs_link_start(gcs_link *l);
/* Hands the report thread the applied seq and, when not NULL, new rows (taking
 * ownership), and wakes it (loop thread). */
void gcs_link_publish(gcs_link *l, uint64_t applied_seq, resource_rows *rows);
/* Hands the report thread the node's queued demand (v[0..n), taking ownership of the
 * array and its messages), sent with the next report, and wakes it (loop thread). */
void gcs_link_publish_demand(gcs_link *l, Escher__Demand **v, size_t n);
/* A task attempt failed on this node (retried: it runs again, attempt is the new one):
 * the event goes to the GCS's event history with the next report, which it wakes. At
 * most 64 wait for a report; more are counted as dropped (any thread). */
void gcs_link_task_event(gcs_link *l, const char *task_id, const char *job_id,
                         const char *name, uint32_t attempt, uint32_t max_retries,
                         const char *error, bool retried);
/* A rows buffer the report thread is done with, for resource_rows_build; may be NULL. */
resource_rows *gcs_link_take_spare(gcs_link *l);
/* Stops both threads and waits for them (loop thread). */
void gcs_link_stop(gcs_link *l);
void gcs_link_free(gcs_link *l);

#endif
