/* workdir.c: a job's package (esc_job_package: its files packed, hashed and stored once
 * in the GCS, runtime/package.h), and the working directory of `escher job submit`,
 * which is that same package (workdir.h).
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
#include "package.h"
#include "xalloc.h"

#include <openssl/evp.h>

extern char **environ;

#define KV_TIMEOUT_MS 30000
#define TAR_BLOCK 512u
#define TAR_RECORD 10240u /* GNU tar's default record: the stream is a multiple of it */
#define KEY_MAX 160

static uint64_t round_up(uint64_t n, uint64_t to)
{
    return (n + to - 1) / to * to;
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

/* ------------------------------------------------------------------ packing */

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

/* A packed directory: the tar stream in a temporary file, its size and hash. */
typedef struct {
    FILE *f;
    uint64_t size, chunks;
    char hash[ESC_PACKAGE_HEX + 1];
} packed;

/* Copies what tar writes into p->f, hashing it, stopping at the limit. */
static int hash_stream(int fd, uint64_t limit, packed *p, esc_status *st)
{
    uint8_t *buf = esc_xmalloc(ESC_PACKAGE_CHUNK);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    int rc = esc_status_set(st, ESC_OK, NULL);
    for (;;) {
        ssize_t n = read_full(fd, buf, ESC_PACKAGE_CHUNK);
        if (n <= 0) {
            if (n < 0)
                rc = esc_status_set(st, ESC_INTERNAL, "reading from tar: %s", strerror(errno));
            break;
        }
        p->size += (uint64_t)n;
        p->chunks++;
        if (p->size > limit) {
            rc = esc_status_set(st, ESC_RESOURCE_EXHAUSTED,
                                "the directory is over the limit of %" PRIu64
                                " bytes as a tar stream",
                                limit);
            break;
        }
        EVP_DigestUpdate(md, buf, (size_t)n);
        if (fwrite(buf, 1, (size_t)n, p->f) != (size_t)n) {
            rc = esc_status_set(st, ESC_INTERNAL, "writing a temporary file: %s",
                                strerror(errno));
            break;
        }
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dn = 0;
    EVP_DigestFinal_ex(md, d, &dn);
    EVP_MD_CTX_free(md);
    for (unsigned i = 0; i < dn && 2 * i + 2 < sizeof p->hash; i++)
        sprintf(p->hash + 2 * i, "%02x", d[i]);
    free(buf);
    return rc;
}

/* Packs dir with tar into a temporary file. Names sorted and owners dropped, so that the
 * same files give the same bytes, hence the same hash, whoever packs them. */
static int pack_dir(const char *dir, uint64_t limit, packed *p, esc_status *st)
{
    memset(p, 0, sizeof *p);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "cannot read %s: %s", dir,
                              strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "%s is not a directory", dir);
    char *argv[] = {"tar", "-C", (char *)dir, "--sort=name", "--owner=0", "--group=0",
                    "--numeric-owner", "-cf", "-", ".", NULL};
    if (!(p->f = tmpfile()))
        return esc_status_set(st, ESC_INTERNAL, "tmpfile: %s", strerror(errno));
    FILE *err = tmpfile(); /* tar's complaints, for the one-line error */
    tar_proc t;
    int rc = tar_spawn(argv, false, err ? fileno(err) : -1, &t, st);
    if (rc == ESC_OK) {
        rc = hash_stream(t.fd, limit, p, st);
        if (rc != ESC_OK)
            kill(t.pid, SIGKILL); /* it may be blocked writing what we no longer read */
        close(t.fd);
        int status = tar_wait(t.pid);
        /* Exit 1 from tar -c only means a file changed while it was read. */
        bool tar_ok = WIFEXITED(status) && WEXITSTATUS(status) <= 1;
        if (rc == ESC_OK && !tar_ok)
            rc = tar_failed("packing the directory", status, err, st);
    }
    if (err)
        fclose(err);
    return rc;
}

/* ------------------------------------------------------------------ uploading */

static bool package_stored(esc_client *c, const char *hash)
{
    void *v;
    size_t len;
    int rc = esc_kv_get(c, ESC_PACKAGE_NS, hash, &v, &len, NULL);
    free(v);
    return rc == ESC_OK;
}

/* Chunks "<hash>/<n>", then the manifest "<hash>", last. */
static int upload(esc_client *c, packed *p, esc_status *st)
{
    uint8_t *buf = esc_xmalloc(ESC_PACKAGE_CHUNK);
    rewind(p->f);
    int rc = ESC_OK;
    for (uint64_t i = 0; i < p->chunks && rc == ESC_OK; i++) {
        size_t n = fread(buf, 1, ESC_PACKAGE_CHUNK, p->f);
        char key[KEY_MAX];
        snprintf(key, sizeof key, "%s/%" PRIu64, p->hash, i);
        rc = esc_kv_put(c, ESC_PACKAGE_NS, key, buf, n, true, NULL, st);
    }
    free(buf);
    if (rc != ESC_OK)
        return rc;
    char text[96];
    int n = snprintf(text, sizeof text, ESC_PACKAGE_MAGIC " %" PRIu64 " %" PRIu64, p->size,
                     p->chunks);
    return esc_kv_put(c, ESC_PACKAGE_NS, p->hash, text, (size_t)n, true, NULL, st);
}

static int set_job_package(esc_client *c, const char *hash, esc_status *st)
{
    Escher__SetJobPackageRequest req = ESCHER__SET_JOB_PACKAGE_REQUEST__INIT;
    req.job_id = c->job_id;
    req.hash = (char *)hash;
    ProtobufCMessage *m;
    int rc =
        esc_client_call(c, &ESC_M_GCS_SET_JOB_PACKAGE, &req.base, &m, ESC_RPC_IDEMPOTENT, st);
    if (rc == ESC_OK)
        protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

/* Stores p (unless the GCS has it) and names it the job's. A package that the GCS drops
 * in between (its last other job just ended) answers NOT_FOUND: it is sent once more. */
static int publish(esc_client *c, packed *p, esc_status *st)
{
    int rc = package_stored(c, p->hash) ? ESC_OK : upload(c, p, st);
    if (rc == ESC_OK)
        rc = set_job_package(c, p->hash, st);
    if (rc == ESC_NOT_FOUND && (rc = upload(c, p, st)) == ESC_OK)
        rc = set_job_package(c, p->hash, st);
    return rc;
}

static int job_package(esc_client *c, const char *dir, uint64_t limit, uint64_t *size,
                       char *hash, esc_status *st)
{
    if (!c || !dir)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "no client or directory");
    if (!*c->job_id)
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "a client connected with no_job has no job to give a package");
    int none = 0;
    if (!atomic_compare_exchange_strong(&c->package_state, &none, 1) && none == 1)
        return esc_status_set(st, ESC_FAILED_PRECONDITION,
                              "another esc_job_package call is under way");
    packed p;
    int rc = pack_dir(dir, limit, &p, st);
    if (rc == ESC_OK && none == 2 && strcmp(c->package, p.hash) != 0)
        rc = esc_status_set(st, ESC_FAILED_PRECONDITION, "the job has another package already");
    if (rc == ESC_OK)
        rc = publish(c, &p, st);
    if (p.f)
        fclose(p.f);
    if (none != 2) {
        if (rc == ESC_OK)
            memcpy(c->package, p.hash, sizeof c->package);
        atomic_store(&c->package_state, rc == ESC_OK ? 2 : 0);
    }
    if (rc == ESC_OK && size)
        *size = p.size;
    if (rc == ESC_OK && hash)
        memcpy(hash, p.hash, ESC_PACKAGE_HASH_MAX);
    return rc;
}

