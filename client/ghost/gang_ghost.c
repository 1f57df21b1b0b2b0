/* gang_ghost.c: escher-gang-ghost, a ghost task of the ESL ghost-task gang variant
 * (client/esl_gang_ghost.c).
 *
 * Usage: escher-gang-ghost NAME INDEX DEADLINE_WALL_MS
 * Run by escher as a command task of the job that reserves the gang, holding one
 * member's resources. It joins the job, reports its node under KV key
 * "<NAME>.ghost.<INDEX>", and waits until the key "<NAME>.go" exists (the gang's
 * backed resources are committed on the ghosts' nodes) or the deadline passes
 * (wall clock, ms since the epoch). Exiting releases its resources, which the raylet
 * then carves into the gang resource before it admits anything else. Exits 0, or 1
 * when it could not join or report. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escher/escher.h"
#include "version.h"

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The go key, as a watch of it tells (its snapshot has the key when it exists). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *go;
    bool seen;
} go_wait;

static void on_event(void *ud, const esc_event *ev)
{
    go_wait *g = ud;
    if (ev->kind != ESC_EVENT_KV || ev->deleted || strcmp(ev->key, g->go) != 0)
        return;
    pthread_mutex_lock(&g->mu);
    g->seen = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Waits for the go key until the deadline (wall clock). */
static void wait_go(esc_client *c, const char *go, double deadline)
{
    go_wait g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, go, false};
    esc_kv_filter kv = {.prefix = go};
    esc_watch_filter f = {.kv = &kv, .nkv = 1};
    esc_watch *w = NULL;
    esc_status st;
    if (esc_subscribe(c, &f, on_event, &g, &w, &st) != ESC_OK) {
        fprintf(stderr, "escher-gang-ghost: watch: %s\n", st.message);
        return;
    }
    struct timespec until = {(time_t)(deadline / 1e3),
                             (long)((deadline - (time_t)(deadline / 1e3) * 1e3) * 1e6)};
    pthread_mutex_lock(&g.mu);
    while (!g.seen && pthread_cond_timedwait(&g.cv, &g.mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&g.mu);
    esc_unsubscribe(w);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("escher-gang-ghost %s\n", ESC_VERSION);
        return 0;
    }
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: escher-gang-ghost NAME INDEX DEADLINE_WALL_MS\n"
               "The ghost task of a gang reservation (started as a task by the ESL); it is\n"
               "not meant to be run by hand.\n");
        return 0;
    }
    if (argc != 4) {
        fprintf(stderr, "usage: escher-gang-ghost NAME INDEX DEADLINE_WALL_MS\n");
        return 2;
    }
    double deadline = atof(argv[3]);
    if (wall_ms() >= deadline)
        return 0;    /* started after the reservation gave up */
    esc_connect_opts o = {.short_lived = true};
    esc_client *c = NULL;
    esc_status st;
    if (esc_connect(&o, &c, &st) != ESC_OK) {
        fprintf(stderr, "escher-gang-ghost: connect: %s\n", st.message);
        return 1;
    }
    char key[256], go[256];
    snprintf(key, sizeof key, "%s.ghost.%s", argv[1], argv[2]);
    snprintf(go, sizeof go, "%s.go", argv[1]);
    const char *node = esc_client_node_id(c);
    int rc = esc_kv_put(c, NULL, key, node, strlen(node), true, NULL, &st);
    if (rc == ESC_OK)
        wait_go(c, go, deadline);
    else
        fprintf(stderr, "escher-gang-ghost: report: %s\n", st.message);
    esc_kv_del(c, NULL, key, NULL, NULL);
    esc_disconnect(c);
    return rc == ESC_OK ? 0 : 1;
}
