/* kv.c: the GCS key-value store (KvPut, KvGet, KvDel, KvKeys). */
#include "client_internal.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* A NULL namespace means the client's own. */
static char *kv_ns(const esc_client *c, const char *ns)
{
    return (char *)(ns ? ns : c->namespace_);
}

int esc_kv_put(esc_client *c, const char *ns, const char *key, const void *value, size_t len,
               bool overwrite, bool *added, esc_status *st)
{
    Escher__KvPutRequest req = ESCHER__KV_PUT_REQUEST__INIT;
    req.ns = kv_ns(c, ns);
    req.key = (char *)key;
    req.value.data = (uint8_t *)value;
    req.value.len = value ? len : 0;
    req.overwrite = overwrite;
    ProtobufCMessage *m;
    /* Retried only on UNAVAILABLE, which nearly always means the GCS never saw the
     * request; if it did, the repeat stores the same bytes and "added" reads false. */
    int rc = esc_client_call(c, &ESC_M_GCS_KV_PUT, &req.base, &m, ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    if (added)
        *added = ((Escher__KvPutReply *)m)->added;
    protobuf_c_message_free_unpacked(m, NULL);
    return ESC_OK;
}

int esc_kv_get(esc_client *c, const char *ns, const char *key, void **value, size_t *len,
               esc_status *st)
{
    *value = NULL;
    *len = 0;
    Escher__KvGetRequest req = ESCHER__KV_GET_REQUEST__INIT;
    req.ns = kv_ns(c, ns);
    req.key = (char *)key;
    ProtobufCMessage *m;
    int rc = esc_client_call(c, &ESC_M_GCS_KV_GET, &req.base, &m, ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    const Escher__KvGetReply *r = (const Escher__KvGetReply *)m;
    if (r->found) {
        /* One spare NUL byte, so text values can be used as C strings. The value's size
         * is its writer's choice: a checked malloc (escher.h, "Out of memory"). */
        *value = malloc(r->value.len + 1);
        if (!*value) {
            rc = esc_client_out_of_memory(st, r->value.len + 1);
            protobuf_c_message_free_unpacked(m, NULL);
            return rc;
        }
        if (r->value.len)
            memcpy(*value, r->value.data, r->value.len);
        ((char *)*value)[r->value.len] = '\0';
        *len = r->value.len;
        rc = esc_status_set(st, ESC_OK, NULL);
    } else {
        rc = esc_status_set(st, ESC_NOT_FOUND, "no key \"%s\" in namespace \"%s\"", key, req.ns);
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return rc;
}

int esc_kv_del(esc_client *c, const char *ns, const char *key, bool *deleted, esc_status *st)
{
    Escher__KvDelRequest req = ESCHER__KV_DEL_REQUEST__INIT;
    req.ns = kv_ns(c, ns);
    req.key = (char *)key;
    ProtobufCMessage *m;
    int rc = esc_client_call(c, &ESC_M_GCS_KV_DEL, &req.base, &m, ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    if (deleted)
        *deleted = ((Escher__KvDelReply *)m)->deleted;
    protobuf_c_message_free_unpacked(m, NULL);
    return ESC_OK;
}

int esc_kv_keys(esc_client *c, const char *ns, const char *prefix, char ***keys, size_t *n,
                esc_status *st)
{
    *keys = NULL;
    *n = 0;
    Escher__KvKeysRequest req = ESCHER__KV_KEYS_REQUEST__INIT;
    req.ns = kv_ns(c, ns);
    req.prefix = (char *)(prefix ? prefix : "");
    ProtobufCMessage *m;
    int rc = esc_client_call(c, &ESC_M_GCS_KV_KEYS, &req.base, &m, ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    const Escher__KvKeysReply *r = (const Escher__KvKeysReply *)m;
    /* As many as the cluster holds: a checked calloc (escher.h, "Out of memory"). */
    *keys = calloc(r->n_keys + 1, sizeof **keys);
    if (!*keys) {
        rc = esc_client_out_of_memory(st, (r->n_keys + 1) * sizeof **keys);
        protobuf_c_message_free_unpacked(m, NULL);
        return rc;
    }
    for (size_t i = 0; i < r->n_keys; i++)
        (*keys)[i] = esc_xstrdup(r->keys[i]);
    *n = r->n_keys;
    protobuf_c_message_free_unpacked(m, NULL);
    return ESC_OK;
}

void esc_kv_keys_free(char **keys, size_t n)
{
    if (!keys)
        return;
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}
