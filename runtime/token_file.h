/* token_file.h: reading a secret (the cluster token, the daemon key, the operator key)
 * from a file, the same way in every program. */
#ifndef ESC_TOKEN_FILE_H
#define ESC_TOKEN_FILE_H

#include <stddef.h>

/* The most bytes a secret may have, after trimming. */
#define ESC_TOKEN_FILE_MAX 1024

/* The secret in the file at path, malloc'd: the file's text with leading and trailing
 * whitespace (spaces, tabs, CR, LF) removed. NULL, with one line in err and errno set,
 * when the file cannot be read (errno from open/read), or the secret is empty (ENODATA),
 * longer than ESC_TOKEN_FILE_MAX bytes (EMSGSIZE), or holds a byte that is not printable
 * ASCII (EINVAL). */
char *esc_token_file_read(const char *path, char *err, size_t errlen);

/* The same checks on text already in memory (len bytes): the trimmed secret, malloc'd,
 * or NULL with err and errno as above; what names the source in err. */
char *esc_token_parse(const char *text, size_t len, const char *what, char *err,
                      size_t errlen);

#endif
