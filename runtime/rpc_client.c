/* rpc_client.c: blocking unary and server-streaming calls of protobuf-c services over
 * gRPC core. Each call plucks its own completion queue, so calls from many threads
 * share one channel without coordination. */
#include "rpc_internal.h"
#include "xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

typedef struct reg_call {
    const ProtobufCMethodDescriptor *md;
    void *handle;
} reg_call;

struct esc_rpc_channel {
    grpc_channel *ch;
    char *target;
    char *token;
    char *job_id;       /* esc_rpc_channel_set_job; NULL: none (guarded by mu) */
    char *credential;
    /* esc_rpc_channel_set_secret: more metadata entries (guarded by mu) */
    struct {
        char *key, *value;
    } secrets[ESC_RPC_SECRETS_MAX];
    pthread_mutex_t mu;
    reg_call *calls;
    size_t ncalls;
};

esc_rpc_channel *esc_rpc_channel_new(const char *target, const char *token)
{
    esc_rpc_grpc_ref();
    esc_rpc_channel *c = esc_xcalloc(1, sizeof *c);
    c->target = esc_xstrdup(target);
    c->token = token ? esc_xstrdup(token) : NULL;
    pthread_mutex_init(&c->mu, NULL);
    grpc_arg args[7];
    int n = 0;
    args[n++] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                           .value.integer = ESC_RPC_MAX_MESSAGE};
    /* No send limit here: the server enforces its own and answers RESOURCE_EXHAUSTED. */
    args[n++] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
                           .value.integer = -1};
    /* A restarted GCS should be found again within a second, not after minutes. */
    args[n++] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                           .value.integer = 100};
    args[n++] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
                           .value.integer = 100};
    args[n++] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                           .value.integer = 1000};
    /* Long streams notice a peer that vanished without closing its socket. */
    args[n++] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_KEEPALIVE_TIME_MS,
                           .value.integer = 10000};
    /* Retries are ours (ESC_RPC_IDEMPOTENT); gRPC's retry filter only adds a buffering
     * hop to every call. */
    args[n++] = (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_RETRIES,
                           .value.integer = 0};
    grpc_channel_args cargs = {.num_args = (size_t)n, .args = args};
    c->ch = esc_rpc_channel_create(target, &cargs);
    return c;
}

/* Frees secret slot i, wiping the value first. */
static void secret_clear(esc_rpc_channel *c, size_t i)
{
    if (c->secrets[i].value)
        memset(c->secrets[i].value, 0, strlen(c->secrets[i].value));
    free(c->secrets[i].value);
    free(c->secrets[i].key);
    c->secrets[i].key = c->secrets[i].value = NULL;
}

void esc_rpc_channel_set_secret(esc_rpc_channel *c, const char *key, const char *value)
{
    pthread_mutex_lock(&c->mu);
    size_t slot = ESC_RPC_SECRETS_MAX;
    for (size_t i = 0; i < ESC_RPC_SECRETS_MAX; i++) {
        if (c->secrets[i].key && !strcmp(c->secrets[i].key, key))
            slot = i;
        else if (!c->secrets[i].key && slot == ESC_RPC_SECRETS_MAX)
            slot = i;
    }
    if (slot == ESC_RPC_SECRETS_MAX)
        abort(); /* more secret keys than the metadata array holds */
    secret_clear(c, slot);
    if (value && *value) {
        c->secrets[slot].key = esc_xstrdup(key);
        c->secrets[slot].value = esc_xstrdup(value);
    }
    pthread_mutex_unlock(&c->mu);
}

void esc_rpc_channel_free(esc_rpc_channel *c)
{
    if (!c)
        return;
    grpc_channel_destroy(c->ch);
    free(c->calls);
    free(c->target);
    free(c->token);
    free(c->job_id);
    if (c->credential)
        memset(c->credential, 0, strlen(c->credential));
    free(c->credential);
    for (size_t i = 0; i < ESC_RPC_SECRETS_MAX; i++)
        secret_clear(c, i);
    pthread_mutex_destroy(&c->mu);
    free(c);
    esc_rpc_grpc_unref();
}

const char *esc_rpc_channel_target(const esc_rpc_channel *c)
{
    return c->target;
}

/* The registered-call handle of a method (registered once per channel); NULL for an
 * invalid method handle. */
static void *method_handle(esc_rpc_channel *c, const esc_rpc_method *method,
                           const ProtobufCMethodDescriptor **md)
{
    if (!esc_rpc_method_valid(method))
        return NULL;
    *md = esc_rpc_method_desc(method);
    void *h = NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->ncalls && !h; i++)
        if (c->calls[i].md == *md)
            h = c->calls[i].handle;
    if (!h) {
        const ProtobufCMethodDescriptor *ignored;
        char *path = esc_rpc_method_path(method, &ignored);
        h = grpc_channel_register_call(c->ch, path, NULL, NULL);
        free(path);
        c->calls = esc_xrealloc(c->calls, (c->ncalls + 1) * sizeof *c->calls);
        c->calls[c->ncalls++] = (reg_call){*md, h};
    }
    pthread_mutex_unlock(&c->mu);
    return h;
}

void esc_rpc_channel_set_job(esc_rpc_channel *c, const char *job_id, const char *credential)
{
    pthread_mutex_lock(&c->mu);
    free(c->job_id);
    free(c->credential);
    c->job_id = job_id && *job_id ? esc_xstrdup(job_id) : NULL;
    c->credential = c->job_id && credential ? esc_xstrdup(credential) : NULL;
    pthread_mutex_unlock(&c->mu);
}

static void one_metadata(grpc_metadata *md, const char *key, const char *value)
{
    memset(md, 0, sizeof *md);
    md->key = grpc_slice_from_static_string(key);
    md->value = grpc_slice_from_copied_string(value ? value : "");
}

/* The same with a key that may be freed while the call runs (set_secret). */
static void one_metadata_copied_key(grpc_metadata *md, const char *key, const char *value)
{
    one_metadata(md, key, value);
    md->key = grpc_slice_from_copied_string(key);
}

/* The metadata every call carries: the token, and the job's id and credential when the
 * channel has them. Returns how many entries of md[ESC_RPC_MD_MAX] it filled. */
static size_t call_metadata(esc_rpc_channel *c, grpc_metadata *md)
{
    size_t n = 0;
    one_metadata(&md[n++], ESC_TOKEN_KEY, c->token);
    pthread_mutex_lock(&c->mu);
    if (c->job_id) {
        one_metadata(&md[n++], ESC_RPC_JOB_KEY, c->job_id);
        one_metadata(&md[n++], ESC_RPC_CREDENTIAL_KEY, c->credential);
    }
    for (size_t i = 0; i < ESC_RPC_SECRETS_MAX; i++)
        if (c->secrets[i].key)
            one_metadata_copied_key(&md[n++], c->secrets[i].key, c->secrets[i].value);
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void metadata_release(grpc_metadata *md, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        grpc_slice_unref(md[i].key);
        grpc_slice_unref(md[i].value);
    }
}

static void fill_status(esc_status *st, grpc_status_code code, grpc_slice details)
{
    if (!st)
        return;
    st->code = (int)code;
    size_t len = GRPC_SLICE_LENGTH(details);
    if (len >= sizeof st->message)
        len = sizeof st->message - 1;
    memcpy(st->message, GRPC_SLICE_START_PTR(details), len);
    st->message[len] = 0;
}

static void destroy_cq(grpc_completion_queue *cq)
{
    grpc_completion_queue_shutdown(cq);
    grpc_completion_queue_destroy(cq);
}

