/* workdir.c: packing a job's working directory into the GCS key-value store, and
 * unpacking it on the node that runs the entrypoint (layout in workdir.h).
 *
 * The system's tar does the packing: it already handles symlinks, modes, long names and
 * odd file types, which a writer of our own would have to get right again. It is started
 * with posix_spawnp, which is safe in a process whose gRPC threads run (a plain fork
 * there is not), and with its signal mask and dispositions reset, since the CLI blocks
 * SIGINT and SIGTERM while it waits for a job. */
#include "workdir.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_internal.h"
#include "frame.h"

extern char **environ;

#define MANIFEST_MAGIC "escher-workdir 1"
#define KV_TIMEOUT_MS 30000
#define TAR_BLOCK 512u
#define TAR_RECORD 10240u /* GNU tar's default record: the stream is a multiple of it */
#define KEY_MAX 160

static uint64_t round_up(uint64_t n, uint64_t to)
{
    return (n + to - 1) / to * to;
}

static void manifest_key(char *out, size_t len, const char *job_id)
{
    snprintf(out, len, "%s/workdir", job_id);
}

static void chunk_key(char *out, size_t len, const char *job_id, uint64_t n)
{
    snprintf(out, len, "%s/workdir/%" PRIu64, job_id, n);
}

/* ------------------------------------------------------------------ measuring */

/* nftw passes no user pointer; thread-local keeps concurrent measurements apart. */
static _Thread_local uint64_t measured;

static int measure_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    measured += TAR_BLOCK;
    if (type == FTW_F && S_ISREG(sb->st_mode))
        measured += round_up((uint64_t)sb->st_size, TAR_BLOCK);
    return 0;
}

int esc_workdir_measure(const char *dir, uint64_t *bytes, esc_status *st)
{
    measured = 2 * TAR_BLOCK; /* the end-of-archive blocks */
    if (nftw(dir, measure_one, 32, FTW_PHYS) != 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "cannot read %s: %s", dir,
                              strerror(errno));
    *bytes = round_up(measured, TAR_RECORD);
    return esc_status_set(st, ESC_OK, NULL);
}

/* ------------------------------------------------------------------ running tar */

typedef struct {
    pid_t pid;
    int fd; /* our end of the pipe on its stdin or stdout */
} tar_proc;

/* Starts tar with argv. Its stdin (feed) or stdout (!feed) is a pipe whose other end is
 * t->fd; its stderr is err_fd (-1: ours). */
