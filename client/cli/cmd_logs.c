/* cmd_logs.c: `escher logs TASK_ID [--err]`: a task's captured stdout (or stderr).
 *
 * Workers write a task's output to their capture files, indexed by task, in their
 * raylet's --log-dir (SESSION/logs/tasks/ for raylets that `escher start` started). This
 * command reads them
 * from this machine only (task_logs.c says where it looks); a task that ran on another
 * machine has its logs there. */
#include <stdio.h>

#include "job.h"
#include "names.h"

static const char usage[] =
    "usage: escher logs TASK_ID [--err]\n"
    "\n"
    "Prints what the task wrote to stdout (--err: stderr). Looks on this machine only: in\n"
    "the session's logs/tasks/, then in every /tmp/escher/session_*/logs/tasks/, then in\n"
    "/tmp/escher/logs/*/ (raylets started without `escher start`).\n";

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
    /* Task ids become file names: nothing that could leave the log directory. */
    if (!esc_object_id_valid(pos[0]))
        return cli_usage("not a task id: \"%s\"", pos[0]);
    char dir[PATH_MAX];
    if (!cli_task_logs_find(g->session_dir, pos[0], dir, sizeof dir))
        return cli_fail("no logs of task %s on this machine (did it run on another node?)",
                        pos[0]);
    return cli_task_log_print(dir, pos[0], err ? "err" : "out", stdout);
}
