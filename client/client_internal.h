/* client_internal.h: the client object shared by the SDK's modules (not public). */
#ifndef ESC_CLIENT_INTERNAL_H
#define ESC_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "escher/escher.h"
#include "gcs.pb-c.h"
#include "subscription.h"

/* Every field is set by esc_connect and read-only afterwards, which is what makes one
 * client safe to share between threads (the channel is thread-safe itself), except the
 * raylet caches, which are guarded by raylets_mu. */
struct esc_client {
    esc_rpc_channel *gcs;
    char *address;
    char *job_id;
    char *credential;   /* the job's (docs/security.md); "" with no job */
    uint64_t job_seq;   /* RegisterJobReply.job_seq: put in every task spec */
    char *namespace_;
    char *node_id;      /* "" when unknown */
    bool detached;
    bool attached;      /* joined a job it did not register: never ends it */
    int timeout_ms;
    /* The job's liveness: the GCS ends a job whose driver has had no Subscribe stream
     * for its job timeout. NULL for a short-lived client. */
    esc_subscription *live;
    char *token;        /* kept for channels to raylets */
    char *session_dir;  /* the session directory esc_connect looked in */
    /* raylets.c: channels to raylets by address, and raylet addresses by node id. */
    pthread_mutex_t raylets_mu;
    struct esc_strmap *raylet_channels;   /* address -> esc_rpc_channel */
    struct esc_strmap *raylet_addresses;  /* node id -> malloc'd "host:port" */
    struct esc_strmap *dead_addresses;    /* raylets seen dying (node events) */
    /* client.c: who is told of node deaths (esc_on_node_dead). */
    pthread_mutex_t watch_mu;
    struct {
        esc_node_dead_fn fn;
        void *ud;
    } watchers[64];
    size_t nwatchers;
    /* owner.c: the tasks this client submits, started with the first one. */
    char owner_id[33];
    pthread_mutex_t owner_mu;
    struct esc_owner *owner;
    /* job_submit.c: the entrypoint this client submitted (esc_job_submit), guarded by
     * run_mu; NULL before. */
    pthread_mutex_t run_mu;
    struct esc_job_run *run;
    /* workdir.c: the job's package (esc_job_package, or the joined job's, set by
     * esc_connect). package_state: 0 none, 1 being set, 2 set; package is written before
     * the state becomes 2 and never changes after, so a submission reads it unlocked. */
    _Atomic int package_state;
    char package[65];
};

/* One unary call to the GCS (a Gcs method's handle, &ESC_M_GCS_KV_GET) with the client's
 * default deadline, as esc_rpc_call. */
int esc_client_call(esc_client *c, const esc_rpc_method *method, const ProtobufCMessage *req,
                    ProtobufCMessage **reply, int flags, esc_status *st);

/* ---- jobs.c ---- */
/* FinishJob of job_id (NULL: c's); operator_key not NULL: an operator stop, as `escher
 * job stop`, for a job that is not c's, carrying that key (docs/security.md). */
int esc_client_finish_job(esc_client *c, const char *job_id, bool failed,
                          const char *operator_key, esc_status *st);

/* ---- client.c ---- */
/* The operator key: $ESCHER_OPERATOR_KEY, else the `operator` file of c's session
 * directory (malloc'd; NULL when neither has one). */
char *esc_client_operator_key(const esc_client *c);

/* ---- raylets.c ---- */
/* Sets up and frees the raylet caches (esc_connect, esc_disconnect). */
void esc_client_raylets_init(esc_client *c);
void esc_client_raylets_free(esc_client *c);
/* The address of node_id's raylet (NULL: the client's local node), from the GCS's node
 * table, cached: node ids are never reused. Copies it into out (len bytes). Returns
 * ESC_OK, FAILED_PRECONDITION (no local node), NOT_FOUND (unknown or dead node) or the
 * GCS call's code. */
int esc_client_raylet_address(esc_client *c, const char *node_id, char *out, size_t len,
                              esc_status *st);
