/* persist.c: loading every table from storage when the GCS starts. With the memory
 * store the tables are empty; with Redis, a GCS restarted after kill -9 finds every
 * node, job, KV entry and ephemeral resource it had acknowledged. */
#include "gcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "log.h"

typedef struct {
    gcs *g;
    long bad;
} load_ctx;

/* A node's and a job's row is stored under its id: a row whose id is another (written
 * by something else, or damaged) is unreadable, not a second entry for that id. */
static void load_node(void *ud, const char *key, const void *value, size_t len)
{
    load_ctx *c = ud;
    Escher__NodeInfo *n = escher__node_info__unpack(NULL, len, value);
    if (n && strcmp(n->node_id, key) != 0) {
        protobuf_c_message_free_unpacked(&n->base, NULL);
        n = NULL;
    }
    if (!n) {
        c->bad++;
        return;
    }
    gcs_node_load(c->g, n);
}

static void load_job(void *ud, const char *key, const void *value, size_t len)
{
    load_ctx *c = ud;
    Escher__JobInfo *j = escher__job_info__unpack(NULL, len, value);
    if (j && strcmp(j->job_id, key) != 0) {
        protobuf_c_message_free_unpacked(&j->base, NULL);
        j = NULL;
    }
    if (!j) {
        c->bad++;
        return;
    }
    gcs_job_load(c->g, j);
}

static void load_registry(void *ud, const char *key, const void *value, size_t len)
{
    (void)key;
    load_ctx *c = ud;
    Escher__RegistryEntry *e = escher__registry_entry__unpack(NULL, len, value);
    if (!e) {
        c->bad++;
        return;
    }
    gcs_registry_load(c->g, e);
}

static void load_lost(void *ud, const char *key, const void *value, size_t len)
{
    (void)key;
    load_ctx *c = ud;
    Escher__ObjectLocation *row = escher__object_location__unpack(NULL, len, value);
    if (!row) {
        c->bad++;
        return;
    }
    gcs_objects_load_lost(c->g, row);
}

static void load_kv(void *ud, const char *key, const void *value, size_t len)
{
    load_ctx *c = ud;
    gcs_kv_load(c->g, key, value, len);
}

int gcs_persist_load(gcs *g, char *err, size_t errlen)
{
    load_ctx c = {g, 0};
    void *seq_text = NULL;
    size_t seq_len = 0;
    int found = esc_storage_get(g->store, GCS_T_META, "seq", &seq_text, &seq_len);
    if (found < 0) {
        snprintf(err, errlen, "cannot read the sequence number from storage");
        return -1;
    }
    if (found) {
        char buf[32] = {0};
        memcpy(buf, seq_text, seq_len < sizeof buf - 1 ? seq_len : sizeof buf - 1);
        g->seq = strtoull(buf, NULL, 10);
        free(seq_text);
    }
    if (esc_storage_scan(g->store, GCS_T_NODES, load_node, &c) < 0 ||
        esc_storage_scan(g->store, GCS_T_JOBS, load_job, &c) < 0 ||
        esc_storage_scan(g->store, GCS_T_REGISTRY, load_registry, &c) < 0 ||
        esc_storage_scan(g->store, GCS_T_KV, load_kv, &c) < 0 ||
        esc_storage_scan(g->store, GCS_T_LOST, load_lost, &c) < 0 ||
        gcs_history_load(g) < 0) {
        snprintf(err, errlen, "cannot read tables from storage");
        return -1;
    }
    if (c.bad)
        ESC_WARN("%ld unreadable rows in storage were skipped", c.bad);
    if (found)
        ESC_INFO("restored seq %llu, %zu nodes, %zu jobs, %zu resources, %zu kv entries",
                 (unsigned long long)g->seq, esc_strmap_count(g->nodes),
                 esc_strmap_count(g->jobs), esc_strmap_count(g->registry),
                 esc_strmap_count(g->kv));
    return 0;
}
