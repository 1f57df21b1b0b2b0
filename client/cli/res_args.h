/* res_args.h: the arguments of `escher resource`, parsed without a cluster.
 *
 * Kept apart from cmd_resource.c (which connects and writes) so that the parsing of
 * names, quantities and targets can be tested and fuzzed on its own
 * (tests/fuzz/fuzz_cli_resource.c). */
#ifndef ESC_CLI_RES_ARGS_H
#define ESC_CLI_RES_ARGS_H

#include "cli.h"
#include "names.h"

#define RES_MAX_WHERE 32

typedef struct {
    const char *node, *where, *where_label, *num_nodes, *ns;
    bool all_nodes, no_wait, json;
    const char *pos[3];
    int npos;
    /* derived */
    char ns_buf[ESC_NAME_MAX + 1], name_buf[ESC_NAME_MAX + 1];
    const char *name;
    esc_target target;
    esc_amount where_amounts[RES_MAX_WHERE];
    esc_label where_labels[RES_MAX_WHERE];
    size_t nlabels;
    char *where_copy, *label_copy; /* own the strings of where_amounts, where_labels */
} res_args;

/* Parses the options and positionals after the verb (argv[0..argc)) into *a, which must
 * be zeroed; usage is printed for --help (then CLI_HELP). Returns 0 or an exit code. */
int res_args_parse(res_args *a, int argc, char **argv, const char *usage);

/* For set, add and delete: checks the positional count, then parses NAME, QTY (not for
 * delete; "inf" only for set) and the target into a, *q and *unbounded. Returns 0 or
 * an exit code (the error already printed). */
int res_args_write(res_args *a, const char *verb, int64_t *q, bool *unbounded);

/* Frees what res_args_parse and res_args_write allocated (not a itself). */
void res_args_free(res_args *a);

#endif
