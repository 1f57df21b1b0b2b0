/* secret.c: see secret.h. */
#include "secret.h"

#include <string.h>

#include <openssl/evp.h>

bool esc_secret_equal(const void *given, size_t len, const char *secret)
{
    size_t want = secret ? strlen(secret) : 0;
    if (!given || !want || len != want)
        return false;
    const unsigned char *p = given;
    unsigned diff = 0;
    for (size_t i = 0; i < want; i++)
        diff |= p[i] ^ (unsigned char)secret[i];
    return diff == 0;
}

void esc_sha256_hex(const char *s, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_Digest(s, strlen(s), d, &n, EVP_sha256(), NULL);
    for (unsigned i = 0; i < 32 && i < n; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[64] = 0;
}
