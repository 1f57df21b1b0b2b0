/* task.h: writing escher tasks in C.
 *
 * A function task is a C function exported from a shared library:
 *
 *     #include <escher/task.h>
 *
 *     ESC_TASK(echo)
 *     {
 *         (void)ctx;
 *         return esc_buf_set(ret, arg, len);   // 0: success
 *     }
 *
 * Build it with `cc -shared -fPIC -o libmytasks.so tasks.c` and do NOT link libescher
 * into it: escher-worker, which loads the library with dlopen, exports the esc_buf_* and
 * esc_task_* functions and the whole SDK (escher.h, esl.h, jobs.h) itself, and the
 * library's references resolve to those. esc_task_client gives a task a client.
 *
 * Calling convention:
 *  - arg/len is the task's first argument (NULL/0 when it has none); every argument,
 *    the first included, is also available through esc_task_arg.
 *  - ret is the first return value (empty unless the task fills it); further returns
 *    come from esc_task_return(ctx, i). A task with num_returns = 0 may still write to
 *    ret: it is discarded.
 *  - Returning 0 means success and the returns become the task's objects; any other
 *    value fails the task with the error "task returned N" (returns are discarded).
 *  - Everything the task writes to stdout and stderr goes to the task's log files
 *    (`escher logs TASK_ID`).
 *  - A worker runs one task at a time and is reused for later tasks of the same job, so
 *    a task must release what it allocates; static state survives between tasks. The
 *    exception: the methods of an actor created with max_concurrency > 1 run on several
 *    threads of its worker at once, and must be thread-safe (escher.h, esc_actor_spec).
 *
 * All pointers handed to a task (ctx, arg, ret, arguments, ids) are owned by the worker
 * and valid only until the task function returns.
 */
#ifndef ESCHER_TASK_H
#define ESCHER_TASK_H

#include <stdarg.h>
#include <stddef.h>

#include "status.h" /* esc_status and the status codes */

#ifdef __cplusplus
extern "C" {
#define ESC_TASK_LINKAGE extern "C"
#else
#define ESC_TASK_LINKAGE
#endif

/* A growable byte buffer that a task fills with a return value. */
typedef struct esc_buf esc_buf;

/* What a running task can ask about itself. */
typedef struct esc_task_ctx esc_task_ctx;

/* The signature of every function task. */
typedef int (*esc_task_fn)(esc_task_ctx *ctx, const void *arg, size_t len, esc_buf *ret);

/* Defines the exported task function `name` with the signature above; the body follows.
 * Default visibility keeps it loadable when the library is built with
 * -fvisibility=hidden. The definition comes after its own prototype, so a library built
 * with -Wmissing-prototypes needs no header for its tasks. */
#define ESC_TASK(name)                                                                   \
    ESC_TASK_LINKAGE __attribute__((visibility("default"))) int name(                   \
        esc_task_ctx *ctx, const void *arg, size_t len, esc_buf *ret);                   \
    ESC_TASK_LINKAGE __attribute__((visibility("default"))) int name(                   \
        esc_task_ctx *ctx, const void *arg, size_t len, esc_buf *ret)

/* ---------------------------------------------------------------------------- buffers */

/* Replaces the content of b by len bytes at data (data may be NULL when len is 0).
 * Returns 0, or -1 when memory runs out (b is then unchanged). */
int esc_buf_set(esc_buf *b, const void *data, size_t len);

/* Appends len bytes at data. Returns 0 or -1 (out of memory; b unchanged). */
int esc_buf_append(esc_buf *b, const void *data, size_t len);

/* Appends printf-formatted text, without its terminating NUL. Returns 0 or -1. */
int esc_buf_printf(esc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int esc_buf_vprintf(esc_buf *b, const char *fmt, va_list ap);

/* Empties b (keeps its memory for reuse). */
void esc_buf_clear(esc_buf *b);

/* The content of b (owned by b, valid until b changes; NULL when empty) and its size. */
const void *esc_buf_data(const esc_buf *b);
size_t esc_buf_len(const esc_buf *b);

/* ------------------------------------------------------------------------ the context */

/* The task's id and its job's id (owned by ctx). */
const char *esc_task_id(const esc_task_ctx *ctx);
const char *esc_task_job_id(const esc_task_ctx *ctx);

/* Number of arguments, and argument i (0-based) with its size in *len (len may be
 * NULL). Returns NULL with *len = 0 when i is out of range; an empty argument gives a
 * non-NULL pointer and *len = 0. Owned by ctx. */
size_t esc_task_num_args(const esc_task_ctx *ctx);
const void *esc_task_arg_at(const esc_task_ctx *ctx, size_t i, size_t *len);

/* Number of returns the caller asked for, and the buffer of return i: i = 0 is the ret
 * handed to the task function, higher i are the further returns. Returns NULL when i is
 * out of range. Owned by ctx. */
size_t esc_task_num_returns(const esc_task_ctx *ctx);
esc_buf *esc_task_return(esc_task_ctx *ctx, size_t i);

/* Inside an actor's method call: how much of resource `name` (a physical name, "CPU", or
 * an ephemeral one in full, "ns/name") the actor holds as this call starts, in units
 * (0.25 CPU is 0.25); 0 for a name it does not hold, and in a function task (its
 * resources are not sent to its worker). An actor resized (esc_actor_resize) sees its new
 * holding from its next call on (also while older calls of a concurrent actor run). */
double esc_actor_held(const esc_task_ctx *ctx, const char *name);

/* ------------------------------------------------------- the cluster, from a task */

typedef struct esc_client esc_client; /* escher.h: include it to use the client */

/* A client connected as the task's job, for escher.h's calls from inside a function task
 * or an actor method: submit tasks and get their results, put and get objects, read and
 * write the job's resources and KV. It acts as the job (its namespace, its credential)
 * and never ends it. One client serves every task of the worker process: made at the
 * first call (a connection to the GCS: milliseconds), kept until the worker exits; owned
 * by the worker: never esc_disconnect it. Safe to call from any thread of the task.
 * A task that waits (esc_get) for a task it submitted holds its own resources meanwhile:
 * the child must fit beside it, or it waits forever.
 * Returns ESC_OK with *out set; INVALID_ARGUMENT (NULL ctx or out); FAILED_PRECONDITION
 * outside a worker escher started for a job (a unit test calling the task directly);
 * or the code of esc_connect (UNAVAILABLE when the GCS cannot be reached). */
int esc_task_client(esc_task_ctx *ctx, esc_client **out, esc_status *st);

/* ------------------------------------------- running a task function (workers, tests) */

/* Builds a context for calling a task function directly, as escher-worker does; also
 * handy for unit tests of a task library. The ids are copied; the nargs arguments
 * args[i]/lens[i] are not (they can be large) and must stay valid until
 * esc_task_ctx_free. num_returns buffers are made (at least one, for ret). Never NULL
 * (out of memory aborts: escher.h, "Out of memory"). Free with esc_task_ctx_free. */
esc_task_ctx *esc_task_ctx_new(const char *task_id, const char *job_id, size_t nargs,
                               const void *const *args, const size_t *lens,
                               size_t num_returns);

/* What the task's actor holds (esc_actor_held): n names and their quantities in units,
 * copied. Returns 0 (out of memory aborts: escher.h, "Out of memory"). */
int esc_task_ctx_set_held(esc_task_ctx *ctx, const char *const *names, const double *qty,
                          size_t n);

/* Calls fn with ctx, its first argument and esc_task_return(ctx, 0); returns fn's
 * result. */
int esc_task_ctx_call(esc_task_ctx *ctx, esc_task_fn fn);

void esc_task_ctx_free(esc_task_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif
