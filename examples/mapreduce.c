/* mapreduce.c: word count over chunks spread across the nodes, with and without data
 * locality (esl_locality).
 *
 * One chunk generator task per chunk, pinned round-robin to the alive nodes (each
 * raylet's static resource node:<ip>), leaves its chunk in that node's object store. Then
 * one map task per chunk counts its words — with locality it carries the ESL locality
 * request of its chunk and runs where the chunk is; without, it carries nothing and runs
 * on the driver's node, whose raylet pulls the chunk over the network. The driver sums
 * the 64 counts of every map (the reduce) and checks the total against the chunk sizes.
 *
 * Prints one JSON line per run: {"locality": true|false, "chunks", "chunk_bytes",
 * "makespan_s" (maps and reduce), "cross_node_bytes" (object bytes the raylets pulled
 * from each other during the run, from their store statistics), "words"}.
 *
 * Usage: mapreduce [--chunks K] [--chunk-mb M] [--runs R] [--locality true|false|both]
 * The cluster comes from the usual places ($ESCHER_ADDRESS, the session). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "escher/esl.h"
#include "example_common.h"

typedef struct {
    int chunks;
    long long chunk_bytes;
    int runs;
    bool with, without;
} options;

static char LIB[3100];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The alive nodes' ids and IPs (from their node:<ip> resource). */
static int nodes_of(esc_client *c, char ids[][80], char ips[][64], int max, esc_status *st)
{
    esc_cluster_status *s = NULL;
    if (esc_get_cluster_status(c, &s, st) != ESC_OK)
        return -1;
    int n = 0;
    for (size_t i = 0; i < s->nnodes && n < max; i++) {
        if (strcmp(s->nodes[i].state, "ALIVE"))
            continue;
        for (size_t k = 0; k < s->nodes[i].nresources; k++) {
            const char *name = s->nodes[i].resources[k].name;
            if (!strncmp(name, "node:", 5)) {
                snprintf(ids[n], 80, "%s", s->nodes[i].id);
                snprintf(ips[n], 64, "%s", name + 5);
                n++;
                break;
            }
        }
    }
    esc_cluster_status_free(s);
    return n;
}

/* Object bytes all nodes have pulled from each other so far. */
static long long pulled(esc_client *c, char ids[][80], int n)
{
    long long total = 0;
    for (int i = 0; i < n; i++) {
        esc_object_store_stats s;
        if (esc_object_store_stats_get(c, ids[i], &s, NULL) == ESC_OK)
            total += (long long)s.pulled_bytes;
    }
    return total;
}

static esc_ref *submit(esc_client *c, const char *fn, const esc_task_arg *arg,
                       const esc_amount *res, size_t nres, esc_status *st)
{
    esc_task_spec spec = {.library = LIB, .symbol = fn, .args = arg, .nargs = 1,
                          .resources = res, .nresources = nres};
    esc_ref *r = NULL;
    return esc_task_submit(c, &spec, &r, NULL, st) == ESC_OK ? r : NULL;
}

/* Makes the chunks, chunk i on node i mod n. */
static int make_chunks(esc_client *c, const options *o, char ips[][64], int n, esc_ref **chunk,
                       esc_status *st)
{
    for (int i = 0; i < o->chunks; i++) {
        char pin[96], a[64];
        snprintf(pin, sizeof pin, "node:%s", ips[i % n]);
        snprintf(a, sizeof a, "%d %lld", i + 1, o->chunk_bytes);
        esc_amount where = {.name = pin, .value = ESC_QTY(0.001)};
        esc_task_arg arg = {.data = a, .len = strlen(a)};
        if (!(chunk[i] = submit(c, "wc_chunk", &arg, &where, 1, st)))
            return -1;
    }
    /* Made before the timed part: waiting for them here is waiting for their nodes. */
    bool *ready = calloc((size_t)o->chunks, sizeof *ready);
    size_t nready = 0;
    int rc = esc_wait(c, (const esc_ref *const *)chunk, (size_t)o->chunks, (size_t)o->chunks,
                      600000, ready, &nready, st);
    free(ready);
    return rc == ESC_OK && nready == (size_t)o->chunks ? 0 : -1;
}