/* One attempt of a unary call. */
static int unary_once(esc_rpc_channel *c, void *handle, const ProtobufCMethodDescriptor *md,
                      grpc_byte_buffer *send, ProtobufCMessage **reply,
                      gpr_timespec deadline, bool wait_ready, esc_status *st)
{
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_call *call = grpc_channel_create_registered_call(c->ch, NULL, GRPC_PROPAGATE_DEFAULTS,
                                                          cq, handle, deadline, NULL);
    grpc_metadata md_out[ESC_RPC_MD_MAX];
    size_t nmd = call_metadata(c, md_out);
    grpc_byte_buffer *recv = NULL;
    grpc_metadata_array init_md, trailing;
    grpc_metadata_array_init(&init_md);
    grpc_metadata_array_init(&trailing);
    grpc_status_code code = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    const char *error_string = NULL;

    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = nmd;
    ops[0].data.send_initial_metadata.metadata = md_out;
    ops[0].flags = wait_ready ? GRPC_INITIAL_METADATA_WAIT_FOR_READY : 0;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
    ops[5].data.recv_status_on_client.status = &code;
    ops[5].data.recv_status_on_client.status_details = &details;
    ops[5].data.recv_status_on_client.error_string = &error_string;

    int rc;
    if (grpc_call_start_batch(call, ops, 6, call, NULL) != GRPC_CALL_OK) {
        rc = esc_status_set(st, ESC_INTERNAL, "cannot start call");
    } else {
        grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        fill_status(st, code, details);
        rc = (int)code;
        if (rc == ESC_OK && reply) {
            *reply = recv ? esc_rpc_unpack(md->output, recv) : NULL;
            if (!*reply)
                rc = esc_status_set(st, ESC_INTERNAL, "malformed %s reply", md->name);
        }
    }
    if (rc == ESC_UNAVAILABLE && st && !st->message[0])
        esc_status_set(st, rc, "cannot reach %s", c->target);
    if (recv)
        grpc_byte_buffer_destroy(recv);
    grpc_slice_unref(details);
    metadata_release(md_out, nmd);
    gpr_free((void *)error_string);
    grpc_metadata_array_destroy(&init_md);
    grpc_metadata_array_destroy(&trailing);
    grpc_call_unref(call);
    destroy_cq(cq);
    return rc;
}

