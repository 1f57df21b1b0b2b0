/* log_service.h: Raylet.StreamLogs, a task's captured output read from this node's log
 * folder (log_index.h), whole or followed while the task runs here. */
#ifndef RAYLET_LOG_SERVICE_H
#define RAYLET_LOG_SERVICE_H

#include "rpc.h"

struct raylet;
typedef struct log_service log_service;

log_service *log_service_new(struct raylet *r);
/* Registers StreamLogs on the raylet's server. Returns 0 or -1. */
int log_service_serve(log_service *ls, esc_rpc_server *srv);
/* Ends the streams still open (UNAVAILABLE) and frees the service (loop thread). */
void log_service_free(log_service *ls);

#endif
