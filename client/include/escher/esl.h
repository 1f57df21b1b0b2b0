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

/* ------------------------------------------------------------------ gang */

/* Gang scheduling: every member of a gang starts, or none holds anything.
 *
 * esl_gang_reserve carves room for `members` tasks, each needing `per_member` (physical
 * names only, e.g. CPU=1), out of chosen nodes in ONE atomic batch of backed ephemeral
 * resources (esc_batch_set_backed): on each chosen node the resource "<ns>/<name>" gets
 * capacity k (members placed there) backed by per_member, so the node moves k x
 * per_member out of its available physical resources. Once every chosen node reports
 * its part carved, the gang is reserved: each member then requests "<ns>/<name>"=1
 * (esl_gang_request) and nothing else, and the plain scheduler places it on a node
 * with a carved slot. An attempt whose carves do not all complete within its time is
 * rolled back by one batch delete (nothing stays carved) and retried after a random
 * backoff until the deadline: competing gangs never deadlock (every attempt ends) and
 * never leak (every failed attempt is deleted; a job's resources also go with the
 * job). See docs/esl.md for placement, livelock and the ghost-task variant. */
typedef struct esl_gang esl_gang;

typedef struct {
    int timeout_ms;     /* the whole reservation, retries included (0: 10000) */
    /* How long one attempt waits for its carves before it rolls back and retries after
     * a random backoff (0: a quarter of timeout_ms, at least 100 ms). */
    int attempt_ms;
    bool pack;          /* fill nodes one after another instead of round-robin */
    /* Ghost variant only: the ghost program (NULL: escher-gang-ghost in
     * $ESCHER_BIN_DIR, else on $PATH). */
    const char *ghost_program;
} esl_gang_opts;

/* Reserves a gang (see above) named `name` (a short name, unique among the client's
 * live gangs and resources) of `members` members. On ESC_OK *out is the reservation
 * (the caller releases it with esl_gang_release). Returns INVALID_ARGUMENT for a bad
 * name, no members or a per_member entry that is not physical; FAILED_PRECONDITION
 * when the name is in use or the alive nodes could never hold the gang (their total
 * physical capacity is too small); DEADLINE_EXCEEDED (nothing left reserved) when no
 * attempt completed in time; or a call's code. opts may be NULL (defaults). */
int esl_gang_reserve_opts(esc_client *c, const char *name, unsigned members,
                          const esl_request *per_member, const esl_gang_opts *opts,
                          esl_gang **out, esc_status *st);

/* esl_gang_reserve_opts with timeout_ms and the other options at their defaults. */
int esl_gang_reserve(esc_client *c, const char *name, unsigned members,
                     const esl_request *per_member, int timeout_ms, esl_gang **out,
                     esc_status *st);

/* The ghost-task variant (the paper's application-level gang, for comparison): one
 * ghost task per member, placed by the plain scheduler with per_member; each ghost
 * reports its node in the KV store and waits. When all are placed, one batch of backed
 * resources is set on their nodes (pending: the ghosts hold the physical resources)
 * and the ghosts are told to exit: a ghost's release carves its place into the gang
 * resource before the raylet admits anything else, so no other task can take it.
 * Same result and same release as esl_gang_reserve; on timeout the ghosts are told to
 * exit and the batch (if any) is deleted. The ghosts are command tasks of the
 * client's job (opts->ghost_program). */
int esl_gang_reserve_ghost(esc_client *c, const char *name, unsigned members,
                           const esl_request *per_member, const esl_gang_opts *opts,
                           esl_gang **out, esc_status *st);

/* What each member task requests: "<ns>/<name>"=1 (owned by the gang). */
const esl_request *esl_gang_request(const esl_gang *g);

/* Number of chosen nodes, and node i's id with how many members it holds (*members
 * may be NULL); strings owned by the gang. */
size_t esl_gang_nnodes(const esl_gang *g);
const char *esl_gang_node(const esl_gang *g, size_t i, unsigned *members);

/* Attempts the reservation took (1 when the first one completed). */
unsigned esl_gang_attempts(const esl_gang *g);

/* Deletes the gang's resources (one batch: members still running keep their slot
 * until they end, then the physical resources go back), waits until the nodes applied
 * the delete (so the name is free again) and frees g (always, also on error; NULL is
 * fine). Returns ESC_OK or the delete's (or the wait's) code. */
int esl_gang_release(esc_client *c, esl_gang *g, esc_status *st);

#ifdef __cplusplus
}
#endif

#endif
