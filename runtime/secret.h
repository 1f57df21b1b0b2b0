/* secret.h: comparing and hashing the cluster's secrets (tokens, keys, job credentials). */
#ifndef ESC_SECRET_H
#define ESC_SECRET_H

#include <stdbool.h>
#include <stddef.h>

/* True when the len bytes at given equal the non-empty string secret. Constant time in
 * the secret's length, so a wrong guess learns nothing of it; an empty secret never
 * matches. */
bool esc_secret_equal(const void *given, size_t len, const char *secret);

/* The SHA-256 of the string s, as 64 lowercase hex characters and a NUL. */
void esc_sha256_hex(const char *s, char out[65]);

#endif
