/* worker_pool.c: forking, reusing, feeding and reaping escher-worker processes.
 *
 * A worker is started for one job and one task environment (the "KEY=VALUE" strings
 * given to worker_pool_run, e.g. CUDA_VISIBLE_DEVICES) and only ever runs tasks with
 * that same job and environment: the environment is set when the process starts, so a
 * library that reads it once (the CUDA runtime reads CUDA_VISIBLE_DEVICES at init) sees
 * the right value.
 *
 * Life of a worker:
 *   STARTING  forked, its task waiting; the socket connection comes (matched by the
 *             peer's pid), then Hello; then the task is sent and it is BUSY
 *   BUSY      running the tasks in w->tasks; the Done of the last one makes it IDLE
 *   IDLE      waiting for a task of its job/env; after the idle timeout it is sent Exit
 *   STOPPING  sent Exit or killed; nothing more is sent to it
 * Any state ends when the process is reaped; a task still attached then fails with
 * "worker died: <exit code or signal>". Workers are process-group leaders, and kills
 * go to the whole group, so the processes a command task started die with it.
 *
 * A worker runs one task at a time (slots = 1), except the worker of an actor created
 * with max_concurrency N > 1 (slots = N): it takes tasks of its actor while STARTING or
 * BUSY too, up to N attached, each sent with its own tag, which its Done echoes. What
 * happens to one attached task (a kill, a death, a reap) happens to all of them.
 *
 * Exits are noticed through a pidfd (Linux >= 5.3) on the pool's loop; on libev's
 * default loop, which reaps every child itself, through ev_child instead (ev_child works
 * only there, and the raylet's loop is not the default one).
 *
 * Tasks that find no idle worker of their job/env and no free slot under max_workers
 * (which counts plain tasks' workers; actors' workers are bounded by what the actors
 * hold) wait in a FIFO; when all slots are taken but some worker is idle for another
 * job/env, that worker is stopped to make room (a stopping worker no longer counts).
 */
#include "worker_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame.h"
#include "ids.h"
#include "log.h"
#include "pbutil.h"
#include "wait_status.h"
#include "worker.pb-c.h"
#include "xalloc.h"

extern char **environ;

#define START_TIMEOUT_S 30.0 /* fork to Hello */
#define STOP_GRACE_S 5.0     /* Exit, or a lost connection, to death; then SIGKILL */
#define DEFAULT_IDLE_S 60.0
#define SPEC_MAX (ESC_FRAME_MAX - 64) /* room for the WorkerMsg envelope */
#define NOWN_ENV 7 /* the ESCHER_* variables worker_envp sets */

typedef struct pool_task {
    struct pool_task *next; /* in the queue, or in a list of tasks to fail */
    Escher__TaskSpec *spec; /* our copy */
    char **env;             /* sorted copies of the KEY=VALUE strings */
    size_t nenv;
    int64_t cpu;     /* what it holds: its worker's CPU quota while it runs */
    uint64_t tag;    /* sent: its Execute's tag, which the Done echoes */
    worker_done_fn done;
    void *ud;
    const char *why; /* while on a list of tasks to fail: the error */
} pool_task;

typedef enum { W_STARTING, W_IDLE, W_BUSY, W_STOPPING } wstate;

typedef struct worker {
    struct worker *prev, *next;
    worker_pool *pool;
    char id[ESC_ID_HEX + 1];
    char *job_id;
    char *credential; /* the job's (ESCHER_JOB_CREDENTIAL): what the task starts joins it */
    char *actor_id; /* an actor's worker: only its tasks, never idle-stopped; else NULL */
    char **env; /* the task environment it was started with, sorted */
    size_t nenv;
    pid_t pid;
    int64_t quota_cpu; /* the CPU its quota was last set to; -1: none set yet */
    bool in_cgroup;    /* moved into its cgroup (at its first task holding CPU) */
    wstate state;
    bool ready;           /* Hello received */
    bool lost;            /* its connection ended while it was not stopping */
    esc_frame_conn *conn; /* NULL before it connects and after the connection ends */
    pool_task *tasks;     /* attached, in the order given (linked by next): STARTING:
                             to send after Hello; BUSY: running; STOPPING: what it ran,
                             or tasks of its actor that came after its loss (they fail
                             when the worker is reaped) */
    unsigned ntasks;
    unsigned slots;       /* tasks it may run at once: 1, or its actor's max_concurrency */
    uint64_t last_tag;    /* the tag of the last Execute sent */
    bool released;        /* actor worker: the pool was asked to end it (actor or job
                             ended), so its loss is no news */
    bool reported;        /* actor worker: its loss was reported (on_actor_lost) */
    ev_timer timer;       /* start timeout, idle timeout, or stop grace */
    int pidfd;
    ev_io exit_io; /* pidfd readable: the process exited */
    ev_child child;
} worker;

struct worker_pool {
    struct ev_loop *loop;
    uint64_t started;             /* worker processes forked, ever (metrics) */
    uint64_t reused;              /* tasks given a worker that was already idle (metrics) */
    char *exe, *socket_path, *log_dir, *package_root;
    int max_workers;
    double idle_timeout;
    cpu_quota *quota; /* NULL: shares not enforced */
    bool use_child; /* the default loop: ev_child; else pidfds */
    bool closing;
    int listen_fd;
    ev_io accept_io;
    worker *workers;
    size_t nworkers, nlive, nbusy; /* processes; not stopping; starting or busy */
    size_t nactors;                /* of nlive, actors' workers (outside max_workers) */
    pool_task *qhead, *qtail;
    worker_actor_lost_fn on_lost;
    void *lost_ud;
};

