/* cmd_job.c: `escher job submit|list|status|logs|stop|fetch-workdir`.
 *
 * The work is libescher's (escher/jobs.h): esc_job_status and esc_job_list combine the
 * GCS's job table, each submitted job's record and, while it runs, where its entrypoint
 * is (PENDING with what it lacks); esc_job_logs reads output through the raylet of the
 * node that ran it; esc_job_stop ends a job. `list` shows the jobs that have a record,
 * that is jobs made by esc_job_submit; every other client is a job too (each CLI call
 * is one), and those are not listed. */
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
    "       escher job logs JOB_ID [--follow]\n"
    "       escher job stop JOB_ID\n"
    "       escher job fetch-workdir JOB_ID DIR\n"
    "\n"
    "  submit         run a command as a new job's entrypoint on the cluster\n"
    "  list           jobs made by `escher job submit`: state, result, entrypoint\n"
    "  status         one job in detail; PENDING (with what it lacks) while its\n"
    "                 entrypoint waits for resources\n"
    "  logs           the entrypoint's stdout (on stdout) and stderr (on stderr), read\n"
    "                 through the raylet of the node that ran it; --follow: also wait\n"
    "                 for it to start, and copy its output as it grows until it ends\n"
    "  stop           end a running job: its entrypoint is killed, and what the job\n"
    "                 holds (ephemeral resources, objects, tasks) goes; needs the\n"
    "                 operator key ($ESCHER_OPERATOR_KEY, else the session's `operator`)\n"
    "  fetch-workdir  unpack a running job's working directory into DIR (an existing,\n"
    "                 empty directory): what escher-worker runs before the entrypoint\n";

/* ------------------------------------------------------------------ one job's view */

