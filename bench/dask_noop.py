#!/usr/bin/env python3
"""dask_noop.py: the no-op task workloads of bench/tasks on Dask distributed.

Started by bench/tasks (or by hand) with Debian's python3-distributed
(bench/setup-dask.sh installs it). A LocalCluster of --workers worker processes, one
thread each (processes=True, threads_per_worker=1), on this machine; one client. Prints
one JSON object per line, "system": "dask", with the keys of bench/tasks:

  sync_rtt          submit one no-op, wait for its result, repeated: per_s
  async_throughput  submit N no-ops (client.submit, one call per task, like
                    esc_task_submit), then gather them all: per_s
  noop_makespan     the same burst of N, reported as makespan_s with nodes = workers

Each figure is the median of --reps runs (min and max alongside).

Usage: dask_noop.py [--workers W] [--tasks N] [--sync-tasks M] [--reps R]
                    [--what sync,async,makespan]
"""
import argparse
import json
import logging
import statistics
import sys
import time


def noop(i):
    return None


def burst(client, n):
    t0 = time.perf_counter()
    futs = [client.submit(noop, i, pure=False) for i in range(n)]
    client.gather(futs)
    s = time.perf_counter() - t0
    del futs
    return s


def sync(client, m):
    t0 = time.perf_counter()
    for i in range(m):
        client.submit(noop, i, pure=False).result()
    return time.perf_counter() - t0


def emit(obj):
    print(json.dumps(obj), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--sync-tasks", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--what", default="sync,async,makespan")
    a = ap.parse_args()
    what = set(a.what.split(","))

    from distributed import Client, LocalCluster
    import distributed

    cluster = LocalCluster(n_workers=a.workers, processes=True, threads_per_worker=1,
                           dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster)
    client.wait_for_workers(a.workers)
    client.gather([client.submit(noop, i, pure=False) for i in range(200)])  # warm up

    common = {"system": "dask", "version": distributed.__version__,
              "workers": a.workers, "runs": a.reps}
    if "sync" in what:
        t = [sync(client, a.sync_tasks) for _ in range(a.reps)]
        rates = sorted(a.sync_tasks / s for s in t)
        emit({"bench": "sync_rtt", **common, "tasks": a.sync_tasks,
              "per_s": round(statistics.median(rates), 1),
              "min_per_s": round(rates[0], 1), "max_per_s": round(rates[-1], 1)})
    if "async" in what or "makespan" in what:
        t = sorted(burst(client, a.tasks) for _ in range(a.reps))
        if "async" in what:
            rates = sorted(a.tasks / s for s in t)
            emit({"bench": "async_throughput", **common, "tasks": a.tasks,
                  "per_s": round(statistics.median(rates), 1),
                  "min_per_s": round(rates[0], 1), "max_per_s": round(rates[-1], 1)})
        if "makespan" in what:
            emit({"bench": "noop_makespan", **common, "nodes": a.workers,
                  "ephemeral_resources": 0, "tasks": a.tasks,
                  "makespan_s": round(statistics.median(t), 3),
                  "min_s": round(t[0], 3), "max_s": round(t[-1], 3)})
    client.close()
    cluster.close()


if __name__ == "__main__":
    sys.exit(main())