/* Tasks taken out of the pool that are to be failed, in order. */
typedef struct {
    pool_task *head, *tail;
} task_list;

static void pump(worker_pool *p);

/* The actor a task belongs to, or NULL. */
static const char *actor_of(const pool_task *t)
{
    return t->spec->actor_id && *t->spec->actor_id ? t->spec->actor_id : NULL;
}
/* How many tasks the worker started for t runs at once: its actor's max_concurrency (the
 * spec's, which actor_manager sets on every task of the actor), else 1. */
static unsigned slots_for(const pool_task *t)
{
    unsigned n = t->spec->max_concurrency;
    if (!actor_of(t) || n <= 1)
        return 1;
    return n < WORKER_MAX_CONCURRENCY ? n : WORKER_MAX_CONCURRENCY;
}
static void on_timer(struct ev_loop *loop, ev_timer *t, int revents);

/* ------------------------------------------------------------------------- tasks */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted copies of the KEY=VALUE entries (others are dropped), so that two
 * environments compare equal whatever their order. */
static char **env_copy(const char *const *env, size_t n, size_t *nout)
{
    char **out = esc_xcalloc(n + 1, sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (env[i] && strchr(env[i], '=') && env[i][0] != '=')
            out[k++] = esc_xstrdup(env[i]);
    qsort(out, k, sizeof *out, cmp_str);
    *nout = k;
    return out;
}

static void env_free(char **env, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(env[i]);
    free(env);
}

static bool env_equal(char **a, size_t na, char **b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]))
            return false;
    return true;
}

static void task_free(pool_task *t)
{
    protobuf_c_message_free_unpacked(&t->spec->base, NULL);
    env_free(t->env, t->nenv);
    free(t);
}

/* Hands result to the task's owner and frees the task. */
static void task_finish(pool_task *t, const Escher__TaskResult *result)
{
    t->done(t->ud, result);
    task_free(t);
}

static void task_fail(pool_task *t, const char *why, int exit_code, int term_signal)
{
    Escher__TaskResult r = ESCHER__TASK_RESULT__INIT;
    r.task_id = t->spec->task_id;
    r.ok = false;
    r.error = (char *)why;
    r.exit_code = exit_code;
    r.term_signal = term_signal;
    task_finish(t, &r);
}

/* Fails every task of a list built by the caller. Callers first finish changing the
 * pool, then call this: done callbacks may call back into the pool. */
static void fail_list(task_list *l)
{
    pool_task *t = l->head;
    l->head = l->tail = NULL;
    while (t) {
        pool_task *next = t->next;
        task_fail(t, t->why, 0, 0);
        t = next;
    }
}

static void push_failed(task_list *l, pool_task *t, const char *why)
{
    t->why = why;
    t->next = NULL;
    if (l->tail)
        l->tail->next = t;
    else
        l->head = t;
    l->tail = t;
}

/* Attaches t to w, after the tasks attached already (the order they are sent in). */
static void attach(worker *w, pool_task *t)
{
    pool_task **pp = &w->tasks;
    while (*pp)
        pp = &(*pp)->next;
    t->next = NULL;
    *pp = t;
    w->ntasks++;
}

/* Detaches and returns the task of w that Execute `tag` sent, or NULL. */
static pool_task *detach_tag(worker *w, uint64_t tag)
{
    for (pool_task **pp = &w->tasks; *pp; pp = &(*pp)->next) {
        pool_task *t = *pp;
        if (t->tag == tag && tag) {
            *pp = t->next;
            t->next = NULL;
            w->ntasks--;
            return t;
        }
    }
    return NULL;
}

/* Detaches and returns the task of w with that id, or NULL. */
static pool_task *detach_id(worker *w, const char *task_id)
{
    for (pool_task **pp = &w->tasks; *pp; pp = &(*pp)->next) {
        pool_task *t = *pp;
        if (!strcmp(t->spec->task_id, task_id)) {
            *pp = t->next;
            t->next = NULL;
            w->ntasks--;
            return t;
        }
    }
    return NULL;
}

/* Moves every task attached to w to l, to fail with why. */
static void detach_all(worker *w, task_list *l, const char *why)
{
    pool_task *t = w->tasks;
    w->tasks = NULL;
    w->ntasks = 0;
    while (t) {
        pool_task *next = t->next;
        push_failed(l, t, why);
        t = next;
    }
}

static void enqueue(worker_pool *p, pool_task *t)
{
    t->next = NULL;
    if (p->qtail)
        p->qtail->next = t;
    else
        p->qhead = t;
    p->qtail = t;
}

/* Which queued tasks take_queued takes: those of a job, of an actor, or one task; all
 * when every field is NULL. */
typedef struct {
    const char *job_id, *actor_id, *task_id;
    bool calls_only; /* with actor_id: not its creation (init) */
} task_filter;

