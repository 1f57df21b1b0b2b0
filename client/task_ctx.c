/* task_ctx.c: the buffers and the context that a task function sees (task.h).
 *
 * Linked into escher-worker, which exports these functions to the task libraries it
 * loads; keep every esc_buf_* and esc_task_* function in this one file so that linking
 * any of them brings all of them into the worker. */
#include "escher/task.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct esc_buf {
    uint8_t *data;
    size_t len, cap;
};

struct esc_task_ctx {
    char *task_id, *job_id;
    size_t nargs;
    const void *const *args;
    const size_t *lens;
    size_t nret;  /* buffers in rets: max(num_returns, 1) */
    size_t asked; /* num_returns as given */
    esc_buf *rets;
    char **held_names; /* an actor's call: what the actor holds (esc_actor_held) */
    double *held;
    size_t nheld;
};

/* ---------------------------------------------------------------------------- buffers */

/* Grows b to hold at least need bytes, doubling to keep appends amortized O(1). */
static int reserve(esc_buf *b, size_t need)
{
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    /* The caller's size: a checked realloc, -1 when it does not fit (task.h). */
    uint8_t *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

int esc_buf_set(esc_buf *b, const void *data, size_t len)
{
    if (reserve(b, len) < 0)
        return -1;
    if (len)
        memmove(b->data, data, len); /* data may point into b itself */
    b->len = len;
    return 0;
}

int esc_buf_append(esc_buf *b, const void *data, size_t len)
{
    if (len > SIZE_MAX - b->len)
        return -1;
    /* data may point into b, which reserve() can move: remember it as an offset. */
    uintptr_t at = (uintptr_t)data, start = (uintptr_t)b->data;
    int inside = b->data && at >= start && at < start + b->len;
    size_t off = inside ? (size_t)(at - start) : 0;
    if (reserve(b, b->len + len) < 0)
        return -1;
    if (len)
        memcpy(b->data + b->len, inside ? b->data + off : data, len);
    b->len += len;
    return 0;
}

int esc_buf_vprintf(esc_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    /* +1: vsnprintf writes a NUL that is not part of the content. */
    if (n < 0 || reserve(b, b->len + (size_t)n + 1) < 0)
        return -1;
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int esc_buf_printf(esc_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = esc_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void esc_buf_clear(esc_buf *b)
{
    b->len = 0;
}

const void *esc_buf_data(const esc_buf *b)
{
    return b->len ? b->data : NULL;
}

size_t esc_buf_len(const esc_buf *b)
{
    return b->len;
}

/* ------------------------------------------------------------------------ the context */

const char *esc_task_id(const esc_task_ctx *ctx)
{
    return ctx->task_id;
}

const char *esc_task_job_id(const esc_task_ctx *ctx)
{
    return ctx->job_id;
}

size_t esc_task_num_args(const esc_task_ctx *ctx)
{
    return ctx->nargs;
}

const void *esc_task_arg_at(const esc_task_ctx *ctx, size_t i, size_t *len)
{
    if (i >= ctx->nargs) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = ctx->lens[i];
    return ctx->args[i] ? ctx->args[i] : ""; /* empty, but still "present" */
}

size_t esc_task_num_returns(const esc_task_ctx *ctx)
{
    return ctx->asked;
}

esc_buf *esc_task_return(esc_task_ctx *ctx, size_t i)
{
    return i < ctx->nret ? &ctx->rets[i] : NULL;
}

esc_task_ctx *esc_task_ctx_new(const char *task_id, const char *job_id, size_t nargs,
                               const void *const *args, const size_t *lens,
                               size_t num_returns)
{
    esc_task_ctx *ctx = esc_xcalloc(1, sizeof *ctx);
    ctx->task_id = esc_xstrdup(task_id ? task_id : "");
    ctx->job_id = esc_xstrdup(job_id ? job_id : "");
    ctx->nargs = nargs;
    ctx->args = args;
    ctx->lens = lens;
    ctx->asked = num_returns;
    ctx->nret = num_returns ? num_returns : 1;
    ctx->rets = esc_xcalloc(ctx->nret, sizeof *ctx->rets);
    return ctx;
}

int esc_task_ctx_set_held(esc_task_ctx *ctx, const char *const *names, const double *qty,
                          size_t n)
{
    for (size_t i = 0; i < ctx->nheld; i++)
        free(ctx->held_names[i]);
    free(ctx->held_names);
    free(ctx->held);
    ctx->nheld = 0;
    ctx->held_names = esc_xcalloc(n + 1, sizeof *ctx->held_names);
    ctx->held = esc_xcalloc(n + 1, sizeof *ctx->held);
    for (size_t i = 0; i < n; i++) {
        ctx->held_names[i] = esc_xstrdup(names[i]);
        ctx->held[i] = qty[i];
        ctx->nheld++;
    }
    return 0;
}

double esc_actor_held(const esc_task_ctx *ctx, const char *name)
{
    double q = 0;
    for (size_t i = 0; ctx && name && i < ctx->nheld; i++)
        if (!strcmp(ctx->held_names[i], name))
            q += ctx->held[i];
    return q;
}

int esc_task_ctx_call(esc_task_ctx *ctx, esc_task_fn fn)
{
    size_t len;
    const void *arg = esc_task_arg_at(ctx, 0, &len);
    return fn(ctx, arg, len, &ctx->rets[0]);
}

void esc_task_ctx_free(esc_task_ctx *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; ctx->rets && i < ctx->nret; i++)
        free(ctx->rets[i].data);
    free(ctx->rets);
    for (size_t i = 0; i < ctx->nheld; i++)
        free(ctx->held_names[i]);
    free(ctx->held_names);
    free(ctx->held);
    free(ctx->task_id);
    free(ctx->job_id);
    free(ctx);
}