/* A channel to the raylet at address, made once and owned by the client. */
esc_rpc_channel *esc_client_raylet_channel(esc_client *c, const char *address);

/* Records that the raylet at address died (dead) or that a new one lives there. */
void esc_client_mark_dead(esc_client *c, const char *address, bool dead);
/* True when the client saw the raylet at address die (drivers only: they get events). */
bool esc_client_is_dead(esc_client *c, const char *address);

/* strdup that maps NULL to "" so optional proto strings never need NULL checks. */
char *esc_client_strdup(const char *s);
/* A buffer that the caller or the cluster sized could not be allocated (escher.h, "Out
 * of memory"): sets st to RESOURCE_EXHAUSTED "out of memory (N bytes)" and returns it. */
int esc_client_out_of_memory(esc_status *st, uint64_t bytes);

/* ---- resources.c ---- */
/* The protobuf form of a batch of operations a task carries (TaskSpec.on_success):
 * checked like esc_batch_commit, except that a LOCAL target needs no local node (it is
 * the node the task runs on). *req points into the returned message, which borrows the
 * batch's strings; free it with esc_update_msg_free. NULL with st when invalid. */
typedef struct esc_update_msg esc_update_msg;
esc_update_msg *esc_client_task_ops(const esc_client *c, const esc_batch *b,
                                    Escher__UpdateResourcesRequest **req, esc_status *st);
void esc_update_msg_free(esc_update_msg *m);

/* ---- tasks.c ---- */
/* What makes a task an actor's creation (esc_actor_spec's). */
typedef struct {
    const char *actor_id;
    unsigned max_restarts;
    unsigned max_concurrency;
} esc_actor_creation;

/* Submits a task to the local raylet; an actor's creation when actor is set.
 * refs/task_id as in esc_task_submit. */
int esc_client_submit(esc_client *c, const esc_task_spec *in, const esc_actor_creation *actor,
                      esc_ref **refs, char *task_id, esc_status *st);
/* Submits an actor's method call straight to the raylet at address. */
int esc_client_submit_to(esc_client *c, const char *address, const esc_task_spec *in,
                         const char *actor_id, uint64_t seq, esc_ref **refs, esc_status *st);

/* A task built once and submitted, possibly several times under the same id (soft
 * constraints move it between nodes), each time with extra resources. */
typedef struct esc_prepared esc_prepared;
/* Builds and checks the spec (esc_task_submit's rules) and fills refs with its returns'
 * references; NULL with st when invalid. */
esc_prepared *esc_task_prepare(esc_client *c, const esc_task_spec *in, esc_ref **refs,
                               esc_status *st);
/* Submits it with its own resources plus extra[0..n) (strings only read now). */
int esc_prepared_submit(esc_client *c, esc_prepared *p, const esc_amount *extra, size_t n,
                        esc_status *st);
/* Marks it as a job's entrypoint (TaskSpec.job_entrypoint: raylets that queue it tell
 * the GCS) and copies its id into task_id (ESC_ID_MAX bytes). */
void esc_prepared_mark_entrypoint(esc_prepared *p, char *task_id);
void esc_prepared_free(esc_prepared *p);

/* ---- owner.c ---- */
typedef struct esc_owner esc_owner;

/* A waker: what one blocked wait is woken by, with no period. The owner pokes every
 * waker that listens to it (esc_owner_listen) at each change of its state (a value
 * filed, a batch sent or failed, the stream ended, a node declared dead); anyone may
 * poke one (esc_waker_poke: esl_queues' submits and stop). Each poke bumps gen, and ext
 * too when it is not the owner's. A waiter reads gen (esc_waker_gen) before it looks at
 * what it waits for, and blocks only while gen is unchanged (esc_waker_wait), so a poke
 * between its look and its wait is never lost. A waiter blocked in a directory call
 * registers the call (esc_waker_begin_call): a poke cancels it. Owned by its user. */
