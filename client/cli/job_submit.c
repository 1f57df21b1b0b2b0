/* job_submit.c: `escher job submit [OPTIONS] -- CMD ARGS...`.
 *
 * The process running this command is the job's driver: it connects as a long-lived
 * client (so the job lives exactly as long as it does) and hands the rest to libescher
 * (escher/jobs.h): esc_job_submit ships the working directory and submits the
 * entrypoint, esc_job_logs follows its output from whichever node runs it (on a thread
 * of its own, onto our stdout and stderr), and esc_job_wait reads how it ended, records
 * it and ends the job. SIGINT or SIGTERM stops the job (esc_job_stop).
 *
 * --no-wait forks before anything is connected (gRPC's threads do not survive a fork):
 * the child does everything above and, once the entrypoint is submitted, hands the job
 * id to the parent, which prints it and exits 0; the child goes on in its own session
 * as the job's driver, its output in SESSION/logs/job-<id>.log. */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../session.h"
#include "ids.h"
#include "qty.h"
#include "xalloc.h"

static const char usage[] =
    "usage: escher job submit [--working-dir DIR] [--working-dir-limit SIZE]\n"
    "                         [--resources NAME=QTY,...] [--namespace NS] [--no-wait]\n"
    "                         -- CMD ARGS...\n"
    "\n"
    "Runs CMD ARGS... as the entrypoint of a new job, a command task on a node of the\n"
    "cluster. This command is the job's driver: the job runs as long as it does.\n"
    "\n"
    "  --working-dir DIR         ship DIR through the GCS to the node that runs the\n"
    "                            entrypoint, which starts in a fresh copy of it\n"
    "  --working-dir-limit SIZE  the largest DIR accepted, as a tar stream: bytes, or\n"
    "                            with a K, M or G suffix (binary); default 100M\n"
    "  --resources NAME=QTY,...  what the entrypoint holds while it runs (default:\n"
    "                            nothing); ephemeral resources by full name NS/NAME\n"
    "  --namespace NS            the job's namespace (default: job-<job id>)\n"
    "  --no-wait                 print the job id once the entrypoint is submitted and\n"
    "                            return; a background process stays the job's driver\n"
    "\n"
    "Without --no-wait, the entrypoint's stdout and stderr are copied to ours while it\n"
    "runs (from whichever node runs it), and the command exits with the entrypoint's exit\n"
    "code: 128+N when a signal N killed it, 1 for any other failure. SIGINT or SIGTERM\n"
    "stops the job (exit 130). While the entrypoint waits for resources, a line on stderr\n"
    "says what it lacks (\"job ID pending: no node has NS/NAME\").\n";

#define MAX_RESOURCES 32
/* How long one wait for the entrypoint's end lasts before signals are looked at. */
#define WAIT_SLICE_MS 250
/* A cluster that has not answered for this long is given up on. */
#define LOST_AFTER_MS 30000
#define ERROR_PAUSE_MS 200
/* How often a submit that waits looks whether its entrypoint is PENDING. */
#define PENDING_LOOK_MS 1000
/* After a stop, how long the stopped entrypoint's result is waited for. */
#define STOP_WAIT_MS 5000
#define EXIT_INTERRUPTED 130

typedef struct {
    /* flags */
    const char *working_dir, *limit_text, *resources, *ns;
    bool no_wait;
    char **cmd; /* the entrypoint: argv after "--", NULL-terminated */
    const cli_globals *g;
    /* derived */
    uint64_t limit;
    esc_amount amounts[MAX_RESOURCES];
    size_t namounts;
    char *res_copy; /* owns the names in amounts */
    /* the job */
    esc_client *c;
    char job_id[ESC_ID_MAX];
    sigset_t sigs; /* SIGINT and SIGTERM: blocked, taken by sigtimedwait */
} submit_ctx;

/* What became of the entrypoint, and this command's exit code. */
typedef struct {
    esc_job_result r;
    int cli_exit;
    bool lost; /* the cluster stopped answering */
} outcome;

/* ------------------------------------------------------------------ flags */

