/* worker_main.c: escher-worker, the process that runs tasks for its raylet.
 *
 * The raylet's worker pool forks it with, in the environment:
 *   ESCHER_RAYLET_SOCKET  Unix socket to connect to (required)
 *   ESCHER_WORKER_ID      the id to announce in Hello (required)
 *   ESCHER_JOB_ID         the job whose tasks this worker runs
 *   ESCHER_LOG_DIR        where its capture files go (default: the cwd)
 *   ESCHER_PACKAGE_ROOT   the node's package cache: a task that names its job's package
 *                         (TaskSpec.package) finds it unpacked in <root>/<hash>, put
 *                         there by the raylet before the task was sent
 * plus the environment of the tasks it will run (CUDA_VISIBLE_DEVICES, ...): the pool
 * gives each worker one task environment for its whole life.
 *
 * It connects, sends Hello, then serves Execute messages one at a time (blocking I/O:
 * a worker does one thing at a time) and answers each with Done. Exit, or the raylet
 * closing the socket, ends it with status 0.
 *
 * The worker of an actor created with max_concurrency N > 1 (the pool sets
 * ESCHER_WORKER_CONCURRENCY=N) runs up to N calls at once instead: its main thread reads
 * the socket and queues each Execute; N threads, started at once, take them in arrival
 * order, run them and send each Done (with its Execute's tag) as it ends. Every other
 * worker keeps to one thread: the read, the call and the Done follow each other with
 * blocking I/O, without a hand-off between threads, which would add a wake-up (tens of
 * microseconds) to every task, and more than that to no-op tasks, which are what the
 * serial path is tuned for. The locks the threads need (g_send_mu, g_capture_mu,
 * g_load_mu) are taken in the serial worker too: uncontended, they cost nanoseconds.
 *
 * Output: fds 1 and 2 point, for the worker's whole life, at its capture files
 * worker-<id>.out and .err in the log dir; before each task it appends one record
 * "<task_id> <out offset> <err offset> <unix ms>" to worker-<id>.idx, so a task's output
 * is the part of the capture files between its record and the next one (escher logs
 * reads it that way). A task costs one write(2) and no file creation: creating two files
 * per task would cost more than a no-op task itself. The worker's own log lines go to
 * its original stderr (the pool's worker-<id>.log). With N > 1 threads the calls share
 * fds 1 and 2, so their output interleaves: a call's slice (its record to the next one)
 * is exact while it runs alone, and otherwise also holds what calls running beside it
 * wrote, and misses what it wrote after the next call started. The records are written
 * under one lock, after a flush of stdio, so they stay whole and in start order.
 *
 * Function tasks run in this process: the library is dlopen'ed once and cached. Command
 * tasks are forked and exec'ed with their own argv, env and cwd, and inherit fds 1 and 2.
 * This executable exports esc_buf_* and esc_task_* (linked with -rdynamic) so that task
 * libraries resolve them here without linking libescher.
 *
 * With a package, a function task's relative library is taken inside the package (and
 * must stay inside it), and function tasks run with the package as their cwd; a command
 * task with no absolute cwd starts in the package (its cwd taken relative to it), except
 * one whose env has ESCHER_JOB_WORKDIR_KEY=<job id> (a job's entrypoint, from `escher
 * job submit --working-dir`), which starts in a fresh copy of the package,
 * <log_dir>/jobs/<job id>/, so that what it writes stays its own.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "escher/escher.h" /* ESC_ACTOR_MAX_CONCURRENCY */
#include "escher/task.h"
#include "frame.h"
#include "log.h"
#include "qty.h"
#include "version.h"
#include "wait_status.h"
#include "worker.pb-c.h"
#include "xalloc.h"

extern char **environ;

#define ERR_MAX 512

/* What one task produced; ctx owns the return buffers that result points into. */
typedef struct {
    Escher__TaskResult result;
    char error[ERR_MAX];
    esc_task_ctx *ctx;
    ProtobufCBinaryData *returns;
} outcome;

/* --------------------------------------------------------------------- connection */

