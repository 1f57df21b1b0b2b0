/* lease_service.h: the Raylet gRPC service: leases of resources held by clients, without a task. */
#ifndef RAYLET_LEASE_SERVICE_H
#define RAYLET_LEASE_SERVICE_H

#include <stddef.h>

#include "rpc.h"

struct raylet;
typedef struct lease_service lease_service;

lease_service *lease_service_new(struct raylet *r);
/* Registers the Raylet service's handlers on the server. */
int lease_service_serve(lease_service *ls, esc_rpc_server *srv);
/* Releases every lease of the job and fails its queued requests. */
void lease_service_job_finished(lease_service *ls, const char *job_id);
size_t lease_service_count(const lease_service *ls);
size_t lease_service_queued(const lease_service *ls);
/* Answers every queued request (not granted) and frees the table. */
void lease_service_free(lease_service *ls);

#endif
