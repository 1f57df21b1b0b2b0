/* fuzz_raylet_handlers.c: every unary handler of the raylet (the Raylet, ObjectStore and
 * TaskService services), reached through its real gRPC server: a GCS (gcs_fixture.h)
 * and a raylet (raylet/raylet.c's raylet_start, as escher-raylet runs it, with a 64 MiB
 * object store and no CPU quotas) run in this process, started once; a job is
 * registered. Every input is one call. Tasks that get admitted ask for a worker, whose
 * program this build does not have: they fail, as they would on a node whose worker
 * cannot start.
 *
 * Input: byte 0 picks the method (of the three services' methods in order), byte 1 the
 * caller (a peer raylet with the daemon key, the job's driver with its credential, or a
 * client with the token only); the rest is the request's bytes. As in
 * fuzz_gcs_handlers.c, empty `job_id`, `job_credential`, `node_id` and `task_id` fields
 * are filled with live values (a fresh task id each input) before the request is sent,
 * when the bytes unpack as it. A job an input ended is replaced before the next.
 *
 * What must hold: no crash or sanitizer report in the raylet or the GCS, and every
 * unary call answered, except RequestLease and ResizeActor, which wait for resources
 * by design (50 ms deadline; the raylet must answer after it). The streams
 * (StreamLogs, Pull, WatchResults) are left to the integration tests. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "fuzz_util.h"
#include "fuzz_rpc.h"

#include <ftw.h>
#include <limits.h>
#include <signal.h>

#include "gcs_fixture.h"
#include "log.h"
#include "object.pb-c.h"
#include "raylet.h"
#include "raylet.pb-c.h"
#include "task.pb-c.h"

static gcs_fixture F;
static raylet R;
static pthread_t raylet_thread;
static esc_rpc_channel *callers[3]; /* daemon, driver, token only */
static char job_id[64], job_credential[80], node_id[64];

static const ProtobufCServiceDescriptor *const services[] = {
    &escher__raylet__descriptor,
    &escher__object_store__descriptor,
    &escher__task_service__descriptor,
};
#define NSERVICES (sizeof services / sizeof services[0])
static const esc_rpc_method *const held_by_design[] = {
    &ESC_M_RAYLET_REQUEST_LEASE, &ESC_M_TASK_SERVICE_RESIZE_ACTOR, NULL};
static const esc_rpc_method *const streaming[] = {
    &ESC_M_RAYLET_STREAM_LOGS, &ESC_M_OBJECT_STORE_PULL, &ESC_M_TASK_SERVICE_WATCH_RESULTS,
    NULL};

static void *run_raylet(void *p)
{
    (void)p;
    raylet_run(&R);
    return NULL;
}

static void new_job(void)
{
    if (callers[1])
        esc_rpc_channel_free(callers[1]);
    callers[1] = gcsf_channel(&F);
    if (gcsf_register_job(&F, callers[1], "fuzz", job_id, job_credential) != ESC_OK)
        abort();
}

/* A new job, and its driver's channel to the raylet, with the job's identity. */
static void new_driver(void)
{
    new_job();
    char addr[320];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", esc_rpc_server_port(R.server));
    esc_rpc_channel_free(callers[1]);
    callers[1] = esc_rpc_channel_new(addr, F.token);
    esc_rpc_channel_set_job(callers[1], job_id, job_credential);
}

static void first_node(gcs *g, void *ud)
{
    size_t pos = 0;
    const char *k;
    void *v;
    if (esc_strmap_next(g->nodes, &pos, &k, &v))
        snprintf(ud, 64, "%s", k);
}

static char logs[] = "/tmp/escher-fuzz-raylet-XXXXXX";

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* The workers' logs and package copies go with the process (libFuzzer ends it with
 * exit). */