static int connect_raylet(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        ESC_ERROR("socket path too long: %s", path);
        return -1;
    }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        ESC_ERROR("cannot connect to raylet at %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int send_hello(int fd, const char *worker_id, const char *job_id)
{
    Escher__WorkerMsg__Hello hello = ESCHER__WORKER_MSG__HELLO__INIT;
    hello.worker_id = (char *)worker_id;
    hello.pid = (int32_t)getpid();
    hello.job_id = (char *)job_id;
    Escher__WorkerMsg msg = ESCHER__WORKER_MSG__INIT;
    msg.msg_case = ESCHER__WORKER_MSG__MSG_HELLO;
    msg.hello = &hello;
    return esc_frame_write(fd, &msg.base);
}

/* Whole frames only on the socket: the threads of a concurrent actor send in turn. */
static pthread_mutex_t g_send_mu = PTHREAD_MUTEX_INITIALIZER;

static int write_locked(int fd, const ProtobufCMessage *msg)
{
    pthread_mutex_lock(&g_send_mu);
    int rc = esc_frame_write(fd, msg);
    int err = errno;
    pthread_mutex_unlock(&g_send_mu);
    errno = err;
    return rc;
}

/* Sends the outcome of the Execute with that tag; a result too big for one frame becomes
 * a failure the raylet can still read. Returns 0, or -1 when the raylet is gone. */
static int send_done(int fd, outcome *o, uint64_t tag)
{
    Escher__WorkerMsg__Done done = ESCHER__WORKER_MSG__DONE__INIT;
    done.result = &o->result;
    done.tag = tag;
    Escher__WorkerMsg msg = ESCHER__WORKER_MSG__INIT;
    msg.msg_case = ESCHER__WORKER_MSG__MSG_DONE;
    msg.done = &done;
    if (write_locked(fd, &msg.base) == 0)
        return 0;
    if (errno != EMSGSIZE)
        return -1;
    snprintf(o->error, sizeof o->error, "returns too large: over %u MiB in total",
             ESC_FRAME_MAX >> 20);
    o->result.ok = false;
    o->result.n_returns = 0;
    return write_locked(fd, &msg.base);
}

/* ------------------------------------------------------------------------ log files */

/* Task ids become file names: refuse anything that could leave the log directory. */
static bool valid_task_id(const char *id)
{
    if (!id[0] || id[0] == '.')
        return false;
    for (const char *p = id; *p; p++)
        if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') ||
              ('0' <= *p && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

/* The capture files and the index, opened once (capture_open). */
static int g_idx = -1;
static char g_capture_error[ERR_MAX];   /* why they could not be opened, or "" */

static int open_append(const char *log_dir, const char *worker_id, const char *ext)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/worker-%s.%s", log_dir, worker_id, ext);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        snprintf(g_capture_error, sizeof g_capture_error, "cannot open %.400s: %s", path,
                 strerror(errno));
    return fd;
}

/* Points fds 1 and 2 at worker-<id>.out/.err for good and opens the index. On failure
 * every task fails with the reason (a worker that cannot keep logs runs nothing). */
static void capture_open(const char *log_dir, const char *worker_id)
{
    int out = open_append(log_dir, worker_id, "out");
    int err = out < 0 ? -1 : open_append(log_dir, worker_id, "err");
    g_idx = err < 0 ? -1 : open_append(log_dir, worker_id, "idx");
    if (g_idx >= 0) {
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
    }
    if (out >= 0)
        close(out);
    if (err >= 0)
        close(err);
}

static void capture_close(void)
{
    if (g_idx >= 0)
        close(g_idx);
}

/* Concurrent calls: one record at a time, so offsets grow from record to record. */
static pthread_mutex_t g_capture_mu = PTHREAD_MUTEX_INITIALIZER;

static int write_mark(const char *task_id)
{
    fflush(stdout); /* what came before belongs to the task before */
    fflush(stderr);
    off_t out = lseek(STDOUT_FILENO, 0, SEEK_END), err = lseek(STDERR_FILENO, 0, SEEK_END);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char rec[256];
    int n = snprintf(rec, sizeof rec, "%s %lld %lld %lld\n", task_id, (long long)out,
                     (long long)err, (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    if (out < 0 || err < 0 || n <= 0 || (size_t)n >= sizeof rec)
        return -1;
    return esc_write_all(g_idx, rec, (size_t)n);
}

/* Marks where the task's output starts: one index record. Returns 0 or -1 (o->error). */
static int capture_mark(const char *task_id, outcome *o)
{
    if (g_idx < 0) {
        snprintf(o->error, sizeof o->error, "%s", g_capture_error);
        return -1;
    }
    pthread_mutex_lock(&g_capture_mu);
    int rc = write_mark(task_id);
    int err = errno;
    pthread_mutex_unlock(&g_capture_mu);
    if (rc != 0) {
        snprintf(o->error, sizeof o->error, "cannot write the task's log index: %s",
                 strerror(err));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ packages */

#define PACKAGE_HEX 64

static const char *g_package_root; /* $ESCHER_PACKAGE_ROOT, "" when unset */
static char g_cwd_package[PACKAGE_HEX + 1]; /* the package that is our cwd, "" none */

/* Checked here rather than with runtime/package.h, which would load libcrypto into
 * every worker. */
static bool package_hash_valid(const char *h)
{
    size_t n = 0;
    for (; h[n]; n++)
        if (!((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f')))
            return false;
    return n == PACKAGE_HEX;
}

/* The directory of the task's package. Returns 0, or -1 with o->error set. */
static int package_dir(const char *hash, char *out, size_t len, outcome *o)
{
    if (!package_hash_valid(hash)) {
        snprintf(o->error, sizeof o->error, "invalid package hash \"%.80s\"", hash);
        return -1;
    }
    if (!g_package_root[0]) {
        snprintf(o->error, sizeof o->error,
                 "the task names a package, but the worker has no package cache "
                 "(ESCHER_PACKAGE_ROOT)");
        return -1;
    }
    snprintf(out, len, "%s/%s", g_package_root, hash);
    return 0;
}

/* Function tasks run in their package: one chdir when the package changes, none when
 * it is already the cwd. */
static int enter_package(const char *hash, outcome *o)
{
    if (!hash[0] || !strcmp(hash, g_cwd_package))
        return 0;
    char dir[4200];
    if (package_dir(hash, dir, sizeof dir, o) != 0)
        return -1;
    if (chdir(dir) != 0) {
        snprintf(o->error, sizeof o->error, "package %.16s... is not on this node (%.300s: %s)",
                 hash, dir, strerror(errno));
        return -1;
    }
    snprintf(g_cwd_package, sizeof g_cwd_package, "%s", hash);
    return 0;
}

/* A library path inside the package dir, or an error: a relative path that leads out
 * of the package (.., a symlink) is refused. Checked only when it is first loaded. */
static int check_inside(const char *dir, const char *path, const char *library, outcome *o)
{
    char real_dir[PATH_MAX], real[PATH_MAX];
    if (!realpath(dir, real_dir) || !realpath(path, real)) {
        snprintf(o->error, sizeof o->error, "library %.200s is not in the job's package: %s",
                 library, strerror(errno));
        return -1;
    }
    size_t n = strlen(real_dir);
    if (strncmp(real, real_dir, n) != 0 || real[n] != '/') {
        snprintf(o->error, sizeof o->error,
                 "library %.200s leads out of the job's package (to %.200s): refused", library,
                 real);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ function tasks */

typedef struct lib {
    struct lib *next;
    char *path;
    void *handle;
} lib;

static lib *g_libs; /* every library loaded so far: loaded once, never unloaded */

/* dlerror() text on one line (it may quote loader messages with newlines). */
static void dl_error_text(outcome *o, const char *what, const char *e)
{
    snprintf(o->error, sizeof o->error, "%s: %s", what, e ? e : "unknown error");
    for (char *p = o->error; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

static void set_dl_error(outcome *o, const char *what)
{
    dl_error_text(o, what, dlerror());
}

/* --------------------------------------------------------------------- the SDK */

/* A task library that uses the SDK (esc_task_client and escher.h's calls) has undefined
 * esc_* symbols that this executable does not export: the worker stays lean, without the
 * SDK's gRPC and friends loaded at every start (most tasks never call the SDK), and loads
 * libescher.so into the global scope the first time such a library comes; the library is
 * then opened again and finds them there. Found at $ESCHER_SDK_LIB, else next to this
 * executable's build (../client) or install (../<libdir>, ../lib) directory, else by the
 * loader's search path. */
#ifndef ESCHER_INSTALL_LIBDIR
#define ESCHER_INSTALL_LIBDIR "lib"
#endif
static bool g_sdk_loaded;

static bool try_sdk(const char *path)
{
    if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
        ESC_DEBUG("no SDK at %s: %s", path, dlerror());
        return false;
    }
    ESC_DEBUG("loaded the SDK from %s", path);
    return g_sdk_loaded = true;
}

static bool load_sdk(void)
{
    if (g_sdk_loaded)
        return false; /* loaded: what is missing is not the SDK's */
    const char *env = getenv("ESCHER_SDK_LIB");
    if (env && *env)
        return try_sdk(env);
    char self[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char *slash = n > 0 ? (self[n] = 0, strrchr(self, '/')) : NULL;
    if (slash) {
        *slash = 0;
        static const char *const rel[] = {"../client/libescher.so",
                                          "../" ESCHER_INSTALL_LIBDIR "/libescher.so",
                                          "../lib/libescher.so"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(path, sizeof path, "%s/%s", self, rel[i]);
            if (access(path, R_OK) == 0)
                return try_sdk(path);
        }
    }
    return try_sdk("libescher.so");
}

/* Opens a task library, loading the SDK first when the library needs it. */
static void *open_library(const char *path, outcome *o)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h)
        return h;
    char why[400]; /* dlerror's text lives only until the next dl call */
    const char *e = dlerror();
    snprintf(why, sizeof why, "%s", e ? e : "unknown error");
    if (strstr(why, "undefined symbol: esc_") && load_sdk()) {
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        e = h ? NULL : dlerror();
        snprintf(why, sizeof why, "%s", e ? e : "");
    }
    if (!h)
        dl_error_text(o, "dlopen", why);
    return h;
}

/* Relative paths are relative to the task's package, else to the worker's working
 * directory (the raylet's), made absolute so dlopen does not search LD_LIBRARY_PATH for
 * them. */
static void *load_library(const char *library, const char *package, outcome *o)
{
    char path[8400], base[4200];
    bool in_package = package[0] && library[0] != '/';
    if (in_package && package_dir(package, base, sizeof base, o) != 0)
        return NULL;
    if (library[0] == '/' || (!in_package && !getcwd(base, sizeof base)))
        snprintf(path, sizeof path, "%s", library);
    else
        snprintf(path, sizeof path, "%s/%s", base, library);
    for (lib *l = g_libs; l; l = l->next)
        if (!strcmp(l->path, path))
            return l->handle;
    if (in_package && check_inside(base, path, library, o) != 0)
        return NULL;
    void *h = open_library(path, o);
    if (!h)
        return NULL;
    lib *l = esc_xmalloc(sizeof *l);
    l->path = esc_xstrdup(path);
    l->handle = h;
    l->next = g_libs;
    g_libs = l;
    return h;
}

static void free_libs(void)
{
    while (g_libs) {
        lib *next = g_libs->next;
        free(g_libs->path);
        free(g_libs); /* the handle stays loaded: task code may still run (atexit) */
        g_libs = next;
    }
}

static esc_task_fn find_function(const Escher__FunctionRef *f, const char *package, outcome *o)
{
    if (!f->library || !f->library[0] || !f->symbol || !f->symbol[0]) {
        snprintf(o->error, sizeof o->error, "function task without library or symbol");
        return NULL;
    }
    void *h = load_library(f->library, package, o);
    if (!h)
        return NULL;
    dlerror();
    void *sym = dlsym(h, f->symbol);
    if (!sym) {
        set_dl_error(o, "dlsym");
        return NULL;
    }
    esc_task_fn fn;
    memcpy(&fn, &sym, sizeof fn); /* object pointer -> function pointer, as POSIX allows */
    return fn;
}

/* Makes the result's returns point at the context's buffers. */
static void collect_returns(outcome *o, size_t n)
{
    o->returns = esc_xcalloc(n ? n : 1, sizeof *o->returns);
    for (size_t i = 0; i < n; i++) {
        esc_buf *b = esc_task_return(o->ctx, i);
        o->returns[i].data = (uint8_t *)esc_buf_data(b);
        o->returns[i].len = esc_buf_len(b);
    }
    o->result.returns = o->returns;
    o->result.n_returns = n;
}

/* An actor's call carries what the actor holds now (actor_manager.c): esc_actor_held. */
static void set_held(esc_task_ctx *ctx, const Escher__TaskSpec *spec)
{
    size_t n = spec->n_resources;
    if (!ctx || !n)
        return;
    const char **names = esc_xcalloc(n, sizeof *names);
    double *qty = esc_xcalloc(n, sizeof *qty);
    for (size_t i = 0; names && qty && i < n; i++) {
        names[i] = spec->resources[i]->name;
        qty[i] = (double)spec->resources[i]->value / ESC_QTY_SCALE;
    }
    if (names && qty && esc_task_ctx_set_held(ctx, names, qty, n) != 0)
        ESC_ERROR("out of memory for the actor's holding");
    free(names);
    free(qty);
}

/* The package cwd, the libraries loaded and the SDK are the process's: the threads of a
 * concurrent actor find their function one at a time. */
static pthread_mutex_t g_load_mu = PTHREAD_MUTEX_INITIALIZER;

static esc_task_fn prepare_function(const Escher__TaskSpec *spec, outcome *o)
{
    pthread_mutex_lock(&g_load_mu);
    esc_task_fn fn = NULL;
    if (enter_package(spec->package, o) == 0)
        fn = find_function(spec->function, spec->package, o);
    pthread_mutex_unlock(&g_load_mu);
    return fn;
}

static void run_function(const Escher__TaskSpec *spec, outcome *o)
{
    esc_task_fn fn = prepare_function(spec, o);
    if (!fn)
        return;
    size_t n = spec->n_args;
    const void **args = esc_xcalloc(n ? n : 1, sizeof *args);
    size_t *lens = esc_xcalloc(n ? n : 1, sizeof *lens);
    for (size_t i = 0; i < n; i++) {
        args[i] = spec->args[i]->data.data;
        lens[i] = spec->args[i]->data.len;
    }
    o->ctx = esc_task_ctx_new(spec->task_id, spec->job_id, n, args, lens, spec->num_returns);
    set_held(o->ctx, spec);
    int rc = esc_task_ctx_call(o->ctx, fn);
    fflush(stdout); /* what the task printf'ed belongs to its slice */
    fflush(stderr);
    free(args);
    free(lens);
    if (rc != 0) {
        snprintf(o->error, sizeof o->error, "task returned %d", rc);
        o->result.exit_code = rc;
        return;
    }
    collect_returns(o, spec->num_returns);
    o->result.ok = true;
}

/* ------------------------------------------------------------------- command tasks */

/* environ with the "KEY=VALUE" entries of extra added, replacing same-named ones.
 * The array is malloc'd; the strings are borrowed. */
static char **merge_env(char **extra, size_t nextra)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = esc_xcalloc(n + nextra + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t klen = strcspn(environ[i], "=");
        bool replaced = false;
        for (size_t j = 0; j < nextra && !replaced; j++)
            replaced = !strncmp(extra[j], environ[i], klen) && extra[j][klen] == '=';
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < nextra; j++)
        if (strchr(extra[j], '='))
            env[k++] = extra[j];
    return env;
}

/* In the forked child. Async-signal-safe calls only, except for the message after a
 * failed chdir/exec (the worker is single-threaded unless a task left threads behind). */
static void exec_child(const char *cwd, char **argv, char **env, int out, int err,
                       pid_t worker)
{
    /* The command dies with its worker (a cancel kills the worker's process group, but
     * a raylet that dies leaves the worker only its own death signal). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != worker)
        _exit(127);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
        dup2(null, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    signal(SIGPIPE, SIG_DFL);
    if (cwd && cwd[0] && chdir(cwd) < 0) {
        dprintf(STDERR_FILENO, "escher-worker: chdir %s: %s\n", cwd, strerror(errno));
        _exit(127);
    }
    execvpe(argv[0], argv, env);
    dprintf(STDERR_FILENO, "escher-worker: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Runs argv (argv[0] a path) with env, stdin /dev/null and stdout/stderr on err, and
 * waits for it. Returns its wait status, or -1 when it could not be forked. */
static int run_helper(char **argv, char **env, int err)
{
    fflush(NULL);
    pid_t worker = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* it dies with us, like a command */
        if (getppid() != worker)
            _exit(127);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, STDIN_FILENO);
        dup2(err, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        signal(SIGPIPE, SIG_DFL);
        execve(argv[0], argv, env);
        dprintf(STDERR_FILENO, "escher-worker: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (pid < 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* The value of KEY in a task's "KEY=VALUE" strings, or NULL. */
static const char *env_value(char **env, size_t n, const char *key)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i < n; i++)
        if (!strncmp(env[i], key, klen) && env[i][klen] == '=')
            return env[i] + klen + 1;
    return NULL;
}

static bool executable_at(char *out, size_t len, const char *dir, const char *rel)
{
    int n = snprintf(out, len, "%s/%s", dir, rel);
    return n > 0 && (size_t)n < len && access(out, X_OK) == 0;
}

/* Finds the escher CLI as the CLI finds the daemons, the other way round: in
 * $ESCHER_BIN_DIR/client, next to this executable, in ../client from its directory (the
 * build tree), then on PATH. */
static int find_cli(char *out, size_t len)
{
    const char *bin = getenv("ESCHER_BIN_DIR");
    if (bin && *bin && executable_at(out, len, bin, "client/escher"))
        return 0;
    char exe[4096];
    ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (exe_len > 0) {
        exe[exe_len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        if (executable_at(out, len, exe, "escher") ||
            executable_at(out, len, exe, "../client/escher"))
            return 0;
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t dir_len = strcspn(path, ":");
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", (int)dir_len, path);
        if (dir_len > 0 && executable_at(out, len, dir, "escher"))
            return 0;
        path += dir_len + (path[dir_len] == ':');
    }
    return -1;
}

/* A fresh directory for the job's working copy: <log_dir>/jobs/<job_id>, or, when that
 * exists (the entrypoint is retried), <log_dir>/jobs/<job_id>.XXXXXX, so that no
 * attempt starts in what an earlier one left. */
static int make_workdir(const char *log_dir, const char *job_id, char *dir, size_t len,
                        outcome *o)
{
    int n = snprintf(dir, len, "%s/jobs", log_dir);
    if (n < 0 || (size_t)n + strlen(job_id) + 9 >= len) {
        snprintf(o->error, sizeof o->error, "log directory path too long: %.400s", log_dir);
        return -1;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(o->error, sizeof o->error, "cannot create %.400s: %s", dir, strerror(errno));
        return -1;
    }
    /* Fits: checked above, with room for the suffix. */
    char *end = dir + n;
    sprintf(end, "/%s", job_id);
    if (mkdir(dir, 0755) == 0)
        return 0;
    if (errno == EEXIST) {
        sprintf(end, "/%s.XXXXXX", job_id);
        if (mkdtemp(dir))
            return 0;
    }
    snprintf(o->error, sizeof o->error, "cannot create %.400s: %s", dir, strerror(errno));
    return -1;
}

/* Runs one helper program for job_id's working directory; 0, or -1 with o->error
 * naming what failed (its own messages are in the task's stderr). */
static int run_step(char **argv, char **env, int err, const char *what, const char *job_id,
                    outcome *o)
{
    int status = run_helper(argv, env, err);
    if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char how[64] = "a failed fork";
    if (status != -1)
        esc_wait_status_desc(status, how, sizeof how);
    snprintf(o->error, sizeof o->error,
             "cannot %s the working directory of job %s: %s ended with %s (see the task's "
             "stderr)", what, job_id, argv[0], how);
    return -1;
}

/* Unpacks job_id's working directory into a fresh dir. The download needs a GCS client,
 * and gRPC linked into the worker would add about 40 ms of loading to every worker
 * start, so `escher job fetch-workdir` does it, with the task's env (ESCHER_ADDRESS and
 * ESCHER_TOKEN) and its messages in the task's stderr. */
static int fetch_workdir(const char *job_id, const char *log_dir, char **env, int err,
                         char *dir, size_t len, outcome *o)
{
    if (!valid_task_id(job_id)) {
        snprintf(o->error, sizeof o->error, "invalid ESCHER_JOB_WORKDIR_KEY \"%.100s\"", job_id);
        return -1;
    }
    char cli[4096];
    if (find_cli(cli, sizeof cli) != 0) {
        snprintf(o->error, sizeof o->error,
                 "cannot fetch the working directory of job %s: no escher CLI in "
                 "$ESCHER_BIN_DIR/client, next to escher-worker, in ../client or on PATH",
                 job_id);
        return -1;
    }
    if (make_workdir(log_dir, job_id, dir, len, o) != 0)
        return -1;
    char *argv[] = {cli, "job", "fetch-workdir", (char *)job_id, dir, NULL};
    return run_step(argv, env, err, "fetch", job_id, o);
}

/* A fresh copy of the job's package for its entrypoint: `cp -a`, from this node's
 * cache, no fetch. */
static int copy_package(const char *job_id, const char *pkg, const char *log_dir, char **env,
                        int err, char *dir, size_t len, outcome *o)
{
    if (!valid_task_id(job_id)) {
        snprintf(o->error, sizeof o->error, "invalid ESCHER_JOB_WORKDIR_KEY \"%.100s\"", job_id);
        return -1;
    }
    if (make_workdir(log_dir, job_id, dir, len, o) != 0)
        return -1;
    char from[4300];
    snprintf(from, sizeof from, "%s/.", pkg);
    char *argv[] = {"/bin/cp", "-a", from, dir, NULL};
    return run_step(argv, env, err, "copy", job_id, o);
}

/* The directory the command starts in: an absolute cwd as given; else its cwd taken
 * relative to the job's package (for the entrypoint, a fresh copy of it); without a
 * package, to the job's working copy fetched from the GCS (ESCHER_JOB_WORKDIR_KEY), else
 * to the worker's cwd. Returns 0, or -1 with o->error set. */
static int command_cwd(const Escher__CommandRef *cmd, const char *package, const char *log_dir,
                       char **env, int err, char *cwd, size_t len, outcome *o)
{
    const char *given = cmd->cwd ? cmd->cwd : "";
    const char *job = env_value(cmd->env, cmd->n_env, "ESCHER_JOB_WORKDIR_KEY");
    if (given[0] == '/' || (!package[0] && (!job || !job[0]))) {
        snprintf(cwd, len, "%s", given);
        return 0;
    }
    char dir[4200];
    if (package[0] && package_dir(package, dir, sizeof dir, o) != 0)
        return -1;
    if (package[0] && job && job[0]) {
        char pkg[4200];
        snprintf(pkg, sizeof pkg, "%s", dir);
        if (copy_package(job, pkg, log_dir, env, err, dir, sizeof dir, o) != 0)
            return -1;
    } else if (!package[0] && fetch_workdir(job, log_dir, env, err, dir, sizeof dir, o) != 0) {
        return -1;
    }
    if (snprintf(cwd, len, "%s%s%s", dir, given[0] ? "/" : "", given) >= (int)len) {
        snprintf(o->error, sizeof o->error, "working directory path too long");
        return -1;
    }
    return 0;
}

static void run_command(const Escher__CommandRef *cmd, const char *package, const char *log_dir,
                        int out, int err, outcome *o)
{
    if (cmd->n_argv == 0) {
        snprintf(o->error, sizeof o->error, "command task with an empty argv");
        return;
    }
    char **env = merge_env(cmd->env, cmd->n_env);
    char cwd[4200];
    if (command_cwd(cmd, package, log_dir, env, err, cwd, sizeof cwd, o) != 0) {
        free(env);
        return;
    }
    char **argv = esc_xcalloc(cmd->n_argv + 1, sizeof *argv);
    memcpy(argv, cmd->argv, cmd->n_argv * sizeof *argv);
    fflush(NULL); /* the child must not flush our buffered output a second time */
    pid_t worker = getpid();
    pid_t pid = fork();
    if (pid == 0)
        exec_child(cwd, argv, env, out, err, worker);
    free(argv);
    free(env);
    if (pid < 0) {
        snprintf(o->error, sizeof o->error, "fork: %s", strerror(errno));
        return;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    o->result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    o->result.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    char desc[64];
    if (WIFSIGNALED(status))
        snprintf(o->error, sizeof o->error, "killed by %s",
                 esc_signal_desc(WTERMSIG(status), desc, sizeof desc));
    else if (WEXITSTATUS(status) != 0)
        snprintf(o->error, sizeof o->error, "exited with code %d", WEXITSTATUS(status));
    else
        o->result.ok = true;
}

/* --------------------------------------------------------------------- one task */

static void run_task(const Escher__TaskSpec *spec, const char *log_dir, outcome *o)
{
    if (!valid_task_id(spec->task_id)) {
        snprintf(o->error, sizeof o->error, "invalid task id \"%s\"", spec->task_id);
        return;
    }
    if (capture_mark(spec->task_id, o) != 0)
        return;
    if (spec->command && spec->command->n_argv)
        run_command(spec->command, spec->package, log_dir, STDOUT_FILENO, STDERR_FILENO, o);
    else if (spec->function)
        run_function(spec, o);
    else
        snprintf(o->error, sizeof o->error, "task has neither function nor command");
}

static int serve_execute(int fd, const Escher__TaskSpec *spec, uint64_t tag,
                         const char *log_dir)
{
    outcome o;
    memset(&o, 0, sizeof o);
    escher__task_result__init(&o.result);
    o.result.task_id = spec->task_id;
    o.result.error = o.error;
    ESC_DEBUG("task %s (%s) starts", spec->task_id, spec->name);
    run_task(spec, log_dir, &o);
    ESC_DEBUG("task %s ends: %s", spec->task_id, o.result.ok ? "ok" : o.error);
    int rc = send_done(fd, &o, tag);
    esc_task_ctx_free(o.ctx);
    free(o.returns);
    return rc;
}

/* Handles one message. Returns 1 to go on, 0 to stop cleanly, -1 on a protocol error. */
static int serve_message(int fd, const uint8_t *buf, size_t len, const char *log_dir)
{
    Escher__WorkerMsg *msg = escher__worker_msg__unpack(NULL, len, buf);
    if (!msg) {
        ESC_ERROR("undecodable message from raylet (%zu bytes)", len);
        return -1;
    }
    int rc = 1;
    if (msg->msg_case == ESCHER__WORKER_MSG__MSG_EXIT)
        rc = 0;
    else if (msg->msg_case == ESCHER__WORKER_MSG__MSG_EXECUTE && msg->execute->spec)
        rc = serve_execute(fd, msg->execute->spec, msg->execute->tag, log_dir) == 0 ? 1 : 0;
    else
        ESC_WARN("unexpected message %d from raylet, ignored", (int)msg->msg_case);
    escher__worker_msg__free_unpacked(msg, NULL);
    return rc;
}

static int serve(int fd, const char *log_dir)
{
    for (;;) {
        uint8_t *buf;
        size_t len;
        int r = esc_frame_read(fd, &buf, &len);
        if (r == 0)
            return 0; /* the raylet closed the socket */
        if (r < 0) {
            ESC_ERROR("reading from raylet: %s", strerror(errno));
            return 1;
        }
        int rc = serve_message(fd, buf, len, log_dir);
        free(buf);
        if (rc <= 0)
            return rc < 0 ? 1 : 0;
    }
}

/* ------------------------------------------------------------ concurrent actors */

typedef struct queued {
    struct queued *next;
    Escher__WorkerMsg *msg; /* an Execute with its spec, owned */
} queued;

/* The Executes that wait for a thread, in arrival order. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    queued *head, *tail;
    bool closing; /* the raylet said Exit or went away: threads take nothing more */
    int fd;
    const char *log_dir;
} g_runq = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .fd = -1};

static queued *runq_take(void)
{
    pthread_mutex_lock(&g_runq.mu);
    while (!g_runq.head && !g_runq.closing)
        pthread_cond_wait(&g_runq.cv, &g_runq.mu);
    queued *q = g_runq.closing ? NULL : g_runq.head;
    if (q && !(g_runq.head = q->next))
        g_runq.tail = NULL;
    pthread_mutex_unlock(&g_runq.mu);
    return q;
}

static void runq_put(Escher__WorkerMsg *msg)
{
    queued *q = esc_xcalloc(1, sizeof *q);
    q->msg = msg;
    pthread_mutex_lock(&g_runq.mu);
    if (g_runq.tail)
        g_runq.tail->next = q;
    else
        g_runq.head = q;
    g_runq.tail = q;
    pthread_cond_signal(&g_runq.cv);
    pthread_mutex_unlock(&g_runq.mu);
}

/* One of the N threads: runs calls until the queue closes. A Done that cannot be sent
 * (the raylet is gone) is dropped: the reader sees the socket end and closes the queue. */
static void *run_thread(void *unused)
{
    (void)unused;
    queued *q;
    while ((q = runq_take())) {
        const Escher__WorkerMsg__Execute *ex = q->msg->execute;
        serve_execute(g_runq.fd, ex->spec, ex->tag, g_runq.log_dir);
        escher__worker_msg__free_unpacked(q->msg, NULL);
        free(q);
    }
    return NULL;
}

/* Reads the raylet's messages and queues each Execute. Returns 0 at Exit or when the
 * raylet closed the socket, 1 on a read or protocol error. */
static int read_concurrent(int fd)
{
    for (;;) {
        uint8_t *buf;
        size_t len;
        int r = esc_frame_read(fd, &buf, &len);
        if (r <= 0) {
            if (r < 0)
                ESC_ERROR("reading from raylet: %s", strerror(errno));
            return r < 0;
        }
        Escher__WorkerMsg *msg = escher__worker_msg__unpack(NULL, len, buf);
        free(buf);
        if (!msg) {
            ESC_ERROR("undecodable message from raylet (%zu bytes)", len);
            return 1;
        }
        if (msg->msg_case == ESCHER__WORKER_MSG__MSG_EXECUTE && msg->execute->spec) {
            runq_put(msg);
            continue;
        }
        bool exit = msg->msg_case == ESCHER__WORKER_MSG__MSG_EXIT;
        if (!exit)
            ESC_WARN("unexpected message %d from raylet, ignored", (int)msg->msg_case);
        escher__worker_msg__free_unpacked(msg, NULL);
        if (exit)
            return 0;
    }
}

/* Closes the queue, waits for the calls that run (as the serial worker finishes its
 * call before it reads Exit) and drops those that never started. */
static void runq_close(pthread_t *threads, unsigned n)
{
    pthread_mutex_lock(&g_runq.mu);
    g_runq.closing = true;
    pthread_cond_broadcast(&g_runq.cv);
    pthread_mutex_unlock(&g_runq.mu);
    for (unsigned i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    while (g_runq.head) {
        queued *q = g_runq.head;
        g_runq.head = q->next;
        escher__worker_msg__free_unpacked(q->msg, NULL);
        free(q);
    }
    g_runq.tail = NULL;
}

/* serve() for an actor whose calls run n at a time, on n threads. */
static int serve_concurrent(int fd, const char *log_dir, unsigned n)
{
    g_runq.fd = fd;
    g_runq.log_dir = log_dir;
    pthread_t threads[ESC_ACTOR_MAX_CONCURRENCY];
    unsigned started = 0;
    int err = 0;
    while (started < n && !(err = pthread_create(&threads[started], NULL, run_thread, NULL)))
        started++;
    if (started < n)
        ESC_WARN("%u of %u threads for the actor's calls: %s", started, n, strerror(err));
    int rc = started ? read_concurrent(fd) : 1;
    runq_close(threads, started);
    return rc;
}

/* ESCHER_WORKER_CONCURRENCY, set by the pool: how many calls run at once (1 when unset
 * or out of 1..ESC_ACTOR_MAX_CONCURRENCY). */
static unsigned concurrency_from_env(void)
{
    const char *v = getenv("ESCHER_WORKER_CONCURRENCY");
    char *end = NULL;
    unsigned long n = v ? strtoul(v, &end, 10) : 1;
    if (!v || end == v || *end || n < 1 || n > ESC_ACTOR_MAX_CONCURRENCY)
        n = 1;
    return (unsigned)n;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--version")) {
        printf("escher-worker %s\n", ESC_VERSION);
        return 0;
    }
    if (argc > 1) {
        FILE *out = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ? stdout : stderr;
        fprintf(out, "usage: escher-worker [--help | --version]\n"
                     "Runs tasks for escher-raylet, which starts it (with ESCHER_RAYLET_SOCKET\n"
                     "and ESCHER_WORKER_ID set); it is not meant to be run by hand.\n");
        return out == stdout ? 0 : 2;
    }
    esc_log_init("escher-worker", ESC_LOG_INFO);
    signal(SIGPIPE, SIG_IGN); /* a closed socket is an error return, not a death */
    const char *log_dir = getenv("ESCHER_LOG_DIR");
    const char *job_id = getenv("ESCHER_JOB_ID");
    g_package_root = getenv("ESCHER_PACKAGE_ROOT") ? getenv("ESCHER_PACKAGE_ROOT") : "";
    if (!getenv("ESCHER_RAYLET_SOCKET") || !getenv("ESCHER_WORKER_ID")) {
        ESC_ERROR("escher-worker is started by escher-raylet "
                  "(ESCHER_RAYLET_SOCKET and ESCHER_WORKER_ID must be set)");
        return 2;
    }
    /* Tasks keep ESCHER_JOB_ID and ESCHER_LOG_DIR, but must not pose as this worker. */
    char *sock = esc_xstrdup(getenv("ESCHER_RAYLET_SOCKET"));
    char *worker_id = esc_xstrdup(getenv("ESCHER_WORKER_ID"));
    unsigned threads = concurrency_from_env();
    unsetenv("ESCHER_RAYLET_SOCKET");
    unsetenv("ESCHER_WORKER_ID");
    unsetenv("ESCHER_WORKER_CONCURRENCY");
    int rc = 1;
    /* Our own records keep going to the stderr the pool gave us; fds 1 and 2 become
     * the capture files of the tasks. */
    int diag = dup(STDERR_FILENO);
    if (diag >= 0)
        esc_log_set_fd(diag);
    if (valid_task_id(worker_id))
        capture_open(log_dir && log_dir[0] ? log_dir : ".", worker_id);
    else
        snprintf(g_capture_error, sizeof g_capture_error, "invalid worker id");
    int fd = connect_raylet(sock);
    if (fd >= 0 && send_hello(fd, worker_id, job_id ? job_id : "") < 0)
        ESC_ERROR("cannot send hello: %s", strerror(errno));
    else if (fd >= 0 && threads > 1)
        rc = serve_concurrent(fd, log_dir && log_dir[0] ? log_dir : ".", threads);
    else if (fd >= 0)
        rc = serve(fd, log_dir && log_dir[0] ? log_dir : ".");
    if (fd >= 0)
        close(fd);
    capture_close();
    /* What is written at exit (a task library's atexit, a leak report) is the worker's,
     * not its last task's. */
    if (diag >= 0) {
        fflush(stdout);
        fflush(stderr);
        dup2(diag, STDOUT_FILENO);
        dup2(diag, STDERR_FILENO);
    }
    free_libs();
    free(sock);
    free(worker_id);
    return rc;
}
