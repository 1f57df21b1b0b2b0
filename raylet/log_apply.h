/* log_apply.h: applying the GCS event stream (the resource log) to this node (log_apply.c). */
#ifndef RAYLET_LOG_APPLY_H
#define RAYLET_LOG_APPLY_H

#include "gcs.pb-c.h"

struct raylet;

/* Applies one event of the GCS stream (loop thread); takes ownership of ev, which is
 * kept until log_apply_free_spent. */
void log_apply_event(struct raylet *r, Escher__Event *ev);
/* Frees the events applied so far. */
void log_apply_free_spent(struct raylet *r);

#endif
