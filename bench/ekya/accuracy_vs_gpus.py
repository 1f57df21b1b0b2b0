#!/usr/bin/env python3
"""accuracy_vs_gpus.py EKYA [PROFILES] [--gpus 0.5,1,2,4,8] [--window 2] [--sample 0.01]

Ekya's evaluation on a retraining profile (default: the real workload's,
apps/ekya/data/real_profiles.csv) under two inference profiles (measured and the
paper's): for every G, the thief (planning with the micro-profiler's predictions),
the thief with perfect predictions, fixedres, noretrain, and the best of every
uniform variant (each configuration x epochs x inference share 0.3/0.5/0.9) chosen in
hindsight per G. Then the GPU saving: how many GPUs the best uniform needs (linear
interpolation between the measured G) to reach the thief's accuracy at each G.
Prints one JSON object. Delta is G/80 at every G (`--delta 0.0125G`); accuracy is
sampled every 0.01 s, 200 samples in a 2-s window as in the paper's 200-s windows."""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "apps", "ekya", "data")
SHARES = (0.3, 0.5, 0.9)


def simulate(ekya, profiles, inference, gpus, window, sample, scheduler):
    """Mean accuracy (0..1) of one `ekya simulate` run."""
    out = subprocess.run(
        [ekya, "simulate", "--profiles", profiles, "--inference-profile", inference,
         "--gpus", str(gpus), "--window", str(window), "--no-carry", "--json",
         "--delta", "0.0125G", "--sample", str(sample), "--scheduler", scheduler],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)["mean_accuracy"]


def oracle_copy(profiles, directory):
    """The profile without its prediction columns: schedulers then plan with the truth."""
    path = os.path.join(directory, "oracle.csv")
    keep = ["stream", "window", "config", "epochs", "start_pct", "end_pct", "gpu_seconds"]
    with open(profiles) as src, open(path, "w", newline="") as dst:
        w = csv.DictWriter(dst, fieldnames=keep, extrasaction="ignore")
        w.writeheader()
        for row in csv.DictReader(src):
            w.writerow(row)
    return path


def uniform_variants(profiles):
    with open(profiles) as f:
        pairs = sorted({(r["config"], r["epochs"]) for r in csv.DictReader(f)})
    return [f"uniform:{c}:{e}:{s}" for c, e in pairs for s in SHARES]


def gpus_to_reach(target, grid, curve):
    """Smallest G (interpolated on the grid) at which curve reaches target, or None."""
    for i, (g, a) in enumerate(zip(grid, curve)):
        if a >= target:
            if i == 0:
                return g
            g0, a0 = grid[i - 1], curve[i - 1]
            return g0 + (g - g0) * (target - a0) / (a - a0)
    return None


def evaluate(ekya, profiles, oracle, inference, grid, window, sample):
    variants = uniform_variants(profiles)
    rows = []
    for g in grid:
        run = lambda p, s: simulate(ekya, p, inference, g, window, sample, s)  # noqa: E731
        best = max((run(profiles, v), v) for v in variants)
        rows.append({"gpus": g, "thief": run(profiles, "thief"),
                     "thief_oracle": run(oracle, "thief"),
                     "fixedres": run(profiles, "fixedres"),
                     "noretrain": run(profiles, "noretrain"),
                     "best_uniform": best[0], "best_uniform_spec": best[1]})
    uni = [r["best_uniform"] for r in rows]
    for r in rows:
        need = gpus_to_reach(r["thief"], grid, uni)
        r["uniform_gpus_for_thief_accuracy"] = need
        r["gpu_saving"] = need / r["gpus"] if need else None
    return rows


def main(argv):
    args = list(argv[1:])
    if not args:
        sys.exit("usage: accuracy_vs_gpus.py EKYA [PROFILES] [--gpus 0.5,1,2,4,8] [--window 2]"
                 " [--sample 0.01]")
    opts = {"--gpus": "0.5,1,2,4,8", "--window": "2", "--sample": "0.01"}
    pos = []
    while args:
        a = args.pop(0)
        if a in opts and args:
            opts[a] = args.pop(0)
        elif a.startswith("--"):
            sys.exit(f"accuracy_vs_gpus.py: unknown or incomplete option '{a}'")
        else:
            pos.append(a)
    ekya = pos[0]
    profiles = pos[1] if len(pos) > 1 else os.path.join(DATA, "real_profiles.csv")
    grid = [float(x) for x in opts["--gpus"].split(",")]
    result = {"profiles": profiles, "window": float(opts["--window"]),
              "sample": float(opts["--sample"]), "delta": "G/80"}
    with tempfile.TemporaryDirectory() as tmp:
        oracle = oracle_copy(profiles, tmp)
        for name in ("real_inference", "inference_paper"):
            inf = os.path.join(DATA, name + ".csv")
            result[name] = evaluate(ekya, profiles, oracle, inf, grid, opts["--window"],
                                    opts["--sample"])
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv)