static void remove_logs(void)
{
    nftw(logs, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void start_raylet(void)
{
    if (!mkdtemp(logs))
        abort();
    atexit(remove_logs);
    setenv("ESCHER_TOKEN", F.token, 1);
    setenv("ESCHER_DAEMON_KEY", F.daemon_key, 1);
    char *argv[] = {"escher-raylet", "--gcs-address", F.addr, "--bind", "127.0.0.1",
                    "--port", "0", "--node-ip", "127.0.0.1", "--num-cpus", "2",
                    "--num-gpus", "0", "--memory", "1073741824", "--object-store-memory",
                    "67108864", "--resources", "fuzz=4", "--no-cpu-quota", "--log-dir",
                    logs, NULL};
    char err[512];
    if (config_parse((int)(sizeof argv / sizeof argv[0]) - 1, argv, &R.cfg, err,
                     sizeof err) != 0 ||
        raylet_start(&R, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_raylet_handlers: %s\n", err);
        abort();
    }
    if (pthread_create(&raylet_thread, NULL, run_raylet, NULL) != 0)
        abort();
    /* Registered once the GCS has it. */
    for (int i = 0; i < 1000 && !node_id[0]; i++) {
        gcsf_on_loop(&F, first_node, node_id);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (!node_id[0])
        abort();
}

static void setup(void)
{
    esc_log_init("fuzz_raylet_handlers", ESC_LOG_ERROR);
    signal(SIGPIPE, SIG_IGN);
    if (gcsf_start(&F, 0) != 0)
        abort();
    start_raylet();
    char addr[320];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", esc_rpc_server_port(R.server));
    callers[0] = esc_rpc_channel_new(addr, F.token);
    esc_rpc_channel_set_secret(callers[0], ESC_RPC_DAEMON_KEY, F.daemon_key);
    callers[2] = esc_rpc_channel_new(addr, F.token);
    new_driver();
}

static void job_state(gcs *g, void *ud)
{
    gcs_job *j = gcs_job_find(g, job_id);
    *(bool *)ud = j && j->info->state == ESCHER__JOB_STATE__JOB_RUNNING;
}

/* A fuzzed task must not run a program or load a library of this machine: a command
 * becomes /bin/true, a function's library a path that does not exist (the worker fails
 * to load it, as it would a missing one). The rest of the spec stays as fuzzed. */
static void defang_spec(Escher__TaskSpec *s)
{
    if (s->function)
        fuzz_set_string(&s->function->library,
                        protobuf_c_message_descriptor_get_field_by_name(
                            &escher__function_ref__descriptor, "library"),
                        "/nonexistent/escher-fuzz-task.so");
    if (s->command) {
        protobuf_c_message_free_unpacked(&s->command->base, NULL);
        s->command = malloc(sizeof *s->command);
        if (!s->command)
            abort();
        escher__command_ref__init(s->command);
        s->command->n_argv = 1;
        s->command->argv = malloc(sizeof *s->command->argv);
        if (!s->command->argv)
            abort();
        s->command->argv[0] = strdup("/bin/true");
    }
}

/* The specs of a batch are bytes: each that unpacks is defanged and packed again; one
 * that does not goes as it is (the raylet cannot unpack it either). */
static void defang(ProtobufCMessage *req)
{
    if (req->descriptor == &escher__task_spec__descriptor) {
        defang_spec((Escher__TaskSpec *)req);
        return;
    }
    if (req->descriptor != &escher__task_batch__descriptor)
        return;
    Escher__TaskBatch *b = (Escher__TaskBatch *)req;
    for (size_t i = 0; i < b->n_specs; i++) {
        Escher__TaskSpec *s =
            escher__task_spec__unpack(NULL, b->specs[i].len, b->specs[i].data);
        if (!s)
            continue;
        defang_spec(s);
        size_t len = escher__task_spec__get_packed_size(s);
        uint8_t *buf = malloc(len + 1);
        if (!buf)
            abort();
        escher__task_spec__pack(s, buf);
        escher__task_spec__free_unpacked(s, NULL);
        free(b->specs[i].data);
        b->specs[i].data = buf;
        b->specs[i].len = len;
    }
}

/* The raylet still answers a plain read. */
static bool answering(void)
{
    Escher__GetNodeStateRequest req = ESCHER__GET_NODE_STATE_REQUEST__INIT;
    ProtobufCMessage *rep = NULL;
    int rc = esc_rpc_call(callers[0], &ESC_M_RAYLET_GET_NODE_STATE, &req.base, &rep, 10000, 0,
                          NULL);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    return rc == ESC_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool started;
    static unsigned long ntask;
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
    char task_id[40];
    snprintf(task_id, sizeof task_id, "fuzztask%lu", ++ntask);
    const fuzz_fill fills[] = {{"job_id", job_id},
                               {"job_credential", job_credential},
                               {"node_id", node_id},
                               {"task_id", task_id}};
    int rc = fuzz_call(callers[data[1] % 3], &picked, data + 2, size - 2, fills, 4, defang,
                       held ? 50 : 10000);
    fuzz_check_answered(rc, held, &picked, answering, "the raylet");
    bool running;
    gcsf_on_loop(&F, job_state, &running);
    if (!running)
        new_driver();
    return 0;
}
