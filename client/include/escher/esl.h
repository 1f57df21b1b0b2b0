/* esl.h: the ESCHER scheduling library (ESL).
 *
 * A scheduling policy, expressed as ephemeral-resource operations plus the resources a
 * task must request. The raylet's scheduler stays a plain resource matcher: a policy
 * creates, resizes and deletes ephemeral resources (in the client's namespace, under
 * names it generates from a prefix the caller gives), and returns an esl_request that
 * the caller adds to its tasks' resources. Every policy object owns what it created and
 * deletes it when freed (esl_*_free); what is left when the job ends goes with the job.
 *
 * Threads: a policy object is used by one thread at a time; different objects may be
 * used concurrently. Errors: like escher.h, a status code and a one-line message.
 * Memory: every out-pointer is owned by the caller and freed with the matching _free.
 */
#ifndef ESCHER_ESL_H
#define ESCHER_ESL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "escher/escher.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ requests */

/* Resources a task must request (names are full: "<namespace>/<name>" for ephemeral
 * ones, "CPU" for physical ones). Owned by whoever made it. */
typedef struct {
    esc_amount *v;
    size_t n;
} esl_request;

/* A new request with one entry name=qty added to r (name copied). */
void esl_request_add(esl_request *r, const char *name, int64_t qty);
/* Frees the entries (not r itself) and leaves r empty. */
void esl_request_clear(esl_request *r);

/* AND: out = a + b, repeated names summed (out is cleared first). Before returning it
 * asks the cluster whether some alive node has every ephemeral name of the union with
 * enough capacity: when none has, the composition can never be placed and the call
 * returns FAILED_PRECONDITION naming the names, instead of leaving tasks to wait
 * forever. (Names that exist nowhere yet are allowed: a policy may create them later.) */
int esl_request_and(esc_client *c, const esl_request *a, const esl_request *b,
                    esl_request *out, esc_status *st);

#ifdef __cplusplus
}
#endif

#endif
