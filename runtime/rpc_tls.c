/* rpc_tls.c: transport credentials for the binding, from the environment.
 *
 * Plaintext by default (loopback, tests). TLS is turned on for a whole cluster by the
 * environment its processes share, so daemons, the CLI, drivers and workers all agree
 * without a flag on every command:
 *   ESCHER_TLS_CERT, ESCHER_TLS_KEY   PEM certificate chain and key: servers speak TLS;
 *   ESCHER_TLS_CA                     PEM roots: clients speak TLS and verify servers;
 *   ESCHER_TLS_SERVER_NAME            the name clients check instead of the host
 *                                     (certificates issued for one cluster name).
 * The cluster token is still required on every call; TLS keeps it off the wire. */
#include "rpc_internal.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc_security.h>

/* A whole PEM file as a string, or NULL. */
static char *read_pem(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = esc_xrealloc(buf, cap);
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!buf || len == 0) {
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    return buf;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

grpc_server_credentials *esc_rpc_server_creds(char *err, size_t errlen)
{
    const char *cert_path = env("ESCHER_TLS_CERT"), *key_path = env("ESCHER_TLS_KEY");
    if (!cert_path && !key_path)
        return grpc_insecure_server_credentials_create();
    char *cert = cert_path ? read_pem(cert_path) : NULL;
    char *key = key_path ? read_pem(key_path) : NULL;
    if (!cert || !key) {
        snprintf(err, errlen, "TLS needs a readable ESCHER_TLS_CERT and ESCHER_TLS_KEY (%s)",
                 !cert ? (cert_path ? cert_path : "unset") : key_path ? key_path : "unset");
        free(cert);
        free(key);
        return NULL;
    }
    grpc_ssl_pem_key_cert_pair pair = {.private_key = key, .cert_chain = cert};
    grpc_server_credentials *c = grpc_ssl_server_credentials_create_ex(
        NULL, &pair, 1, GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, NULL);
    free(cert);
    free(key);
    if (!c)
        snprintf(err, errlen, "ESCHER_TLS_CERT / ESCHER_TLS_KEY are not a valid PEM pair");
    return c;
}

grpc_channel *esc_rpc_channel_create(const char *target, const grpc_channel_args *base)
{
    const char *ca_path = env("ESCHER_TLS_CA");
    if (!ca_path) {
        grpc_channel_credentials *creds = grpc_insecure_credentials_create();
        grpc_channel *ch = grpc_channel_create(target, creds, base);
        grpc_channel_credentials_release(creds);
        return ch;
    }
    char *ca = read_pem(ca_path);
    if (!ca) {
        char msg[512];
        snprintf(msg, sizeof msg, "cannot read ESCHER_TLS_CA %s", ca_path);
        return grpc_lame_client_channel_create(target, GRPC_STATUS_UNAVAILABLE, msg);
    }
    grpc_channel_credentials *creds = grpc_ssl_credentials_create(ca, NULL, NULL, NULL);
    free(ca);
    /* The base args plus, when asked, the name to verify instead of the target host. */
    const char *name = env("ESCHER_TLS_SERVER_NAME");
    grpc_arg *args = esc_xcalloc(base->num_args + 1, sizeof *args);
    memcpy(args, base->args, base->num_args * sizeof *args);
    size_t n = base->num_args;
    if (name)
        args[n++] = (grpc_arg){.type = GRPC_ARG_STRING, .key = GRPC_SSL_TARGET_NAME_OVERRIDE_ARG,
                               .value.string = (char *)name};
    grpc_channel_args all = {.num_args = n, .args = args};
    grpc_channel *ch = grpc_channel_create(target, creds, &all);
    grpc_channel_credentials_release(creds);
    free(args);
    return ch;
}