/* "1048576", "512K", "100M", "2G" (binary units; "MiB" and friends too). */
static int parse_size(const char *text, uint64_t *out)
{
    static const struct {
        const char *a, *b;
        unsigned shift;
    } suffixes[] = {{"", "", 0}, {"K", "KiB", 10}, {"M", "MiB", 20}, {"G", "GiB", 30}};
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == 0 && end != text && text[0] != '-')
        for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
            if ((!strcasecmp(end, suffixes[i].a) || !strcasecmp(end, suffixes[i].b)) &&
                v <= (UINT64_MAX >> suffixes[i].shift)) {
                *out = (uint64_t)v << suffixes[i].shift;
                return 0;
            }
    return cli_usage("--working-dir-limit wants a size in bytes, or with a K, M or G suffix, "
                     "not \"%s\"",
                     text);
}

/* "CPU=1,default/slot=0.5" into s->amounts. */
static int parse_resources(submit_ctx *s)
{
    if (!s->resources)
        return 0;
    s->res_copy = esc_xstrdup(s->resources);
    char *save = NULL;
    for (char *tok = strtok_r(s->res_copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok)
            return cli_usage("--resources wants NAME=QTY,..., not \"%s\"", tok);
        if (s->namounts == MAX_RESOURCES)
            return cli_usage("--resources takes at most %d resources", MAX_RESOURCES);
        *eq = '\0';
        esc_amount *a = &s->amounts[s->namounts++];
        a->name = tok;
        bool unbounded = false;
        if (esc_qty_parse(eq + 1, &a->value, &unbounded) != 0 || unbounded || a->value <= 0)
            return cli_usage("invalid quantity \"%s\" for %s: a positive decimal with at most "
                             "4 decimals",
                             eq + 1, tok);
    }
    return s->namounts ? 0 : cli_usage("--resources wants NAME=QTY,...");
}

/* Splits argv at the first "--": options before it, the entrypoint after. */
static int parse_args(submit_ctx *s, int argc, char **argv)
{
    int nopts = argc;
    for (int i = 0; i < argc && nopts == argc; i++)
        if (!strcmp(argv[i], "--"))
            nopts = i;
    const cli_opt opts[] = {
        {"--working-dir", &s->working_dir, NULL},
        {"--working-dir-limit", &s->limit_text, NULL},
        {"--resources", &s->resources, NULL},
        {"--namespace", &s->ns, NULL},
        {"--no-wait", NULL, &s->no_wait},
        {NULL, NULL, NULL},
    };
    const char *pos[1];
    int npos;
    int rc = cli_parse(nopts, argv, opts, pos, 1, &npos, usage);
    if (rc != 0)
        return rc;
    if (npos > 0 || nopts + 1 >= argc)
        return cli_usage("job submit wants the entrypoint after --: escher job submit "
                         "[OPTIONS] -- CMD ARGS...");
    s->cmd = argv + nopts + 1; /* argv[argc] is NULL, as main's argv is */
    s->limit = ESC_JOB_WORKDIR_LIMIT;
    if (s->limit_text && (rc = parse_size(s->limit_text, &s->limit)) != 0)
        return rc;
    return parse_resources(s);
}

/* ------------------------------------------------------------------ submitting */

/* Connects as the job's driver and submits the entrypoint. On failure the client is
 * freed (which ends the job it registered). */
static int start_job(submit_ctx *s)
{
    int rc = cli_connect_driver(s->g, s->ns, &s->c);
    if (rc != 0)
        return rc;
    esc_job_spec spec = {
        .argv = (const char *const *)s->cmd,
        .working_dir = s->working_dir,
        .working_dir_limit = s->limit,
        .resources = s->amounts,
        .nresources = s->namounts,
    };
    esc_status st;
    rc = esc_job_submit(s->c, &spec, s->job_id, &st);
    if (rc == ESC_OK)
        return 0;
    if (rc == ESC_RESOURCE_EXHAUSTED)
        cli_fail("%s (--working-dir-limit)", st.message);
    else
        cli_fail("%s", st.message);
    esc_disconnect(s->c);
    s->c = NULL;
    return CLI_EXIT_FAIL;
}

/* The entrypoint's task id, for the line that says the job was submitted. */
static void entrypoint_task(const submit_ctx *s, char *out, size_t len)
{
    esc_job_status_info info;
    snprintf(out, len, "?");
    if (esc_job_status(s->c, s->job_id, &info, NULL) == ESC_OK)
        snprintf(out, len, "%s", info.task_id);
    esc_job_status_clear(&info);
}

/* ------------------------------------------------------------------ following */

int cli_log_to_std(void *ud, int stream, const void *data, size_t len)
{
    (void)ud;
    FILE *f = stream == 2 ? stderr : stdout;
    fwrite(data, 1, len, f);
    fflush(f);
    return 0;
}