static int tar_spawn(char *const argv[], bool feed, int err_fd, tar_proc *t, esc_status *st)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return esc_status_set(st, ESC_INTERNAL, "pipe: %s", strerror(errno));
    int child_end = feed ? p[0] : p[1];
    t->fd = feed ? p[1] : p[0];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, child_end, feed ? STDIN_FILENO : STDOUT_FILENO);
    if (err_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int e = posix_spawnp(&t->pid, "tar", &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    close(child_end);
    if (e == 0)
        return ESC_OK;
    close(t->fd);
    return esc_status_set(st, ESC_INTERNAL, "cannot run tar: %s", strerror(e));
}

static int tar_wait(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* tar's verdict in one line: its exit and the first line it wrote to err (may be NULL). */
static int tar_failed(const char *what, int status, FILE *err, esc_status *st)
{
    char line[200] = "";
    if (err) {
        rewind(err);
        size_t n = fread(line, 1, sizeof line - 1, err);
        line[n] = '\0';
        line[strcspn(line, "\n")] = '\0';
    }
    if (WIFSIGNALED(status))
        return esc_status_set(st, ESC_INTERNAL, "tar (%s) was killed by signal %d", what,
                              WTERMSIG(status));
    return esc_status_set(st, ESC_INTERNAL, "tar (%s) failed with exit code %d%s%s", what,
                          WEXITSTATUS(status), line[0] ? ": " : "", line);
}

/* ------------------------------------------------------------------ upload */

/* Reads len bytes, fewer only at the end of the stream. Returns the count, or -1. */
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

/* Stores what tar writes, chunk by chunk, stopping at the limit. */
static int store_stream(esc_client *c, const char *job_id, int fd, uint64_t limit,
                        uint64_t *size, uint64_t *chunks, esc_status *st)
{
    uint8_t *buf = malloc(ESC_WORKDIR_CHUNK);
    int rc = esc_status_set(st, ESC_OK, NULL);
    for (;;) {
        ssize_t n = read_full(fd, buf, ESC_WORKDIR_CHUNK);
        if (n <= 0) {
            if (n < 0)
                rc = esc_status_set(st, ESC_INTERNAL, "reading from tar: %s", strerror(errno));
            break;
        }
        *size += (uint64_t)n;
        if (*size > limit) {
            rc = esc_status_set(st, ESC_RESOURCE_EXHAUSTED,
                                "the working directory is over the limit of %" PRIu64
                                " bytes as a tar stream",
                                limit);
            break;
        }
        char key[KEY_MAX];
        chunk_key(key, sizeof key, job_id, *chunks);
        rc = esc_kv_put(c, ESC_JOBS_NS, key, buf, (size_t)n, true, NULL, st);
        if (rc != ESC_OK)
            break;
        ++*chunks;
    }
    free(buf);
    return rc;
}

static int put_manifest(esc_client *c, const char *job_id, uint64_t size, uint64_t chunks,
                        esc_status *st)
{
    char key[KEY_MAX], text[96];
    manifest_key(key, sizeof key, job_id);
    int n = snprintf(text, sizeof text, MANIFEST_MAGIC " %" PRIu64 " %" PRIu64, size, chunks);
    return esc_kv_put(c, ESC_JOBS_NS, key, text, (size_t)n, true, NULL, st);
}

int esc_workdir_upload(esc_client *c, const char *job_id, const char *dir, uint64_t limit,
                       uint64_t *size, esc_status *st)
{
    char *argv[] = {"tar", "-C", (char *)dir, "-cf", "-", ".", NULL};
    FILE *err = tmpfile(); /* tar's complaints, for the one-line error */
    tar_proc t;
    uint64_t chunks = 0;
    *size = 0;
    int rc = tar_spawn(argv, false, err ? fileno(err) : -1, &t, st);
    if (rc == ESC_OK) {
        rc = store_stream(c, job_id, t.fd, limit, size, &chunks, st);
        if (rc != ESC_OK)
            kill(t.pid, SIGKILL); /* it may be blocked writing what we no longer read */
        close(t.fd);
        int status = tar_wait(t.pid);
        /* Exit 1 from tar -c only means a file changed while it was read. */
        bool tar_ok = WIFEXITED(status) && WEXITSTATUS(status) <= 1;
        if (rc == ESC_OK && !tar_ok)
            rc = tar_failed("packing the working directory", status, err, st);
    }
    if (rc == ESC_OK)
        rc = put_manifest(c, job_id, *size, chunks, st);
    if (rc != ESC_OK)
        esc_workdir_delete(c, job_id, NULL);
    if (err)
        fclose(err);
    return rc;
}

int esc_workdir_delete(esc_client *c, const char *job_id, esc_status *st)
{
    char manifest[KEY_MAX];
    manifest_key(manifest, sizeof manifest, job_id);
    char **keys;
    size_t n;
    int rc = esc_kv_keys(c, ESC_JOBS_NS, manifest, &keys, &n, st);
    if (rc != ESC_OK)
        return rc;
    /* The manifest first: a reader never finds one whose chunks are gone. */
    rc = esc_kv_del(c, ESC_JOBS_NS, manifest, NULL, st);
    for (size_t i = 0; i < n && rc == ESC_OK; i++)
        if (strcmp(keys[i], manifest) != 0)
            rc = esc_kv_del(c, ESC_JOBS_NS, keys[i], NULL, st);
    esc_kv_keys_free(keys, n);
    return rc;
}

/* ------------------------------------------------------------------ download */

/* One KvGet straight on a channel: the downloader registers no job. */
static int kv_get(esc_rpc_channel *ch, const char *key, Escher__KvGetReply **out,
                  esc_status *st)
{
    Escher__KvGetRequest req = ESCHER__KV_GET_REQUEST__INIT;
    req.ns = ESC_JOBS_NS;
    req.key = (char *)key;
    ProtobufCMessage *m;
    int rc = esc_rpc_call(ch, &escher__gcs__descriptor, "KvGet", &req.base, &m, KV_TIMEOUT_MS,
                          ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    *out = (Escher__KvGetReply *)m;
    if ((*out)->found)
        return ESC_OK;
    protobuf_c_message_free_unpacked(m, NULL);
    *out = NULL;
    return esc_status_set(st, ESC_NOT_FOUND, "no key %s in the GCS", key);
}

static int read_manifest(esc_rpc_channel *ch, const char *job_id, uint64_t *size,
                         uint64_t *chunks, esc_status *st)
{
    char key[KEY_MAX], text[96];
    manifest_key(key, sizeof key, job_id);
    Escher__KvGetReply *r;
    int rc = kv_get(ch, key, &r, st);
    if (rc == ESC_NOT_FOUND)
        return esc_status_set(st, ESC_NOT_FOUND,
                              "job %s has no working directory in the GCS (it is removed "
                              "when the job ends)",
                              job_id);
    if (rc != ESC_OK)
        return rc;
    size_t n = r->value.len < sizeof text - 1 ? r->value.len : sizeof text - 1;
    memcpy(text, r->value.data, n);
    text[n] = '\0';
    protobuf_c_message_free_unpacked(&r->base, NULL);
    if (sscanf(text, MANIFEST_MAGIC " %" SCNu64 " %" SCNu64, size, chunks) != 2)
        return esc_status_set(st, ESC_INTERNAL, "malformed manifest %s: \"%s\"", key, text);
    return ESC_OK;
}

/* Writes every chunk, in order, into tar's stdin. */
static int feed_tar(esc_rpc_channel *ch, const char *job_id, uint64_t size, uint64_t chunks,
                    int fd, esc_status *st)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < chunks; i++) {
        char key[KEY_MAX];
        chunk_key(key, sizeof key, job_id, i);
        Escher__KvGetReply *r;
        int rc = kv_get(ch, key, &r, st);
        if (rc != ESC_OK)
            return rc;
        total += r->value.len;
        int w = esc_write_all(fd, r->value.data, r->value.len);
        protobuf_c_message_free_unpacked(&r->base, NULL);
        if (w != 0)
            return esc_status_set(st, ESC_INTERNAL, "writing to tar: %s", strerror(errno));
    }
    if (total != size)
        return esc_status_set(st, ESC_INTERNAL,
                              "the working directory has %" PRIu64 " bytes, its manifest "
                              "says %" PRIu64,
                              total, size);
    return ESC_OK;
}

/* Unpacks through tar. SIGPIPE (tar exiting early) must be an error from write, not our
 * death, without changing the process's disposition: it is blocked in this thread, and
 * one raised by our writes is taken off the pending set before the mask comes back. */
static int unpack(esc_rpc_channel *ch, const char *job_id, const char *dest, uint64_t size,
                  uint64_t chunks, esc_status *st)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    char *argv[] = {"tar", "-C", (char *)dest, "-xf", "-", "--no-same-owner", NULL};
    tar_proc t;
    int rc = tar_spawn(argv, true, -1, &t, st);
    if (rc == ESC_OK) {
        rc = feed_tar(ch, job_id, size, chunks, t.fd, st);
        if (rc != ESC_OK)
            kill(t.pid, SIGKILL); /* a partial archive is not worth tar's complaints */
        close(t.fd);
        int status = tar_wait(t.pid);
        if (rc == ESC_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            rc = tar_failed("unpacking the working directory", status, NULL, st);
    }
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
        ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int esc_workdir_download(const char *address, const char *token, const char *job_id,
                         const char *dest, esc_status *st)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(address, token);
    uint64_t size = 0, chunks = 0;
    int rc = read_manifest(ch, job_id, &size, &chunks, st);
    if (rc == ESC_OK)
        rc = unpack(ch, job_id, dest, size, chunks, st);
    esc_rpc_channel_free(ch);
    return rc;
}
