/* log_index.h: where a task's captured output is in this node's log folder.
 *
 * A worker keeps its tasks' output in worker-<id>.out and .err in the raylet's log
 * folder and, before each task, appends "<task_id> <out offset> <err offset> <unix ms>"
 * to worker-<id>.idx (worker_main.c). A task's output is the part of the capture files
 * from its record's offsets to the next record's, or to the end for the last task of
 * the worker (which may still run). A retried task has one such part per attempt. */
#ifndef RAYLET_LOG_INDEX_H
#define RAYLET_LOG_INDEX_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* One attempt of a task: its part of the capture files next to idx. end -1: up to the
 * end of the file (nothing ran after it on that worker yet). [0] stdout, [1] stderr. */
typedef struct {
    char idx[PATH_MAX];
    off_t start[2], end[2];
    long long ms;
} log_attempt;

typedef struct {
    log_attempt *v;
    size_t n, cap;
} log_attempts;

/* Replaces *a with the task's attempts recorded in dir's worker-*.idx, in the order
 * they started. */
void log_index_scan(const char *dir, const char *task_id, log_attempts *a);
/* Replaces *a with the task's attempts in the index files that its attempts were found
 * in (cheaper than log_index_scan while a task runs: a worker's index grows only by the
 * tasks it runs, one at a time). */
void log_index_rescan(const char *task_id, log_attempts *a);
void log_attempts_free(log_attempts *a);

/* Opens the capture file of an attempt (which 0: .out, 1: .err); -1 with errno. */
int log_index_open_capture(const log_attempt *a, int which);

#endif