/* The follower thread: the entrypoint's output onto ours until it ends (the raylet ends
 * the stream then), or until the job ends without it running. */
static void *follow_output(void *arg)
{
    submit_ctx *s = arg;
    esc_status st;
    int rc = esc_job_logs(s->c, s->job_id, true, cli_log_to_std, NULL, &st);
    if (rc != ESC_OK)
        cli_warn("cannot follow the entrypoint's output: %s: %s", esc_status_name(rc),
                 st.message);
    return NULL;
}

/* ------------------------------------------------------------------ waiting */

/* A pending SIGINT/SIGTERM, waiting at most wait_ms for one; 0 when none. */
static int take_signal(const submit_ctx *s, int wait_ms)
{
    struct timespec ts = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};
    int sig = sigtimedwait(&s->sigs, NULL, &ts);
    return sig > 0 ? sig : 0;
}

/* The command's exit code for a result: the entrypoint's own exit code, 128+N for a
 * signal N, 1 for anything else. */
static int exit_code_of(const esc_job_result *r)
{
    if (r->outcome == ESC_JOB_SUCCEEDED)
        return 0;
    if (r->outcome == ESC_JOB_FAILED && r->exit_code > 0)
        return r->exit_code;
    if (r->outcome == ESC_JOB_FAILED && r->signal > 0)
        return 128 + r->signal;
    return CLI_EXIT_FAIL;
}

/* Stops the job on SIGINT/SIGTERM and reads the stopped entrypoint's result. */
static void stop_on_signal(submit_ctx *s, int sig, outcome *o)
{
    char why[64];
    snprintf(why, sizeof why, "stopped by SIG%s", sigabbrev_np(sig));
    esc_status st;
    if (esc_job_stop(s->c, s->job_id, why, &st) != ESC_OK)
        cli_warn("cannot stop job %s: %s", s->job_id, st.message);
    if (esc_job_wait(s->c, STOP_WAIT_MS, &o->r, &st) != ESC_OK) {
        o->r = (esc_job_result){.outcome = ESC_JOB_STOPPED, .exit_code = -1};
        snprintf(o->r.message, sizeof o->r.message, "%s", why);
    }
    o->cli_exit = EXIT_INTERRUPTED;
}

/* Until the entrypoint runs: whether it waits for resources, looked at every
 * PENDING_LOOK_MS, and said on stderr each time what it lacks changes. */
typedef struct {
    uint64_t next_look;
    bool started;
    char said[640];
} pending_watch;

static void watch_pending(const submit_ctx *s, pending_watch *w)
{
    uint64_t now = esc_now_ms();
    if (w->started || now < w->next_look)
        return;
    w->next_look = now + PENDING_LOOK_MS;
    esc_job_status_info info;
    if (esc_job_status(s->c, s->job_id, &info, NULL) == ESC_OK) {
        w->started = !strcmp(info.state, "RUNNING") && info.node_id[0];
        if (!strcmp(info.state, "PENDING") && strcmp(info.result, w->said) != 0) {
            snprintf(w->said, sizeof w->said, "%s", info.result);
            fprintf(stderr, "job %s %s\n", s->job_id, info.result);
        }
    }
    esc_job_status_clear(&info);
}

/* Waits for the entrypoint's end (esc_job_wait records it and ends the job), a signal,
 * or a cluster that stops answering for LOST_AFTER_MS. */
static void wait_entrypoint(submit_ctx *s, outcome *o)
{
    uint64_t failing_since = 0;
    pending_watch pw = {.next_look = esc_now_ms() + PENDING_LOOK_MS};
    for (;;) {
        esc_status st;
        int rc = esc_job_wait(s->c, WAIT_SLICE_MS, &o->r, &st);
        if (rc == ESC_OK) {
            o->cli_exit = exit_code_of(&o->r);
            return;
        }
        bool failing = rc != ESC_DEADLINE_EXCEEDED;
        uint64_t now = esc_now_ms();
        failing_since = failing ? (failing_since ? failing_since : now) : 0;
        if (failing && now - failing_since > LOST_AFTER_MS) {
            o->r = (esc_job_result){.outcome = ESC_JOB_FAILED, .exit_code = -1};
            snprintf(o->r.message, sizeof o->r.message, "lost the cluster: %s: %s",
                     esc_status_name(rc), st.message);
            o->cli_exit = CLI_EXIT_FAIL;
            o->lost = true;
            return;
        }
        int sig = take_signal(s, failing ? ERROR_PAUSE_MS : 0);
        if (sig) {
            stop_on_signal(s, sig, o);
            return;
        }
        if (!failing)
            watch_pending(s, &pw);
    }
}

