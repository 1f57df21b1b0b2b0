/* test_frame.c: framing of protobuf-c messages on stream fds (runtime/frame.c).
 *
 * Blocking helpers and the libev connection over socketpairs: round trips, frames
 * dribbled in one byte at a time, many frames in one read, a frame larger than the
 * socket buffer (partial writes), oversized lengths on both ends, peer close, a
 * connection freed from inside its own callback. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "worker.pb-c.h"

/* ---- helpers ---- */

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

/* A Hello message with the given worker id (borrowed). */
static Escher__WorkerMsg hello_msg(Escher__WorkerMsg__Hello *h, const char *id)
{
    escher__worker_msg__hello__init(h);
    h->worker_id = (char *)id;
    h->pid = 1234;
    h->job_id = "job-1";
    Escher__WorkerMsg m = ESCHER__WORKER_MSG__INIT;
    m.msg_case = ESCHER__WORKER_MSG__MSG_HELLO;
    m.hello = h;
    return m;
}

/* The wire bytes of one frame holding msg (malloc'd). */
static uint8_t *frame_bytes(const ProtobufCMessage *msg, size_t *len)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *b = malloc(n + 4);
    b[0] = (uint8_t)(n >> 24);
    b[1] = (uint8_t)(n >> 16);
    b[2] = (uint8_t)(n >> 8);
    b[3] = (uint8_t)n;
    protobuf_c_message_pack(msg, b + 4);
    *len = n + 4;
    return b;
}

/* What a connection under test received. */
typedef struct {
    int messages;
    int closed;
    char why[64];
    char last_id[64];
    size_t last_len;
    size_t last_args_len; /* size of the first argument of an Execute */
    int free_on_message; /* free the connection inside on_message */
    esc_frame_conn *conn;
} sink;

static void on_msg(esc_frame_conn *c, const uint8_t *data, size_t len)
{
    sink *s = esc_frame_conn_ud(c);
    s->messages++;
    s->last_len = len;
    Escher__WorkerMsg *m = escher__worker_msg__unpack(NULL, len, data);
    assert_non_null(m);
    if (m->msg_case == ESCHER__WORKER_MSG__MSG_HELLO)
        snprintf(s->last_id, sizeof s->last_id, "%s", m->hello->worker_id);
    if (m->msg_case == ESCHER__WORKER_MSG__MSG_EXECUTE && m->execute->spec->n_args)
        s->last_args_len = m->execute->spec->args[0]->data.len;
    escher__worker_msg__free_unpacked(m, NULL);
    if (s->free_on_message) {
        esc_frame_conn_free(c);
        s->conn = NULL;
    }
}

static void on_close(esc_frame_conn *c, const char *why)
{
    sink *s = esc_frame_conn_ud(c);
    s->closed++;
    snprintf(s->why, sizeof s->why, "%s", why);
    esc_frame_conn_free(c);
    s->conn = NULL;
}

static void spin(struct ev_loop *loop, int turns)
{
    for (int i = 0; i < turns; i++)
        ev_run(loop, EVRUN_NOWAIT);
}

/* ---- blocking helpers ---- */

static void test_blocking_round_trip(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    Escher__WorkerMsg__Hello h;
    Escher__WorkerMsg m = hello_msg(&h, "w-1");
    assert_int_equal(esc_frame_write(sv[0], &m.base), 0);
    Escher__WorkerMsg__Exit ex = ESCHER__WORKER_MSG__EXIT__INIT;
    Escher__WorkerMsg e = ESCHER__WORKER_MSG__INIT;
    e.msg_case = ESCHER__WORKER_MSG__MSG_EXIT;
    e.exit = &ex;
    assert_int_equal(esc_frame_write(sv[0], &e.base), 0);
    close(sv[0]);

    uint8_t *buf;
    size_t len;
    assert_int_equal(esc_frame_read(sv[1], &buf, &len), 1);
    Escher__WorkerMsg *got = escher__worker_msg__unpack(NULL, len, buf);
    assert_non_null(got);
    assert_int_equal(got->msg_case, ESCHER__WORKER_MSG__MSG_HELLO);
    assert_string_equal(got->hello->worker_id, "w-1");
    assert_int_equal(got->hello->pid, 1234);
    escher__worker_msg__free_unpacked(got, NULL);
    free(buf);

    assert_int_equal(esc_frame_read(sv[1], &buf, &len), 1);
    got = escher__worker_msg__unpack(NULL, len, buf);
    assert_int_equal(got->msg_case, ESCHER__WORKER_MSG__MSG_EXIT);
    escher__worker_msg__free_unpacked(got, NULL);
    free(buf);

    assert_int_equal(esc_frame_read(sv[1], &buf, &len), 0); /* clean end */
    close(sv[1]);
}

typedef struct {
    int fd;
    const uint8_t *data;
    size_t len;
} dribble_arg;

static void *dribble(void *p)
{
    dribble_arg *a = p;
    for (size_t i = 0; i < a->len; i++) {
        assert_int_equal(write(a->fd, a->data + i, 1), 1);
        usleep(100);
    }
    return NULL;
}

