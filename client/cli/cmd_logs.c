/* cmd_logs.c: `escher logs TASK_ID [--err]`: a task's captured stdout (or stderr).
 *
 * Raylets started by `escher start` write task logs to SESSION/logs/tasks/ (their
 * --log-dir), as task-<id>.out and .err. This command reads them from the local
 * session; a task that ran on another machine has its logs in that machine's session. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "names.h"
#include "../session.h"

static const char usage[] =
    "usage: escher logs TASK_ID [--err]\n"
    "\n"
    "Prints what the task wrote to stdout (--err: stderr), from this machine's session\n"
    "logs (SESSION/logs/tasks/task-TASK_ID.out or .err).\n";

static int copy_file(FILE *f)
{
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (fwrite(buf, 1, n, stdout) != n)
            return cli_fail("cannot write the log: %s", strerror(errno));
    return CLI_EXIT_OK;
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
        return cli_usage("logs takes one TASK_ID");
    if (!esc_name_valid(pos[0]))
        return cli_usage("not a task id: %s", pos[0]);
    const char *dir = esc_session_dir(g->session_dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/logs/tasks/task-%s.%s", dir, pos[0], err ? "err" : "out");
    FILE *f = fopen(path, "r");
    if (!f)
        return cli_fail("no logs of task %s in this session (%s: %s)", pos[0], path,
                        strerror(errno));
    rc = copy_file(f);
    fclose(f);
    return rc;
}
