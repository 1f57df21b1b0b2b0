/* cmd_logs.c: `escher logs TASK_ID [--err]`: a task's captured stdout (or stderr).
 *
 * Read through the raylet of the node that ran the task, from any machine
 * (esc_task_logs, escher/jobs.h): workers keep a task's output in their raylet's log
 * folder, and that raylet serves it. */
#include <stdio.h>

#include "job.h"
#include "names.h"

static const char usage[] =
    "usage: escher logs TASK_ID [--err]\n"
    "\n"
    "Prints what the task wrote to stdout (--err: stderr), read through the raylet of the\n"
    "node that ran it (every alive node is asked), from any machine of the cluster.\n";

typedef struct {
    int want; /* 1: stdout, 2: stderr */
} log_filter;

static int print_stream(void *ud, int stream, const void *data, size_t len)
{
    const log_filter *f = ud;
    if (stream == f->want) {
        fwrite(data, 1, len, stdout);
        fflush(stdout);
    }
    return 0;
}

int cmd_logs(const cli_globals *g, int argc, char **argv)
{
    bool err = false;
    const cli_opt opts[] = {{"--err", NULL, &err}, {NULL, NULL, NULL}};
    const char *pos[1];
    int npos = 0;
    int rc = cli_parse(argc, argv, opts, pos, 1, &npos, usage);
    if (rc == CLI_HELP)
        return CLI_EXIT_OK;
    if (rc)
        return rc;
    if (npos != 1)
        return cli_usage("logs takes one TASK_ID (see --help)");
    if (!esc_object_id_valid(pos[0]))
        return cli_usage("not a task id: \"%s\"", pos[0]);
    esc_client *c;
    if ((rc = cli_connect(g, NULL, &c)) != 0)
        return rc;
    log_filter f = {err ? 2 : 1};
    esc_status st;
    if (esc_task_logs(c, pos[0], print_stream, &f, &st) != ESC_OK)
        rc = cli_fail("%s", st.message);
    esc_disconnect(c);
    return rc;
}
