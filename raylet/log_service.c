/* log_service.c: Raylet.StreamLogs (log_service.h).
 *
 * A reader sends one message at a time (the next goes when the outbox drains), so a big
 * log costs one chunk of memory. Each look at the files takes the capture files' sizes
 * first and reads the index after them: a worker writes the next task's record before
 * that task's output, so output inside those sizes that is not the task's shows up as
 * the attempt's end in the index read after. A follower looks again every
 * FOLLOW_LOOK_MS while it has nothing to send; it ends once the task is no longer held
 * here (it ended, and its output is complete in the files) and everything up to a look
 * made after that was sent. Files are read on the loop: they are local, and a read is
 * one chunk. */
#include "log_service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ev.h>

#include "ids.h"
#include "log_index.h"
#include "names.h"
#include "raylet.h"
#include "raylet.pb-c.h"
#include "task_manager.h"
#include "xalloc.h"

#define LOG_CHUNK (64 * 1024)
#define FOLLOW_LOOK_MS 100

typedef struct log_reader {
    struct log_reader *prev, *next;
    log_service *ls;
    esc_rpc_ctx *call;
    char task_id[ESC_OBJECT_ID_MAX];
    bool follow;
    bool complete;         /* the last look saw everything the task will write here */
    log_attempts att;      /* as of the last look */
    off_t (*pos)[2];       /* per attempt and stream: how far sent */
    off_t (*lim)[2];       /* per attempt and stream: how far it may be sent */
    size_t npos;
    ev_timer look;
} log_reader;

struct log_service {
    raylet *r;
    log_reader *readers;
};

log_service *log_service_new(raylet *r)
{
    log_service *ls = esc_xcalloc(1, sizeof *ls);
    ls->r = r;
    return ls;
}

/* ------------------------------------------------------------ looking at the files */

static off_t capture_size(const log_attempt *a, int which)
{
    int fd = log_index_open_capture(a, which);
    struct stat sb;
    off_t size = fd >= 0 && fstat(fd, &sb) == 0 ? sb.st_size : 0;
    if (fd >= 0)
        close(fd);
    return size;
}

/* Grows the position arrays to the attempts found; a new attempt starts at its start. */
static void track_new_attempts(log_reader *lr)
{
    if (lr->att.n <= lr->npos)
        return;
    lr->pos = esc_xrealloc(lr->pos, lr->att.n * sizeof *lr->pos);
    lr->lim = esc_xrealloc(lr->lim, lr->att.n * sizeof *lr->lim);
    for (size_t i = lr->npos; i < lr->att.n; i++)
        for (int w = 0; w < 2; w++)
            lr->pos[i][w] = lr->lim[i][w] = lr->att.v[i].start[w];
    lr->npos = lr->att.n;
}

/* Reads the index: every index file of the folder while no attempt is known or once
 * the task ended here (a retry may have run on another worker), else only the files of
 * the attempts known. A task that does not run here yet has written nothing. */
static void read_index(log_reader *lr, bool held)
{
    task_manager *tm = lr->ls->r->tasks;
    if (held && !lr->att.n && !task_manager_is_running(tm, lr->task_id))
        return;
    if (!lr->att.n || !held)
        log_index_scan(lr->ls->r->log_dir, lr->task_id, &lr->att);
    else
        log_index_rescan(lr->task_id, &lr->att);
}

/* One look: sizes of the known attempts, then the index. Sets lr->complete when the
 * task is not held here and every attempt's limit came from sizes taken after that. */
static void look(log_reader *lr)
{
    bool held = lr->follow && task_manager_holds(lr->ls->r->tasks, lr->task_id);
    for (int tries = 0; tries < 4; tries++) {
        size_t known = lr->att.n;
        off_t (*size)[2] = esc_xcalloc(known + 1, sizeof *size);
        for (size_t i = 0; i < known; i++)
            for (int w = 0; w < 2; w++)
                size[i][w] = capture_size(&lr->att.v[i], w);
        read_index(lr, held);
        track_new_attempts(lr);
        for (size_t i = 0; i < known && i < lr->att.n; i++)
            for (int w = 0; w < 2; w++) {
                off_t end = lr->att.v[i].end[w];
                lr->lim[i][w] = end >= 0 && end < size[i][w] ? end : size[i][w];
            }
        free(size);
        if (lr->att.n == known) {
            lr->complete = !held;
            return;
        }
        /* New attempts have no measured size yet: measure them now. */
    }
    lr->complete = false;
}

/* ------------------------------------------------------------ the stream */

static void reader_end(log_reader *lr, int code, const char *message)
{
    log_service *ls = lr->ls;
    if (lr->prev)
        lr->prev->next = lr->next;
    else
        ls->readers = lr->next;
    if (lr->next)
        lr->next->prev = lr->prev;
    ev_timer_stop(esc_loop_ev(ls->r->loop), &lr->look);
    esc_rpc_finish(lr->call, code, message);
    log_attempts_free(&lr->att);
    free(lr->pos);
    free(lr->lim);
    free(lr);
}

/* Reads and sends the next piece of output. Returns 1 when one went, 0 when there is
 * nothing to send now, -1 when the reader ended (lr is freed). */
