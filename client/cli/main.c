/* main.c: the escher CLI: global options and subcommand dispatch. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "log.h"
#include "version.h"

static const char usage[] =
    "usage: escher [--address HOST:PORT] [--session-dir DIR] [--token TOKEN] COMMAND ...\n"
    "       escher --help | --version\n"
    "\n"
    "commands:\n"
    "  start     start a head node (--head) or join a cluster (--address)\n"
    "  stop      stop the processes this machine's session started (--all: the cluster)\n"
    "  status    show nodes and their resources (--json for a machine-readable form)\n"
    "  resource  set, add, delete and list ephemeral resources\n"
    "  job       submit a command as a job, list, inspect and stop jobs\n"
    "  logs      a task's captured stdout or stderr\n"
    "  list      list nodes, jobs, resources, tasks, actors, objects or events (state API)\n"
    "  events    the cluster's event history (--follow: and new events as they happen)\n"
    "  up        start (or update) the cluster a cluster file describes, over SSH\n"
    "  down      stop everything `up` started on a cluster file's hosts\n"
    "  exec      run a command on a cluster file's head node\n"
    "  attach    open a shell on a cluster file's head node\n"
    "\n"
    "global options (accepted anywhere on the line):\n"
    "  --address HOST:PORT  the GCS (default: the session directory's gcs_address)\n"
    "  --session-dir DIR    the session directory (default: $ESCHER_SESSION_DIR, else\n"
    "                       your newest live session under $XDG_RUNTIME_DIR/escher,\n"
    "                       else under /tmp/escher-<uid>)\n"
    "  --token TOKEN        the cluster token (default: $ESCHER_TOKEN, else the session's)\n"
    "\n"
    "Run `escher COMMAND --help` for the options of a command.\n";

typedef struct {
    const char *name;
    int (*run)(const cli_globals *, int, char **);
} command;

static const command commands[] = {
    {"start", cmd_start},
    {"stop", cmd_stop},
    {"status", cmd_status},
    {"resource", cmd_resource},
    {"job", cmd_job},
    {"logs", cmd_logs},
    {"list", cmd_list_state},
    {"events", cmd_events},
    {"up", cmd_up},
    {"down", cmd_down},
    {"exec", cmd_exec},
    {"attach", cmd_attach},
};

/* If argv[*i] is the global option `name` ("--name value" or "--name=value"), stores
 * its value, advances *i past it and returns 1; -1 when its value is missing. */
static int take_global(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t len = strlen(name);
    const char *arg = argv[*i];
    if (strncmp(arg, name, len) != 0)
        return 0;
    if (arg[len] == '=') {
        *value = arg + len + 1;
        return 1;
    }
    if (arg[len] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

/* Moves the global options out of argv (compacting it in place) into g. Returns the new
 * argc, or -1 after printing a usage error. Stops at "--" so a positional argument
 * after it is never taken for an option. */
static int strip_globals(int argc, char **argv, cli_globals *g)
{
    static const char *names[] = {"--address", "--session-dir", "--token"};
    int out = 1;
    for (int i = 1; i < argc; i++) {
        const char **slots[] = {&g->address, &g->session_dir, &g->token};
        int taken = 0;
        for (size_t k = 0; k < 3 && !taken && strcmp(argv[i], "--") != 0; k++)
            taken = take_global(argc, argv, &i, names[k], slots[k]);
        if (taken < 0) {
            cli_usage("option %s needs a value", argv[i]);
            return -1;
        }
        if (taken)
            continue;
        argv[out++] = argv[i];
        if (!strcmp(argv[i], "--"))
            for (i++; i < argc; i++)
                argv[out++] = argv[i];
    }
    argv[out] = NULL;
    return out;
}

int main(int argc, char **argv)
{
    /* Library warnings go to stderr only when asked for (ESCHER_LOG_LEVEL). */
    esc_log_init("escher", ESC_LOG_ERROR);
    cli_globals g = {0};
    argc = strip_globals(argc, argv, &g);
    if (argc < 0)
        return CLI_EXIT_USAGE;
    if (argc < 2)
        return cli_usage("no command given (see escher --help)");
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("escher %s\n", ESC_VERSION);
        return CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(usage, stdout);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(&g, argc - 2, argv + 2);
    return cli_usage("unknown command \"%s\" (see escher --help)", argv[1]);
}