static bool filter_match(const task_filter *f, const pool_task *t)
{
    if (!f->job_id && !f->actor_id && !f->task_id)
        return true;
    const char *actor = actor_of(t);
    return (f->job_id && !strcmp(t->spec->job_id, f->job_id)) ||
           (f->actor_id && actor && !strcmp(actor, f->actor_id) &&
            !(f->calls_only && t->spec->actor_creation)) ||
           (f->task_id && !strcmp(t->spec->task_id, f->task_id));
}

/* Moves the queued tasks that f matches to out with error why. */
static void take_queued(worker_pool *p, task_filter f, task_list *out, const char *why)
{
    pool_task **pp = &p->qhead, *last = NULL;
    while (*pp) {
        pool_task *t = *pp;
        bool match = filter_match(&f, t);
        if (!match) {
            last = t;
            pp = &t->next;
            continue;
        }
        *pp = t->next;
        push_failed(out, t, why);
    }
    p->qtail = last;
}

/* ------------------------------------------------------------------ worker states */

/* Adds (+1) or removes (-1) w's share of the pool's counters. */
static void count(worker *w, int sign)
{
    worker_pool *p = w->pool;
    if (w->state != W_STOPPING) {
        p->nlive += (size_t)sign;
        if (w->actor_id)
            p->nactors += (size_t)sign;
    }
    if (w->state == W_STARTING || w->state == W_BUSY)
        p->nbusy += (size_t)sign;
}

static void arm_timer(worker *w, double after)
{
    ev_timer_stop(w->pool->loop, &w->timer);
    if (after > 0) {
        ev_timer_set(&w->timer, after, 0);
        ev_timer_start(w->pool->loop, &w->timer);
    }
}

/* Moves w to state s and arms the timer that state needs. */
static void set_state(worker *w, wstate s)
{
    count(w, -1);
    w->state = s;
    count(w, +1);
    switch (s) {
    case W_STARTING:
        arm_timer(w, START_TIMEOUT_S);
        break;
    case W_IDLE:
        /* An actor's state lives in its worker: it waits for calls as long as it lives. */
        arm_timer(w, w->actor_id ? 0 : w->pool->idle_timeout);
        break;
    case W_STOPPING:
        arm_timer(w, STOP_GRACE_S);
        break;
    case W_BUSY:
        arm_timer(w, 0); /* a task runs as long as it needs */
        break;
    }
}

/* SIGKILL to the worker's process group: the worker and whatever its tasks started. */
static void kill_group(worker *w)
{
    if (kill(-w->pid, SIGKILL) < 0 && errno == ESRCH)
        kill(w->pid, SIGKILL);
}

/* Stops sending to w and kills it; its task (if any) stays attached and is failed by
 * the caller or, if left there, when the process is reaped. */
static void worker_kill(worker *w)
{
    kill_group(w);
    esc_frame_conn_free(w->conn);
    w->conn = NULL;
    set_state(w, W_STOPPING);
}

/* Asks an idle worker to exit; it is killed if it has not after STOP_GRACE_S. */
static void worker_stop(worker *w)
{
    Escher__WorkerMsg__Exit ex = ESCHER__WORKER_MSG__EXIT__INIT;
    Escher__WorkerMsg msg = ESCHER__WORKER_MSG__INIT;
    msg.msg_case = ESCHER__WORKER_MSG__MSG_EXIT;
    msg.exit = &ex;
    if (!w->conn || esc_frame_conn_send(w->conn, &msg.base) < 0)
        kill_group(w);
    set_state(w, W_STOPPING);
}

/* Sends w its task. A broken connection shows up later through on_close. */
/* The worker's quota follows the CPU its task holds, with one write per change. A worker
 * enters its cgroup only at its first task that holds CPU: under load a cgroup competes
 * for the CPU as one weighted group (cpu_quota.h), so workers of tasks that hold no CPU
 * (no-op tasks, mostly I/O) stay with everything else. */
static void worker_set_cpu(worker *w, int64_t cpu)
{
    worker_pool *p = w->pool;
    if (!p->quota || w->quota_cpu == cpu || (cpu <= 0 && !w->in_cgroup))
        return;
    if (!w->in_cgroup && cpu_quota_add(p->quota, w->id, w->pid) != 0)
        return;
    w->in_cgroup = true;
    if (cpu_quota_set(p->quota, w->id, cpu) == 0)
        w->quota_cpu = cpu;
}

static void send_execute(worker *w, pool_task *t)
{
    worker_set_cpu(w, t->cpu);
    Escher__WorkerMsg__Execute ex = ESCHER__WORKER_MSG__EXECUTE__INIT;
    /* The worker has the job's credential in its environment already: the spec it gets
     * goes without (a shallow copy), fewer bytes per task. */
    Escher__TaskSpec spec = *t->spec;
    spec.job_credential = (char *)"";
    ex.spec = &spec;
    t->tag = ex.tag = ++w->last_tag;
    Escher__WorkerMsg msg = ESCHER__WORKER_MSG__INIT;
    msg.msg_case = ESCHER__WORKER_MSG__MSG_EXECUTE;
    msg.execute = &ex;
    esc_frame_conn_send(w->conn, &msg.base);
    set_state(w, W_BUSY);
}

static void assign(worker *w, pool_task *t)
{
    attach(w, t);
    if (w->ready)
        send_execute(w, t);
}

