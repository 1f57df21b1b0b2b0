/* cmd_job.c: `escher job submit|list|status|logs|stop|fetch-workdir`.
 *
 * A submitted job is seen through two sources: the GCS's job table (is it running,
 * FINISHED or FAILED: the authority) and the record its submitter keeps in the key-value
 * store (entrypoint, task, result; job_record.c). `list` shows the jobs that have a
 * record, that is jobs made by `escher job submit`; every other client is a job too
 * (each CLI call is one), and those are not listed. */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../workdir.h"
#include "names.h"

static const char usage[] =
    "usage: escher job submit [OPTIONS] -- CMD ARGS...   (see escher job submit --help)\n"
    "       escher job list [--json]\n"
    "       escher job status JOB_ID [--json]\n"
    "       escher job logs JOB_ID\n"
    "       escher job stop JOB_ID\n"
    "       escher job fetch-workdir JOB_ID DIR\n"
    "\n"
    "  submit         run a command as a new job's entrypoint on the cluster\n"
    "  list           jobs made by `escher job submit`: state, result, entrypoint\n"
    "  status         one job in detail\n"
    "  logs           the entrypoint's stdout (on stdout) and stderr (on stderr), read\n"
    "                 from this machine's logs\n"
    "  stop           end a running job: its entrypoint is killed, and what the job\n"
    "                 holds (ephemeral resources, objects, tasks) goes\n"
    "  fetch-workdir  unpack a running job's working directory into DIR (an existing,\n"
    "                 empty directory): what escher-worker runs before the entrypoint\n";

/* ------------------------------------------------------------------ one job's view */

typedef struct {
    const char *id;
    json_t *rec;              /* the record; NULL when there is none */
    const esc_job_info *info; /* the GCS's row; NULL when it does not know the job */
    bool stopped;             /* its stop mark is set */
} job_view;

static const char *rec_str(const json_t *rec, const char *key)
{
    const char *s = json_string_value(json_object_get(rec, key));
    return s ? s : "";
}

static const esc_job_info *find_job(const esc_job_info *jobs, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(jobs[i].id, id))
            return &jobs[i];
    return NULL;
}

static const char *view_state(const job_view *v)
{
    return v->info ? v->info->state : "UNKNOWN";
}

/* What became of the entrypoint, in a few words. */
static const char *view_result(const job_view *v, char *buf, size_t len)
{
    const char *status = rec_str(v->rec, "status");
    json_t *code = json_object_get(v->rec, "exit_code");
    if (!v->rec)
        snprintf(buf, len, "-");
    else if (!strcmp(status, "RUNNING") && !strcmp(view_state(v), "RUNNING"))
        snprintf(buf, len, v->stopped ? "stopping" : "running");
    else if (!strcmp(status, "RUNNING"))
        /* The job ended while its record says running: its submitter never wrote the
         * result (stopped meanwhile, or it died and the GCS ended the job). */
        snprintf(buf, len, v->stopped ? "stopped" : "ended without a result");
    else if (!strcmp(status, "STOPPED"))
        snprintf(buf, len, "stopped");
    else if (json_is_integer(code))
        snprintf(buf, len, "exit code %lld", (long long)json_integer_value(code));
    else
        snprintf(buf, len, "%s", rec_str(v->rec, "message"));
    return buf;
}