static void test_blocking_read_one_byte_at_a_time(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    Escher__WorkerMsg__Hello h;
    Escher__WorkerMsg m = hello_msg(&h, "dribbled");
    size_t n;
    uint8_t *bytes = frame_bytes(&m.base, &n);
    dribble_arg a = {sv[0], bytes, n};
    pthread_t th;
    pthread_create(&th, NULL, dribble, &a);
    uint8_t *buf;
    size_t len;
    assert_int_equal(esc_frame_read(sv[1], &buf, &len), 1);
    pthread_join(th, NULL);
    assert_int_equal(len, n - 4);
    assert_memory_equal(buf, bytes + 4, len);
    free(buf);
    free(bytes);
    close(sv[0]);
    close(sv[1]);
}

static void test_blocking_oversized(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    static const uint8_t huge[4] = {0xff, 0xff, 0xff, 0xff};
    assert_int_equal(write(sv[0], huge, 4), 4);
    uint8_t *buf = NULL;
    size_t len;
    assert_int_equal(esc_frame_read(sv[1], &buf, &len), -1);
    assert_int_equal(errno, EMSGSIZE);
    assert_null(buf);
    /* The writer refuses before touching the data. */
    static const uint8_t one = 0;
    assert_int_equal(esc_frame_write_bytes(sv[0], &one, (size_t)ESC_FRAME_MAX + 1), -1);
    assert_int_equal(errno, EMSGSIZE);
    close(sv[0]);
    close(sv[1]);
}

static void test_blocking_truncated(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    static const uint8_t part[7] = {0, 0, 0, 10, 1, 2, 3}; /* says 10, has 3 */
    assert_int_equal(write(sv[0], part, sizeof part), (ssize_t)sizeof part);
    close(sv[0]);
    uint8_t *buf;
    size_t len;
    assert_int_equal(esc_frame_read(sv[1], &buf, &len), -1);
    assert_int_equal(errno, EPROTO);
    close(sv[1]);

    pair(sv);
    assert_int_equal(write(sv[0], part, 2), 2); /* half a header */
    close(sv[0]);
    assert_int_equal(esc_frame_read(sv[1], &buf, &len), -1);
    assert_int_equal(errno, EPROTO);
    close(sv[1]);
}

static void test_write_to_closed_peer(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    close(sv[1]);
    Escher__WorkerMsg__Hello h;
    Escher__WorkerMsg m = hello_msg(&h, "nobody");
    assert_int_equal(esc_frame_write(sv[0], &m.base), -1); /* EPIPE, no SIGPIPE */
    assert_int_equal(errno, EPIPE);
    close(sv[0]);
}

/* ---- libev connection ---- */

static void test_conn_one_byte_chunks(void **state)
{
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    int sv[2];
    pair(sv);
    sink s = {0};
    s.conn = esc_frame_conn_new(loop, sv[1], on_msg, on_close, &s);
    Escher__WorkerMsg__Hello h;
    Escher__WorkerMsg m = hello_msg(&h, "one-byte");
    size_t n;
    uint8_t *bytes = frame_bytes(&m.base, &n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(s.messages, 0);
        assert_int_equal(write(sv[0], bytes + i, 1), 1);
        spin(loop, 2);
    }
    assert_int_equal(s.messages, 1);
    assert_string_equal(s.last_id, "one-byte");
    close(sv[0]);
    spin(loop, 3);
    assert_int_equal(s.closed, 1);
    assert_string_equal(s.why, "peer closed");
    assert_null(s.conn);
    free(bytes);
    ev_loop_destroy(loop);
}

static void test_conn_many_frames_in_one_read(void **state)
{
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    int sv[2];
    pair(sv);
    sink s = {0};
    s.conn = esc_frame_conn_new(loop, sv[1], on_msg, on_close, &s);
    Escher__WorkerMsg__Hello h;
    Escher__WorkerMsg m = hello_msg(&h, "many");
    size_t n;
    uint8_t *one = frame_bytes(&m.base, &n);
    enum { N = 200 };
    uint8_t *all = malloc(n * N);
    for (int i = 0; i < N; i++)
        memcpy(all + (size_t)i * n, one, n);
    assert_int_equal(write(sv[0], all, n * N), (ssize_t)(n * N));
    spin(loop, 3);
    assert_int_equal(s.messages, N);
    esc_frame_conn_free(s.conn);
    close(sv[0]);
    free(one);
    free(all);
    ev_loop_destroy(loop);
}

/* A frame far larger than the socket buffer: the sender queues and finishes it as the
 * socket drains; the receiver assembles it from many reads. */