/* The worker's own log (its stderr outside tasks) usually stays empty: no need to keep
 * one empty file per worker ever started. */
static void drop_empty_log(const worker *w)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/worker-%s.log", w->pool->log_dir, w->id);
    if (stat(path, &st) == 0 && st.st_size == 0)
        unlink(path);
}

/* Takes a reaped worker out of the pool. */
static void worker_unlink(worker *w)
{
    worker_pool *p = w->pool;
    drop_empty_log(w);
    if (w->in_cgroup)
        cpu_quota_remove(p->quota, w->id);
    count(w, -1);
    if (w->prev)
        w->prev->next = w->next;
    else
        p->workers = w->next;
    if (w->next)
        w->next->prev = w->prev;
    p->nworkers--;
}

static void worker_free(worker *w)
{
    struct ev_loop *loop = w->pool->loop;
    ev_timer_stop(loop, &w->timer);
    ev_child_stop(loop, &w->child);
    ev_io_stop(loop, &w->exit_io);
    if (w->pidfd >= 0)
        close(w->pidfd);
    esc_frame_conn_free(w->conn);
    env_free(w->env, w->nenv);
    free(w->job_id);
    free(w->credential);
    free(w->actor_id);
    free(w);
}

/* --------------------------------------------------------------- actor losses */

/* An actor's state lives in its worker, so its owner must hear of every loss it did not
 * ask for: an actor that lost its worker silently would go on with fresh state and
 * without its init. */
static bool loss_unreported(const worker *w)
{
    return w->actor_id && !w->released && !w->reported;
}

/* Reports w's loss to the actor's owner, once. The pool must be consistent first (the
 * callback may call back in); w stays allocated until it is reaped. */
static void report_loss(worker *w, const char *why)
{
    if (!loss_unreported(w))
        return;
    w->reported = true;
    worker_pool *p = w->pool;
    /* A call of the actor still queued here (no free slot when it came) would start a
     * fresh worker, without the init, once this one is gone: it fails with the loss, as a
     * running one does, after the owner heard of the loss (so it restarts first). */
    task_list failed = {0};
    take_queued(p, (task_filter){.actor_id = w->actor_id, .calls_only = true}, &failed, why);
    if (p->on_lost)
        p->on_lost(p->lost_ud, w->actor_id, why);
    fail_list(&failed);
}

/* --------------------------------------------------------------------- exits */

/* The process is gone (status from waitpid, or -1 when someone else reaped it). */
static void on_worker_exit(worker *w, int status)
{
    worker_pool *p = w->pool;
    char desc[64], why[96];
    if (status == -1)
        snprintf(desc, sizeof desc, "unknown status");
    else
        esc_wait_status_desc(status, desc, sizeof desc);
    snprintf(why, sizeof why, "worker died: %s", desc);
    task_list failed = {0};
    detach_all(w, &failed, why);
    if (w->state != W_STOPPING)
        ESC_WARN("worker %d (job %s) died: %s", (int)w->pid, w->job_id, desc);
    worker_unlink(w);
    report_loss(w, why); /* before its tasks end: the actor learns first why */
    worker_free(w);
    bool sig = status != -1 && WIFSIGNALED(status);
    bool code = status != -1 && WIFEXITED(status);
    /* Each task attached ends the same way, as one alone would. */
    for (pool_task *t = failed.head, *next; t; t = next) {
        next = t->next;
        task_fail(t, why, code ? WEXITSTATUS(status) : 0, sig ? WTERMSIG(status) : 0);
    }
    pump(p);
}

static void on_pidfd(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    worker *w = io->data;
    int status;
    pid_t r;
    while ((r = waitpid(w->pid, &status, WNOHANG)) < 0 && errno == EINTR)
        ;
    if (r == 0)
        return; /* not yet a zombie: wait for the next readiness */
    on_worker_exit(w, r < 0 ? -1 : status);
}

static void on_child(struct ev_loop *loop, ev_child *c, int revents)
{
    (void)loop;
    (void)revents;
    on_worker_exit(c->data, c->rstatus);
}

static int watch_exit(worker *w)
{
    worker_pool *p = w->pool;
    if (p->use_child) {
        ev_child_start(p->loop, &w->child);
        return 0;
    }
    w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
    if (w->pidfd < 0)
        return -1;
    ev_io_set(&w->exit_io, w->pidfd, EV_READ);
    ev_io_start(p->loop, &w->exit_io);
    return 0;
}

/* -------------------------------------------------------------------- spawning */

static char *kv(const char *key, const char *value)
{
    size_t n = strlen(key) + strlen(value) + 2;
    char *s = esc_xmalloc(n);
    snprintf(s, n, "%s=%s", key, value);
    return s;
}

static bool env_has_key(char **env, size_t n, const char *entry)
{
    size_t klen = strcspn(entry, "=");
    for (size_t i = 0; i < n; i++)
        if (!strncmp(env[i], entry, klen) && env[i][klen] == '=')
            return true;
    return false;
}

/* The worker's environment: ours, minus what the task env and the ESCHER_* worker
 * variables override, plus those. Entries [0, *nown) are malloc'd.
 * ESCHER_WORKER_CONCURRENCY is how many tasks it runs at once (its slots): a worker
 * decides at start whether it needs threads at all. */
