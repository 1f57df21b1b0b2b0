/* esl_gang_internal.h: what the two gang variants (esl_gang.c, esl_gang_ghost.c) share. */
#ifndef ESL_GANG_INTERNAL_H
#define ESL_GANG_INTERNAL_H

#include "escher/esl.h"

struct esl_gang {
    char *name;           /* short name of the gang resource */
    esl_request request;  /* "<ns>/<name>"=1 */
    char **node_ids;      /* chosen nodes, with counts[i] members each */
    unsigned *counts;
    size_t nnodes;
    unsigned attempts;
    bool ghost;           /* made by the ghost variant */
};

/* Ghost variant: removes the gang's "<name>.go" KV key. */
void gang_ghost_forget(esc_client *c, const esl_gang *g);

/* Randomness for node order and backoff (per thread, seeded from the clock). */
unsigned gang_rand(void);
double gang_now_ms(void);
/* The pause between two attempts of a reservation (the randomized retry backoff): the
 * one wait in the gangs that is not for an event. */
void gang_backoff_pause(double ms);
/* Waits for an event of w counted after mark, until deadline (gang_now_ms clock).
 * Returns whether one came. */
struct esc_changes;
bool gang_wait_change(struct esc_changes *w, uint64_t mark, double deadline);

/* Checks the arguments of a reservation (ESC_OK or INVALID_ARGUMENT). */
int gang_check_args(esc_client *c, const char *name, unsigned members,
                    const esl_request *per_member, esc_status *st);
/* Defaults filled in. */
void gang_resolve_opts(const esl_gang_opts *in, esl_gang_opts *out);

/* A new gang named name, no nodes yet; gang_free frees it. */
esl_gang *gang_new(esc_client *c, const char *name);
void gang_free(esl_gang *g);
void gang_free_nodes(esl_gang *g);

/* Chooses nodes for members (fills node_ids/counts). check_name: fail when the name
 * exists already. */
int gang_place(esc_client *c, esl_gang *g, unsigned members, const esl_request *pm, bool pack,
               bool check_name, esc_status *st);
/* One batch of backed SETs for the chosen nodes. */
int gang_commit(esc_client *c, const esl_gang *g, const esl_request *pm, uint64_t *seq,
                esc_status *st);
/* Waits (until deadline, gang_now_ms clock) for seq applied and every part carved. */
int gang_wait_carved(esc_client *c, const esl_gang *g, uint64_t seq, double deadline,
                     esc_status *st);
/* Deletes the gang resource on the chosen nodes (one batch; *seq, when not NULL, gets
 * its sequence number, 0 when it went node by node). */
int gang_undo(esc_client *c, const esl_gang *g, uint64_t *seq, esc_status *st);

#endif
