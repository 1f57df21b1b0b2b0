/* job_record.c: a submitted job's record in the GCS key-value store, and stopping a job.
 *
 * The record is JSON written by the submitting `escher job submit` process: once when
 * the entrypoint is submitted (status RUNNING, its task id) and once when it ends (its
 * status, exit code, message and end time). Readers combine it with the GCS's job table,
 * which stays the authority on whether the job runs (job.h lists the keys). */
#include "job.h"

#include <stdlib.h>
#include <string.h>

#include "../workdir.h"
#include "ids.h"

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

int job_mark_stopped(esc_client *c, const char *job_id, esc_status *st)
{
    char key[KEY_MAX];
    stop_key(key, sizeof key, job_id);
    return esc_kv_put(c, ESC_JOBS_NS, key, "1", 1, true, NULL, st);
}

bool job_was_stopped(esc_client *c, const char *job_id)
{
    char key[KEY_MAX];
    stop_key(key, sizeof key, job_id);
    void *value = NULL;
    size_t len;
    bool yes = esc_kv_get(c, ESC_JOBS_NS, key, &value, &len, NULL) == ESC_OK;
    free(value);
    return yes;
}

int job_stop(esc_client *c, const char *job_id, const char *task_id, esc_status *st)
{
    /* The mark comes first, so whoever sees the entrypoint end reads it. */
    int rc = job_mark_stopped(c, job_id, st);
    if (rc != ESC_OK)
        return rc;
    if (task_id && *task_id) {
        /* A cancel gives the entrypoint's result the clear error "cancelled"; it only
         * reaches a task queued or running on our local raylet, and ending the job below
         * kills the job's tasks wherever they run, so NOT_FOUND is no failure. */
        char ref_id[ESC_OBJECT_ID_MAX];
        esc_return_id(task_id, 0, ref_id, sizeof ref_id);
        esc_ref *ref = esc_ref_from_id(ref_id);
        if (ref)
            esc_cancel(c, ref, NULL);
        esc_ref_free(ref);
    }
    return esc_job_finish(c, job_id, true, st);
}