static char **worker_envp(worker *w, size_t *nown)
{
    worker_pool *p = w->pool;
    char slots[16];
    snprintf(slots, sizeof slots, "%u", w->slots);
    char *own[NOWN_ENV] = {kv("ESCHER_RAYLET_SOCKET", p->socket_path),
                           kv("ESCHER_WORKER_ID", w->id), kv("ESCHER_JOB_ID", w->job_id),
                           kv("ESCHER_LOG_DIR", p->log_dir),
                           kv("ESCHER_PACKAGE_ROOT", p->package_root),
                           kv("ESCHER_JOB_CREDENTIAL", w->credential),
                           kv("ESCHER_WORKER_CONCURRENCY", slots)};
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = esc_xcalloc(n + w->nenv + NOWN_ENV + 1, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < NOWN_ENV; i++)
        envp[k++] = own[i];
    *nown = k;
    for (size_t i = 0; i < n; i++)
        if (!env_has_key(own, NOWN_ENV, environ[i]) &&
            !env_has_key(w->env, w->nenv, environ[i]))
            envp[k++] = environ[i];
    for (size_t i = 0; i < w->nenv; i++)
        envp[k++] = w->env[i];
    return envp;
}

/* In the forked child: async-signal-safe calls only (the raylet has other threads). */
static void exec_worker(const char *exe, char **envp, const char *log_path, pid_t parent)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a raylet that dies takes its workers along */
    if (getppid() != parent)
        _exit(127);
    int null = open("/dev/null", O_RDONLY);
    int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (null >= 0)
        dup2(null, STDIN_FILENO);
    if (log >= 0) {
        dup2(log, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
    }
    syscall(SYS_close_range, 3, ~0U, 0); /* fds the raylet forgot to mark close-on-exec */
    char *argv[] = {(char *)exe, NULL};
    execve(exe, argv, envp);
    static const char msg[] = "escher-raylet: cannot exec the worker executable\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0)
        _exit(127);
    _exit(127);
}

static pid_t fork_worker(worker *w)
{
    worker_pool *p = w->pool;
    size_t nown;
    char **envp = worker_envp(w, &nown);
    char log_path[4200];
    snprintf(log_path, sizeof log_path, "%s/worker-%s.log", p->log_dir, w->id);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        exec_worker(p->exe, envp, log_path, parent);
    if (pid > 0)
        setpgid(pid, pid); /* also here, so the group exists before we may kill it */
    for (size_t i = 0; i < nown; i++)
        free(envp[i]);
    free(envp);
    return pid;
}

static worker *spawn(worker_pool *p, const pool_task *t, char *err, size_t errlen)
{
    worker *w = esc_xcalloc(1, sizeof *w);
    w->pool = p;
    w->pidfd = -1;
    w->quota_cpu = -1;
    if (esc_random_hex(w->id, ESC_ID_HEX / 2) < 0) {
        snprintf(err, errlen, "no randomness for a worker id");
        free(w);
        return NULL;
    }
    w->job_id = esc_xstrdup(t->spec->job_id);
    w->credential = esc_xstrdup(t->spec->job_credential);
    w->env = env_copy((const char *const *)t->env, t->nenv, &w->nenv);
    w->actor_id = actor_of(t) ? esc_xstrdup(actor_of(t)) : NULL;
    w->slots = slots_for(t);
    ev_timer_init(&w->timer, on_timer, 0, 0);
    ev_io_init(&w->exit_io, on_pidfd, -1, EV_READ);
    ev_child_init(&w->child, on_child, 0, 0);
    w->timer.data = w->exit_io.data = w->child.data = w;
    w->pid = fork_worker(w);
    int forked = w->pid > 0;
    if (forked)
        ev_child_set(&w->child, w->pid, 0);
    if (!forked || watch_exit(w) < 0) {
        snprintf(err, errlen, "cannot start %s: %s", forked ? "watching a worker" : "a worker",
                 strerror(errno));
        if (forked) {
            kill(-w->pid, SIGKILL);
            waitpid(w->pid, NULL, 0);
        }
        worker_free(w);
        return NULL;
    }
    w->state = W_STOPPING; /* counted by set_state below */
    w->next = p->workers;
    if (p->workers)
        p->workers->prev = w;
    p->workers = w;
    p->nworkers++;
    p->started++;
    set_state(w, W_STARTING);
    ESC_DEBUG("worker %d started for job %s", (int)w->pid, w->job_id);
    return w;
}

/* --------------------------------------------------------------------- dispatch */

static bool same_actor(const worker *w, const pool_task *t)
{
    const char *a = actor_of(t);
    return a ? w->actor_id && !strcmp(w->actor_id, a) : !w->actor_id;
}

/* A worker that can take one more task now: idle, or an actor's worker with a free slot
 * (starting or busy, its connection up). */
static bool has_room(const worker *w)
{
    return w->state == W_IDLE ||
           (w->state != W_STOPPING && !w->lost && w->ntasks < w->slots);
}

/* A worker holds its job's credential in its environment: a task runs only in a worker
 * started with the same credential, so a spec that names another job's id does not get
 * that job's worker (and credential). */
