/* fuzz_gcs_persist.c: the GCS's loading of its stored state after a restart (gcs/
 * persist.c and the tables' load functions: nodes, jobs, registry, KV, lost objects, the
 * event history, the sequence number). Storage is trusted less than it looks: a Redis
 * shared with other tools, a row written by an older or newer GCS, a disk that flipped
 * bits. Every input is a fresh embedded store filled with the input's rows, then loaded
 * by gcs_open_store as escher-gcs loads its storage, then closed: no crash, no sanitizer
 * report, no leak (the tables own what they loaded and gcs_close frees it).
 *
 * Input: records, each a table byte (modulo the GCS's 7 tables), a key length byte and
 * the key, a 2-byte little-endian value length and the value (cut at the input's end). */
#include "fuzz_util.h"

#include "gcs.h"
#include "log.h"

static const char *const tables[] = {GCS_T_NODES, GCS_T_JOBS,  GCS_T_REGISTRY, GCS_T_KV,
                                     GCS_T_META,  GCS_T_LOST, GCS_T_HISTORY};
#define NTABLES (sizeof tables / sizeof tables[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool quiet;
    if (!quiet) {
        esc_log_init("fuzz_gcs_persist", ESC_LOG_ERROR + 1); /* loading warns per bad row */
        quiet = true;
    }
    char err[512];
    esc_storage *store = esc_storage_open("memory", err, sizeof err);
    if (!store)
        abort();
    esc_storage_batch *b = esc_storage_batch_new();
    size_t at = 0;
    while (at + 2 <= size) {
        const char *table = tables[data[at] % NTABLES];
        size_t klen = data[at + 1];
        at += 2;
        if (at + klen > size)
            break;
        char key[256];
        memcpy(key, data + at, klen);
        key[klen] = '\0';
        at += klen;
        size_t vlen = 0;
        if (at + 2 <= size) {
            vlen = (size_t)data[at] | (size_t)data[at + 1] << 8;
            at += 2;
        }
        if (vlen > size - at)
            vlen = size - at;
        esc_storage_put(b, table, key, data + at, vlen);
        at += vlen;
    }
    if (esc_storage_commit(store, b, err, sizeof err) != 0)
        abort(); /* the embedded store takes any batch */
    gcs_config cfg = {.bind = "127.0.0.1", .storage_uri = "memory",
                      .node_timeout_ms = 10000, .heartbeat_ms = 1000,
                      .job_timeout_ms = 10000, .max_resources_per_job = 100000,
                      .storage_timeout_ms = 5000, .dead_node_retention_ms = 60000,
                      .metrics_port = -1, .dashboard_port = -1,
                      .event_history = GCS_EVENT_HISTORY_DEFAULT};
    gcs g;
    gcs_open_store(&g, &cfg, store, err, sizeof err); /* a refusal is fine; a crash is not */
    gcs_close(&g);
    return 0;
}
