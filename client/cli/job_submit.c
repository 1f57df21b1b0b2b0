/* job_submit.c: `escher job submit [OPTIONS] -- CMD ARGS...`.
 *
 * The process running this command is the job's driver: it registers the job (a
 * long-lived client, so the job lives exactly as long as it does), ships the working
 * directory into the GCS key-value store, submits the entrypoint as a command task,
 * waits for its result, records the outcome and ends the job (FINISHED, or FAILED when
 * the entrypoint failed), which cleans up whatever the job still holds.
 *
 * The entrypoint's environment carries ESCHER_ADDRESS and ESCHER_TOKEN, so that it can
 * connect as a driver itself, and, with a working directory, ESCHER_JOB_WORKDIR_KEY
 * (the job id), which tells escher-worker to unpack the directory and start the
 * command in it.
 *
 * Output: there is no log-streaming RPC. While waiting, the entrypoint's log files are
 * looked for on this machine (task_logs.c) and copied to our stdout and stderr as they
 * grow; an entrypoint that runs on another node only earns a warning that says where its
 * output is.
 *
 * --no-wait forks before anything is connected (gRPC's threads do not survive a fork):
 * the child does everything above and, once the entrypoint is submitted, hands the job
 * id to the parent, which prints it and exits 0; the child goes on in its own session
 * as the job's driver, its output in SESSION/logs/job-<id>.log. */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../session.h"
#include "../workdir.h"
#include "ids.h"
#include "qty.h"

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
    "runs (when it runs on this machine), and the command exits with the entrypoint's exit\n"
    "code: 128+N when a signal N killed it, 1 for any other failure. SIGINT or SIGTERM\n"
    "stops the job (exit 130).\n";

#define DEFAULT_LIMIT (100ull << 20)
#define MAX_RESOURCES 32
/* How often the log files are read while waiting. */
#define WAIT_SLICE_MS 250
/* A cluster that has not answered for this long is given up on. */
#define LOST_AFTER_MS 30000
#define ERROR_PAUSE_MS 200
#define STOP_CHECK_MS 1000
#define STOP_GRACE_MS 2000
#define EXIT_INTERRUPTED 130

typedef struct {
    /* flags */
    const char *working_dir, *limit_text, *resources, *ns;
    bool no_wait;
    char **cmd; /* the entrypoint: argv after "--", NULL-terminated */
    const cli_globals *g;
    /* derived */
    char workdir[PATH_MAX]; /* absolute; "" without --working-dir */
    uint64_t limit, workdir_bytes;
    esc_amount amounts[MAX_RESOURCES];
    size_t namounts;
    char *res_copy; /* owns the names in amounts */
    /* the job */
    esc_client *c;
    const char *job_id; /* owned by c */
    char task_id[ESC_OBJECT_ID_MAX];
    esc_ref *ref;
    json_t *record;
    sigset_t sigs; /* SIGINT and SIGTERM: blocked, taken by sigtimedwait */
} submit_ctx;

/* What became of the entrypoint. */
typedef struct {
    const char *status; /* "SUCCEEDED", "FAILED", "STOPPED" */
    int entry_exit;     /* the entrypoint's own exit code; -1 when it did not exit */
    int cli_exit;       /* this command's exit code */
    bool interrupted;   /* we got SIGINT/SIGTERM: the job must be stopped */
    bool lost;          /* the cluster stopped answering */
    char message[320];
} outcome;

/* ------------------------------------------------------------------ flags */