typedef struct esc_waker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen;                   /* every poke */
    uint64_t ext;                   /* esc_waker_poke's */
    esc_rpc_stream *call;           /* the directory wait in flight, else NULL */
    struct esc_waker *prev, *next;  /* on the owner's list while it listens */
} esc_waker;
void esc_waker_init(esc_waker *w);
void esc_waker_destroy(esc_waker *w);
/* Pokes from outside the owner (ext and gen). */
void esc_waker_poke(esc_waker *w);
/* gen now, and ext (may be NULL). */
uint64_t esc_waker_gen(esc_waker *w, uint64_t *ext);
/* Returns once gen is no longer seen, or at until_ms (esc_now_ms; UINT64_MAX: none). */
void esc_waker_wait(esc_waker *w, uint64_t seen, uint64_t until_ms);
/* Registers call as the one a poke cancels; false (nothing registered) when gen is no
 * longer seen: the caller looks again instead of waiting. esc_waker_end_call before the
 * call is freed. */
bool esc_waker_begin_call(esc_waker *w, uint64_t seen, esc_rpc_stream *call);
void esc_waker_end_call(esc_waker *w);
/* The owner pokes w at each change from now until esc_owner_unlisten. */
void esc_owner_listen(esc_owner *o, esc_waker *w);
void esc_owner_unlisten(esc_owner *o, esc_waker *w);
/* esc_wait that also returns once w was poked from outside its owner (esc_waker_poke)
 * after the caller read ext (esc_waker_gen; UINT64_MAX: only esc_wait's ends): a thread
 * that waits for its tasks' ends and for its own events at once (esl_queues). w listens
 * to the owner meanwhile. */
int esc_wait_woken(esc_client *c, const esc_ref *const *refs, size_t n, size_t num_ready,
                   int timeout_ms, esc_waker *w, uint64_t ext, bool *ready, size_t *nready,
                   esc_status *st);

/* A return of one of the client's tasks, as its raylet told it. */
typedef struct {
    bool is_error;
    int code;           /* is_error: ABORTED (the task failed), or why it was never run */
    char *error;
    bool inlined;       /* data holds the value (size bytes and a NUL) */
    void *data;
    uint64_t size;
    char *address;      /* the raylet that stores it */
} esc_owned_value;
void esc_owned_value_free(esc_owned_value *v);

/* The client's owner (started at the first call: the results stream and the sender
 * thread), or NULL with st when the client has no local raylet. */
esc_owner *esc_owner_get(esc_client *c, esc_status *st);
/* The client's owner if it was started, else NULL. */
esc_owner *esc_owner_peek(esc_client *c);
/* Ends the sender (after sending what is queued) and the stream; frees. NULL: no-op. */
void esc_owner_free(esc_owner *o);
/* Queues a packed TaskSpec (taken) whose returns are expected on the stream. */
void esc_owner_submit(esc_owner *o, const char *task_id, unsigned nreturns, void *packed,
                      size_t len);
/* Expects the returns of a task sent another way (an actor call, to the raylet at
 * route) on the stream; esc_owner_node_dead(route) fails them. */
void esc_owner_expect(esc_owner *o, const char *task_id, unsigned nreturns, const char *route);
/* The raylet at address died: what was expected from it fails with why. */
void esc_owner_node_dead(esc_owner *o, const char *address, const char *why);
/* The address of the local raylet the owner talks to. */
const char *esc_owner_raylet(const esc_owner *o);
/* Returns once every task queued before the call has reached the raylet (or failed). */
void esc_owner_flush(esc_owner *o);

enum {
    ESC_OWNED_READY,    /* the value is here */
    ESC_OWNED_PENDING,  /* it will come on the stream */
    ESC_OWNED_UNKNOWN,  /* not expected on the stream: ask the GCS directory */
};
/* Takes id's value out of the table (*out, the caller frees it), waiting up to wait_ms
 * (< 0: no limit) while it is pending. Returns one of the states above. */
int esc_owner_take(esc_owner *o, const char *id, int wait_ms, esc_owned_value **out);
/* The state of id, without taking it. */
int esc_owner_state(esc_owner *o, const char *id);
/* Stops expecting id and drops its value (released). */
void esc_owner_forget(esc_owner *o, const char *id);

#endif