static worker *find_idle(worker_pool *p, const pool_task *t)
{
    for (worker *w = p->workers; w; w = w->next)
        if (has_room(w) && !strcmp(w->job_id, t->spec->job_id) &&
            !strcmp(w->credential, t->spec->job_credential) && same_actor(w, t) &&
            env_equal(w->env, w->nenv, t->env, t->nenv))
            return w;
    return NULL;
}

/* The worker of t's actor that was lost (its connection ended) but is not reaped yet,
 * so its loss is not reported yet: t waits on it and fails with it, as if it had been
 * running (with the calls running there, if any). A fresh worker instead would run t
 * without the actor's init. */
static worker *find_dying(worker_pool *p, const pool_task *t)
{
    if (!actor_of(t))
        return NULL;
    for (worker *w = p->workers; w; w = w->next)
        if ((w->state == W_STOPPING || w->lost) && same_actor(w, t) && loss_unreported(w))
            return w;
    return NULL;
}

/* An idle worker that may be stopped to make room: never an actor's. */
static worker *any_idle(worker_pool *p)
{
    for (worker *w = p->workers; w; w = w->next)
        if (w->state == W_IDLE && !w->actor_id)
            return w;
    return NULL;
}

/* Gives t to a worker: an idle one of its job/env, else a new one in a free slot (made
 * by stopping an idle worker of another job/env if needed). Calls no callbacks.
 * Returns 1 when placed, 0 when t must wait, -1 when no worker could be started. */
static int place(worker_pool *p, pool_task *t, char *err, size_t errlen)
{
    worker *w = find_idle(p, t);
    if (w)
        p->reused++;
    if (!w && (w = find_dying(p, t))) {
        attach(w, t); /* never sent: it fails when w is reaped */
        return 1;
    }
    if (!w) {
        /* max_workers bounds the workers of plain tasks. An actor's worker lives as long
         * as the actor, which holds its resources all that time: admission bounds those
         * (a node hosts as many actors as its resources admit), and counting them here
         * would leave the next actor waiting forever for a worker no actor gives back. */
        if (!actor_of(t) && p->nlive - p->nactors >= (size_t)p->max_workers) {
            worker *victim = any_idle(p);
            if (!victim)
                return 0;
            worker_stop(victim);
        }
        w = spawn(p, t, err, errlen);
        if (!w)
            return -1;
    }
    assign(w, t);
    return 1;
}

/* Starts queued tasks in order while workers are available. */
static void pump(worker_pool *p)
{
    while (p->qhead && !p->closing) {
        pool_task *t = p->qhead, *next = t->next; /* placing t relinks it */
        char err[256];
        int r = place(p, t, err, sizeof err);
        if (r == 0)
            return;
        p->qhead = next;
        if (!p->qhead)
            p->qtail = NULL;
        if (r < 0) {
            ESC_ERROR("task %s: %s", t->spec->task_id, err);
            task_fail(t, err, 0, 0);
        }
    }
}

/* ------------------------------------------------------------------ the protocol */

/* A worker that breaks the protocol or never starts: its tasks fail with why. */
static void worker_abort(worker *w, const char *why)
{
    ESC_WARN("worker %d (job %s): %s", (int)w->pid, w->job_id, why);
    task_list failed = {0};
    detach_all(w, &failed, why);
    worker_kill(w);
    report_loss(w, why);
    fail_list(&failed);
    pump(w->pool);
}

static void on_hello(worker *w, const Escher__WorkerMsg__Hello *h)
{
    if (w->ready || strcmp(h->worker_id, w->id)) {
        worker_abort(w, "worker protocol error: unexpected hello");
        return;
    }
    w->ready = true;
    for (pool_task *t = w->tasks; t; t = t->next)
        send_execute(w, t);
    if (!w->tasks)
        set_state(w, W_IDLE);
}

static void on_done(worker *w, const Escher__WorkerMsg__Done *d)
{
    const Escher__TaskResult *r = d->result;
    pool_task *t = w->state == W_BUSY && r ? detach_tag(w, d->tag) : NULL;
    if (t && strcmp(r->task_id, t->spec->task_id)) {
        attach(w, t); /* not what that Execute sent: left to fail with the worker */
        t = NULL;
    }
    if (!t) {
        ESC_WARN("worker %d: result for a task it does not run, ignored", (int)w->pid);
        return;
    }
    if (!w->ntasks)
        set_state(w, W_IDLE);
    task_finish(t, r);
    pump(w->pool);
}

static void on_worker_msg(esc_frame_conn *c, const uint8_t *data, size_t len)
{
    worker *w = esc_frame_conn_ud(c);
    Escher__WorkerMsg *m = escher__worker_msg__unpack(NULL, len, data);
    if (!m)
        worker_abort(w, "worker protocol error: undecodable message");
    else if (m->msg_case == ESCHER__WORKER_MSG__MSG_HELLO && m->hello)
        on_hello(w, m->hello);
    else if (!w->ready)
        worker_abort(w, "worker protocol error: no hello");
    else if (m->msg_case == ESCHER__WORKER_MSG__MSG_DONE && m->done)
        on_done(w, m->done);
    else
        ESC_WARN("worker %d: unexpected message %d, ignored", (int)w->pid, (int)m->msg_case);
    if (m)
        escher__worker_msg__free_unpacked(m, NULL);
}

