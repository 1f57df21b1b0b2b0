/* ekya/live.h: `ekya run --cluster`: the thief's decisions carried out on a running escher
 * cluster, in wall-clock time (docs/ekya.md, "Live runs").
 *
 * Every stream lives on one node, with an inference actor and a training actor there.
 * The stream's shares are two ephemeral resources of the driver's namespace on that node,
 * `<ns>/s<i>.infer` and `<ns>/s<i>.train`, backed by the node's GPUs (one device = one
 * GPU) or, on a node without GPUs, by `device_cpus` CPUs per device; each actor holds all
 * of its resource, so escher's CPU quota (or GPU share) enforces the decided share. Each
 * node is planned on its own by one scheduler over its G devices and its streams. Per
 * window: the driver makes the streams' frames and puts them as objects; each node's
 * micro-profiling runs as tasks (spread over the cluster); every decision (the window
 * start, each retraining completion) is one atomic batch of capacities per node, then
 * the actors are resized to them; completions are events (the epoch calls' results),
 * never a clock of Ekya's. A stream whose node dies moves, at the next window start, to
 * the alive node with the fewest streams per device and goes on from its last deployed
 * model (the driver keeps a copy of every deployed model).
 */
#ifndef EKYA_LIVE_H
#define EKYA_LIVE_H

#include <stdint.h>
#include <stdio.h>

#include "ekya/drive.h"

typedef struct {
    const char *address;   /* GCS "host:port"; NULL: the local session's */
    const char *namespace_;/* the driver's namespace (default "ekya") */
    double node_devices;   /* devices of a node without GPUs (default 1) */
    double device_cpus;    /* CPUs one device stands for there (default 1) */
    double profile_cpus;   /* CPU each micro-profiling task holds (default 0.25) */
    double latency;        /* an answer counts for its frame if ready this many seconds
                              after the frame arrived (default 0.01) */
    int max_nodes;         /* use at most this many alive nodes (0: all) */
    int streams, windows, images;
    uint64_t seed;
    const char *configs, *scheduler;
    ekya_params prm;       /* gpus is not used: each node's G is its devices */
    FILE *decisions;       /* JSON lines of every step, or NULL */
    int json;
} ekya_live_opts;

/* Sets the defaults above (and ekya_cli_params_default's) in *o. */
void ekya_live_opts_default(ekya_live_opts *o);

/* Runs the whole live run and prints its progress (a line per window, on stderr) and its
 * summary (text, or one JSON object with o->json, on stdout). Returns 0, or -1 with a
 * one-line message in err. */
int ekya_live_run(const ekya_live_opts *o, char *err, size_t errlen);

#endif
