/* dashboard_logs.c: a task's output for the dashboard (GET /api/tasks/<id>/logs?node=N).
 * The output lives in the log folder of the node that ran the task, whose raylet serves
 * it as a stream (Raylet.StreamLogs). A thread of the request's own reads it (blocking,
 * with a deadline) and posts the text back to the loop, where the HTTP answer, waiting
 * suspended meanwhile (esc_http_later_start), is sent. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dashboard.h"
#include "raylet.pb-c.h"
#include "utf8.h"
#include "xalloc.h"

#define READ_TIMEOUT_MS 3000
#define TAIL_MAX (64u << 10) /* the last 64 KiB of the output are shown */

typedef struct {
    gcs *g;
    esc_http_sse *answer;   /* NULL once the client or the server went away */
    char *address, *task_id, *node_id;
    pthread_t thread;
    bool read_done;         /* the thread posted its result (joined on the loop) */
    bool found, truncated;
    char *text;
    size_t len;
    char error[256];
} log_read;

static void log_read_free(log_read *l)
{
    free(l->address);
    free(l->task_id);
    free(l->node_id);
    free(l->text);
    free(l);
}

/* Keeps the last TAIL_MAX bytes of what was read. */
static void append_tail(log_read *l, const uint8_t *data, size_t n)
{
    if (n >= TAIL_MAX) {
        data += n - TAIL_MAX;
        n = TAIL_MAX;
        l->truncated = true;
    }
    if (l->len + n > TAIL_MAX) {
        size_t drop = l->len + n - TAIL_MAX;
        memmove(l->text, l->text + drop, l->len - drop);
        l->len -= drop;
        l->truncated = true;
    }
    memcpy(l->text + l->len, data, n);
    l->len += n;
}

static void answer(log_read *l)
{
    /* Output is bytes; JSON wants UTF-8: NULs and broken characters (a cut tail's first
     * one, say) become '?'. */
    for (size_t i = 0; i < l->len; i++)
        if (!l->text[i])
            l->text[i] = '?';
    l->text[l->len] = '\0';
    esc_utf8_sanitize(l->text);
    json_t *doc = json_pack("{s:s, s:s, s:b, s:b, s:s%, s:s}", "task_id", l->task_id, "node",
                            l->node_id, "found", l->found, "truncated", l->truncated, "text",
                            l->text, l->len, "error", l->error);
    char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    esc_http_later_finish(l->answer, body ? body : "{}", body ? strlen(body) : 2);
    free(body);
    json_decref(doc);
}

/* On the loop: the thread is done. */
static void read_finished(void *arg)
{
    log_read *l = arg;
    pthread_join(l->thread, NULL);
    l->read_done = true;
    if (l->answer)
        answer(l); /* its close callback frees l */
    else
        log_read_free(l);
}

static void *read_main(void *arg)
{
    log_read *l = arg;
    Escher__StreamLogsRequest req = ESCHER__STREAM_LOGS_REQUEST__INIT;
    req.task_id = l->task_id;
    esc_status end = {0};
    esc_rpc_channel *ch = esc_rpc_channel_new(l->address, l->g->cfg.token);
    esc_rpc_stream *s = esc_rpc_stream_open_timeout(ch, &ESC_M_RAYLET_STREAM_LOGS, &req.base,
                                                    READ_TIMEOUT_MS, &end);
    ProtobufCMessage *m;
    while (s && esc_rpc_stream_next(s, &m, &end)) {
        const Escher__LogChunk *c = (const Escher__LogChunk *)m;
        l->found = true;
        if (c->stream == 1 || c->stream == 2)
            append_tail(l, c->data.data, c->data.len);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    if (end.code != ESC_OK)
        snprintf(l->error, sizeof l->error, "%s: %.200s", esc_status_name(end.code),
                 end.message);
    esc_rpc_stream_free(s);
    esc_rpc_channel_free(ch);
    esc_loop_post(l->g->loop, read_finished, l);
    return NULL;
}

static void answer_closed(void *ud, esc_http_sse *st)
{
    (void)st;
    log_read *l = ud;
    l->answer = NULL;
    if (l->read_done)
        log_read_free(l);
}

void gcs_dash_task_logs(gcs *g, esc_http_req *r, const char *task_id, const char *node_id)
{
    gcs_node *n = node_id ? gcs_node_find(g, node_id) : NULL;
    if (!gcs_node_alive(n)) {
        esc_http_reply_text(r, 404, "no alive node by that id (give ?node=)\n");
        return;
    }
    log_read *l = esc_xcalloc(1, sizeof *l);
    l->g = g;
    l->address = esc_xstrdup(n->info->address);
    l->task_id = esc_xstrdup(task_id);
    l->node_id = esc_xstrdup(node_id);
    l->text = esc_xmalloc(TAIL_MAX + 1);
    l->answer = esc_http_later_start(r, "application/json", answer_closed, l);
    if (!l->answer) {
        log_read_free(l);
        return;
    }
    if (pthread_create(&l->thread, NULL, read_main, l) != 0) {
        snprintf(l->error, sizeof l->error, "cannot start a thread");
        l->read_done = true;
        answer(l);
    }
}
