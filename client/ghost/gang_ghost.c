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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escher/escher.h"

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (time_t)(ms / 1e3) * 1e3) * 1e6)};
    nanosleep(&ts, NULL);
}

/* Polls for the go key, backing off from 1 ms to 10 ms, until the deadline. */
static void wait_go(esc_client *c, const char *go, double deadline)
{
    double pause = 1;
    while (wall_ms() < deadline) {
        void *v = NULL;
        size_t len;
        if (esc_kv_get(c, NULL, go, &v, &len, NULL) == ESC_OK) {
            free(v);
            return;
        }
        sleep_ms(pause);
        pause = pause * 2 > 10 ? 10 : pause * 2;
    }
}

int main(int argc, char **argv)
{
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
