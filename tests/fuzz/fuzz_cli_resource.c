/* fuzz_cli_resource.c: `escher resource set|add|delete`'s argument parsing as the CLI
 * runs it before connecting (client/cli/args.c, res_args.c): options, NAME or NS/NAME,
 * QTY, and the target (--node, --where RES=QTY|KEY=VALUE,..., --where-label,
 * --num-nodes, --all-nodes).
 *
 * Input: the first byte picks the verb; the rest is the argument list, one argument a
 * line (so the seeds are plain text). */
#include "fuzz_util.h"

#include "qty.h"
#include "res_args.h"

/* cli_usage, cli_fail and esc_status_name live in files that bring the SDK and gRPC
 * (common.c, rpc_common.c); the parser needs only their return codes. */
int cli_fail(const char *fmt, ...)
{
    (void)fmt;
    return CLI_EXIT_FAIL;
}

int cli_usage(const char *fmt, ...)
{
    (void)fmt;
    return CLI_EXIT_USAGE;
}

const char *esc_status_name(int code)
{
    (void)code;
    return "INVALID_ARGUMENT";
}

#define MAX_ARGS 64

/* Splits text at newlines into argv (at most MAX_ARGS); returns the count. */
static int split_args(char *text, char **argv)
{
    int argc = 0;
    char *save = NULL;
    for (char *a = strtok_r(text, "\n", &save); a && argc < MAX_ARGS;
         a = strtok_r(NULL, "\n", &save))
        argv[argc++] = a;
    return argc;
}

static void check_target(const res_args *a)
{
    const esc_target *t = &a->target;
    FUZZ_CHECK(t->nwhere <= RES_MAX_WHERE && t->nlabels <= RES_MAX_WHERE);
    for (size_t i = 0; i < t->nwhere; i++)
        FUZZ_CHECK(t->where[i].name && t->where[i].name[0]);
    for (size_t i = 0; i < t->nlabels; i++)
        FUZZ_CHECK(t->labels[i].key && t->labels[i].key[0] && t->labels[i].value);
    FUZZ_CHECK(a->ns && esc_name_valid(a->ns));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const verbs[] = {"set", "add", "delete"};
    if (size < 1)
        return 0;
    const char *verb = verbs[data[0] % 3];
    char *text = fuzz_cstr(data + 1, size - 1);
    char *argv[MAX_ARGS];
    int argc = split_args(text, argv);
    res_args a = {0};
    /* --help prints the usage on stdout: give it nothing to print. */
    int rc = res_args_parse(&a, argc, argv, "");
    if (rc == 0) {
        int64_t q;
        bool unbounded;
        if (res_args_write(&a, verb, &q, &unbounded) == 0) {
            check_target(&a);
            FUZZ_CHECK(q >= -ESC_QTY_MAX && q <= ESC_QTY_MAX);
            FUZZ_CHECK(!unbounded || !strcmp(verb, "set"));
        }
    }
    res_args_free(&a);
    free(text);
    return 0;
}
