/* frame.c: length-prefixed protobuf-c frames on stream fds, blocking and on libev. */
#include "frame.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define READ_CHUNK (64u << 10) /* free space kept in the read buffer before each read */

/* ---------------------------------------------------------------------- shared bits */

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* send() with MSG_NOSIGNAL so a dead peer is an EPIPE error, not a process-killing
 * signal; plain write() for fds that are not sockets (pipes in tests). */
static ssize_t write_some(int fd, const void *data, size_t len)
{
    ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK)
        n = write(fd, data, len);
    return n;
}

int esc_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *data = buf;
    while (len > 0) {
        ssize_t n = write_some(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads exactly len bytes. Returns len, the count read before end of stream, or -1. */
static ssize_t read_full(int fd, uint8_t *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Reads a payload of len bytes into a buffer that grows as its bytes arrive (doubling
 * from READ_CHUNK): a header announcing a large frame costs memory only once the peer
 * sends that much, not for the four bytes of the header (found by tests/fuzz/fuzz_frame).
 * Returns the buffer (never NULL for len 0), or NULL with errno (EPROTO: the stream ended
 * inside the payload). */
static uint8_t *read_payload(int fd, size_t len)
{
    size_t cap = len < READ_CHUNK ? len : READ_CHUNK, got = 0;
    uint8_t *data = esc_xmalloc(cap ? cap : 1);
    while (got < len) {
        if (got == cap) {
            cap = len - cap < cap ? len : 2 * cap;
            data = esc_xrealloc(data, cap);
        }
        ssize_t n = read_full(fd, data + got, cap - got);
        if (n < 0 || (size_t)n < cap - got) {
            int e = n < 0 ? errno : EPROTO;
            free(data);
            errno = e;
            return NULL;
        }
        got += (size_t)n;
    }
    return data;
}

/* ------------------------------------------------------------------- blocking helpers */

int esc_frame_write_bytes(int fd, const void *data, size_t len)
{
    if (len > ESC_FRAME_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    uint8_t hdr[ESC_FRAME_HEADER];
    put_be32(hdr, (uint32_t)len);
    if (esc_write_all(fd, hdr, sizeof hdr) < 0)
        return -1;
    return esc_write_all(fd, data, len);
}

int esc_frame_write(int fd, const ProtobufCMessage *msg)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    if (len > ESC_FRAME_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    /* One buffer for header and payload: one write for small frames. */
    uint8_t *buf = esc_xmalloc(ESC_FRAME_HEADER + len);
    put_be32(buf, (uint32_t)len);
    protobuf_c_message_pack(msg, buf + ESC_FRAME_HEADER);
    int rc = esc_write_all(fd, buf, ESC_FRAME_HEADER + len);
    int saved = errno;
    free(buf);
    errno = saved;
    return rc;
}

int esc_frame_read(int fd, uint8_t **buf, size_t *len)
{
    uint8_t hdr[ESC_FRAME_HEADER];
    ssize_t n = read_full(fd, hdr, sizeof hdr);
    if (n < 0)
        return -1;
    if (n == 0)
        return 0;
    if (n < (ssize_t)sizeof hdr) {
        errno = EPROTO;
        return -1;
    }
    uint32_t flen = get_be32(hdr);
    if (flen > ESC_FRAME_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    uint8_t *data = read_payload(fd, flen);
    if (!data)
        return -1;
    *buf = data;
    *len = flen;
    return 1;
}

/* ------------------------------------------------------------------ libev connection */

typedef struct chunk {
    struct chunk *next;
    size_t len, off; /* bytes in data, bytes already written */
    uint8_t data[];
} chunk;

struct esc_frame_conn {
    struct ev_loop *loop;
    int fd;
    ev_io rio, wio;
    esc_frame_msg_fn on_message;
    esc_frame_close_fn on_close;
    void *ud;
    /* Read buffer: [rpos, rlen) is received but not yet dispatched. */
    uint8_t *rbuf;
    size_t rpos, rlen, rcap;
    /* Write queue, oldest first. */
    chunk *whead, *wtail;
    size_t wbytes;
    const char *write_error; /* set when a write inside send() failed */
    int busy;                /* callbacks in progress: defers the free */
    int closed, freed;
};

static void really_free(esc_frame_conn *c)
{
    chunk *k = c->whead;
    while (k) {
        chunk *next = k->next;
        free(k);
        k = next;
    }
    free(c->rbuf);
    free(c);
}

static void stop_watchers(esc_frame_conn *c)
{
    ev_io_stop(c->loop, &c->rio);
    ev_io_stop(c->loop, &c->wio);
}

/* Ends a callback section; frees c when a callback inside it asked for that. */
static void release(esc_frame_conn *c)
{
    if (--c->busy == 0 && c->freed)
        really_free(c);
}

/* Ends the stream once and tells the owner, who may free c: the caller holds a callback
 * section (busy), which defers that free to the caller's release(). */
static void close_held(esc_frame_conn *c, const char *why)
{
    if (c->closed)
        return;
    c->closed = 1;
    stop_watchers(c);
    c->on_close(c, why);
}

/* Ends the stream once and tells the owner; the owner frees it. */
static void fail(esc_frame_conn *c, const char *why)
{
    c->busy++;
    close_held(c, why);
    release(c);
}

void esc_frame_conn_free(esc_frame_conn *c)
{
    if (!c || c->freed)
        return;
    c->freed = 1;
    c->closed = 1;
    stop_watchers(c);
    close(c->fd);
    c->fd = -1;
    if (!c->busy)
        really_free(c);
}

/* Delivers every complete frame in the buffer; stops early when a callback freed or
 * closed the connection. The release() at the end is the only place c can be freed
 * here: an oversized frame closes through close_held() inside this section. A nested
 * fail() would not free c either (busy is held), but GCC cannot see that at -O3 and
 * reports its release() followed by ours as a use after free. */
static void dispatch(esc_frame_conn *c)
{
    c->busy++;
    while (!c->closed && c->rlen - c->rpos >= ESC_FRAME_HEADER) {
        uint32_t flen = get_be32(c->rbuf + c->rpos);
        if (flen > ESC_FRAME_MAX) {
            close_held(c, "frame over the size limit");
            break;
        }
        if (c->rlen - c->rpos - ESC_FRAME_HEADER < flen)
            break;
        const uint8_t *data = c->rbuf + c->rpos + ESC_FRAME_HEADER;
        c->rpos += ESC_FRAME_HEADER + flen;
        c->on_message(c, data, flen);
    }
    release(c);
}

/* Makes room for the next read: moves the undispatched tail to the front and grows the
 * buffer toward the whole frame being received (its header says how big). */
static void make_room(esc_frame_conn *c)
{
    if (c->rpos > 0) {
        memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
        c->rlen -= c->rpos;
        c->rpos = 0;
    }
    size_t want = c->rlen + READ_CHUNK;
    if (want <= c->rcap)
        return;
    /* Toward the whole frame (its length was checked by dispatch()) by doubling, so that
     * a header alone never costs the memory of the frame it announces. */
    if (c->rlen >= ESC_FRAME_HEADER) {
        size_t frame = ESC_FRAME_HEADER + (size_t)get_be32(c->rbuf);
        size_t doubled = 2 * c->rcap;
        if (frame > want)
            want = frame < doubled ? frame : doubled > want ? doubled : want;
    }
    c->rbuf = esc_xrealloc(c->rbuf, want);
    c->rcap = want;
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    esc_frame_conn *c = w->data;
    make_room(c);
    ssize_t n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n < 0) {
        fail(c, errno == ECONNRESET ? "connection reset" : "read error");
        return;
    }
    if (n == 0) {
        fail(c, "peer closed");
        return;
    }
    c->rlen += (size_t)n;
    dispatch(c); /* c may be freed now */
}

/* Writes queued chunks until the socket is full. Returns 0, or -1 on a write error. */
static int flush(esc_frame_conn *c)
{
    while (c->whead) {
        chunk *k = c->whead;
        ssize_t n = write_some(c->fd, k->data + k->off, k->len - k->off);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        k->off += (size_t)n;
        c->wbytes -= (size_t)n;
        if (k->off < k->len)
            continue;
        c->whead = k->next;
        if (!c->whead)
            c->wtail = NULL;
        free(k);
    }
    if (c->whead)
        ev_io_start(c->loop, &c->wio);
    else
        ev_io_stop(c->loop, &c->wio);
    return 0;
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    esc_frame_conn *c = w->data;
    if (c->write_error) {
        fail(c, c->write_error);
        return;
    }
    if (flush(c) < 0)
        fail(c, errno == EPIPE ? "peer closed" : "write error");
}

int esc_frame_conn_send(esc_frame_conn *c, const ProtobufCMessage *msg)
{
    if (c->closed || c->write_error)
        return -1;
    size_t len = protobuf_c_message_get_packed_size(msg);
    if (len > ESC_FRAME_MAX)
        return -1;
    chunk *k = esc_xmalloc(sizeof *k + ESC_FRAME_HEADER + len);
    k->next = NULL;
    k->len = ESC_FRAME_HEADER + len;
    k->off = 0;
    put_be32(k->data, (uint32_t)len);
    protobuf_c_message_pack(msg, k->data + ESC_FRAME_HEADER);
    if (c->wtail)
        c->wtail->next = k;
    else
        c->whead = k;
    c->wtail = k;
    c->wbytes += k->len;
    if (flush(c) == 0)
        return 0;
    /* Report the failure from the loop, where the owner expects on_close. */
    c->write_error = errno == EPIPE ? "peer closed" : "write error";
    ev_io_stop(c->loop, &c->wio);
    ev_feed_event(c->loop, &c->wio, EV_WRITE);
    return 0;
}

size_t esc_frame_conn_pending(const esc_frame_conn *c)
{
    return c->wbytes;
}

esc_frame_conn *esc_frame_conn_new(struct ev_loop *loop, int fd, esc_frame_msg_fn on_message,
                                   esc_frame_close_fn on_close, void *ud)
{
    esc_frame_conn *c = esc_xcalloc(1, sizeof *c);
    c->loop = loop;
    c->fd = fd;
    c->on_message = on_message;
    c->on_close = on_close;
    c->ud = ud;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    ev_io_init(&c->rio, on_readable, fd, EV_READ);
    ev_io_init(&c->wio, on_writable, fd, EV_WRITE);
    c->rio.data = c->wio.data = c;
    ev_io_start(loop, &c->rio);
    return c;
}

void *esc_frame_conn_ud(const esc_frame_conn *c)
{
    return c->ud;
}

int esc_frame_conn_fd(const esc_frame_conn *c)
{
    return c->fd;
}
