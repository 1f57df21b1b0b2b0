/* client.c: connecting to the cluster (address, token and node discovery through the
 * session directory), registering the client's job, and disconnecting. */
#include "client_internal.h"
#include "job_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "log.h"
#include "names.h"
#include "session.h"
#include "utf8.h"
#include "xalloc.h"

#define DEFAULT_TIMEOUT_MS 10000
/* Disconnect should not hang a process on a GCS that is gone: the job then ends by
 * the GCS's own timeout anyway. */
#define FINISH_TIMEOUT_MS 3000
#define ENTRYPOINT_MAX 512

char *esc_client_strdup(const char *s)
{
    return esc_xstrdup(s ? s : "");
}

int esc_client_out_of_memory(esc_status *st, uint64_t bytes)
{
    return esc_status_set(st, ESC_RESOURCE_EXHAUSTED, "out of memory (%" PRIu64 " bytes)", bytes);
}

int esc_client_call(esc_client *c, const esc_rpc_method *method, const ProtobufCMessage *req,
                    ProtobufCMessage **reply, int flags, esc_status *st)
{
    return esc_rpc_call(c->gcs, method, req, reply, c->timeout_ms, flags, st);
}

/* The first non-NULL, non-empty of an explicit value and an environment variable,
 * copied; else the session file (a secret file read as one: runtime/token_file.h, a
 * file that is there but holds no valid secret logged); else NULL. */
static char *discover(const char *explicit_value, const char *env, const char *dir,
                      const char *file, bool secret)
{
    if (explicit_value && *explicit_value)
        return esc_xstrdup(explicit_value);
    const char *e = env ? getenv(env) : NULL;
    if (e && *e)
        return esc_xstrdup(e);
    if (!secret)
        return esc_session_read(dir, file);
    char err[1024];
    char *s = esc_session_read_secret(dir, file, err, sizeof err);
    if (!s && errno != ENOENT)
        ESC_WARN("%s", err);
    return s;
}

/* The process's command line, spaces between arguments, for the job table. */
static void read_entrypoint(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (!f)
        return;
    size_t n = fread(out, 1, len - 1, f);
    fclose(f);
    out[n] = '\0';
    for (size_t i = 0; i + 1 < n; i++)
        if (out[i] == '\0')
            out[i] = ' ';
    /* Arguments are bytes, the field is a protobuf string: the GCS refuses one that is
     * not UTF-8, which must not keep such a program from connecting. The cut at len
     * may also have split a character. */
    esc_utf8_sanitize(out);
}

/* From now on every call of the client's GCS channel says which job it is. */
static void set_identity(esc_client *c, const char *job_id, const char *credential)
{
    c->job_id = esc_client_strdup(job_id);
    c->credential = esc_client_strdup(credential);
    esc_rpc_channel_set_job(c->gcs, c->job_id, c->credential);
}

