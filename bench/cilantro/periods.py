#!/usr/bin/env python3
"""Mean of one metric per period of a run, from the per-round series of
`cilantro simulate --json` (exact, unlike the smoothed series of `cilantro plot`).

usage: periods.py CILANTRO ENV --policies a,b,c [--seed 1] [--hours 6]
                  [--metric egalitarian_welfare] [--cuts 0,0.25,0.5,1,1.5,3,6]

Prints, per policy, the 6-hour mean and the mean over each period [cut_i, cut_i+1) in
hours (round i covers [i, i+1) * round length, counted in the period where it starts).
"""
import argparse
import json
import subprocess


def series(cilantro, env, policy, seed, hours, metric):
    out = subprocess.run([cilantro, "simulate", "--env", env, "--policy", policy, "--seed",
                          str(seed), "--hours", str(hours), "--json"],
                         check=True, capture_output=True, text=True).stdout
    d = json.loads(out)
    return d[metric], d["series"][metric], hours / d["rounds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cilantro")
    ap.add_argument("env")
    ap.add_argument("--policies", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hours", type=float, default=6)
    ap.add_argument("--metric", default="egalitarian_welfare")
    ap.add_argument("--cuts", default="0,0.25,0.5,1,1.5,3,6")
    a = ap.parse_args()
    cuts = [float(c) for c in a.cuts.split(",")]
    heads = ["%g-%g h" % (lo, hi) for lo, hi in zip(cuts, cuts[1:])]
    print("| policy | mean | " + " | ".join(heads) + " |")
    print("|---|---|" + "---|" * len(heads))
    for p in a.policies.split(","):
        mean, s, round_h = series(a.cilantro, a.env, p, a.seed, a.hours, a.metric)
        cells = []
        for lo, hi in zip(cuts, cuts[1:]):
            v = [x for i, x in enumerate(s) if lo - 1e-9 <= i * round_h < hi - 1e-9]
            cells.append("%.3f" % (sum(v) / len(v)) if v else "-")
        print("| %s | %.3f | %s |" % (p, mean, " | ".join(cells)))


if __name__ == "__main__":
    main()
