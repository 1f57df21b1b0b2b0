/* cli.h: declarations shared by the files of the escher CLI. */
#ifndef ESC_CLI_H
#define ESC_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "escher/escher.h"

/* Exit codes: a usage error (bad flags or arguments) and any other failure. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };
/* What cli_parse returns when it printed the help text: the command exits 0. */
#define CLI_HELP (-1)

/* Options every command accepts, anywhere on the line. NULL when not given. */
typedef struct {
    const char *address;     /* GCS HOST:PORT */
    const char *session_dir; /* session directory */
    const char *token;       /* cluster token */
} cli_globals;

/* ------------------------------------------------------------- errors (common.c) */

/* Prints "escher: <message>" on stderr and returns CLI_EXIT_FAIL. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "escher: <message>" on stderr and returns CLI_EXIT_USAGE. */
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "escher: <STATUS_NAME>: <message>" and returns CLI_EXIT_FAIL. */
int cli_status_fail(const esc_status *st);
/* Prints "escher: warning: <message>" on stderr (the command still succeeds). */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Formats a path into out; false when it does not fit (then out must not be used). */
bool cli_pathf(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Connects as the CLI does: a short-lived, detached job in namespace ns (NULL: the
 * GCS's default for a new job). Prints the error itself; returns an exit code. */
int cli_connect(const cli_globals *g, const char *ns, esc_client **out);

/* Connects a client that only reads (`escher status`): no job is registered, so it
 * answers while the GCS's storage is slow or down. Prints the error itself; returns an
 * exit code. */
int cli_connect_reader(const cli_globals *g, esc_client **out);

/* Connects as a job's driver (`escher job submit`): a long-lived client whose liveness
 * stream keeps the job running until esc_disconnect, or until this process dies and the
 * GCS's job timeout passes. Prints the error itself; returns an exit code. */
int cli_connect_driver(const cli_globals *g, const char *ns, esc_client **out);

/* The GCS address and the token as esc_connect finds them (the option, then
 * $ESCHER_ADDRESS / $ESCHER_TOKEN, then the session's file): malloc'd, NULL when none. */
char *cli_address(const cli_globals *g);
char *cli_token(const cli_globals *g);

/* ------------------------------------------------------------- arguments (args.c) */

typedef struct {
    const char *name;   /* "--port" */
    const char **value; /* set for an option with a value, else NULL */
    bool *flag;         /* set for a flag, else NULL */
} cli_opt;

/* Parses argv[0..argc) against opts (terminated by a {NULL} entry). Options are
 * "--name value" or "--name=value"; "--" ends options. Anything else, "-0.5" included,
 * is a positional argument, stored in pos (at most maxpos; *npos gets the count).
 * "-h"/"--help" prints usage (to stdout) and returns CLI_HELP. Returns 0, or prints the
 * error and returns CLI_EXIT_USAGE. */
int cli_parse(int argc, char **argv, const cli_opt *opts, const char **pos, int maxpos,
              int *npos, const char *usage);

/* Parses a non-negative integer option value into *out (<= max). Prints the usage
 * error and returns CLI_EXIT_USAGE, or returns 0. */
int cli_parse_uint(const char *opt, const char *text, long long max, long long *out);

/* ------------------------------------------------------------- formatting (format.c) */

/* A quantity as text: "2", "0.25", "inf"; memory-like names ("memory",
 * "object_store_memory") as "15.6 GiB" when human is set. buf needs 48 bytes. */
const char *cli_fmt_qty(const char *name, int64_t q, bool unbounded, bool human, char *buf,
                        size_t len);
/* A quantity as JSON: an integer when whole, else a real; "inf" when unbounded. */
json_t *cli_json_qty(int64_t q, bool unbounded);
/* Dumps a JSON value with a newline on stdout (reals with 15 significant digits, so
 * 0.1 prints as 0.1). Returns an exit code. */
int cli_json_print(json_t *v);

/* ------------------------------------------------------------- commands */

int cmd_start(const cli_globals *g, int argc, char **argv);
int cmd_stop(const cli_globals *g, int argc, char **argv);
int cmd_status(const cli_globals *g, int argc, char **argv);
int cmd_logs(const cli_globals *g, int argc, char **argv);
int cmd_resource(const cli_globals *g, int argc, char **argv);
int cmd_job(const cli_globals *g, int argc, char **argv);
/* cmd_list.c: the state API (docs/observability.md, "State API: escher list"). */
int cmd_list_state(const cli_globals *g, int argc, char **argv);
/* cmd_events.c: `escher events [--follow] [--kind K] [--job ID] [--node ID] [--since ID]
 * [--limit N] [--json]`; argv starts after "events" (`escher list events` may call it). */
int cmd_events(const cli_globals *g, int argc, char **argv);
/* cmd_cluster.c: a cluster file's cluster over SSH (docs/deploy.md). */
int cmd_up(const cli_globals *g, int argc, char **argv);
int cmd_down(const cli_globals *g, int argc, char **argv);
int cmd_exec(const cli_globals *g, int argc, char **argv);
int cmd_attach(const cli_globals *g, int argc, char **argv);

#endif
