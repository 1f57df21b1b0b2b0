/* job.h: what the job commands share. The work itself is libescher's (escher/jobs.h):
 * these files parse, print and exit. */
#ifndef ESC_CLI_JOB_H
#define ESC_CLI_JOB_H

#include <stddef.h>

#include "cli.h"
#include "escher/jobs.h"

/* An esc_log_fn that copies stream 1 to stdout and 2 to stderr, flushing each piece. */
int cli_log_to_std(void *ud, int stream, const void *data, size_t len);

/* `escher job submit`: job_submit.c. */
int cmd_job_submit(const cli_globals *g, int argc, char **argv);

#endif
