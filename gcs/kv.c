/* kv.c: the key-value table: (namespace, key) -> bytes, written through to storage. */
#include "gcs.h"

#include "pbutil.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t len;
    unsigned char bytes[];
} kv_value;

#define KV_MAX_KEY 1024

/* Storage key "ns\nkey": namespaces may not contain a newline. */
static char *kv_key(const char *ns, const char *key)
{
    size_t a = strlen(ns), b = strlen(key);
    char *k = esc_xmalloc(a + b + 2);
    memcpy(k, ns, a);
    k[a] = '\n';
    memcpy(k + a + 1, key, b + 1);
    return k;
}

/* Namespaces owned by a running job are its own and its grantees' (auth.c); a prefix
 * grantee touches only keys, and lists only key prefixes, that start with its prefix:
 * name is the key, or KvKeys' prefix. */
static bool kv_allowed(gcs *g, esc_rpc_ctx *call, const char *ns, const char *name)
{
    char why[300];
    gcs_job *caller;
    int rc = gcs_auth_caller(g, call, &caller, why, sizeof why);
    if (rc == ESC_OK)
        rc = gcs_ns_access(g, caller, ns, name, why, sizeof why);
    if (rc != ESC_OK)
        esc_rpc_finish(call, rc, why);
    return rc == ESC_OK;
}

static bool kv_args_ok(esc_rpc_ctx *call, const char *ns, const char *key)
{
    if (strchr(ns, '\n') || strlen(ns) > 64) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "kv namespace too long or has a newline");
        return false;
    }
    if (!*key || strlen(key) > KV_MAX_KEY) {
        esc_rpc_finish(call, ESC_INVALID_ARGUMENT, "kv key empty or longer than 1024");
        return false;
    }
    return true;
}

static void kv_set(gcs *g, const char *k, const void *value, size_t len)
{
    kv_value *v = esc_xmalloc(sizeof *v + len);
    v->len = len;
    if (len)
        memcpy(v->bytes, value, len);
    free(esc_strmap_put(g->kv, k, v));
}

void gcs_kv_load(gcs *g, const char *key, const void *value, size_t len)
{
    kv_set(g, key, value, len);
}

/* A put or delete on its way to storage. It is a log entry (EV_KV) so that watches get
 * key-value changes in order with resource changes and can resume after a reconnect;
 * memory changes when storage has it (kv_apply), before anyone hears of it. */
typedef struct {
    esc_rpc_ctx *call;
    const Escher__KvPutRequest *put; /* valid until the call is answered; NULL: delete */
    char *key;                       /* owned */
    bool added;                      /* put: the key was new */
} kv_call;

/* Values up to this many bytes travel in events; a watch reads longer ones with KvGet. */
#define KV_EVENT_VALUE_MAX 4096

/* A row as events carry it; data NULL: deleted. */
static Escher__KvEntry *kv_entry(const char *ns, const char *key, const void *data, size_t len)
{
    Escher__KvEntry e = ESCHER__KV_ENTRY__INIT;
    e.ns = (char *)ns;
    e.key = (char *)key;
    e.deleted = data == NULL;
    e.value_len = len;
    e.value_omitted = len > KV_EVENT_VALUE_MAX;
    if (data && !e.value_omitted)
        e.value = (ProtobufCBinaryData){len, (uint8_t *)data};
    return (Escher__KvEntry *)esc_pb_dup(&e.base);
}

static Escher__Event *kv_event(const char *ns, const char *key, const Escher__KvPutRequest *put)
{
    Escher__Event *ev = gcs_event_new(ESCHER__EVENT_KIND__EV_KV);
    ev->kvs = esc_xmalloc(sizeof *ev->kvs);
    ev->kvs[0] = put ? kv_entry(ns, key, put->value.data ? put->value.data : (void *)"",
                                put->value.len)
                     : kv_entry(ns, key, NULL, 0);
    ev->n_kvs = 1;
    return ev;
}

static void kv_apply(gcs *g, void *ud)
{
    kv_call *c = ud;
    if (c->put)
        kv_set(g, c->key, c->put->value.data, c->put->value.len);
    else
        free(esc_strmap_del(g->kv, c->key));
}

static void kv_done(gcs *g, uint64_t seq, const char *err, void *ud)
{
    (void)g;
    (void)seq;
    kv_call *c = ud;
    if (err) {
        esc_rpc_finish(c->call, ESC_UNAVAILABLE, err);
    } else if (c->put) {
        Escher__KvPutReply rep = ESCHER__KV_PUT_REPLY__INIT;
        rep.added = c->added;
        esc_rpc_reply(c->call, &rep.base);
    } else {
        Escher__KvDelReply rep = ESCHER__KV_DEL_REPLY__INIT;
        rep.deleted = true;
        esc_rpc_reply(c->call, &rep.base);
    }
    free(c->key);
    free(c);
}

