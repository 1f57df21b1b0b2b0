/* gcs_fixture.c: see gcs_fixture.h. */
#include "gcs_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "qty.h"

static void *run_loop(void *p)
{
    gcs_fixture *f = p;
    esc_loop_run(f->g.loop);
    return NULL;
}

int gcsf_start(gcs_fixture *f, long max_resources_per_job)
{
    memset(f, 0, sizeof *f);
    if (esc_random_hex(f->token, 16) || esc_random_hex(f->daemon_key, 16) ||
        esc_random_hex(f->operator_key, 16)) {
        fprintf(stderr, "gcs_fixture: no randomness\n");
        return -1;
    }
    f->cfg = (gcs_config){.bind = "127.0.0.1", .port = 0, .storage_uri = "memory",
                          .token = f->token, .daemon_key = f->daemon_key,
                          .operator_key = f->operator_key,
                          .node_timeout_ms = GCSF_NODE_TIMEOUT_MS, .heartbeat_ms = 1000,
                          .job_timeout_ms = GCSF_JOB_TIMEOUT_MS,
                          .max_resources_per_job =
                              max_resources_per_job ? max_resources_per_job : 100000,
                          .storage_timeout_ms = 5000,
                          .dead_node_retention_ms = GCSF_RETENTION_MS,
                          .metrics_bind = "127.0.0.1", .metrics_port = -1,
                          .dashboard_bind = "127.0.0.1", .dashboard_port = -1,
                          .event_history = GCS_EVENT_HISTORY_DEFAULT};
    char err[512];
    if (gcs_open(&f->g, &f->cfg, err, sizeof err) != 0) {
        fprintf(stderr, "gcs_fixture: %s\n", err);
        gcs_close(&f->g);
        return -1;
    }
    if (gcs_start(&f->g) != 0) {
        gcs_close(&f->g);
        return -1;
    }
    snprintf(f->addr, sizeof f->addr, "127.0.0.1:%d", esc_rpc_server_port(f->g.server));
    f->daemon = esc_rpc_channel_new(f->addr, f->token);
    esc_rpc_channel_set_secret(f->daemon, ESC_RPC_DAEMON_KEY, f->daemon_key);
    if (pthread_create(&f->loop_thread, NULL, run_loop, f) != 0) {
        fprintf(stderr, "gcs_fixture: cannot start the loop thread\n");
        esc_rpc_channel_free(f->daemon);
        gcs_stop(&f->g);
        gcs_close(&f->g);
        return -1;
    }
    return 0;
}

void gcsf_stop(gcs_fixture *f)
{
    esc_loop_stop(f->g.loop);
    pthread_join(f->loop_thread, NULL);
    gcs_stop(&f->g);
    esc_rpc_channel_free(f->daemon);
    gcs_close(&f->g);
}

typedef struct {
    gcs *g;
    void (*fn)(gcs *g, void *ud);
    void *ud;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
} on_loop_call;

static void on_loop_run(void *p)
{
    on_loop_call *c = p;
    c->fn(c->g, c->ud);
    pthread_mutex_lock(&c->mu);
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void gcsf_on_loop(gcs_fixture *f, void (*fn)(gcs *g, void *ud), void *ud)
{
    on_loop_call c = {.g = &f->g, .fn = fn, .ud = ud};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    esc_loop_post(f->g.loop, on_loop_run, &c);
    pthread_mutex_lock(&c.mu);
    while (!c.done)
        pthread_cond_wait(&c.cv, &c.mu);
    pthread_mutex_unlock(&c.mu);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
}

esc_rpc_channel *gcsf_channel(gcs_fixture *f)
{
    return esc_rpc_channel_new(f->addr, f->token);
}

int gcsf_register_node(gcs_fixture *f, int port, long cpus, char id_out[64])
{
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    Escher__Amount cpu = ESCHER__AMOUNT__INIT;
    cpu.name = (char *)"CPU";
    cpu.value = cpus * ESC_QTY_SCALE;
    Escher__Amount *phys[] = {&cpu};
    Escher__NodeInfo info = ESCHER__NODE_INFO__INIT;
    info.address = addr;
    info.hostname = (char *)"fixture";
    info.physical = phys;
    info.n_physical = 1;
    Escher__RegisterNodeRequest req = ESCHER__REGISTER_NODE_REQUEST__INIT;
    req.node = &info;
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(f->daemon, &ESC_M_GCS_REGISTER_NODE, &req.base, &rep, 5000, 0, NULL);
    if (rc == ESC_OK) {
        snprintf(id_out, 64, "%s", ((Escher__RegisterNodeReply *)rep)->node_id);
        protobuf_c_message_free_unpacked(rep, NULL);
    }
    return rc;
}

int gcsf_register_job(gcs_fixture *f, esc_rpc_channel *ch, const char *ns, char id_out[64],
                      char *cred_out)
{
    (void)f;
    Escher__RegisterJobRequest req = ESCHER__REGISTER_JOB_REQUEST__INIT;
    req.namespace_ = (char *)ns;
    req.entrypoint = (char *)"test_gcs";
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(ch, &ESC_M_GCS_REGISTER_JOB, &req.base, &rep, 5000, 0, NULL);
    if (rc == ESC_OK) {
        const Escher__RegisterJobReply *r = (const Escher__RegisterJobReply *)rep;
        snprintf(id_out, 64, "%s", r->job_id);
        if (cred_out)
            snprintf(cred_out, 80, "%s", r->credential);
        esc_rpc_channel_set_job(ch, r->job_id, r->credential);
        protobuf_c_message_free_unpacked(rep, NULL);
    }
    return rc;
}
