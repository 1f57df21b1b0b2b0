/* fuzz_gcs_handlers.c: every unary handler of the GCS (the Gcs and ObjectDirectory
 * services), reached through its real gRPC server: a whole GCS runs in this process
 * (tests/unit/gcs_fixture.h, memory storage), started once, with two nodes and a job,
 * and every input is one call. The state accumulates across inputs as it would in a
 * long-lived GCS: jobs registered, resources written, nodes drained.
 *
 * Input: byte 0 picks the method (of both services' methods in order), byte 1 the
 * caller (a raylet with the daemon key, the job's driver with its credential, or a
 * client with the token only) and, by bit 2, which node; the rest is the request's
 * bytes. Ids are random, so an input cannot name the live job or nodes: when the bytes
 * unpack as the method's request, every empty `job_id` and `node_id` in it (nested ones
 * too) is filled with the live job's and the chosen node's before it is packed again
 * and sent; bytes that do not unpack go as they are, for the server to refuse. The
 * fuzzer's job or nodes ended by an input (FinishJob, DrainNode) are replaced before
 * the next.
 *
 * What must hold: the GCS never crashes or trips a sanitizer (this process would), and
 * answers every unary call: a call that misses its deadline is a handler that dropped
 * it, except for the calls that are held by design (WaitApplied, GetLocations,
 * WaitObjects: answered when the condition holds or at the request's own timeout), which
 * get a short deadline and must leave the GCS answering. Subscribe streams, and is left
 * to the integration tests. */
#include "fuzz_util.h"
#include "fuzz_rpc.h"

#include "gcs_fixture.h"
#include "log.h"
#include "object.pb-c.h"

static gcs_fixture F;
static esc_rpc_channel *callers[3]; /* daemon, driver, token only */
static char job_id[64];
static char node_ids[2][64];

static const ProtobufCServiceDescriptor *const services[] = {
    &escher__gcs__descriptor,
    &escher__object_directory__descriptor,
};
#define NSERVICES (sizeof services / sizeof services[0])

static const esc_rpc_method *const held_by_design[] = {
    &ESC_M_GCS_WAIT_APPLIED, &ESC_M_OBJECT_DIRECTORY_GET_LOCATIONS,
    &ESC_M_OBJECT_DIRECTORY_WAIT_OBJECTS, NULL};
static const esc_rpc_method *const streaming[] = {&ESC_M_GCS_SUBSCRIBE, NULL};

static void new_job(void)
{
    if (callers[1])
        esc_rpc_channel_free(callers[1]);
    callers[1] = gcsf_channel(&F);
    if (gcsf_register_job(&F, callers[1], "fuzz", job_id, NULL) != ESC_OK)
        abort();
}

static void new_node(int i)
{
    if (gcsf_register_node(&F, 41001 + i, 4, node_ids[i]) != ESC_OK)
        abort();
}

static void setup(void)
{
    esc_log_init("fuzz_gcs_handlers", ESC_LOG_ERROR);
    if (gcsf_start(&F, 0) != 0)
        abort();
    callers[0] = F.daemon;
    callers[2] = gcsf_channel(&F);
    new_node(0);
    new_node(1);
    new_job();
}

typedef struct {
    bool job_running;
    bool node_alive[2];
} liveness;

static void read_liveness(gcs *g, void *ud)
{
    liveness *l = ud;
    gcs_job *j = gcs_job_find(g, job_id);
    l->job_running = j && j->info->state == ESCHER__JOB_STATE__JOB_RUNNING;
    for (int i = 0; i < 2; i++)
        l->node_alive[i] = gcs_node_alive(gcs_node_find(g, node_ids[i]));
}

/* What an input ended is replaced, so the next input finds a job and two nodes. */
static void restore(void)
{
    liveness l;
    gcsf_on_loop(&F, read_liveness, &l);
    if (!l.job_running)
        new_job();
    for (int i = 0; i < 2; i++)
        if (!l.node_alive[i])
            new_node(i);
}

/* The GCS still answers a plain read. */
static bool answering(void)
{
    Escher__GetClusterStatusRequest req = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(callers[2], &ESC_M_GCS_GET_CLUSTER_STATUS, &req.base, &rep, 10000, 0,
                          NULL);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    return rc == ESC_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool started;
    if (!started) {
        setup();
        started = true;
    }
    if (size < 2)
        return 0;
    const esc_rpc_method picked = fuzz_pick_method(services, NSERVICES, data[0]);
    if (fuzz_method_in(&picked, streaming))
        return 0;
    bool held = fuzz_method_in(&picked, held_by_design);
    const fuzz_fill fills[] = {{"job_id", job_id}, {"node_id", node_ids[(data[1] >> 2) & 1]}};
    int rc = fuzz_call(callers[data[1] % 3], &picked, data + 2, size - 2, fills, 2, NULL,
                       held ? 50 : 10000);
    fuzz_check_answered(rc, held, &picked, answering, "the GCS");
    restore();
    return 0;
}
