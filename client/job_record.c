/* job_record.c: a submitted job's record and stop mark in the GCS key-value store
 * (job_internal.h lists the keys).
 *
 * The record is JSON written by the job's driver: once when the entrypoint is submitted
 * (status RUNNING, its task and the node it was submitted to) and once when it ends
 * (status, exit code, message, end time). Readers combine it with the GCS's job table,
 * which stays the authority on whether the job runs. */
#include "job_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workdir.h"

#define KEY_MAX 160

int job_record_put(esc_client *c, const char *job_id, json_t *rec, esc_status *st)
{
    char *text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text)
        return esc_status_set(st, ESC_INTERNAL, "cannot encode the job record");
    int rc = esc_kv_put(c, ESC_JOBS_NS, job_id, text, strlen(text), true, NULL, st);
    free(text);
    return rc;
}

int job_record_get(esc_client *c, const char *job_id, json_t **rec, esc_status *st)
{
    *rec = NULL;
    void *value;
    size_t len;
    int rc = esc_kv_get(c, ESC_JOBS_NS, job_id, &value, &len, st);
    if (rc != ESC_OK)
        return rc;
    json_error_t err;
    *rec = json_loadb(value, len, 0, &err);
    free(value);
    if (!*rec || !json_is_object(*rec)) {
        json_decref(*rec);
        *rec = NULL;
        return esc_status_set(st, ESC_INTERNAL, "job %s has a malformed record: %s", job_id,
                              err.text);
    }
    return ESC_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int job_record_ids(esc_client *c, char ***ids, size_t *n, esc_status *st)
{
    int rc = esc_kv_keys(c, ESC_JOBS_NS, "", ids, n, st);
    if (rc != ESC_OK)
        return rc;
    /* Records are the keys without a '/'; the others belong to some job's record. */
    size_t k = 0;
    for (size_t i = 0; i < *n; i++) {
        if (strchr((*ids)[i], '/'))
            free((*ids)[i]);
        else
            (*ids)[k++] = (*ids)[i];
    }
    *n = k;
    qsort(*ids, k, sizeof **ids, cmp_str);
    return ESC_OK;
}

static void stop_key(char *out, size_t len, const char *job_id)
{
    snprintf(out, len, "%s/stop", job_id);
}

int job_mark_stopped(esc_client *c, const char *job_id, const char *why, esc_status *st)
{
    char key[KEY_MAX];
    stop_key(key, sizeof key, job_id);
    return esc_kv_put(c, ESC_JOBS_NS, key, why, strlen(why), true, NULL, st);
}

void job_unmark_stopped(esc_client *c, const char *job_id)
{
    char key[KEY_MAX];
    stop_key(key, sizeof key, job_id);
    esc_kv_del(c, ESC_JOBS_NS, key, NULL, NULL);
}

bool job_stop_reason(esc_client *c, const char *job_id, char *why, size_t len)
{
    char key[KEY_MAX];
    stop_key(key, sizeof key, job_id);
    void *value = NULL;
    size_t n;
    bool yes = esc_kv_get(c, ESC_JOBS_NS, key, &value, &n, NULL) == ESC_OK;
    if (yes && why)
        snprintf(why, len, "%s", n > 1 ? (const char *)value : "stopped");
    free(value);
    return yes;
}