static void entrypoint_text(const esc_job_status_info *j, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < j->nentrypoint; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", j->entrypoint[i]);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

static const char *time_text(uint64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (ms == 0 || !localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, len, "-");
    return buf;
}

static json_t *strings_json(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* PENDING: what the entrypoint asks for and what no node has. */
static json_t *pending_json(const esc_job_status_info *j)
{
    json_t *req = json_object();
    for (size_t i = 0; i < j->nrequest; i++)
        json_object_set_new(req, j->request[i].name, cli_json_qty(j->request[i].value, false));
    return json_pack("{s:b, s:o, s:o}", "infeasible", j->infeasible, "missing",
                     strings_json(j->missing, j->nmissing), "request", req);
}

/* The fields of the job's record, its state and the result in words. */
static json_t *view_json(const esc_job_status_info *j)
{
    json_t *o = json_object();
    json_object_set_new(o, "job_id", json_string(j->id));
    json_object_set_new(o, "state", json_string(j->state));
    json_object_set_new(o, "result", json_string(j->result));
    json_object_set_new(o, "stopped", json_boolean(j->stopped));
    if (!strcmp(j->state, "PENDING"))
        json_object_set_new(o, "pending", pending_json(j));
    if (!j->has_record)
        return o;
    json_object_set_new(o, "status", json_string(j->status));
    json_object_set_new(o, "namespace", json_string(j->namespace_));
    json_object_set_new(o, "entrypoint", strings_json(j->entrypoint, j->nentrypoint));
    json_object_set_new(o, "task_id", json_string(j->task_id));
    json_object_set_new(o, "submit_node", json_string(j->submit_node));
    json_object_set_new(o, "node_id", j->node_id[0] ? json_string(j->node_id) : json_null());
    json_object_set_new(o, "working_dir",
                        j->working_dir ? json_string(j->working_dir) : json_null());
    json_object_set_new(o, "working_dir_bytes", json_integer((json_int_t)j->working_dir_bytes));
    json_object_set_new(o, "submitted_ms", json_integer((json_int_t)j->submitted_ms));
    json_object_set_new(o, "exit_code", j->exit_code >= 0 ? json_integer(j->exit_code)
                                                          : json_null());
    if (j->end_ms) {
        json_object_set_new(o, "end_ms", json_integer((json_int_t)j->end_ms));
        json_object_set_new(o, "message", json_string(j->message));
    }
    return o;
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

/* ------------------------------------------------------------------ list */

static void print_row(const esc_job_status_info *j)
{
    char when[32], entry[1024];
    entrypoint_text(j, entry, sizeof entry);
    printf("%-16s  %-8s  %-16s  %-19s  %s\n", j->id, j->state, j->result,
           time_text(j->submitted_ms, when, sizeof when), entry);
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
    if ((rc = cli_connect(g, NULL, &c)) != 0)
        return rc;
    esc_job_status_info *jobs = NULL;
    size_t n = 0;
    esc_status st;
    if (esc_job_list(c, &jobs, &n, &st) != ESC_OK) {
        rc = cli_status_fail(&st);
    } else if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, view_json(&jobs[i]));
        rc = cli_json_print(json_pack("{s:o}", "jobs", arr));
    } else {
        printf("%-16s  %-8s  %-16s  %-19s  %s\n", "JOB_ID", "STATE", "RESULT", "SUBMITTED",
               "ENTRYPOINT");
        for (size_t i = 0; i < n; i++)
            print_row(&jobs[i]);
    }
    esc_job_list_free(jobs, n);
    esc_disconnect(c);
    return rc;
}

/* ------------------------------------------------------------------ status */

static void print_status(const esc_job_status_info *j)
{
    char entry[1024], a[32], b[32];
    printf("job:         %s\n", j->id);
    printf("state:       %s\n", j->state);
    printf("result:      %s\n", j->result);
    if (!strcmp(j->state, "PENDING")) {
        printf("missing:    ");
        for (size_t i = 0; i < j->nmissing; i++)
            printf(" %s", j->missing[i]);
        printf("%s\n", j->nmissing ? "" : j->infeasible ? " (no node is large enough)" : " -");
    }
    if (!j->has_record)
        return;
    entrypoint_text(j, entry, sizeof entry);
    printf("entrypoint:  %s\n", entry);
    printf("namespace:   %s\n", j->namespace_);
    printf("task:        %s\n", j->task_id);
    if (j->node_id[0])
        printf("node:        %s\n", j->node_id);
    if (j->working_dir)
        printf("working dir: %s\n", j->working_dir);
    printf("submitted:   %s\n", time_text(j->submitted_ms, a, sizeof a));
    if (j->end_ms) {
        printf("ended:       %s\n", time_text(j->end_ms, b, sizeof b));
        printf("message:     %s\n", j->message);
    }
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
    if ((rc = cli_connect(g, NULL, &c)) != 0)
        return rc;
    esc_job_status_info j;
    esc_status st;
    int code = esc_job_status(c, pos[0], &j, &st);
    if (code == ESC_NOT_FOUND)
        rc = cli_fail("no job %s", pos[0]);
    else if (code != ESC_OK)
        rc = cli_status_fail(&st);
    else if (json)
        rc = cli_json_print(view_json(&j));
    else
        print_status(&j);
    esc_job_status_clear(&j);
    esc_disconnect(c);
    return rc;
}

/* ------------------------------------------------------------------ logs */

static int job_logs(const cli_globals *g, int argc, char **argv)
{
    bool follow = false;
    const cli_opt opts[] = {{"--follow", NULL, &follow}, {NULL, NULL, NULL}};
    const char *pos[1];
    int rc = parse_job_args(argc, argv, opts, pos, 1, "logs");
    if (rc != 0)
        return rc;
    esc_client *c;
    if ((rc = cli_connect(g, NULL, &c)) != 0)
        return rc;
    esc_status st;
    if (esc_job_logs(c, pos[0], follow, cli_log_to_std, NULL, &st) != ESC_OK)
        rc = cli_fail("%s", st.message);
    esc_disconnect(c);
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
    if ((rc = cli_connect(g, NULL, &c)) != 0)
        return rc;
    esc_status st;
    int code = esc_job_stop(c, pos[0], "stopped by escher job stop", &st);
    if (code == ESC_OK)
        printf("job %s stopped\n", pos[0]);
    else if (code == ESC_FAILED_PRECONDITION) /* it ended already: nothing to do */
        printf("%s\n", st.message);
    else if (code == ESC_NOT_FOUND)
        rc = cli_fail("%s", st.message);
    else
        rc = cli_status_fail(&st);
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
