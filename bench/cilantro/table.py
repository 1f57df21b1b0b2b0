#!/usr/bin/env python3
"""The evaluation table of docs/cilantro.md: every policy on an environment over several
seeds, mean of each metric (range in brackets when the seeds differ by more than 0.001).

usage: table.py CILANTRO ENV [--seeds 1,2,3] [--hours 6] [--policies all] [--json]

Runs `CILANTRO compare --json` once per seed and prints a markdown table (or, with
--json, the per-seed results and the means as one JSON object).
"""
import argparse
import json
import subprocess
import sys

METRICS = ["social_welfare", "egalitarian_welfare", "njc_fairness",
           "njc_fairness_utility", "useful_usage"]


def run(cilantro, env, seed, hours, policies):
    out = subprocess.run([cilantro, "compare", "--env", env, "--policies", policies,
                          "--seed", str(seed), "--hours", str(hours), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return {p["policy"]: p for p in json.loads(out)["policies"]}


def cell(values):
    mean = sum(values) / len(values)
    lo, hi = min(values), max(values)
    return "%.3f" % mean if hi - lo <= 0.001 else "%.3f (%.3f–%.3f)" % (mean, lo, hi)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cilantro")
    ap.add_argument("env")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--hours", type=float, default=6)
    ap.add_argument("--policies", default="all")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    runs = {s: run(a.cilantro, a.env, s, a.hours, a.policies) for s in seeds}
    order = list(runs[seeds[0]])
    if a.json:
        means = {p: {m: sum(runs[s][p][m] for s in seeds) / len(seeds) for m in METRICS}
                 for p in order}
        json.dump({"seeds": seeds, "hours": a.hours, "runs": runs, "mean": means},
                  sys.stdout)
        print()
        return
    print("| policy | SW | EW | NJC | NJC (utility) | useful usage | decision ms |")
    print("|---|---|---|---|---|---|---|")
    for p in order:
        cells = [cell([runs[s][p][m] for s in seeds]) for m in METRICS]
        ms = sorted(runs[s][p]["alloc_ms_median"] for s in seeds)[len(seeds) // 2]
        print("| %s | %s | %.2f |" % (p, " | ".join(cells), ms))


if __name__ == "__main__":
    main()