/* The job id on stdout for the parent, then our output away from its pipes: into
 * SESSION/logs/job-<id>.log when this machine has the session, else nowhere. */
static void detach_output(const submit_ctx *s)
{
    printf("%s\n", s->job_id);
    fflush(stdout);
    char path[PATH_MAX];
    int fd = -1;
    if (cli_pathf(path, sizeof path, "%s/logs/job-%s.log", esc_session_dir(s->g->session_dir),
                  s->job_id))
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* The whole life of the job, as its driver. stream: copy the entrypoint's output to ours
 * and report a failure on stderr (the waiting form); else detach after submitting. */
static int run_job(submit_ctx *s, bool stream)
{
    sigemptyset(&s->sigs);
    sigaddset(&s->sigs, SIGINT);
    sigaddset(&s->sigs, SIGTERM);
    /* Blocked before gRPC starts its threads, which inherit the mask: the signals then
     * wait for take_signal instead of killing the process mid-job. */
    sigprocmask(SIG_BLOCK, &s->sigs, NULL);
    int rc = start_job(s);
    if (rc != 0)
        return rc;
    pthread_t follower;
    bool following = false;
    if (stream) {
        char task[ESC_ID_MAX];
        entrypoint_task(s, task, sizeof task);
        fprintf(stderr, "job %s submitted (entrypoint task %s)\n", s->job_id, task);
        following = pthread_create(&follower, NULL, follow_output, s) == 0;
    } else {
        detach_output(s);
    }
    outcome o = {0};
    wait_entrypoint(s, &o);
    /* The stream ends once the entrypoint ended on its node: the output is all here. */
    if (following && !o.lost)
        pthread_join(follower, NULL);
    if (o.r.outcome != ESC_JOB_SUCCEEDED)
        cli_fail("job %s %s: %s", s->job_id,
                 o.r.outcome == ESC_JOB_STOPPED ? "stopped" : "failed", o.r.message);
    if (o.lost) {
        /* The follower may be blocked on a raylet that is gone: leave without it. */
        fflush(NULL);
        _exit(o.cli_exit);
    }
    esc_disconnect(s->c);
    return o.cli_exit;
}

/* ------------------------------------------------------------------ --no-wait */

/* Reads fd to its end: a malloc'd string. */
static char *read_all(int fd)
{
    size_t len = 0, cap = 256;
    char *buf = esc_xmalloc(cap);
    for (;;) {
        if (len + 1 == cap)
            buf = esc_xrealloc(buf, cap *= 2);
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

/* In the child: stdout and stderr into the pipes, stdin from /dev/null, its own session
 * (the terminal's Ctrl-C and hangup are no longer its business), then the job. */
static void child_run(submit_ctx *s, int out[2], int err[2])
{
    close(out[0]);
    close(err[0]);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    close(out[1]);
    close(err[1]);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        close(null);
    }
    setsid();
    exit(run_job(s, false));
}

/* The parent: the child's stdout is the job id once submitted; without one it failed,
 * and its exit code and error lines are ours. */
static int run_detached(submit_ctx *s)
{
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return cli_fail("pipe: %s", strerror(errno));
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        return cli_fail("pipe: %s", strerror(errno));
    }
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid == 0)
        child_run(s, out, err);
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        close(out[0]);
        close(err[0]);
        return cli_fail("fork: %s", strerror(errno));
    }
    /* The child writes its few lines to stderr before it closes stdout, so reading
     * stdout to its end first cannot block it. */
    char *job = read_all(out[0]);
    char *errors = read_all(err[0]);
    close(out[0]);
    close(err[0]);
    int rc = CLI_EXIT_OK;
    if (!job[0]) {
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        rc = WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : CLI_EXIT_FAIL;
    }
    fputs(job, stdout);
    fputs(errors, stderr);
    free(job);
    free(errors);
    return rc;
}

int cmd_job_submit(const cli_globals *g, int argc, char **argv)
{
    submit_ctx s = {.g = g};
    int rc = parse_args(&s, argc, argv);
    if (rc == 0)
        rc = s.no_wait ? run_detached(&s) : run_job(&s, true);
    free(s.res_copy);
    return rc == CLI_HELP ? CLI_EXIT_OK : rc;
}