/* The maps (with or without locality) and the reduce; returns the words counted. */
static long long map_reduce(esc_client *c, const options *o, esc_ref **chunk, bool locality,
                            esc_status *st)
{
    esc_ref **maps = calloc((size_t)o->chunks, sizeof *maps);
    esl_policy **near = calloc((size_t)o->chunks, sizeof *near);
    long long words = -1;
    for (int i = 0; i < o->chunks; i++) {
        esc_task_arg arg = {.ref = chunk[i]};
        const esl_request *req = NULL;
        if (locality) {
            char name[64];
            snprintf(name, sizeof name, "mr_chunk_%d", i);
            if (esl_locality(c, name, chunk[i], &near[i], st) != ESC_OK)
                goto out;
            req = esl_policy_request(near[i]);
        }
        if (!(maps[i] = submit(c, "wc_map", &arg, req ? req->v : NULL, req ? req->n : 0, st)))
            goto out;
    }
    words = 0;
    for (int i = 0; i < o->chunks; i++) {
        void *v = NULL;
        size_t len;
        if (esc_get(c, maps[i], 600000, &v, &len, st) != ESC_OK) {
            words = -1;
            goto out;
        }
        char *p = v;
        for (int k = 0; k < 64; k++)
            words += strtoll(p, &p, 10);
        free(v);
    }
out:
    for (int i = 0; i < o->chunks; i++) {
        esc_ref_free(maps[i]);
        esl_policy_free(c, near[i], NULL);
    }
    free(maps);
    free(near);
    return words;
}

static int run(esc_client *c, const options *o, char ids[][80], char ips[][64], int n,
               bool locality)
{
    esc_status st;
    esc_ref **chunk = calloc((size_t)o->chunks, sizeof *chunk);
    int rc = 1;
    if (make_chunks(c, o, ips, n, chunk, &st) != 0) {
        example_fail("mapreduce", "chunks", &st);
        goto out;
    }
    long long before = pulled(c, ids, n);
    double t0 = now_s();
    long long words = map_reduce(c, o, chunk, locality, &st);
    double t1 = now_s();
    if (words < 0) {
        example_fail("mapreduce", "map/reduce", &st);
        goto out;
    }
    long long moved = pulled(c, ids, n) - before;
    long long want = (long long)o->chunks * (o->chunk_bytes / 4); /* "wNN " per word */
    printf("{\"locality\": %s, \"chunks\": %d, \"chunk_bytes\": %lld, \"makespan_s\": %.4f, "
           "\"cross_node_bytes\": %lld, \"words\": %lld}\n",
           locality ? "true" : "false", o->chunks, o->chunk_bytes, t1 - t0, moved, words);
    fflush(stdout);
    if (words != want) {
        fprintf(stderr, "mapreduce: counted %lld words, want %lld\n", words, want);
        goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < o->chunks; i++) {
        if (chunk[i])
            esc_ref_release(c, chunk[i], NULL);
        esc_ref_free(chunk[i]);
    }
    free(chunk);
    return rc;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.chunks = 6, .chunk_bytes = 8 << 20, .runs = 1, .with = true, .without = true};
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--chunks") && v)
            o->chunks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--chunk-mb") && v)
            o->chunk_bytes = atoll(argv[++i]) << 20;
        else if (!strcmp(argv[i], "--runs") && v)
            o->runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--locality") && v) {
            o->with = !strcmp(v, "true") || !strcmp(v, "both");
            o->without = !strcmp(v, "false") || !strcmp(v, "both");
            i++;
        } else {
            fprintf(stderr, "usage: mapreduce [--chunks K] [--chunk-mb M] [--runs R] "
                            "[--locality true|false|both]\n");
            return 2;
        }
    }
    if (o->chunks < 1 || o->chunks > 256 || o->chunk_bytes < 4 || o->runs < 1 ||
        (!o->with && !o->without)) {
        fprintf(stderr, "mapreduce: --chunks 1..256, --chunk-mb >= 1, --runs >= 1\n");
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    example_library(LIB, sizeof LIB);
    esc_client *c;
    esc_status st;
    esc_connect_opts opts = {.namespace_ = "mapreduce"};
    if (esc_connect(&opts, &c, &st) != ESC_OK)
        return example_fail("mapreduce", "connect", &st);
    char ids[64][80], ips[64][64];
    int n = nodes_of(c, ids, ips, 64, &st);
    if (n <= 0) {
        esc_disconnect(c);
        return n < 0 ? example_fail("mapreduce", "status", &st) : 1;
    }
    for (int r = 0; r < o.runs && rc == 0; r++) {
        if (o.without)
            rc = run(c, &o, ids, ips, n, false);
        if (o.with && rc == 0)
            rc = run(c, &o, ids, ips, n, true);
    }
    esc_disconnect(c);
    return rc;
}
