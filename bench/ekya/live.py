#!/usr/bin/env python3
"""live.py BUILD [--streams 10] [--nodes 4] [--windows 5] [--window 8] [--device-cpus 0.2]
          [--devices 1,2] [--uniform-share 0.5] [--epochs 15]

Ekya live on a loopback cluster of NODES raylets (one CPU each, in a temporary session):
for each number of devices per node, the thief and the uniform baseline with each
configuration of the `small` set (EPOCHS epochs, inference share UNIFORM_SHARE), each one
`ekya run --cluster` of STREAMS streams. Prints one JSON line per run (accuracy, the
simulator's prediction for the same profiles and scheduler, reallocation latency,
runtime overhead) and a last line comparing the thief with the best uniform per device
count. Every run's full summary is kept in the JSON lines."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from loopback import start_cluster, stop_cluster  # noqa: E402

CONFIGS = ("w128-all-f1-b16", "w128-last-f0.5-b64", "w32-all-f1-b32", "w32-last-f0.1-b32")
# --configs picks some of them (the best two of a full sweep, to save time)


def run(ekya, env, a, devices, scheduler):
    cmd = [ekya, "run", "--cluster", "--json", "--streams", str(a.streams), "--windows",
           str(a.windows), "--window", str(a.window), "--device-cpus", str(a.device_cpus),
           "--node-devices", str(devices), "--scheduler", scheduler, "--seed", str(a.seed)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("live.py: %s failed: %s" % (" ".join(cmd), p.stderr.strip().splitlines()[-1:]))
    d = json.loads(p.stdout)
    live = d["live"]
    return {"devices_per_node": devices, "devices": devices * a.nodes, "scheduler": scheduler,
            "mean_accuracy": d["mean_accuracy"],
            "simulated_mean_accuracy": live["simulated_mean_accuracy"],
            "live_minus_simulated": d["mean_accuracy"] - live["simulated_mean_accuracy"],
            "reallocation_ms_median": live["reallocation_ms_median"],
            "reallocation_ms_max": live["reallocation_ms_max"],
            "overhead_fraction_median": live["overhead_fraction_median"],
            "profiling_seconds_median": live["profiling_seconds_median"],
            "completions": d["completions"], "summary": d}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--streams", type=int, default=10)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--window", type=float, default=8)
    ap.add_argument("--device-cpus", type=float, default=0.2)
    ap.add_argument("--devices", default="1,2")
    ap.add_argument("--uniform-share", type=float, default=0.5)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    a = ap.parse_args()
    esc = os.path.join(a.build, "client", "escher")
    ekya = os.path.join(a.build, "apps", "ekya", "ekya")
    root = tempfile.mkdtemp(prefix="escher-bench-ekya-")
    env = start_cluster(esc, root, a.nodes)
    best = {}
    try:
        for devices in [int(x) for x in a.devices.split(",")]:
            schedulers = ["thief"] + ["uniform:%s:%d:%g" % (c, a.epochs, a.uniform_share)
                                      for c in a.configs.split(",")]
            for s in schedulers:
                r = run(ekya, env, a, devices, s)
                line = dict(r)
                del line["summary"]
                print(json.dumps(line), flush=True)
                key = (devices, "thief" if s == "thief" else "uniform")
                if key not in best or r["mean_accuracy"] > best[key]["mean_accuracy"]:
                    best[key] = r
    finally:
        stop_cluster(esc, root, env)
    out = []
    for devices in sorted({k[0] for k in best}):
        t, u = best[(devices, "thief")], best[(devices, "uniform")]
        out.append({"devices": devices * a.nodes, "thief": t["mean_accuracy"],
                    "best_uniform": u["mean_accuracy"], "best_uniform_scheduler": u["scheduler"],
                    "thief_minus_best_uniform": t["mean_accuracy"] - u["mean_accuracy"]})
    print(json.dumps({"streams": a.streams, "nodes": a.nodes, "window": a.window,
                      "device_cpus": a.device_cpus, "comparison": out}))


if __name__ == "__main__":
    main()