static gpr_timespec deadline_after(int64_t ms)
{
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

static int64_t ms_left(gpr_timespec deadline)
{
    gpr_timespec d = gpr_time_sub(deadline, gpr_now(GPR_CLOCK_MONOTONIC));
    return (int64_t)d.tv_sec * 1000 + d.tv_nsec / 1000000;
}

/* The status of a call made with an invalid method handle (NULL, or put together by hand
 * with an index past its service's methods). */
static int invalid_method(esc_status *st, const esc_rpc_method *method)
{
    return esc_status_set(st, ESC_UNIMPLEMENTED, "invalid method handle (%s of %s)",
                          esc_rpc_method_name(method),
                          method && method->svc ? method->svc->name : "no service");
}

int esc_rpc_call(esc_rpc_channel *c, const esc_rpc_method *method, const ProtobufCMessage *req,
                 ProtobufCMessage **reply, int timeout_ms, int flags, esc_status *st)
{
    *reply = NULL;
    const ProtobufCMethodDescriptor *md;
    void *handle = method_handle(c, method, &md);
    if (!handle)
        return invalid_method(st, method);
    bool idempotent = flags & ESC_RPC_IDEMPOTENT;
    gpr_timespec deadline = deadline_after(timeout_ms);
    int64_t backoff = 20;
    for (;;) {
        /* A buffer per attempt: gRPC takes the slices of a message it sends, so a buffer
         * sent once is empty, and a retry with it would send an all-default request. */
        grpc_byte_buffer *send = esc_rpc_pack(req);
        int rc = unary_once(c, handle, md, send, reply, deadline, idempotent, st);
        grpc_byte_buffer_destroy(send);
        if (rc != ESC_UNAVAILABLE || !idempotent)
            return rc;
        int64_t left = ms_left(deadline);
        if (left <= 0)
            return rc;
        int64_t nap = backoff < left ? backoff : left;
        struct timespec ts = {nap / 1000, (nap % 1000) * 1000000};
        nanosleep(&ts, NULL);
        backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
    }
}

int esc_rpc_call_bytes(esc_rpc_channel *c, const esc_rpc_method *method, const void *bytes,
                       size_t len, int timeout_ms, esc_status *st)
{
    const ProtobufCMethodDescriptor *md;
    void *handle = method_handle(c, method, &md);
    if (!handle)
        return invalid_method(st, method);
    grpc_slice slice = grpc_slice_from_copied_buffer(bytes, len);
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    ProtobufCMessage *reply = NULL;
    int rc = unary_once(c, handle, md, send, &reply, deadline_after(timeout_ms), false, st);
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    grpc_byte_buffer_destroy(send);
    return rc;
}

/* ----------------------------------------------------------------- streams */

struct esc_rpc_stream {
    grpc_call *call;
    grpc_completion_queue *cq;
    const ProtobufCMethodDescriptor *md;
    grpc_metadata md_out[ESC_RPC_MD_MAX];
    size_t nmd;
    grpc_byte_buffer *send;
    grpc_metadata_array init_md, trailing;
    grpc_status_code code;
    grpc_slice details;
    const char *error_string;
    bool status_done;
    int start_tag, recv_tag;
};

esc_rpc_stream *esc_rpc_stream_open(esc_rpc_channel *c, const esc_rpc_method *method,
                                    const ProtobufCMessage *req, esc_status *st)
{
    return esc_rpc_stream_open_timeout(c, method, req, 0, st);
}

esc_rpc_stream *esc_rpc_stream_open_timeout(esc_rpc_channel *c, const esc_rpc_method *method,
                                            const ProtobufCMessage *req, int timeout_ms,
                                            esc_status *st)
{
    const ProtobufCMethodDescriptor *md;
    void *handle = method_handle(c, method, &md);
    if (!handle) {
        invalid_method(st, method);
        return NULL;
    }
    esc_rpc_stream *s = esc_xcalloc(1, sizeof *s);
    s->md = md;
    s->cq = grpc_completion_queue_create_for_pluck(NULL);
    gpr_timespec deadline =
        timeout_ms > 0 ? deadline_after(timeout_ms) : gpr_inf_future(GPR_CLOCK_REALTIME);
    s->call = grpc_channel_create_registered_call(c->ch, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
                                                  handle, deadline, NULL);
    s->nmd = call_metadata(c, s->md_out);
    s->send = esc_rpc_pack(req);
    grpc_metadata_array_init(&s->init_md);
    grpc_metadata_array_init(&s->trailing);
    s->details = grpc_empty_slice();
    s->code = GRPC_STATUS_UNKNOWN;

    /* The status op is started now and completes when the stream ends. */
    grpc_op ops[5];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = s->nmd;
    ops[0].data.send_initial_metadata.metadata = s->md_out;
    ops[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = s->send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->init_md;
    ops[4].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[4].data.recv_status_on_client.trailing_metadata = &s->trailing;
    ops[4].data.recv_status_on_client.status = &s->code;
    ops[4].data.recv_status_on_client.status_details = &s->details;
    ops[4].data.recv_status_on_client.error_string = &s->error_string;
    if (grpc_call_start_batch(s->call, ops, 5, &s->start_tag, NULL) != GRPC_CALL_OK) {
        s->status_done = true;
        esc_rpc_stream_free(s);
        esc_status_set(st, ESC_INTERNAL, "cannot start stream");
        return NULL;
    }
    return s;
}

static void wait_status(esc_rpc_stream *s)
{
    if (s->status_done)
        return;
    grpc_completion_queue_pluck(s->cq, &s->start_tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    s->status_done = true;
}

int esc_rpc_stream_next(esc_rpc_stream *s, ProtobufCMessage **msg, esc_status *st)
{
    *msg = NULL;
    if (s->status_done) {
        fill_status(st, s->code, s->details);
        return 0;
    }
    grpc_byte_buffer *recv = NULL;
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &recv;
    if (grpc_call_start_batch(s->call, &op, 1, &s->recv_tag, NULL) != GRPC_CALL_OK) {
        grpc_call_cancel(s->call, NULL);
        wait_status(s);
        fill_status(st, s->code, s->details);
        return 0;
    }
    grpc_completion_queue_pluck(s->cq, &s->recv_tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (recv) {
        *msg = esc_rpc_unpack(s->md->output, recv);
        grpc_byte_buffer_destroy(recv);
        if (*msg)
            return 1;
        grpc_call_cancel(s->call, NULL);
        wait_status(s);
        esc_status_set(st, ESC_INTERNAL, "malformed %s stream message", s->md->name);
        return 0;
    }
    wait_status(s);
    fill_status(st, s->code, s->details);
    return 0;
}

void esc_rpc_stream_cancel(esc_rpc_stream *s)
{
    grpc_call_cancel(s->call, NULL);
}

void esc_rpc_stream_free(esc_rpc_stream *s)
{
    if (!s)
        return;
    if (!s->status_done) {
        grpc_call_cancel(s->call, NULL);
        wait_status(s);
    }
    grpc_call_unref(s->call);
    destroy_cq(s->cq);
    grpc_byte_buffer_destroy(s->send);
    metadata_release(s->md_out, s->nmd);
    grpc_slice_unref(s->details);
    gpr_free((void *)s->error_string);
    grpc_metadata_array_destroy(&s->init_md);
    grpc_metadata_array_destroy(&s->trailing);
    free(s);
}