static void entrypoint_text(const json_t *rec, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t i, used = 0;
    json_t *a;
    json_array_foreach(json_object_get(rec, "entrypoint"), i, a)
    {
        int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", json_string_value(a));
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

static const char *time_text(json_int_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (ms <= 0 || !localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, len, "-");
    return buf;
}

/* The record plus the GCS's state and the result in words. */
static json_t *view_json(const job_view *v)
{
    json_t *o = v->rec ? json_deep_copy(v->rec) : json_object();
    char result[320];
    json_object_set_new(o, "job_id", json_string(v->id));
    json_object_set_new(o, "state", json_string(view_state(v)));
    json_object_set_new(o, "result", json_string(view_result(v, result, sizeof result)));
    json_object_set_new(o, "stopped", json_boolean(v->stopped));
    return o;
}

/* Fills v for id from the GCS's rows (jobs) and the key-value store. */
static void view_load(esc_client *c, const char *id, const esc_job_info *jobs, size_t n,
                      job_view *v)
{
    *v = (job_view){.id = id, .info = find_job(jobs, n, id)};
    if (job_record_get(c, id, &v->rec, NULL) != ESC_OK)
        v->rec = NULL;
    v->stopped = v->rec && job_was_stopped(c, id);
}

/* ------------------------------------------------------------------ helpers */

/* Parses "JOB_ID [--json]"-style arguments: npos_want positionals, the first a job id. */
static int parse_job_args(int argc, char **argv, const cli_opt *opts, const char **pos,
                          int npos_want, const char *what)
{
    int npos;
    int rc = cli_parse(argc, argv, opts, pos, npos_want, &npos, usage);
    if (rc != 0)
        return rc;
    if (npos != npos_want)
        return cli_usage("job %s wants %s (see escher job --help)", what,
                         npos_want == 1 ? "a JOB_ID" : "JOB_ID DIR");
    if (!esc_name_valid(pos[0]))
        return cli_usage("not a job id: \"%s\"", pos[0]);
    return 0;
}

/* Connects and fetches the GCS's job table. Prints errors; returns an exit code. */
static int connect_and_list(const cli_globals *g, esc_client **c, esc_job_info **jobs,
                            size_t *n)
{
    int rc = cli_connect(g, NULL, c);
    if (rc != 0)
        return rc;
    esc_status st;
    if (esc_list_jobs(*c, jobs, n, &st) != ESC_OK) {
        esc_disconnect(*c);
        return cli_status_fail(&st);
    }
    return 0;
}

/* ------------------------------------------------------------------ list */

static void print_row(const job_view *v)
{
    char result[320], when[32], entry[1024];
    entrypoint_text(v->rec, entry, sizeof entry);
    printf("%-16s  %-8s  %-16s  %-19s  %s\n", v->id, view_state(v),
           view_result(v, result, sizeof result),
           time_text(json_integer_value(json_object_get(v->rec, "submitted_ms")), when,
                     sizeof when),
           entry);
}

static json_int_t submitted_ms(const job_view *v)
{
    return json_integer_value(json_object_get(v->rec, "submitted_ms"));
}

/* Oldest first, as they were submitted. */
static int cmp_submitted(const void *a, const void *b)
{
    json_int_t x = submitted_ms(a), y = submitted_ms(b);
    return x < y ? -1 : x > y;
}

/* The views of every job with a record, oldest first (*n of them; caller frees each
 * record and the array). */
static int load_views(esc_client *c, const esc_job_info *jobs, size_t njobs, job_view **out,
                      size_t *n, esc_status *st)
{
    char **ids;
    size_t nids;
    int rc = job_record_ids(c, &ids, &nids, st);
    if (rc != ESC_OK)
        return rc;
    job_view *views = calloc(nids + 1, sizeof *views);
    *n = 0;
    for (size_t i = 0; i < nids; i++) {
        view_load(c, ids[i], jobs, njobs, &views[*n]);
        if (views[*n].rec) /* its id lives in ids: keep the id for printing */
            views[*n].id = json_string_value(json_object_get(views[*n].rec, "job_id"));
        if (views[*n].rec && views[*n].id)
            ++*n;
        else
            json_decref(views[*n].rec);
    }
    esc_kv_keys_free(ids, nids);
    qsort(views, *n, sizeof *views, cmp_submitted);
    *out = views;
    return ESC_OK;
}

static int job_list(const cli_globals *g, int argc, char **argv)
{
    bool json = false;
    const cli_opt opts[] = {{"--json", NULL, &json}, {NULL, NULL, NULL}};
    const char *pos[1];
    int npos;
    int rc = cli_parse(argc, argv, opts, pos, 0, &npos, usage);
    if (rc != 0)
        return rc;
    esc_client *c;
    esc_job_info *jobs;
    size_t njobs;
    if ((rc = connect_and_list(g, &c, &jobs, &njobs)) != 0)
        return rc;
    job_view *views = NULL;
    size_t n = 0;
    esc_status st;
    if (load_views(c, jobs, njobs, &views, &n, &st) != ESC_OK) {
        rc = cli_status_fail(&st);
    } else if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, view_json(&views[i]));
        rc = cli_json_print(json_pack("{s:o}", "jobs", arr));
    } else {
        printf("%-16s  %-8s  %-16s  %-19s  %s\n", "JOB_ID", "STATE", "RESULT", "SUBMITTED",
               "ENTRYPOINT");
        for (size_t i = 0; i < n; i++)
            print_row(&views[i]);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(views[i].rec);
    free(views);
    esc_jobs_free(jobs, njobs);
    esc_disconnect(c);
    return rc;
}

/* ------------------------------------------------------------------ status */

static void print_status(const job_view *v)
{
    char result[320], entry[1024], a[32], b[32];
    printf("job:         %s\n", v->id);
    printf("state:       %s\n", view_state(v));
    printf("result:      %s\n", view_result(v, result, sizeof result));
    if (!v->rec)
        return;
    entrypoint_text(v->rec, entry, sizeof entry);
    printf("entrypoint:  %s\n", entry);
    printf("namespace:   %s\n", rec_str(v->rec, "namespace"));
    printf("task:        %s\n", rec_str(v->rec, "task_id"));
    if (json_is_string(json_object_get(v->rec, "working_dir")))
        printf("working dir: %s\n", rec_str(v->rec, "working_dir"));
    printf("submitted:   %s\n",
           time_text(json_integer_value(json_object_get(v->rec, "submitted_ms")), a, sizeof a));
    if (json_is_integer(json_object_get(v->rec, "end_ms")))
        printf("ended:       %s\n",
               time_text(json_integer_value(json_object_get(v->rec, "end_ms")), b, sizeof b));
    if (json_object_get(v->rec, "message"))
        printf("message:     %s\n", rec_str(v->rec, "message"));
}

static int job_status(const cli_globals *g, int argc, char **argv)
{
    bool json = false;
    const cli_opt opts[] = {{"--json", NULL, &json}, {NULL, NULL, NULL}};
    const char *pos[1];
    int rc = parse_job_args(argc, argv, opts, pos, 1, "status");
    if (rc != 0)
        return rc;
    esc_client *c;
    esc_job_info *jobs;
    size_t njobs;
    if ((rc = connect_and_list(g, &c, &jobs, &njobs)) != 0)
        return rc;
    job_view v;
    view_load(c, pos[0], jobs, njobs, &v);
    if (!v.rec && !v.info)
        rc = cli_fail("no job %s", pos[0]);
    else if (json)
        rc = cli_json_print(view_json(&v));
    else
        print_status(&v);
    json_decref(v.rec);
    esc_jobs_free(jobs, njobs);
    esc_disconnect(c);
    return rc;
}

/* ------------------------------------------------------------------ logs */

static int job_logs(const cli_globals *g, int argc, char **argv)
{
    const cli_opt opts[] = {{NULL, NULL, NULL}};
    const char *pos[1];
    int rc = parse_job_args(argc, argv, opts, pos, 1, "logs");
    if (rc != 0)
        return rc;
    esc_client *c;
    if ((rc = cli_connect(g, NULL, &c)) != 0)
        return rc;
    json_t *rec;
    esc_status st;
    int code = job_record_get(c, pos[0], &rec, &st);
    esc_disconnect(c);
    if (code == ESC_NOT_FOUND)
        return cli_fail("no job %s was submitted with escher job submit", pos[0]);
    if (code != ESC_OK)
        return cli_status_fail(&st);
    const char *task = rec_str(rec, "task_id");
    char dir[PATH_MAX];
    if (!esc_object_id_valid(task))
        rc = cli_fail("job %s has no entrypoint task in its record", pos[0]);
    else if (!cli_task_logs_find(g->session_dir, task, dir, sizeof dir))
        rc = cli_fail("no logs of job %s (entrypoint task %s) on this machine: it has not "
                      "started yet, or it runs on another node",
                      pos[0], task);
    else if ((rc = cli_task_log_print(dir, task, "out", stdout)) == 0)
        rc = cli_task_log_print(dir, task, "err", stderr);
    json_decref(rec);
    return rc;
}

/* ------------------------------------------------------------------ stop */

static int job_stop_cmd(const cli_globals *g, int argc, char **argv)
{
    const cli_opt opts[] = {{NULL, NULL, NULL}};
    const char *pos[1];
    int rc = parse_job_args(argc, argv, opts, pos, 1, "stop");
    if (rc != 0)
        return rc;
    esc_client *c;
    esc_job_info *jobs;
    size_t njobs;
    if ((rc = connect_and_list(g, &c, &jobs, &njobs)) != 0)
        return rc;
    job_view v;
    view_load(c, pos[0], jobs, njobs, &v);
    esc_status st;
    if (!v.info) {
        rc = cli_fail("no job %s in the GCS", pos[0]);
    } else if (strcmp(v.info->state, "RUNNING") != 0) {
        printf("job %s is not running (%s)\n", pos[0], v.info->state);
    } else if (job_stop(c, pos[0], rec_str(v.rec, "task_id"), &st) != ESC_OK) {
        rc = cli_status_fail(&st);
    } else {
        printf("job %s stopped\n", pos[0]);
    }
    json_decref(v.rec);
    esc_jobs_free(jobs, njobs);
    esc_disconnect(c);
    return rc;
}

/* ------------------------------------------------------------------ fetch-workdir */

/* Reads the GCS directly (no job is registered: a worker runs this before every
 * entrypoint that has a working directory). */
static int job_fetch_workdir(const cli_globals *g, int argc, char **argv)
{
    const cli_opt opts[] = {{NULL, NULL, NULL}};
    const char *pos[2];
    int rc = parse_job_args(argc, argv, opts, pos, 2, "fetch-workdir");
    if (rc != 0)
        return rc;
    struct stat sb;
    if (stat(pos[1], &sb) != 0 || !S_ISDIR(sb.st_mode))
        return cli_fail("%s is not a directory", pos[1]);
    char *address = cli_address(g);
    if (!address)
        return cli_fail("no cluster address: give --address or set ESCHER_ADDRESS");
    char *token = cli_token(g);
    esc_status st;
    if (esc_workdir_download(address, token, pos[0], pos[1], &st) != ESC_OK)
        rc = cli_status_fail(&st);
    if (token)
        memset(token, 0, strlen(token));
    free(token);
    free(address);
    return rc;
}

/* ------------------------------------------------------------------ dispatch */

int cmd_job(const cli_globals *g, int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(const cli_globals *, int, char **);
    } subs[] = {
        {"submit", cmd_job_submit}, {"list", job_list},
        {"status", job_status},     {"logs", job_logs},
        {"stop", job_stop_cmd},     {"fetch-workdir", job_fetch_workdir},
    };
    if (argc < 1)
        return cli_usage("job wants a subcommand: submit, list, status, logs or stop (see "
                         "escher job --help)");
    if (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help") || !strcmp(argv[0], "help")) {
        fputs(usage, stdout);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (!strcmp(argv[0], subs[i].name)) {
            int rc = subs[i].run(g, argc - 1, argv + 1);
            return rc == CLI_HELP ? CLI_EXIT_OK : rc;
        }
    return cli_usage("unknown job subcommand \"%s\" (see escher job --help)", argv[0]);
}