/* The connection ended. A worker that was not told to stop is probably dying: its task
 * stays attached until the reap says how it died; if it does not die within the grace
 * period, it is killed. */
static void on_worker_close(esc_frame_conn *c, const char *why)
{
    worker *w = esc_frame_conn_ud(c);
    esc_frame_conn_free(c);
    w->conn = NULL;
    if (w->state == W_STOPPING)
        return;
    ESC_DEBUG("worker %d: connection ended (%s)", (int)w->pid, why);
    w->lost = true;
    if (w->state == W_IDLE) {
        /* An actor's worker without its connection can never serve the actor again:
         * end it now, so that the reap reports the loss (with how it died) soon. */
        if (loss_unreported(w))
            kill_group(w);
        set_state(w, W_STOPPING);
    } else {
        arm_timer(w, STOP_GRACE_S);
    }
}

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    worker *w = t->data;
    if (w->state == W_IDLE)
        worker_stop(w);
    else if (w->lost || w->state == W_STOPPING)
        kill_group(w);
    else if (w->state == W_STARTING)
        worker_abort(w, "worker did not connect in time");
}

static worker *find_starting(worker_pool *p, pid_t pid)
{
    for (worker *w = p->workers; w; w = w->next)
        if (w->pid == pid && w->state == W_STARTING && !w->conn && !w->lost)
            return w;
    return NULL;
}

/* A connection is accepted only from a process we started and still wait for: the
 * kernel's SO_PEERCRED pid, not anything the peer says, identifies it. */
static void adopt(worker_pool *p, int fd)
{
    struct ucred cred = {0};
    socklen_t len = sizeof cred;
    worker *w = NULL;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
        w = find_starting(p, cred.pid);
    if (!w) {
        ESC_WARN("worker socket: connection from unknown pid %d refused", (int)cred.pid);
        close(fd);
        return;
    }
    w->conn = esc_frame_conn_new(p->loop, fd, on_worker_msg, on_worker_close, w);
}

static void on_accept(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    worker_pool *p = io->data;
    for (;;) {
        int fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            adopt(p, fd);
            continue;
        }
        if (errno != EINTR && errno != ECONNABORTED)
            return; /* EAGAIN: all taken; EMFILE etc.: the next readiness retries */
    }
}

/* -------------------------------------------------------------------- setting up */

static int listen_unix(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        snprintf(err, errlen, "worker socket path too long: %s", path);
        return -1;
    }
    strcpy(addr.sun_path, path);
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a socket", path);
        return -1;
    }
    unlink(path); /* a stale socket of an earlier raylet */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        chmod(path, 0600) < 0 || listen(fd, 128) < 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int check_config(struct ev_loop *loop, const worker_pool_config *cfg, char *err,
                        size_t errlen)
{
    if (!cfg->worker_exe || !cfg->socket_path || !cfg->log_dir) {
        snprintf(err, errlen, "worker pool needs worker_exe, socket_path and log_dir");
        return -1;
    }
    if (access(cfg->worker_exe, X_OK) < 0) {
        snprintf(err, errlen, "worker executable %s: %s", cfg->worker_exe, strerror(errno));
        return -1;
    }
    if (mkdir(cfg->log_dir, 0755) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create log dir %s: %s", cfg->log_dir, strerror(errno));
        return -1;
    }
    if (!ev_is_default_loop(loop)) {
        int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
        if (fd < 0) {
            snprintf(err, errlen, "pidfd_open: %s (Linux >= 5.3 needed)", strerror(errno));
            return -1;
        }
        close(fd);
    }
    return 0;
}

worker_pool *worker_pool_new(struct ev_loop *loop, const worker_pool_config *cfg, char *err,
                             size_t errlen)
{
    if (check_config(loop, cfg, err, errlen) < 0)
        return NULL;
    int fd = listen_unix(cfg->socket_path, err, errlen);
    if (fd < 0)
        return NULL;
    worker_pool *p = esc_xcalloc(1, sizeof *p);
    p->loop = loop;
    p->exe = esc_xstrdup(cfg->worker_exe);
    p->socket_path = esc_xstrdup(cfg->socket_path);
    p->log_dir = esc_xstrdup(cfg->log_dir);
    p->package_root = esc_xstrdup(cfg->package_root ? cfg->package_root : "");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    p->max_workers = cfg->max_workers > 0 ? cfg->max_workers : (int)(ncpu > 0 ? ncpu : 1) * 4;
    p->idle_timeout = cfg->idle_timeout_s > 0 ? cfg->idle_timeout_s : DEFAULT_IDLE_S;
    p->quota = cfg->quota;
    p->use_child = ev_is_default_loop(loop);
    p->listen_fd = fd;
    ev_io_init(&p->accept_io, on_accept, fd, EV_READ);
    p->accept_io.data = p;
    ev_io_start(loop, &p->accept_io);
    return p;
}

/* ------------------------------------------------------------------ the interface */

int64_t worker_pool_spec_cpu(const Escher__TaskSpec *spec)
{
    int64_t cpu = 0;
    for (size_t i = 0; i < spec->n_resources; i++)
        if (!strcmp(spec->resources[i]->name, "CPU"))
            cpu += spec->resources[i]->value;
    return cpu;
}

