#!/usr/bin/env python3
"""live.py: Cilantro live on escher, measured (docs/cilantro.md, "Live evaluation").

  live.py run BUILD CONFIG OUT --minutes M --policies POLICY@CORES,...
      One loopback cluster of 3 raylets (one CPU each) per policy, all at once, each
      pinned with taskset to its CORES (a CPU list: the policies that run side by side
      get disjoint cores, so each cluster has its cores to itself and they share the
      machine's other noise); `cilantro serve --config CONFIG` with that policy for M
      minutes, its round lines in OUT/POLICY.out and its log in OUT/POLICY.log. Then the
      summary below.
  live.py summary LOG...
      Per log: the means over rounds 2.. of social welfare, egalitarian welfare, NJC
      fairness, useful usage and each tenant's utility and allocation; the medians of the
      round overhead (decide, apply on every node) and of the feedback latency. One JSON
      line per log.
  live.py sim BUILD CONFIG OUT LOG...
      The same tenants in the simulator: each tenant's curve is fitted from the rounds of
      every LOG (reward against CPUs per unit load, in bins, made non-decreasing), written
      as a profile CSV under OUT/sim/, and `cilantro compare` runs the logs' policies on
      that environment for the logs' duration. Prints one JSON line per log with the
      live and simulated metrics, then the orderings of both. Live NJC fairness counts
      the config's demands; for the ordering it is recomputed with the simulator's
      (from the fitted curves: live_njc_fairness_curve).
"""
import argparse
import gzip
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from loopback import start_cluster, stop_cluster  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "cilantro",
                    "data")
METRICS = ("social_welfare", "egalitarian_welfare", "njc_fairness", "useful_usage")


def median(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def mean(v):
    v = [x for x in v if x is not None]
    return sum(v) / len(v) if v else None


def read_log(path):
    f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)  # results/ keeps .gz
    rows = [json.loads(line) for line in f if line.strip()]
    if not rows:
        sys.exit("live.py: %s: no rounds" % path)
    return rows


def summarize(path):
    rows = read_log(path)
    scored = rows[1:]  # round 1 runs on the equal start before any feedback
    out = {"log": path, "policy": rows[0]["policy"], "rounds": len(rows),
           "minutes": rows[-1]["t"] / 60}
    for k in METRICS:
        out[k] = mean([r[k] for r in scored])
    out["decide_ms_median"] = median([r["decide_ms"] for r in rows])
    out["apply_ms_median"] = median([r["apply_ms"] for r in rows])
    out["apply_ms_max"] = max(r["apply_ms"] for r in rows)
    out["feedback_ms_median"] = median([r["feedback_ms"] for r in rows])
    out["tenants"] = {
        t: {"utility": mean([r["tenants"][t]["utility"] for r in scored]),
            "reward": mean([r["tenants"][t]["reward"] for r in scored]),
            "alloc": mean([r["tenants"][t]["alloc"] for r in scored])}
        for t in rows[0]["tenants"]}
    return out