/* Registers a new job, or with attach joins that job, proving it with attach_cred. */
static int register_job(esc_client *c, const char *namespace_, const char *attach,
                        const char *attach_cred, esc_status *st)
{
    char entrypoint[ENTRYPOINT_MAX];
    read_entrypoint(entrypoint, sizeof entrypoint);
    Escher__RegisterJobRequest req = ESCHER__REGISTER_JOB_REQUEST__INIT;
    req.namespace_ = (char *)(namespace_ ? namespace_ : "");
    req.entrypoint = entrypoint;
    req.driver_pid = (uint32_t)getpid();
    req.attach_job_id = (char *)(attach ? attach : "");
    req.attach_credential = (char *)(attach && attach_cred ? attach_cred : "");
    ProtobufCMessage *m;
    /* Not marked idempotent: retrying could register two jobs, and a client should
     * learn at once that no cluster answers rather than wait out the deadline. */
    int rc = esc_client_call(c, &ESC_M_GCS_REGISTER_JOB, &req.base, &m, 0, st);
    if (rc != ESC_OK)
        return rc;
    Escher__RegisterJobReply *r = (Escher__RegisterJobReply *)m;
    set_identity(c, r->job_id, r->credential);
    c->job_seq = r->job_seq;
    c->namespace_ = esc_client_strdup(r->namespace_);
    if (r->package && strlen(r->package) == sizeof c->package - 1) {
        memcpy(c->package, r->package, sizeof c->package);
        atomic_store(&c->package_state, 2);
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return ESC_OK;
}

/* A client with no job registers nothing, but like one that registers it learns at
 * once (UNAVAILABLE, no retry) when no GCS answers, through a read. */
static int probe_gcs(esc_client *c, esc_status *st)
{
    Escher__GetClusterStatusRequest req = ESCHER__GET_CLUSTER_STATUS_REQUEST__INIT;
    ProtobufCMessage *m;
    int rc = esc_client_call(c, &ESC_M_GCS_GET_CLUSTER_STATUS, &req.base, &m, 0, st);
    if (rc == ESC_OK)
        protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

char *esc_client_operator_key(const esc_client *c)
{
    return discover(NULL, "ESCHER_OPERATOR_KEY", c->session_dir ? c->session_dir : "",
                    "operator", true);
}

/* Fills address, token and node id of c from opts, the environment and the session. */
static int resolve_endpoints(esc_client *c, const esc_connect_opts *o, char **token,
                             esc_status *st)
{
    const char *dir = esc_session_dir(o->session_dir);
    c->session_dir = esc_xstrdup(dir);
    /* $ESCHER_ADDRESS is how a job's entrypoint, run by a worker on any node, finds the
     * cluster that runs it (escher job submit sets it). */
    c->address = discover(o->address, "ESCHER_ADDRESS", dir, "gcs_address", false);
    if (!c->address)
        return esc_status_set(st, ESC_UNAVAILABLE,
                              "no cluster address: cannot read %s/gcs_address (%s); start a "
                              "cluster or give its address",
                              dir, strerror(errno));
    /* No token is not an error here: the GCS answers UNAUTHENTICATED, which says more. */
    *token = discover(o->token, "ESCHER_TOKEN", dir, "token", true);
    c->node_id = discover(o->node_id, "ESCHER_NODE_ID", dir, "node_id", false);
    if (!c->node_id)
        c->node_id = esc_xstrdup("");
    return ESC_OK;
}

/* The watchers run under watch_mu, so esc_off_node_dead can wait for one that runs. */
static void tell_watchers(esc_client *c, const char *node_id)
{
    pthread_mutex_lock(&c->watch_mu);
    for (size_t i = 0; i < c->nwatchers; i++)
        c->watchers[i].fn(c->watchers[i].ud, node_id);
    pthread_mutex_unlock(&c->watch_mu);
}

int esc_on_node_dead(esc_client *c, esc_node_dead_fn fn, void *ud, esc_status *st)
{
    if (!c->live)
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "a short-lived client gets no node events");
    pthread_mutex_lock(&c->watch_mu);
    size_t max = sizeof c->watchers / sizeof c->watchers[0];
    bool room = c->nwatchers < max;
    if (room) {
        c->watchers[c->nwatchers].fn = fn;
        c->watchers[c->nwatchers++].ud = ud;
    }
    pthread_mutex_unlock(&c->watch_mu);
    return room ? esc_status_set(st, ESC_OK, NULL)
                : esc_status_set(st, ESC_RESOURCE_EXHAUSTED, "too many node watchers");
}

void esc_off_node_dead(esc_client *c, esc_node_dead_fn fn, void *ud)
{
    pthread_mutex_lock(&c->watch_mu);
    for (size_t i = 0; i < c->nwatchers; i++) {
        if (c->watchers[i].fn == fn && c->watchers[i].ud == ud) {
            c->watchers[i] = c->watchers[--c->nwatchers];
            break;
        }
    }
    pthread_mutex_unlock(&c->watch_mu);
}

/* A driver's stream keeps its job alive. Of its events, a node's death matters: what
 * the client expected from that node's raylet (actor calls) fails now, not at a timeout. */
static void on_event(void *ud, Escher__Event *ev)
{
    esc_client *c = ud;
    if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_ADDED && ev->node && ev->node->address[0])
        esc_client_mark_dead(c, ev->node->address, false);
    if (ev->kind == ESCHER__EVENT_KIND__EV_NODE_DEAD && ev->node && ev->node->address[0]) {
        esc_client_mark_dead(c, ev->node->address, true);
        esc_owner *o = esc_owner_peek(c);
        if (o) {
            char why[400];
            snprintf(why, sizeof why, "node %.100s (%.100s) died before the call ended",
                     ev->node->node_id, ev->node->address);
            esc_owner_node_dead(o, ev->node->address, why);
        }
        tell_watchers(c, ev->node->node_id);
    }
    protobuf_c_message_free_unpacked(&ev->base, NULL);
}

/* esc_connect_opts.join: the same job, joined with its credential like a process the
 * job started (so the GCS says what the job is now: its package). */
static int join_client(esc_client *c, const esc_connect_opts *o, esc_status *st)
{
    const esc_client *j = o->join;
    if (!*j->job_id)
        return esc_status_set(st, ESC_FAILED_PRECONDITION, "the client to join has no job");
    return register_job(c, o->namespace_, j->job_id, j->credential, st);
}