static const char *human_bytes(uint64_t n, char *buf, size_t len)
{
    static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

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
    s->res_copy = strdup(s->resources);
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

static int too_large(const submit_ctx *s, uint64_t size, bool at_least)
{
    char a[32], b[32];
    return cli_fail("working directory %s is too large: %s%s as a tar stream, over the limit "
                    "of %s (--working-dir-limit)",
                    s->working_dir, at_least ? "over " : "", human_bytes(size, a, sizeof a),
                    human_bytes(s->limit, b, sizeof b));
}

/* Resolves and measures the working directory before anything is registered, so that
 * one that is missing or too large is refused at once and leaves no job behind. */
static int check_working_dir(submit_ctx *s)
{
    if (!s->working_dir)
        return 0;
    struct stat sb;
    if (!realpath(s->working_dir, s->workdir) || stat(s->workdir, &sb) != 0)
        return cli_fail("cannot use working directory %s: %s", s->working_dir,
                        strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return cli_fail("working directory %s is not a directory", s->working_dir);
    esc_status st;
    if (esc_workdir_measure(s->workdir, &s->workdir_bytes, &st) != ESC_OK)
        return cli_fail("%s", st.message);
    return s->workdir_bytes > s->limit ? too_large(s, s->workdir_bytes, false) : 0;
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
    s->limit = DEFAULT_LIMIT;
    if (s->limit_text && (rc = parse_size(s->limit_text, &s->limit)) != 0)
        return rc;
    return parse_resources(s);
}

/* ------------------------------------------------------------------ submitting */

static int ship_working_dir(submit_ctx *s)
{
    if (!s->workdir[0])
        return 0;
    esc_status st;
    uint64_t size;
    int rc = esc_workdir_upload(s->c, s->job_id, s->workdir, s->limit, &size, &st);
    if (rc == ESC_RESOURCE_EXHAUSTED)
        return too_large(s, s->limit, true);
    if (rc != ESC_OK)
        return cli_fail("cannot ship working directory %s: %s: %s", s->working_dir,
                        esc_status_name(rc), st.message);
    s->workdir_bytes = size;
    return 0;
}

static char *env_entry(const char *key, const char *value)
{
    char *e = NULL;
    return asprintf(&e, "%s=%s", key, value) < 0 ? NULL : e;
}

static void free_secret(char *s)
{
    if (s)
        memset(s, 0, strlen(s));
    free(s);
}

static int submit_entrypoint(submit_ctx *s)
{
    char *token = cli_token(s->g);
    char *env[4] = {env_entry("ESCHER_ADDRESS", esc_client_address(s->c)), NULL, NULL, NULL};
    size_t n = 1;
    if (token)
        env[n++] = env_entry("ESCHER_TOKEN", token);
    if (s->workdir[0])
        env[n++] = env_entry("ESCHER_JOB_WORKDIR_KEY", s->job_id);
    esc_task_spec spec = {
        .argv = (const char *const *)s->cmd,
        .env = (const char *const *)env,
        .resources = s->amounts,
        .nresources = s->namounts,
        .num_returns = 1,
    };
    esc_status st;
    int rc = esc_task_submit(s->c, &spec, &s->ref, s->task_id, &st);
    for (size_t i = 0; i < n; i++)
        free_secret(env[i]);
    free_secret(token);
    if (rc != ESC_OK)
        return cli_fail("cannot submit the entrypoint: %s: %s", esc_status_name(rc),
                        st.message);
    return 0;
}

static json_t *new_record(const submit_ctx *s)
{
    json_t *argv = json_array();
    for (char **a = s->cmd; *a; a++)
        json_array_append_new(argv, json_string(*a));
    json_t *r = json_object();
    json_object_set_new(r, "job_id", json_string(s->job_id));
    json_object_set_new(r, "namespace", json_string(esc_client_namespace(s->c)));
    json_object_set_new(r, "entrypoint", argv);
    json_object_set_new(r, "task_id", json_string(s->task_id));
    json_object_set_new(r, "working_dir", s->workdir[0] ? json_string(s->workdir) : json_null());
    json_object_set_new(r, "working_dir_bytes", json_integer((json_int_t)s->workdir_bytes));
    json_object_set_new(r, "submitted_ms", json_integer((json_int_t)esc_wall_ms()));
    json_object_set_new(r, "status", json_string("RUNNING"));
    return r;
}

static int write_record(submit_ctx *s)
{
    esc_status st;
    if (job_record_put(s->c, s->job_id, s->record, &st) != ESC_OK)
        return cli_fail("cannot record job %s: %s: %s", s->job_id, esc_status_name(st.code),
                        st.message);
    return 0;
}

/* Connects, ships the working directory, submits the entrypoint and records the job.
 * On failure the job is ended (FAILED) and the client freed. */
static int start_job(submit_ctx *s)
{
    int rc = cli_connect_driver(s->g, s->ns, &s->c);
    if (rc != 0)
        return rc;
    s->job_id = esc_client_job_id(s->c);
    rc = ship_working_dir(s);
    if (rc == 0)
        rc = submit_entrypoint(s);
    if (rc == 0) {
        s->record = new_record(s);
        rc = write_record(s);
        if (rc != 0) {
            esc_cancel(s->c, s->ref, NULL);
            json_decref(s->record);
        }
    }
    if (rc != 0) {
        esc_ref_free(s->ref); /* NULL when the submit failed */
        esc_workdir_delete(s->c, s->job_id, NULL);
        esc_job_finish(s->c, NULL, true, NULL);
        esc_disconnect(s->c);
        s->c = NULL;
    }
    return rc;
}

/* ------------------------------------------------------------------ waiting */

/* A pending SIGINT/SIGTERM, waiting at most wait_ms for one; 0 when none. */
static int take_signal(const submit_ctx *s, int wait_ms)
{
    struct timespec ts = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};
    int sig = sigtimedwait(&s->sigs, NULL, &ts);
    return sig > 0 ? sig : 0;
}

/* The raylet's error text says how a command ended: "exited with code N", "killed by
 * signal N (SIGX)", or something else (cancelled, job ended, worker died). */
static void set_failure(outcome *o, const char *why)
{
    *o = (outcome){.status = "FAILED", .entry_exit = -1, .cli_exit = CLI_EXIT_FAIL};
    snprintf(o->message, sizeof o->message, "%s", why);
    const char *p;
    int n;
    if ((p = strstr(why, "exited with code ")) && sscanf(p + 17, "%d", &n) == 1) {
        o->entry_exit = n;
        o->cli_exit = n;
    } else if ((p = strstr(why, "killed by signal ")) && sscanf(p + 17, "%d", &n) == 1) {
        o->cli_exit = 128 + n;
    }
}

typedef struct {
    uint64_t failing_since;   /* when calls started failing; 0 while they succeed */
    uint64_t next_stop_check; /* when to look for the stop mark again */
    uint64_t stopped_at;      /* when the stop mark was seen; 0 before */
} wait_state;

/* A stopped job may leave no result to read (a task queued on another node is dropped
 * without one when its job ends), so once the stop mark is seen the result gets
 * STOP_GRACE_MS to arrive; the mark is looked for every STOP_CHECK_MS. */
static bool stopped_long_ago(const submit_ctx *s, wait_state *w)
{
    uint64_t now = esc_now_ms();
    if (!w->stopped_at && now >= w->next_stop_check) {
        w->next_stop_check = now + STOP_CHECK_MS;
        if (job_was_stopped(s->c, s->job_id))
            w->stopped_at = now;
    }
    return w->stopped_at && now - w->stopped_at > STOP_GRACE_MS;
}

/* Whether calls have failed for so long that the cluster is given up on. */
static bool cluster_lost(wait_state *w, bool failing)
{
    if (!failing)
        w->failing_since = 0;
    else if (!w->failing_since)
        w->failing_since = esc_now_ms();
    return failing && esc_now_ms() - w->failing_since > LOST_AFTER_MS;
}

/* Reads the entrypoint's result, WAIT_SLICE_MS at a time so that its logs are copied
 * and signals are seen while it runs. */
static void wait_entrypoint(const submit_ctx *s, cli_tail *tail, outcome *o)
{
    wait_state w = {0};
    for (;;) {
        void *data = NULL;
        size_t len;
        esc_status st;
        int rc = esc_get(s->c, s->ref, WAIT_SLICE_MS, &data, &len, &st);
        free(data);
        if (tail)
            cli_tail_pump(tail);
        if (rc == ESC_OK) {
            *o = (outcome){.status = "SUCCEEDED", .entry_exit = 0, .cli_exit = 0};
            snprintf(o->message, sizeof o->message, "exited with code 0");
            return;
        }
        if (rc == ESC_ABORTED || rc == ESC_NOT_FOUND) {
            /* NOT_FOUND: the result was freed, which ending a job does. */
            set_failure(o, rc == ESC_ABORTED ? st.message : "the job ended first");
            return;
        }
        bool failing = rc != ESC_DEADLINE_EXCEEDED;
        if (cluster_lost(&w, failing)) {
            set_failure(o, "");
            snprintf(o->message, sizeof o->message, "lost the cluster: %s: %s",
                     esc_status_name(rc), st.message);
            o->lost = true;
            return;
        }
        if (!failing && stopped_long_ago(s, &w)) {
            set_failure(o, "the job ended first");
            return;
        }
        int sig = take_signal(s, failing ? ERROR_PAUSE_MS : 0);
        if (sig) {
            *o = (outcome){.status = "STOPPED", .entry_exit = -1,
                           .cli_exit = EXIT_INTERRUPTED, .interrupted = true};
            snprintf(o->message, sizeof o->message, "stopped by SIG%s", sigabbrev_np(sig));
            return;
        }
    }
}

/* Records the outcome and ends the job: FAILED unless the entrypoint succeeded. */
static void finish_job(submit_ctx *s, outcome *o)
{
    if (o->lost)
        return; /* nobody answers: the GCS ends the job when our stream is gone */
    if (o->interrupted) {
        job_stop(s->c, s->job_id, s->task_id, NULL);
    } else if (strcmp(o->status, "SUCCEEDED") != 0 && job_was_stopped(s->c, s->job_id)) {
        o->status = "STOPPED";
        snprintf(o->message, sizeof o->message, "stopped by escher job stop");
    }
    json_object_set_new(s->record, "status", json_string(o->status));
    json_object_set_new(s->record, "exit_code",
                        o->entry_exit >= 0 ? json_integer(o->entry_exit) : json_null());
    json_object_set_new(s->record, "message", json_string(o->message));
    json_object_set_new(s->record, "end_ms", json_integer((json_int_t)esc_wall_ms()));
    esc_status st;
    if (job_record_put(s->c, s->job_id, s->record, &st) != ESC_OK)
        cli_warn("cannot record the result of job %s: %s", s->job_id, st.message);
    esc_workdir_delete(s->c, s->job_id, NULL);
    esc_job_finish(s->c, NULL, strcmp(o->status, "SUCCEEDED") != 0, NULL);
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
    if (stream)
        fprintf(stderr, "job %s submitted (entrypoint task %s)\n", s->job_id, s->task_id);
    else
        detach_output(s);
    cli_tail tail;
    cli_tail_init(&tail, s->g->session_dir, s->task_id);
    outcome o = {0};
    wait_entrypoint(s, stream ? &tail : NULL, &o);
    /* Only an entrypoint that exited surely ran, and wrote its logs somewhere. */
    if (stream && !cli_tail_pump(&tail) && o.entry_exit >= 0)
        cli_warn("the entrypoint's output is not on this machine (it ran on another node?): "
                 "run escher logs %s there",
                 s->task_id);
    cli_tail_close(&tail);
    finish_job(s, &o);
    if (strcmp(o.status, "SUCCEEDED") != 0)
        cli_fail("job %s %s: %s", s->job_id,
                 strcmp(o.status, "STOPPED") == 0 ? "stopped" : "failed", o.message);
    esc_ref_free(s->ref);
    json_decref(s->record);
    esc_disconnect(s->c);
    return o.cli_exit;
}

/* ------------------------------------------------------------------ --no-wait */

/* Reads fd to its end: a malloc'd string. */
static char *read_all(int fd)
{
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 1 == cap)
            buf = realloc(buf, cap *= 2);
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
        rc = check_working_dir(&s);
    if (rc == 0)
        rc = s.no_wait ? run_detached(&s) : run_job(&s, true);
    free(s.res_copy);
    return rc == CLI_HELP ? CLI_EXIT_OK : rc;
}