int worker_pool_run(worker_pool *p, const Escher__TaskSpec *spec, const char *const *env,
                    size_t nenv, int64_t cpu, worker_done_fn done, void *ud)
{
    if (!p)
        return -1; /* after worker_pool_free (shutdown) */
    if (p->closing)
        return -1;
    if (protobuf_c_message_get_packed_size(&spec->base) > SPEC_MAX) {
        ESC_ERROR("task %s: spec over %u MiB, too large for a worker", spec->task_id,
                  ESC_FRAME_MAX >> 20);
        return -1;
    }
    pool_task *t = esc_xcalloc(1, sizeof *t);
    t->spec = (Escher__TaskSpec *)esc_pb_dup(&spec->base);
    t->env = env_copy(env, env ? nenv : 0, &t->nenv);
    t->cpu = cpu;
    t->done = done;
    t->ud = ud;
    if (p->qhead) { /* others wait already: keep the order */
        enqueue(p, t);
        return 0;
    }
    char err[256];
    int r = place(p, t, err, sizeof err);
    if (r < 0) {
        ESC_ERROR("task %s: %s", spec->task_id, err);
        task_free(t);
        return -1;
    }
    if (r == 0)
        enqueue(p, t);
    return 0;
}

bool worker_pool_cancel(worker_pool *p, const char *task_id)
{
    if (!p)
        return false; /* after worker_pool_free (shutdown) */
    task_list failed = {0};
    take_queued(p, (task_filter){.task_id = task_id}, &failed, "cancelled");
    worker *killed = NULL;
    for (worker *w = p->workers; w && !failed.head; w = w->next) {
        pool_task *t = detach_id(w, task_id);
        if (t) {
            /* The other calls of a concurrent actor stay attached: they end with the
             * worker's death, as when it crashes. */
            push_failed(&failed, t, "cancelled");
            worker_kill(w);
            killed = w;
        }
    }
    if (!failed.head)
        return false;
    if (killed) /* a cancelled actor call took the actor's state with its worker */
        report_loss(killed, "worker killed: its call was cancelled");
    fail_list(&failed);
    pump(p);
    return true;
}

void worker_pool_actor_ended(worker_pool *p, const char *actor_id)
{
    if (!p)
        return; /* after worker_pool_free (shutdown) */
    task_list failed = {0};
    take_queued(p, (task_filter){.actor_id = actor_id}, &failed, "actor killed");
    for (worker *w = p->workers; w; w = w->next) {
        if (!w->actor_id || strcmp(w->actor_id, actor_id))
            continue;
        w->released = true;
        if (w->state == W_STOPPING)
            continue;
        if (w->state == W_IDLE) {
            worker_stop(w);
            continue;
        }
        detach_all(w, &failed, "actor killed");
        worker_kill(w);
    }
    fail_list(&failed);
    pump(p);
}

void worker_pool_job_ended(worker_pool *p, const char *job_id)
{
    if (!p)
        return; /* after worker_pool_free (shutdown) */
    task_list failed = {0};
    take_queued(p, (task_filter){.job_id = job_id}, &failed, "job ended");
    for (worker *w = p->workers; w; w = w->next) {
        if (strcmp(w->job_id, job_id))
            continue;
        w->released = true;
        if (w->state == W_STOPPING)
            continue;
        if (w->state == W_IDLE) {
            worker_stop(w);
            continue;
        }
        detach_all(w, &failed, "job ended");
        worker_kill(w);
    }
    fail_list(&failed);
    pump(p);
}

void worker_pool_set_actor_cpu(worker_pool *p, const char *actor_id, int64_t cpu)
{
    for (worker *w = p ? p->workers : NULL; w; w = w->next)
        if (w->actor_id && !strcmp(w->actor_id, actor_id) && w->state != W_STOPPING)
            worker_set_cpu(w, cpu);
}

void worker_pool_on_actor_lost(worker_pool *p, worker_actor_lost_fn fn, void *ud)
{
    if (!p)
        return;
    p->on_lost = fn;
    p->lost_ud = ud;
}

size_t worker_pool_size(const worker_pool *p)
{
    return p->nworkers;
}

uint64_t worker_pool_started(const worker_pool *p)
{
    return p->started;
}

uint64_t worker_pool_reused(const worker_pool *p)
{
    return p->reused;
}

size_t worker_pool_busy(const worker_pool *p)
{
    return p->nbusy;
}

/* Kills and reaps every worker, synchronously: nothing of ours outlives the pool. */
static void reap_all(worker_pool *p, task_list *failed)
{
    for (worker *w = p->workers; w; w = w->next)
        kill_group(w);
    while (p->workers) {
        worker *w = p->workers;
        detach_all(w, failed, "raylet shutting down");
        /* ECHILD: libev's default loop reaped it already. */
        while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        worker_unlink(w);
        worker_free(w);
    }
}

void worker_pool_free(worker_pool *p)
{
    if (!p)
        return;
    p->closing = true;
    ev_io_stop(p->loop, &p->accept_io);
    close(p->listen_fd);
    unlink(p->socket_path);
    task_list failed = {0};
    take_queued(p, (task_filter){0}, &failed, "raylet shutting down");
    reap_all(p, &failed);
    fail_list(&failed);
    free(p->exe);
    free(p->socket_path);
    free(p->log_dir);
    free(p->package_root);
    free(p);
}