int esc_connect(const esc_connect_opts *opts, esc_client **out, esc_status *st)
{
    static const esc_connect_opts defaults;
    const esc_connect_opts *o = opts ? opts : &defaults;
    *out = NULL;
    if (o->namespace_ && !esc_name_valid(o->namespace_))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "invalid namespace \"%s\": 1-64 characters of A-Z a-z 0-9 _ . -, "
                              "not starting with '.'",
                              o->namespace_);
    esc_client *c = esc_xcalloc(1, sizeof *c);
    esc_client_raylets_init(c);
    pthread_mutex_init(&c->owner_mu, NULL);
    pthread_mutex_init(&c->watch_mu, NULL);
    pthread_mutex_init(&c->run_mu, NULL);
    esc_random_hex(c->owner_id, 16);
    c->detached = o->detached;
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
    char *token = NULL;
    int rc = resolve_endpoints(c, o, &token, st);
    if (rc == ESC_OK) {
        c->gcs = esc_rpc_channel_new(c->address, token);
        /* Started by escher for a job: join it (see esc_connect in escher.h). */
        const char *job = o->new_job ? NULL : getenv("ESCHER_JOB_ID");
        c->attached = (job && *job) || o->join;
        if (o->no_job) {
            c->job_id = esc_client_strdup(""); /* the GCS knows no such job */
            c->credential = esc_client_strdup("");
            c->namespace_ = esc_client_strdup(o->namespace_ ? o->namespace_ : "");
            rc = probe_gcs(c, st);
        } else if (o->join) {
            rc = join_client(c, o, st);
        } else
            rc = register_job(c, o->namespace_, c->attached ? job : NULL,
                              getenv("ESCHER_JOB_CREDENTIAL"), st);
    }
    c->token = token;
    /* A client that joined its driver's job (opts.join) gets events like the driver. */
    bool events = !c->attached || o->join;
    if (rc == ESC_OK && !o->short_lived && events && !o->no_job) {
        c->live = esc_subscription_start(c->gcs, NULL, c->job_id, 0, on_event, c, NULL);
        if (!c->live)
            rc = esc_status_set(st, ESC_INTERNAL, "cannot start the liveness thread");
    }
    if (rc != ESC_OK) {
        esc_disconnect(c);
        return rc;
    }
    *out = c;
    return ESC_OK;
}

static void finish_job(esc_client *c)
{
    Escher__FinishJobRequest req = ESCHER__FINISH_JOB_REQUEST__INIT;
    req.job_id = c->job_id;
    ProtobufCMessage *m;
    esc_status st;
    int rc = esc_rpc_call(c->gcs, &ESC_M_GCS_FINISH_JOB, &req.base, &m, FINISH_TIMEOUT_MS,
                          ESC_RPC_IDEMPOTENT, &st);
    if (rc == ESC_OK)
        protobuf_c_message_free_unpacked(m, NULL);
    else
        ESC_DEBUG("FinishJob %s: %s %s (the GCS's job timeout will end it)", c->job_id,
                  esc_status_name(rc), st.message);
}

void esc_disconnect(esc_client *c)
{
    if (!c)
        return;
    /* Stop the stream first so its end is not mistaken for anything but our leaving. */
    esc_subscription_stop(c->live);
    esc_job_run_free(c->run);
    pthread_mutex_destroy(&c->run_mu);
    esc_owner_free(c->owner); /* what is queued goes out before the job ends */
    pthread_mutex_destroy(&c->owner_mu);
    pthread_mutex_destroy(&c->watch_mu);
    if (c->job_id && *c->job_id && !c->attached)
        finish_job(c);
    esc_rpc_channel_free(c->gcs);
    esc_client_raylets_free(c);
    if (c->token)
        memset(c->token, 0, strlen(c->token));
    free(c->token);
    free(c->address);
    free(c->session_dir);
    free(c->job_id);
    if (c->credential)
        memset(c->credential, 0, strlen(c->credential));
    free(c->credential);
    free(c->namespace_);
    free(c->node_id);
    free(c);
}

const char *esc_client_job_id(const esc_client *c) { return c->job_id; }
const char *esc_client_namespace(const esc_client *c) { return c->namespace_; }
const char *esc_client_node_id(const esc_client *c) { return c->node_id; }
const char *esc_client_address(const esc_client *c) { return c->address; }
const char *esc_client_job_credential(const esc_client *c) { return c->credential; }

static int grant_call(esc_client *c, const char *job_id, const char *prefix, bool revoke,
                      esc_status *st)
{
    if (!*c->job_id)
        return esc_status_set(st, ESC_FAILED_PRECONDITION, "a client with no job grants nothing");
    Escher__GrantNamespaceRequest req = ESCHER__GRANT_NAMESPACE_REQUEST__INIT;
    req.job_id = c->job_id;
    req.grantee = (char *)(job_id ? job_id : "");
    req.revoke = revoke;
    req.prefix = (char *)prefix;
    ProtobufCMessage *m;
    /* Idempotent: granting or revoking twice is the same as once. */
    int rc =
        esc_client_call(c, &ESC_M_GCS_GRANT_NAMESPACE, &req.base, &m, ESC_RPC_IDEMPOTENT, st);
    if (rc == ESC_OK)
        protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

int esc_namespace_grant(esc_client *c, const char *job_id, esc_status *st)
{
    return grant_call(c, job_id, "", false, st);
}

int esc_namespace_grant_prefix(esc_client *c, const char *job_id, const char *prefix,
                               esc_status *st)
{
    /* On the wire an empty prefix is the whole namespace: refuse it here, so a bug that
     * loses the prefix never grants everything. */
    if (!prefix || !*prefix)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "a grant prefix must not be empty "
                              "(esc_namespace_grant grants the whole namespace)");
    return grant_call(c, job_id, prefix, false, st);
}

int esc_namespace_revoke(esc_client *c, const char *job_id, esc_status *st)
{
    return grant_call(c, job_id, "", true, st);
}
