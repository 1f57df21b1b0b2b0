/* dashboard_tasks.c: a job's tasks for the dashboard (GET /api/jobs/<id>/tasks). The
 * tasks live at the raylets (raylet/state_list.c), so the GCS asks every alive node's
 * TaskService.ListTasks and answers when the last one replied or timed out. The calls go
 * out on a sender thread of their own (runtime/rpc_async.h) and their outcomes come back
 * to the loop; the HTTP answer waits meanwhile (esc_http_later_start). */
#include <stdlib.h>
#include <string.h>

#include "dashboard.h"
#include "rpc_async.h"
#include "task.pb-c.h"
#include "xalloc.h"

#define NODE_TIMEOUT_MS 2000
#define ROWS_MAX 200 /* the newest first; a job of more says how many there are */

typedef struct {
    esc_http_sse *answer;        /* NULL once the client or the server went away */
    esc_rpc_async *sender;
    esc_rpc_channel **channels;
    size_t nchannels, left;
    json_t *rows, *unreachable;
    uint64_t total;
} fanout;

typedef struct {
    fanout *f;
    char node_id[64];
} node_call;

static json_t *task_json(const Escher__TaskRow *t)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "task_id", t->task_id,
                     "name", t->name, "state", t->state, "node", t->node_id, "attempt",
                     (json_int_t)t->attempt, "max_retries", (json_int_t)t->max_retries,
                     "start_ms", (json_int_t)t->start_ms, "end_ms", (json_int_t)t->end_ms);
}

static uint64_t last_ms(const json_t *row)
{
    uint64_t e = (uint64_t)json_integer_value(json_object_get(row, "end_ms"));
    uint64_t s = (uint64_t)json_integer_value(json_object_get(row, "start_ms"));
    return e ? e : s;
}

static int newest_first(const void *a, const void *b)
{
    uint64_t x = last_ms(*(json_t *const *)a), y = last_ms(*(json_t *const *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The answer: {"tasks": [...newest first, at most ROWS_MAX], "total", "unreachable"}. */
static void answer(fanout *f)
{
    size_t n = json_array_size(f->rows);
    json_t **v = esc_xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(f->rows, i);
    qsort(v, n, sizeof *v, newest_first);
    json_t *tasks = json_array();
    for (size_t i = 0; i < n && i < ROWS_MAX; i++)
        json_array_append(tasks, v[i]);
    free(v);
    json_t *doc = json_pack("{s:o, s:I, s:O}", "tasks", tasks, "total", (json_int_t)f->total,
                            "unreachable", f->unreachable);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text)
        esc_http_later_finish(f->answer, text, strlen(text));
    else
        esc_http_later_finish(f->answer, "{}", 2);
    free(text);
    json_decref(doc);
}

static void fanout_free(fanout *f)
{
    for (size_t i = 0; i < f->nchannels; i++)
        esc_rpc_channel_free(f->channels[i]);
    free(f->channels);
    json_decref(f->rows);
    json_decref(f->unreachable);
    free(f);
}

/* One node answered (or not). The last one sends the answer; the sender thread is
 * joined here, idle by then, and freed with the rest. */
static void on_reply(void *ud, int code, const esc_status *st, ProtobufCMessage *reply)
{
    (void)st;
    node_call *nc = ud;
    fanout *f = nc->f;
    const Escher__ListTasksReply *rep = (const Escher__ListTasksReply *)reply;
    if (code == ESC_OK && rep) {
        for (size_t i = 0; i < rep->n_tasks; i++)
            json_array_append_new(f->rows, task_json(rep->tasks[i]));
        f->total += rep->total;
    } else {
        json_array_append_new(f->unreachable, json_string(nc->node_id));
    }
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
    free(nc);
    if (--f->left > 0)
        return;
    if (f->answer) {
        answer(f); /* its close callback frees the rest */
        return;
    }
    /* Nobody to answer (the client or the server went away): the sender is idle now, so
     * joining it here does not wait. */
    esc_rpc_async_free(f->sender);
    fanout_free(f);
}

/* The answer is done, or its client or the server went away. While nodes are still
 * asked, the last reply frees what is left (a GCS that stops before it leaves that to
 * the process's end). */
static void answer_closed(void *ud, esc_http_sse *st)
{
    (void)st;
    fanout *f = ud;
    f->answer = NULL;
    if (f->left == 0) { /* answered: everything else is done */
        esc_rpc_async_free(f->sender);
        fanout_free(f);
    }
}

void gcs_dash_job_tasks(gcs *g, esc_http_req *r, const char *job_id)
{
    if (!gcs_job_find(g, job_id)) {
        esc_http_reply_text(r, 404, "no such job\n");
        return;
    }
    fanout *f = esc_xcalloc(1, sizeof *f);
    f->rows = json_array();
    f->unreachable = json_array();
    f->channels = esc_xcalloc(esc_strmap_count(g->nodes) + 1, sizeof *f->channels);
    f->answer = esc_http_later_start(r, "application/json", answer_closed, f);
    if (!f->answer) {
        fanout_free(f);
        return;
    }
    Escher__ListStateRequest req = ESCHER__LIST_STATE_REQUEST__INIT;
    req.job_id = (char *)job_id;
    f->sender = esc_rpc_async_new(esc_loop_post, g->loop);
    size_t pos = 0;
    const char *id;
    void *val;
    while (esc_strmap_next(g->nodes, &pos, &id, &val)) {
        const gcs_node *n = val;
        if (!gcs_node_alive(n))
            continue;
        esc_rpc_channel *ch = esc_rpc_channel_new(n->info->address, g->cfg.token);
        f->channels[f->nchannels++] = ch;
        node_call *nc = esc_xcalloc(1, sizeof *nc);
        nc->f = f;
        snprintf(nc->node_id, sizeof nc->node_id, "%s", id);
        f->left++;
        esc_rpc_async_call(f->sender, ch, &ESC_M_TASK_SERVICE_LIST_TASKS, &req.base,
                           NODE_TIMEOUT_MS, 0, on_reply, nc);
    }
    if (f->left == 0)
        answer(f); /* no alive node: nothing to ask */
}