static void test_conn_large_frame_partial_writes(void **state)
{
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    int sv[2];
    pair(sv);
    sink tx = {0}, rx = {0};
    tx.conn = esc_frame_conn_new(loop, sv[0], on_msg, on_close, &tx);
    rx.conn = esc_frame_conn_new(loop, sv[1], on_msg, on_close, &rx);

    size_t big = 16u << 20;
    uint8_t *payload = malloc(big);
    for (size_t i = 0; i < big; i++)
        payload[i] = (uint8_t)(i * 7);
    Escher__TaskArg arg = ESCHER__TASK_ARG__INIT, *argp = &arg;
    arg.data.data = payload;
    arg.data.len = big;
    Escher__TaskSpec spec = ESCHER__TASK_SPEC__INIT;
    spec.n_args = 1;
    spec.args = &argp;
    Escher__WorkerMsg__Execute ex = ESCHER__WORKER_MSG__EXECUTE__INIT;
    ex.spec = &spec;
    Escher__WorkerMsg m = ESCHER__WORKER_MSG__INIT;
    m.msg_case = ESCHER__WORKER_MSG__MSG_EXECUTE;
    m.execute = &ex;
    assert_int_equal(esc_frame_conn_send(tx.conn, &m.base), 0);
    assert_true(esc_frame_conn_pending(tx.conn) > 0); /* did not fit at once */
    for (int i = 0; i < 100000 && rx.messages == 0; i++)
        ev_run(loop, EVRUN_ONCE);
    assert_int_equal(rx.messages, 1);
    assert_int_equal(rx.last_len, protobuf_c_message_get_packed_size(&m.base));
    assert_int_equal(rx.last_args_len, big);
    assert_int_equal(esc_frame_conn_pending(tx.conn), 0);
    esc_frame_conn_free(tx.conn);
    esc_frame_conn_free(rx.conn);
    free(payload);
    ev_loop_destroy(loop);
}

static void test_conn_oversized_length(void **state)
{
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    int sv[2];
    pair(sv);
    sink s = {0};
    s.conn = esc_frame_conn_new(loop, sv[1], on_msg, on_close, &s);
    uint32_t too_big = ESC_FRAME_MAX + 1;
    uint8_t hdr[4] = {(uint8_t)(too_big >> 24), (uint8_t)(too_big >> 16),
                      (uint8_t)(too_big >> 8), (uint8_t)too_big};
    assert_int_equal(write(sv[0], hdr, 4), 4);
    spin(loop, 3);
    assert_int_equal(s.messages, 0);
    assert_int_equal(s.closed, 1);
    assert_string_equal(s.why, "frame over the size limit");
    close(sv[0]);
    ev_loop_destroy(loop);
}

static void test_conn_send_oversized_refused(void **state)
{
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    int sv[2];
    pair(sv);
    sink s = {0};
    s.conn = esc_frame_conn_new(loop, sv[0], on_msg, on_close, &s);
    /* The packed size is computed from the length alone: no 256 MiB buffer needed. */
    static uint8_t dummy;
    Escher__TaskArg arg = ESCHER__TASK_ARG__INIT;
    arg.data.data = &dummy;
    arg.data.len = ESC_FRAME_MAX;
    assert_int_equal(esc_frame_conn_send(s.conn, &arg.base), -1);
    assert_int_equal(esc_frame_conn_pending(s.conn), 0);
    esc_frame_conn_free(s.conn);
    close(sv[1]);
    ev_loop_destroy(loop);
}

static void test_conn_send_to_closed_peer(void **state)
{
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    int sv[2];
    pair(sv);
    sink s = {0};
    s.conn = esc_frame_conn_new(loop, sv[0], on_msg, on_close, &s);
    close(sv[1]);
    Escher__WorkerMsg__Hello h;
    Escher__WorkerMsg m = hello_msg(&h, "gone");
    esc_frame_conn_send(s.conn, &m.base); /* fails inside: reported from the loop */
    assert_int_equal(s.closed, 0);
    spin(loop, 3);
    assert_int_equal(s.closed, 1);
    assert_null(s.conn);
    ev_loop_destroy(loop);
}

static void test_conn_free_inside_callback(void **state)
{
    (void)state;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    int sv[2];
    pair(sv);
    sink s = {.free_on_message = 1};
    s.conn = esc_frame_conn_new(loop, sv[1], on_msg, on_close, &s);
    Escher__WorkerMsg__Hello h;
    Escher__WorkerMsg m = hello_msg(&h, "first");
    for (int i = 0; i < 5; i++) /* five frames in one read; only the first is seen */
        assert_int_equal(esc_frame_write(sv[0], &m.base), 0);
    spin(loop, 3);
    assert_int_equal(s.messages, 1);
    assert_int_equal(s.closed, 0);
    assert_null(s.conn);
    close(sv[0]);
    ev_loop_destroy(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocking_round_trip),
        cmocka_unit_test(test_blocking_read_one_byte_at_a_time),
        cmocka_unit_test(test_blocking_oversized),
        cmocka_unit_test(test_blocking_truncated),
        cmocka_unit_test(test_write_to_closed_peer),
        cmocka_unit_test(test_conn_one_byte_chunks),
        cmocka_unit_test(test_conn_many_frames_in_one_read),
        cmocka_unit_test(test_conn_large_frame_partial_writes),
        cmocka_unit_test(test_conn_oversized_length),
        cmocka_unit_test(test_conn_send_oversized_refused),
        cmocka_unit_test(test_conn_send_to_closed_peer),
        cmocka_unit_test(test_conn_free_inside_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
