/* fuzz_token.c: the secret reader (runtime/token_file.c) for the cluster token, the
 * daemon key and the operator key, from memory and from a file. What it accepts is
 * non-empty printable ASCII of at most ESC_TOKEN_FILE_MAX bytes, and a short file reads
 * as the same text does. */
#include "fuzz_util.h"

#include "token_file.h"

static void check_token(const char *tok)
{
    size_t n = strlen(tok);
    FUZZ_CHECK(n >= 1 && n <= ESC_TOKEN_FILE_MAX);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(tok[i] >= 0x20 && tok[i] <= 0x7e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256], path[64];
    char *tok = esc_token_parse((const char *)data, size, "fuzz", err, sizeof err);
    if (tok)
        check_token(tok);
    int fd = fuzz_memfd(data, size, path, sizeof path);
    char *from_file = esc_token_file_read(path, err, sizeof err);
    close(fd);
    if (from_file)
        check_token(from_file);
    /* Below the file reader's read limit the two faces agree. */
    if (size <= ESC_TOKEN_FILE_MAX)
        FUZZ_CHECK((tok == NULL) == (from_file == NULL) &&
                   (!tok || strcmp(tok, from_file) == 0));
    free(tok);
    free(from_file);
    return 0;
}
