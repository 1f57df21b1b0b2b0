/* status.h: the outcome of every escher call: a status code and a one-line message.
 *
 * The codes are gRPC's (same numbers as grpc_status_code), so a code that a daemon
 * answered reaches the caller unchanged. Part of the public SDK (escher.h includes it);
 * the daemons use the same definitions.
 */
#ifndef ESCHER_STATUS_H
#define ESCHER_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* gRPC status codes used by escher (same numbers as grpc_status_code). */
enum {
    ESC_OK = 0,
    ESC_CANCELLED = 1,
    ESC_UNKNOWN = 2,
    ESC_INVALID_ARGUMENT = 3,
    ESC_DEADLINE_EXCEEDED = 4,
    ESC_NOT_FOUND = 5,
    ESC_ALREADY_EXISTS = 6,
    ESC_PERMISSION_DENIED = 7,
    ESC_RESOURCE_EXHAUSTED = 8,
    ESC_FAILED_PRECONDITION = 9,
    ESC_ABORTED = 10,
    ESC_UNIMPLEMENTED = 12,
    ESC_INTERNAL = 13,
    ESC_UNAVAILABLE = 14,
    ESC_UNAUTHENTICATED = 16,
};

/* The outcome of a call: a status code and a one-line message. */
typedef struct {
    int code;
    char message[256];
} esc_status;

/* Fills st (when not NULL) with code and a printf-formatted message; returns code. */
int esc_status_set(esc_status *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The canonical name of a status code ("INVALID_ARGUMENT"). */
const char *esc_status_name(int code);

#ifdef __cplusplus
}
#endif

#endif