int esc_job_package(esc_client *c, const char *dir, char *hash, esc_status *st)
{
    return job_package(c, dir, ESC_PACKAGE_LIMIT, NULL, hash, st);
}

/* ------------------------------------------------------------------ working directory */

int esc_workdir_upload(esc_client *c, const char *job_id, const char *dir, uint64_t limit,
                       uint64_t *size, esc_status *st)
{
    if (strcmp(job_id, esc_client_job_id(c)) != 0)
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "a working directory is the package of the client's own job");
    *size = 0;
    return job_package(c, dir, limit, size, NULL, st);
}

int esc_workdir_delete(esc_client *c, const char *job_id, esc_status *st)
{
    (void)c;
    (void)job_id;
    /* Nothing to do: the GCS removes a package when the last job naming it ends, and
     * another job may share this one's. */
    return esc_status_set(st, ESC_OK, NULL);
}

/* The package of job_id, from the job table (a plain read: no job is registered). */
static int find_job_package(esc_rpc_channel *ch, const char *job_id, char *hash,
                            esc_status *st)
{
    Escher__ListJobsRequest req = ESCHER__LIST_JOBS_REQUEST__INIT;
    ProtobufCMessage *m;
    int rc = esc_rpc_call(ch, &ESC_M_GCS_LIST_JOBS, &req.base, &m, KV_TIMEOUT_MS,
                          ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    Escher__ListJobsReply *r = (Escher__ListJobsReply *)m;
    rc = esc_status_set(st, ESC_NOT_FOUND, "no job %s", job_id);
    for (size_t i = 0; i < r->n_jobs; i++) {
        if (strcmp(r->jobs[i]->job_id, job_id) != 0)
            continue;
        if (r->jobs[i]->state != ESCHER__JOB_STATE__JOB_RUNNING || !*r->jobs[i]->package)
            rc = esc_status_set(st, ESC_NOT_FOUND,
                                "job %s has no working directory in the GCS (it is removed "
                                "when the job ends)",
                                job_id);
        else
            rc = esc_status_set(st, ESC_OK, NULL);
        snprintf(hash, ESC_PACKAGE_HASH_MAX, "%s", r->jobs[i]->package);
        break;
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

/* Unpacks the package into dest/.package (verified, runtime/package.c), then moves its
 * entries up into dest, which the caller made empty. */
static int unpack_into(esc_rpc_channel *ch, const char *hash, const char *dest, esc_status *st)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s/.escher-package", dest) >= (int)sizeof tmp)
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "path too long: %s", dest);
    int rc = esc_package_fetch(ch, hash, tmp, NULL, st);
    if (rc != ESC_OK)
        return rc;
    char *argv[] = {"sh", "-c", "cd \"$1\" && for f in * .[!.]* ..?*; do "
                    "[ -e \"$f\" ] || [ -L \"$f\" ] || continue; mv -- \"$f\" ..; done",
                    "sh", tmp, NULL};
    pid_t pid;
    int e = posix_spawnp(&pid, "sh", NULL, NULL, argv, environ);
    int status = e == 0 ? tar_wait(pid) : -1;
    if (e != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = esc_status_set(st, ESC_INTERNAL, "cannot move the package's files into %s", dest);
    esc_package_remove_tree(tmp);
    return rc;
}

int esc_workdir_download(const char *address, const char *token, const char *job_id,
                         const char *dest, esc_status *st)
{
    esc_rpc_channel *ch = esc_rpc_channel_new(address, token);
    char hash[ESC_PACKAGE_HASH_MAX];
    int rc = find_job_package(ch, job_id, hash, st);
    if (rc == ESC_OK)
        rc = unpack_into(ch, hash, dest, st);
    esc_rpc_channel_free(ch);
    return rc;
}