def run_policy(a, policy, cores, results):
    esc = os.path.join(a.build, "client", "escher")
    cil = os.path.join(a.build, "apps", "cilantro", "cilantro")
    cfg = json.load(open(a.config))
    cfg["policy"] = policy
    cfg["rounds"] = int(round(a.minutes * 60 / cfg.get("round_s", 5)))
    root = tempfile.mkdtemp(prefix="cilantro-live-%s-" % policy)
    path = os.path.join(root, "cfg.json")
    json.dump(cfg, open(path, "w"))
    env = start_cluster(esc, root, 3, cores=cores)
    env["CILANTRO_DATA_DIR"] = DATA  # a copied build dir does not find the source tree
    try:
        with open(os.path.join(a.out, policy + ".out"), "w") as out:
            p = subprocess.run(["taskset", "-c", cores, cil, "serve", "--cluster", "--config",
                                path, "--log", os.path.join(a.out, policy + ".log")],
                               env=env, stdout=out, stderr=subprocess.PIPE, text=True)
        results[policy] = p.returncode, p.stderr.strip().splitlines()[-3:]
    finally:
        stop_cluster(esc, root, env)
        if a.keep:  # the session directories: daemons' and jobs' logs
            print("live.py: %s kept in %s" % (policy, root), file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


def cmd_run(a):
    os.makedirs(a.out, exist_ok=True)
    pairs = [x.split("@") for x in a.policies.split(",")]
    results, threads = {}, []
    for policy, cores in pairs:
        th = threading.Thread(target=run_policy, args=(a, policy, cores, results))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    for policy, (rc, err) in results.items():
        if rc != 0:
            sys.exit("live.py: %s: cilantro serve exited %d: %s" % (policy, rc, err))
    for policy, _ in pairs:
        print(json.dumps(summarize(os.path.join(a.out, policy + ".log"))))


def cmd_summary(a):
    for path in a.logs:
        print(json.dumps(summarize(path)))


def isotonic(v):
    """The closest non-decreasing sequence (pool adjacent violators): more CPU never
    lowers a tenant's performance, so dips between bins are noise."""
    blocks = []
    for x in v:
        blocks.append([x, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m2, n2), (m1, n1) = blocks[-2], blocks[-1]
            blocks[-2:] = [[(m2 * n2 + m1 * n1) / (n2 + n1), n2 + n1]]
    return [m for m, n in blocks for _ in range(n)]


def fit_curve(points, bins=8):
    """(x = CPUs per unit load, reward) points -> (grid, ests): bins of equal count."""
    points.sort()
    n = max(1, min(bins, len(points) // 5))
    grid, ests = [], []
    for b in range(n):
        chunk = points[b * len(points) // n:(b + 1) * len(points) // n]
        grid.append(sum(x for x, _ in chunk) / len(chunk))
        ests.append(sum(y for _, y in chunk) / len(chunk))
    return grid, isotonic(ests)


def sim_env(a, logs):
    """The simulator allocates whole CPUs; a live run allocates units of `unit` CPUs. So
    the simulator's CPU is one unit: R = cpus / unit, and the curves' x in units per
    unit load."""
    cfg = json.load(open(a.config))
    unit = cfg.get("unit", 0.1)
    points = {t["name"]: [] for t in cfg["tenants"]}
    for path in logs:
        for r in read_log(path)[1:]:
            for name, x in r["tenants"].items():
                if x["reward"] is not None and x["load"] and x["alloc"] > 0:
                    points[name].append((x["alloc"] / x["load"], x["reward"]))
    d = os.path.join(a.out, "sim")
    os.makedirs(d, exist_ok=True)
    data = DATA
    jobs = []
    for t in cfg["tenants"]:
        if len(points[t["name"]]) < 5:
            sys.exit("live.py: tenant %s has %d scored rounds; too few to fit" %
                     (t["name"], len(points[t["name"]])))
        grid, ests = fit_curve(points[t["name"]])
        csv = os.path.join(d, t["name"] + ".csv")
        with open(csv, "w") as f:
            if t["kind"] == "throughput":  # the simulator's throughput noise model
                f.write("# workload_type=craymltrain\n")
            f.write("grid,ests\n")
            for x, y in zip(grid, ests):
                f.write("%.6g,%.6g\n" % (x / unit, y))
        slo = t["kind"] == "slo"
        trace = t.get("trace", "data:twitter-trace.csv")
        load = ({"trace": trace, "scale": t.get("scale", 1)} if slo else 1)
        jobs.append({"name": t["name"], "curve": {"type": "profile", "file": csv},
                     "load": load, "slo": t.get("target", 0.9),
                     "utility": t.get("utility", "linear"), "weight": t.get("weight", 1)})
    env = {"cpus": int(round(cfg["cpus"] / unit)), "round_s": cfg.get("round_s", 5),
           "report_s": cfg.get("report_s", 1), "jobs": jobs}
    path = os.path.join(d, "env.json")
    json.dump(env, open(path, "w"), indent=1)
    return path, data


def interp(x, grid, ests):
    if x <= grid[0]:
        return ests[0]
    for (x0, y0), (x1, y1) in zip(zip(grid, ests), zip(grid[1:], ests[1:])):
        if x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ests[-1]


def curve_njc(a, env_path, log):
    """A live run's NJC fairness with the simulator's demands: per round, each tenant's
    demand is the least CPU (in units, at most R) at which its fitted curve meets its
    target at the round's load, as the simulator computes it from true curves."""
    cfg = json.load(open(a.config))
    unit, cpus = cfg.get("unit", 0.1), cfg["cpus"]
    env = json.load(open(env_path))
    curves = {}
    for j in env["jobs"]:
        rows = [l.split(",") for l in open(j["curve"]["file"]) if l[0].isdigit()]
        curves[j["name"]] = ([float(r[0]) * unit for r in rows], [float(r[1]) for r in rows],
                             j["slo"], j.get("weight", 1))
    per_round = []
    for r in read_log(log)[1:]:
        alive = {t: x for t, x in r["tenants"].items() if not x["ended"] and x["load"]}
        if not alive:
            continue
        wsum = sum(curves[t][3] for t in alive)
        worst = 0
        for t, x in alive.items():
            grid, ests, slo, w = curves[t]
            d = next((k * unit for k in range(int(round(cpus / unit)) + 1)
                      if interp(k * unit / x["load"], grid, ests) >= slo), cpus)
            e = cpus * w / wsum
            worst = max(worst, max(0, min(d, e) - x["alloc"]) / e)
        per_round.append(1 - worst)
    return mean(per_round)


def cmd_sim(a):
    live = [summarize(p) for p in a.logs]
    env, data = sim_env(a, a.logs)
    for s in live:
        s["njc_fairness_curve"] = curve_njc(a, env, s["log"])
    policies = sorted({s["policy"] for s in live})
    hours = max(s["minutes"] for s in live) / 60
    cil = os.path.join(a.build, "apps", "cilantro", "cilantro")
    p = subprocess.run([cil, "compare", "--env", env, "--policies", ",".join(policies),
                        "--hours", "%.4f" % hours, "--json"], capture_output=True, text=True,
                       env=dict(os.environ, CILANTRO_DATA_DIR=os.path.abspath(data)))
    if p.returncode != 0:
        sys.exit("live.py: cilantro compare: " + p.stderr.strip())
    sim = {r["policy"]: r for r in json.loads(p.stdout)["policies"]}
    for s in live:
        row = {"policy": s["policy"], "log": s["log"]}
        for k in METRICS[:3]:
            row["live_" + k] = s[k]
            row["sim_" + k] = sim[s["policy"]].get(k)
        row["live_njc_fairness_curve"] = s["njc_fairness_curve"]
        print(json.dumps(row))
    order = {}
    for k in METRICS[:3]:
        best_live = {}
        lk = "njc_fairness_curve" if k == "njc_fairness" else k  # the simulator's demands
        for s in live:  # a policy run twice (two sittings): its mean
            best_live.setdefault(s["policy"], []).append(s[lk])
        lv = sorted(policies, key=lambda q: -mean(best_live[q]))
        sv = sorted(policies, key=lambda q: -sim[q][k])
        order[k] = {"live": lv, "sim": sv, "match": lv == sv}
    print(json.dumps({"orderings": order, "env": env}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("build")
    r.add_argument("config")
    r.add_argument("out")
    r.add_argument("--minutes", type=float, default=30)
    r.add_argument("--policies", default="resource-fair@0,cilantro-ew@1")
    r.add_argument("--keep", action="store_true", help="keep the clusters' session directories")
    s = sub.add_parser("summary")
    s.add_argument("logs", nargs="+")
    m = sub.add_parser("sim")
    m.add_argument("build")
    m.add_argument("config")
    m.add_argument("out")
    m.add_argument("logs", nargs="+")
    a = ap.parse_args()
    if a.cmd == "run" and not (a.minutes > 0):
        sys.exit("live.py: --minutes must be positive")
    {"run": cmd_run, "summary": cmd_summary, "sim": cmd_sim}[a.cmd](a)


if __name__ == "__main__":
    main()