static void kv_commit(gcs *g, esc_rpc_ctx *call, const char *ns, const char *key,
                      const Escher__KvPutRequest *put, char *k, bool added)
{
    esc_storage_batch *b = esc_storage_batch_new();
    if (put)
        esc_storage_put(b, GCS_T_KV, k, put->value.data, put->value.len);
    else
        esc_storage_del(b, GCS_T_KV, k);
    kv_call *c = esc_xmalloc(sizeof *c);
    *c = (kv_call){call, put, k, added};
    gcs_commit(g, kv_event(ns, key, put), b, kv_apply, kv_done, c);
}

static void handle_put(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__KvPutRequest *req = (const Escher__KvPutRequest *)msg;
    if (!kv_args_ok(call, req->ns, req->key) || !kv_allowed(g, call, req->ns, req->key))
        return;
    char *k = kv_key(req->ns, req->key);
    bool exists = esc_strmap_get(g->kv, k) != NULL;
    if (!exists || req->overwrite) {
        kv_commit(g, call, req->ns, req->key, req, k, !exists);
        return;
    }
    free(k);
    Escher__KvPutReply rep = ESCHER__KV_PUT_REPLY__INIT;
    esc_rpc_reply(call, &rep.base);
}

static void handle_get(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__KvGetRequest *req = (const Escher__KvGetRequest *)msg;
    if (!kv_args_ok(call, req->ns, req->key) || !kv_allowed(g, call, req->ns, req->key))
        return;
    char *k = kv_key(req->ns, req->key);
    kv_value *v = esc_strmap_get(g->kv, k);
    free(k);
    Escher__KvGetReply rep = ESCHER__KV_GET_REPLY__INIT;
    if (v) {
        rep.found = true;
        rep.value.data = v->bytes;
        rep.value.len = v->len;
    }
    esc_rpc_reply(call, &rep.base);
}

static void handle_del(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__KvDelRequest *req = (const Escher__KvDelRequest *)msg;
    if (!kv_args_ok(call, req->ns, req->key) || !kv_allowed(g, call, req->ns, req->key))
        return;
    char *k = kv_key(req->ns, req->key);
    Escher__KvDelReply rep = ESCHER__KV_DEL_REPLY__INIT;
    if (esc_strmap_get(g->kv, k)) {
        kv_commit(g, call, req->ns, req->key, NULL, k, false);
        return;
    }
    free(k);
    esc_rpc_reply(call, &rep.base);
}

static void handle_keys(esc_rpc_ctx *call, const ProtobufCMessage *msg, void *ud)
{
    gcs *g = ud;
    const Escher__KvKeysRequest *req = (const Escher__KvKeysRequest *)msg;
    if (!kv_allowed(g, call, req->ns, req->prefix))
        return;
    Escher__KvKeysReply rep = ESCHER__KV_KEYS_REPLY__INIT;
    rep.keys = esc_xcalloc(esc_strmap_count(g->kv) + 1, sizeof *rep.keys);
    size_t nslen = strlen(req->ns), plen = strlen(req->prefix);
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->kv, &pos, &k, &v)) {
        if (strncmp(k, req->ns, nslen) != 0 || k[nslen] != '\n')
            continue;
        const char *key = k + nslen + 1;
        if (strncmp(key, req->prefix, plen) == 0)
            rep.keys[rep.n_keys++] = (char *)key;
    }
    esc_rpc_reply(call, &rep.base);
    free(rep.keys);
}

Escher__KvEntry **gcs_kv_rows(gcs *g, gcs_kv_filter want, void *ud, size_t *n)
{
    Escher__KvEntry **rows = esc_xcalloc(esc_strmap_count(g->kv) + 1, sizeof *rows);
    *n = 0;
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->kv, &pos, &k, &v)) {
        const char *nl = strchr(k, '\n');
        char ns[80];
        snprintf(ns, sizeof ns, "%.*s", (int)(nl - k), k);
        if (want(ud, ns, nl + 1))
            {
            const kv_value *kv = v;
            rows[(*n)++] = kv_entry(ns, nl + 1, kv->bytes, kv->len);
        }
    }
    return rows;
}

void gcs_kv_rows_free(Escher__KvEntry **rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        protobuf_c_message_free_unpacked(&rows[i]->base, NULL);
    free(rows);
}

void gcs_kv_free(gcs *g)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (esc_strmap_next(g->kv, &pos, &k, &v))
        free(v);
    esc_strmap_free(g->kv);
}

void gcs_kv_register(gcs *g)
{
    gcs_handle_write(g, &ESC_M_GCS_KV_PUT, handle_put);
    esc_rpc_server_handle(g->server, &ESC_M_GCS_KV_GET, handle_get, g);
    gcs_handle_write(g, &ESC_M_GCS_KV_DEL, handle_del);
    esc_rpc_server_handle(g->server, &ESC_M_GCS_KV_KEYS, handle_keys, g);
}
