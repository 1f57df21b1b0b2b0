/* package.c: fetching, verifying and unpacking a job's package (package.h).
 *
 * The bytes land in a file first and are hashed as they arrive: nothing is handed to
 * tar before the whole stream is known to be the one its name promises. tar is the
 * system's (GNU tar), started with posix_spawnp (safe in a process whose gRPC threads
 * run) with a clean signal mask. */
#include "package.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "frame.h"
#include "gcs.pb-c.h"
#include "xalloc.h"

extern char **environ;

#define KV_TIMEOUT_MS 30000
#define KEY_MAX 96

bool esc_package_hash_valid(const char *h)
{
    if (!h || strlen(h) != ESC_PACKAGE_HEX)
        return false;
    for (const char *p = h; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

/* ------------------------------------------------------------------ removing */

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

int esc_package_remove_tree(const char *dir)
{
    struct stat sb;
    if (lstat(dir, &sb) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------------ downloading */

static int kv_get(esc_rpc_channel *ch, const char *key, Escher__KvGetReply **out,
                  esc_status *st)
{
    Escher__KvGetRequest req = ESCHER__KV_GET_REQUEST__INIT;
    req.ns = ESC_PACKAGE_NS;
    req.key = (char *)key;
    ProtobufCMessage *m;
    int rc = esc_rpc_call(ch, &ESC_M_GCS_KV_GET, &req.base, &m, KV_TIMEOUT_MS,
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

static int read_manifest(esc_rpc_channel *ch, const char *hash, uint64_t *size,
                         uint64_t *chunks, esc_status *st)
{
    Escher__KvGetReply *r;
    int rc = kv_get(ch, hash, &r, st);
    if (rc == ESC_NOT_FOUND)
        return esc_status_set(st, ESC_NOT_FOUND,
                              "package %.16s... is not in the GCS (removed when its last "
                              "job ended, or never uploaded)",
                              hash);
    if (rc != ESC_OK)
        return rc;
    char text[96];
    size_t n = r->value.len < sizeof text - 1 ? r->value.len : sizeof text - 1;
    memcpy(text, r->value.data, n);
    text[n] = '\0';
    protobuf_c_message_free_unpacked(&r->base, NULL);
    if (sscanf(text, ESC_PACKAGE_MAGIC " %" SCNu64 " %" SCNu64, size, chunks) != 2)
        return esc_status_set(st, ESC_INTERNAL, "package %.16s...: malformed manifest", hash);
    return ESC_OK;
}

static void to_hex(const unsigned char *d, unsigned n, char *out)
{
    for (unsigned i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

/* Writes every chunk into fd, hashing as it goes, then checks size and hash. */
static int download(esc_rpc_channel *ch, const char *hash, uint64_t size, uint64_t chunks,
                    int fd, esc_status *st)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    uint64_t total = 0;
    int rc = ESC_OK;
    for (uint64_t i = 0; i < chunks && rc == ESC_OK; i++) {
        char key[KEY_MAX];
        snprintf(key, sizeof key, "%s/%" PRIu64, hash, i);
        Escher__KvGetReply *r;
        if ((rc = kv_get(ch, key, &r, st)) != ESC_OK)
            break;
        total += r->value.len;
        EVP_DigestUpdate(md, r->value.data, r->value.len);
        if (esc_write_all(fd, r->value.data, r->value.len) != 0)
            rc = esc_status_set(st, ESC_INTERNAL, "writing package %.16s...: %s", hash,
                                strerror(errno));
        protobuf_c_message_free_unpacked(&r->base, NULL);
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dn = 0;
    EVP_DigestFinal_ex(md, d, &dn);
    EVP_MD_CTX_free(md);
    if (rc != ESC_OK)
        return rc;
    char got[2 * EVP_MAX_MD_SIZE + 1];
    to_hex(d, dn, got);
    if (total != size || strcmp(got, hash) != 0)
        return esc_status_set(st, ESC_INTERNAL,
                              "package %.16s...: hash mismatch (%" PRIu64 " bytes hashing to "
                              "%.16s..., manifest says %" PRIu64 "): refused",
                              hash, total, got, size);
    return ESC_OK;
}

/* ------------------------------------------------------------------ unpacking */

/* tar -C dir -xf file, its stderr in err; returns its wait status, or -1. */
static int run_tar(const char *dir, const char *file, int err)
{
    char *argv[] = {"tar", "-C", (char *)dir, "-xf", (char *)file, "--no-same-owner", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, err, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err, STDERR_FILENO);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int e = posix_spawnp(&pid, "tar", &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) {
        errno = e;
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* The first line tar wrote to err. */
static void first_line(int err, char *out, size_t len)
{
    ssize_t n = pread(err, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

static int unpack(const char *hash, const char *file, const char *dest, esc_status *st)
{
    size_t len = strlen(dest) + 16;
    char *tmp = esc_xmalloc(len);
    snprintf(tmp, len, "%s.tmp.XXXXXX", dest);
    char errpath[] = "/tmp/escher-tar-err.XXXXXX";
    int err = mkstemp(errpath);
    if (err >= 0)
        unlink(errpath);
    int rc = ESC_OK;
    if (err < 0 || !mkdtemp(tmp)) {
        rc = esc_status_set(st, ESC_INTERNAL, "cannot unpack into %s: %s", dest, strerror(errno));
    } else {
        int status = run_tar(tmp, file, err);
        char line[200];
        first_line(err, line, sizeof line);
        if (status == -1)
            rc = esc_status_set(st, ESC_INTERNAL, "cannot run tar: %s", strerror(errno));
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = esc_status_set(st, ESC_INTERNAL,
                                "package %.16s...: tar refused to unpack it (members that "
                                "leave the directory?)%s%s",
                                hash, line[0] ? ": " : "", line);
        else if (rename(tmp, dest) != 0)
            rc = esc_status_set(st, ESC_INTERNAL, "cannot rename %s to %s: %s", tmp, dest,
                                strerror(errno));
        if (rc != ESC_OK)
            esc_package_remove_tree(tmp);
    }
    if (err >= 0)
        close(err);
    free(tmp);
    return rc;
}

int esc_package_fetch(esc_rpc_channel *ch, const char *hash, const char *dest,
                      uint64_t *bytes, esc_status *st)
{
    if (!esc_package_hash_valid(hash))
        return esc_status_set(st, ESC_INVALID_ARGUMENT,
                              "invalid package hash \"%.80s\" (64 lowercase hex digits)", hash);
    uint64_t size = 0, chunks = 0;
    int rc = read_manifest(ch, hash, &size, &chunks, st);
    if (rc != ESC_OK)
        return rc;
    size_t len = strlen(dest) + 16;
    char *file = esc_xmalloc(len);
    snprintf(file, len, "%s.tar.XXXXXX", dest);
    int fd = mkostemp(file, O_CLOEXEC);
    if (fd < 0) {
        rc = esc_status_set(st, ESC_INTERNAL, "cannot create %s: %s", file, strerror(errno));
        free(file);
        return rc;
    }
    rc = download(ch, hash, size, chunks, fd, st);
    close(fd);
    if (rc == ESC_OK)
        rc = unpack(hash, file, dest, st);
    unlink(file);
    free(file);
    if (rc == ESC_OK && bytes)
        *bytes = size;
    return rc;
}
