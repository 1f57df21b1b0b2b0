/* fuzz_frame.c: the raylet <-> worker stream (runtime/frame.c) and the WorkerMsg each
 * frame carries (proto/worker.proto), as the worker reads it (esc_frame_read, blocking)
 * and as the raylet reads it (esc_frame_conn on libev, where frames arrive split and
 * joined at any byte). Both faces must see the same frames. */
#include "fuzz_util.h"

#include <ev.h>
#include <fcntl.h>
#include <sys/socket.h>

#include "frame.h"
#include "worker.pb-c.h"

/* Frames beyond these are not worth the time: the seeds hold a few. */
#define MAX_FRAMES 64

typedef struct {
    size_t n;
    size_t lens[MAX_FRAMES];
    int closed;
} seen;

/* Unpacks a payload as the worker and the raylet do; what unpacks packs again. */
static void unpack(const uint8_t *data, size_t len)
{
    Escher__WorkerMsg *m = escher__worker_msg__unpack(NULL, len, data);
    if (!m)
        return;
    size_t plen = escher__worker_msg__get_packed_size(m);
    uint8_t *out = malloc(plen ? plen : 1);
    FUZZ_CHECK(out && escher__worker_msg__pack(m, out) == plen);
    free(out);
    escher__worker_msg__free_unpacked(m, NULL);
}

/* The worker's face: blocking reads of a memfd holding the input. */
static void read_blocking(const uint8_t *data, size_t size, seen *s)
{
    char path[64];
    int fd = fuzz_memfd(data, size, path, sizeof path);
    uint8_t *buf;
    size_t len;
    while (s->n < MAX_FRAMES && esc_frame_read(fd, &buf, &len) == 1) {
        s->lens[s->n++] = len;
        unpack(buf, len);
        free(buf);
    }
    close(fd);
}

static void on_message(esc_frame_conn *c, const uint8_t *data, size_t len)
{
    seen *s = esc_frame_conn_ud(c);
    if (s->n < MAX_FRAMES)
        s->lens[s->n] = len;
    s->n++;
    unpack(data, len);
}

static void on_close(esc_frame_conn *c, const char *why)
{
    (void)why;
    seen *s = esc_frame_conn_ud(c);
    s->closed = 1;
}

/* The raylet's face: the input written into a socketpair, read by an esc_frame_conn. */
static void read_conn(const uint8_t *data, size_t size, seen *s)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    /* The default socket buffer holds far more than libFuzzer's inputs (-max_len). */
    FUZZ_CHECK(esc_write_all(sv[1], data, size) == 0);
    close(sv[1]);
    struct ev_loop *loop = ev_default_loop(0);
    esc_frame_conn *c = esc_frame_conn_new(loop, sv[0], on_message, on_close, s);
    while (!s->closed)
        ev_run(loop, EVRUN_ONCE);
    esc_frame_conn_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    seen a = {0}, b = {0};
    read_blocking(data, size, &a);
    read_conn(data, size, &b);
    if (a.n < MAX_FRAMES && b.n < MAX_FRAMES) {
        FUZZ_CHECK(a.n == b.n);
        for (size_t i = 0; i < a.n; i++)
            FUZZ_CHECK(a.lens[i] == b.lens[i]);
    }
    return 0;
}