static int send_next(log_reader *lr)
{
    for (size_t i = 0; i < lr->npos; i++)
        for (int w = 0; w < 2; w++) {
            if (lr->pos[i][w] >= lr->lim[i][w])
                continue;
            off_t left = lr->lim[i][w] - lr->pos[i][w];
            size_t want = left < LOG_CHUNK ? (size_t)left : LOG_CHUNK;
            char *buf = esc_xmalloc(want);
            int fd = log_index_open_capture(&lr->att.v[i], w);
            ssize_t n = fd >= 0 ? pread(fd, buf, want, lr->pos[i][w]) : -1;
            int e = errno;
            if (fd >= 0)
                close(fd);
            if (n <= 0) {
                free(buf);
                char why[300];
                snprintf(why, sizeof why, "cannot read the output of task %s: %s",
                         lr->task_id, n < 0 ? strerror(e) : "file shrank");
                reader_end(lr, ESC_INTERNAL, why);
                return -1;
            }
            Escher__LogChunk c = ESCHER__LOG_CHUNK__INIT;
            c.stream = (uint32_t)w + 1;
            c.data.data = (uint8_t *)buf;
            c.data.len = (size_t)n;
            int rc = esc_rpc_send(lr->call, &c.base);
            free(buf);
            if (rc != 0) {
                reader_end(lr, ESC_CANCELLED, "reader went away");
                return -1;
            }
            lr->pos[i][w] += n;
            return 1;
        }
    return 0;
}

/* Sends what there is; ends the stream once all of it went and nothing more comes,
 * else (following) looks again later. */
static void pump(log_reader *lr)
{
    int sent = send_next(lr);
    if (sent != 0)
        return; /* sent: the drain calls again; or ended */
    if (lr->follow && lr->complete && !lr->att.n) {
        /* Held here once, never ran here: it was forwarded. The reader looks elsewhere. */
        reader_end(lr, ESC_NOT_FOUND, "the task left this node before it ran");
        return;
    }
    if (!lr->follow || lr->complete) {
        reader_end(lr, ESC_OK, NULL);
        return;
    }
    struct ev_loop *ev = esc_loop_ev(lr->ls->r->loop);
    if (!ev_is_active(&lr->look)) {
        ev_timer_set(&lr->look, FOLLOW_LOOK_MS / 1e3, 0.);
        ev_timer_start(ev, &lr->look);
    }
}

static void on_look(struct ev_loop *ev, ev_timer *t, int revents)
{
    (void)ev;
    (void)revents;
    log_reader *lr = t->data;
    look(lr);
    pump(lr);
}

static void on_drained(esc_rpc_ctx *call, void *ud)
{
    (void)call;
    log_reader *lr = ud;
    if (!ev_is_active(&lr->look))
        pump(lr);
}

static void on_cancel(esc_rpc_ctx *call, void *ud)
{
    (void)call;
    reader_end(ud, ESC_CANCELLED, "reader went away");
}

static void on_stream_logs(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    log_service *ls = ud;
    const Escher__StreamLogsRequest *rq = (const Escher__StreamLogsRequest *)msg;
    if (!esc_object_id_valid(rq->task_id)) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "not a task id");
        return;
    }
    log_reader *lr = esc_xcalloc(1, sizeof *lr);
    lr->ls = ls;
    lr->call = call;
    lr->follow = rq->follow;
    snprintf(lr->task_id, sizeof lr->task_id, "%s", rq->task_id);
    bool held = rq->follow && task_manager_holds(ls->r->tasks, lr->task_id);
    log_index_scan(ls->r->log_dir, lr->task_id, &lr->att);
    if (!lr->att.n && !held) {
        log_attempts_free(&lr->att);
        free(lr);
        esc_rpc_finish(call, ESC_NOT_FOUND, "no output of this task on this node");
        return;
    }
    track_new_attempts(lr);
    ev_timer_init(&lr->look, on_look, 0., 0.);
    lr->look.data = lr;
    lr->next = ls->readers;
    if (ls->readers)
        ls->readers->prev = lr;
    ls->readers = lr;
    esc_rpc_ctx_on_cancel(call, on_cancel, lr);
    esc_rpc_ctx_on_drained(call, on_drained, lr);
    /* First an empty message naming this node: the reader knows it asked the right one
     * before any output exists. */
    Escher__LogChunk hello = ESCHER__LOG_CHUNK__INIT;
    hello.node_id = ls->r->node_id;
    if (esc_rpc_send(call, &hello.base) != 0) {
        reader_end(lr, ESC_CANCELLED, "reader went away");
        return;
    }
    /* The hello's drain pumps what this look found. */
    look(lr);
}

int log_service_serve(log_service *ls, esc_rpc_server *srv)
{
    return esc_rpc_server_handle(srv, &ESC_M_RAYLET_STREAM_LOGS, on_stream_logs, ls);
}

void log_service_free(log_service *ls)
{
    if (!ls)
        return;
    while (ls->readers)
        reader_end(ls->readers, ESC_UNAVAILABLE, "raylet is shutting down");
    free(ls);
}
