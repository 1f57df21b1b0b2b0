#!/usr/bin/env bash
# test_cilantro_live.sh: Cilantro live on a 3-raylet loopback cluster (`cilantro serve`,
# docs/cilantro.md "Live runs"), 3 tenants (two slo, one throughput) under cilantro-ew:
#  - the tenants run as escher jobs granted the controller's namespace;
#  - every round's allocation (the controller's round line) appears as the tenants'
#    capacities cilantro/<tenant>.cpu on every node, split evenly (sampled from
#    `escher status --json`), and every capacity seen is one some round decided;
#  - feedback flows end to end: from round 2 on every round line has a reward from every
#    tenant;
#  - the tenants' workers are held to their allocation: the CPU time of each worker
#    (/proc/<pid>/stat, sampled beside the status) stays within its node's capacity, and
#    the throughput tenant's workers, which would use a whole CPU each, use most of it;
#  - the throughput tenant trains Ekya's MLP: its feedback records (also in its job's
#    log) carry a training loss that falls.
# The cluster runs in a fresh temporary directory; only processes this script started are
# signalled.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
ESC="$BIN_DIR/client/escher"
CIL="$BIN_DIR/apps/cilantro/cilantro"
[ -x "$ESC" ] && [ -x "$CIL" ] && [ -x "$BIN_DIR/apps/cilantro/cilantro-tenant" ] ||
  { echo "test_cilantro_live: no $ESC, $CIL or cilantro-tenant" >&2; exit 1; }

T=$(mktemp -d /tmp/escher-test-cilantro-XXXXXX)
unset ESCHER_TOKEN ESCHER_NODE_ID ESCHER_ADDRESS
export ESCHER_SESSION_DIR="$T/head"
RUN_PID=""

cleanup() {
  local rc=$?
  [ -n "$RUN_PID" ] && kill "$RUN_PID" 2>/dev/null
  if [ "$rc" -ne 0 ]; then
    for f in "$T"/*.err "$T"/out.txt "$T"/out2.txt "$T"/*/logs/raylet.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 15 "$f" >&2; }
    done
    # the tenants' own words (their jobs' logs), while the cluster is still up
    for j in $(cat "$T"/out*.txt 2>/dev/null | awk '$1 == "tenant" && $3 == "job" {print $2 ":" $4}'); do
      echo "--- job log of tenant ${j%%:*} (last lines)" >&2
      timeout 10 "$ESC" job logs "${j#*:}" 2>&1 | grep -v '^{' | tail -n 8 >&2
    done
  fi
  for d in "$T"/n*; do [ -d "$d" ] && ESCHER_SESSION_DIR=$d "$ESC" stop --force >/dev/null 2>&1; done
  "$ESC" stop --force >/dev/null 2>&1 || true
  [ "${KEEP_T:-}" ] || rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="start"
fail() { echo "test_cilantro_live: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $*"; }

step "a head and two nodes, one CPU each"
"$ESC" start --head --port 0 --bind 127.0.0.1 --num-cpus 1 --num-gpus 0 >/dev/null || fail "head"
GCS=$(cat "$T/head/gcs_address")
for i in 2 3; do
  "$ESC" start --address "$GCS" --token "$(cat "$T/head/token")" \
    --daemon-key "$(cat "$T/head/daemon_key")" --bind 127.0.0.1 --session-dir "$T/n$i" \
    --num-cpus 1 --num-gpus 0 >/dev/null || fail "node $i"
done

# train: a smaller model than the defaults (about 4 ms of CPU a step, 50 ms under ASan)
# so that an ASan build still takes enough steps in 18 s; 15000 samples/s is about 0.4 CPU.
cat >"$T/cfg.json" <<'J'
{"namespace": "cilantro", "policy": "cilantro-ew", "round_s": 3, "report_s": 1, "cpus": 1,
 "unit": 0.1, "rounds": 6,
 "tenants": [
  {"name": "web1", "kind": "slo", "work_us": 2000, "slo_ms": 200, "scale": 2, "target": 0.9, "demand": 1},
  {"name": "web2", "kind": "slo", "work_us": 2000, "slo_ms": 200, "scale": 1, "target": 0.9, "demand": 0.5},
  {"name": "train", "kind": "throughput", "batch": 128, "hidden": 256, "target_sps": 15000, "target": 1, "demand": 1}]}
J

step "cilantro serve: 6 rounds of 3 s, status and worker CPU sampled meanwhile"
"$CIL" serve --cluster --config "$T/cfg.json" --log "$T/run.log" >"$T/out.txt" 2>"$T/serve.err" &
RUN_PID=$!
# The sampler: one JSON line per sample {t, status, cpu: {pid: utime+stime ticks}} for the
# workers the controller has named so far, until the controller exits.
python3 - "$ESC" "$T/out.txt" "$RUN_PID" >"$T/samples" 2>"$T/sampler.err" <<'P' &
import json, os, subprocess, sys, time
esc, out, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
def alive():
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False
while alive():
    pids = []
    for line in open(out):
        if line.startswith("tenant ") and " workers:" in line:
            pids += [int(w.split(":")[1]) for w in line.split(" workers:")[1].split()]
    t = time.monotonic()
    st = subprocess.run([esc, "status", "--json"], capture_output=True, text=True)
    cpu = {}
    for p in pids:
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            cpu[p] = int(f[11]) + int(f[12])
        except OSError:
            pass
    if st.returncode == 0:
        print(json.dumps({"t": (t + time.monotonic()) / 2, "status": json.loads(st.stdout),
                          "cpu": cpu}), flush=True)
    time.sleep(0.3)
P
SAMPLER=$!
rc=0
wait "$RUN_PID" || rc=$?
RUN_PID=""
wait "$SAMPLER" || true
[ "$rc" = 0 ] || fail "cilantro serve exited $rc: $(tail -3 "$T/serve.err")"
cat "$T/out.txt"

step "allocations as capacities, feedback from every tenant, CPU held to the allocation"
python3 - "$T/out.txt" "$T/samples" "$(getconf CLK_TCK)" <<'P' || fail "checks"
import json, math, re, sys
out = open(sys.argv[1]).read().splitlines()
samples = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
tck = float(sys.argv[3])
tenants = ["web1", "web2", "train"]
N = 3
assert len(samples) >= 12, f"only {len(samples)} samples"  # two per round at least (ASan: ~0.5 s each)

rounds = [l for l in out if l.startswith("round ")]
assert len(rounds) == 6, f"{len(rounds)} round lines"
allocs = []
for r in rounds:
    a = dict(re.findall(r" (\w+)=([\d.]+)", r.split("|| alloc")[1]))
    allocs.append({k: float(v) for k, v in a.items()})
    assert sum(allocs[-1].values()) <= 1 + 1e-9, r
    # feedback: rewards from every tenant (round 1 may come before a full report)
    for t in tenants:
        m = re.search(rf"\| {t} reward=(\S+) ", r)
        assert m, (t, r)
        if not r.startswith("round 1 "):
            assert m.group(1) != "nan", f"no feedback from {t}: {r}"
            assert 0 <= float(m.group(1)) <= 5, r

def per_node(a):  # the split rule: even over the nodes, floored to 1e-4
    return math.floor(a / N * 1e4 + 1e-6) / 1e4
decided = {t: {per_node(0.3)} | {per_node(a[t]) for a in allocs} for t in tenants}

# every capacity seen was decided; every decision but the last was seen on all nodes
seen = {t: [] for t in tenants}
for s in samples:
    caps = {}
    for node in s["status"]["nodes"]:
        for t in tenants:
            r = node["resources"].get(f"cilantro/{t}.cpu")
            if r is None:
                continue
            cap = round(r["total"], 4)
            assert any(abs(cap - d) < 2e-4 for d in decided[t]), (t, cap, decided[t])
            caps.setdefault(t, set()).add(cap)
    for t, cs in caps.items():
        if len(cs) == 1 and len(s["status"]["nodes"]) == N:
            seen[t].append(cs.pop())
for i, a in enumerate(allocs[:-1]):
    for t in tenants:
        assert any(abs(c - per_node(a[t])) < 2e-4 for c in seen[t]), \
            f"round {i+1}: {t} {per_node(a[t])} per node never seen ({sorted(set(seen[t]))})"

# grants: the controller granted each tenant's job its own names ("<tenant>.") only
g = {(x["prefix"], j) for s in samples for x in s["status"].get("grants", [])
     if x["namespace"] == "cilantro" for j in x["granted_to"]}
assert sorted(p for p, _ in g) == ["train.", "web1.", "web2."], g

# CPU held: per worker, CPU time over the run against the integral of its node's capacity
# (the larger of the two samples' capacities over each interval: a resize lands in it)
workers = {}
for l in out:
    if l.startswith("tenant ") and " workers:" in l:
        t = l.split()[1]
        for w in l.split(" workers:")[1].split():
            node, pid = w.split(":")
            workers[int(pid)] = (t, node)
assert len(workers) == 9, workers
def cap_of(s, t, node):
    for n in s["status"]["nodes"]:
        if n["id"] == node:
            r = n["resources"].get(f"cilantro/{t}.cpu")
            return r["total"] if r else None
    return None
worst = 0
train_ratio = []
for pid, (t, node) in workers.items():
    used = allowed = 0.0
    for a, b in zip(samples, samples[1:]):
        if str(pid) not in a["cpu"] or str(pid) not in b["cpu"]:
            continue
        ca, cb = cap_of(a, t, node), cap_of(b, t, node)
        if ca is None or cb is None:
            continue
        dt = b["t"] - a["t"]
        used += (b["cpu"][str(pid)] - a["cpu"][str(pid)]) / tck
        allowed += max(ca, cb) * dt
    assert allowed > 1, (pid, t, allowed)
    ratio = used / allowed
    worst = max(worst, ratio)
    if t == "train":
        train_ratio.append(round(ratio, 2))
    print(f"  {t} on {node} (pid {pid}): {used:.2f} CPU-s used, {allowed:.2f} allowed ({ratio:.2f})")
    # tolerance: /proc ticks (10 ms), the 100 ms quota period and sample timing
    assert used <= 1.10 * allowed + 0.15, f"{t} pid {pid} used {used:.2f} > {allowed:.2f}"
# not vacuous: the throughput tenant wants a whole CPU per actor and is held to its share
assert min(u for u in train_ratio) >= 0.5, f"train workers used only {train_ratio} of their share"
print(f"ok: {len(samples)} samples, {len(rounds)} rounds, worst CPU used/allowed {worst:.2f}")
P

step "the throughput tenant trained: its records (its job's log) carry a falling loss"
JOBS=$(python3 -c 'import json, sys
ids = set()
for l in open(sys.argv[1]):
    for g in json.loads(l)["status"].get("grants", []):
        ids |= set(g["granted_to"]) if g["namespace"] == "cilantro" else set()
print(" ".join(sorted(ids)))' "$T/samples")
for j in $JOBS; do "$ESC" job logs "$j" 2>/dev/null || true; done >"$T/records"
python3 - "$T/records" <<'P' || fail "training: $(grep -c throughput "$T/records") records"
import json, math, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if '"kind":"throughput"' in l]
loss = [r["loss"] for r in recs if "loss" in r]
cpu = [r["cpu_ms"] for r in recs if "cpu_ms" in r]
assert len(loss) >= 5, recs
assert all(math.isfinite(x) and 0 < x < 5 for x in loss), loss
# the first period starts from a random model (loss ln 10 = 2.30)
assert loss[-1] < loss[0] and min(loss) < 1.5, loss
assert all(x > 0 for x in cpu), cpu
print(f"  loss {loss[0]:.3f} -> {loss[-1]:.3f} over {len(loss)} records; "
      f"CPU per step {min(cpu):.1f}-{max(cpu):.1f} ms")
P

step "the run log: a round per line with the metrics, the overhead and the feedback latency"
python3 - "$T/out.txt" "$T/run.log" <<'P' || fail "log checks"
import json, math, re, sys
rounds = [l for l in open(sys.argv[1]) if l.startswith("round ")]
log = [json.loads(l) for l in open(sys.argv[2])]
assert len(log) == len(rounds) == 6, (len(log), len(rounds))
for i, (o, line) in enumerate(zip(log, rounds)):
    assert o["round"] == i + 1 and o["policy"] == "cilantro-ew", o
    shown = dict(re.findall(r" (\w+)=([\d.]+)", line.split("|| alloc")[1]))
    for t, v in shown.items():
        assert abs(o["tenants"][t]["next_alloc"] - float(v)) < 0.006, (t, o, line)
        if i > 0:  # what was in effect is what the round before decided
            assert abs(o["tenants"][t]["alloc"] - log[i - 1]["tenants"][t]["next_alloc"]) < 1e-9
    assert o["decide_ms"] >= 0 and o["apply_ms"] > 0, o
    if i > 0:
        for k in ("social_welfare", "egalitarian_welfare", "njc_fairness", "useful_usage"):
            assert o[k] is not None and 0 <= o[k] <= 1, (k, o)
        utils = [x["utility"] for x in o["tenants"].values()]
        assert abs(o["egalitarian_welfare"] - min(utils)) < 1e-6, o
        # feedback latency: a record's write to the controller's watch, on one machine
        assert o["feedback_ms"] is not None and 0 < o["feedback_ms"] < 1000, o
med = lambda v: sorted(v)[len(v) // 2]
print(f"ok: decide {med([o['decide_ms'] for o in log]):.2f} ms, apply "
      f"{med([o['apply_ms'] for o in log]):.1f} ms, feedback {med([o['feedback_ms'] for o in log[1:]]):.1f} ms (medians)")
P
if command -v gnuplot >/dev/null; then
  "$CIL" plot --live "$T/run.log" --out "$T/plots" >/dev/null || fail "cilantro plot --live"
  for f in series.tsv welfare.png egalitarian.png fairness.png; do
    [ -s "$T/plots/$f" ] || fail "plot: $f missing"
  done
  grep -q "^# cilantro-ew (live)" "$T/plots/series.tsv" || fail "plot: no live series"
  echo "ok: cilantro plot --live drew the run"
fi
step "a node killed with -9, then a tenant stopped: the split and the shares follow"
# 12 rounds of 2 s. At round 2 the raylet of node n3 is killed (declared dead after the
# GCS's node timeout, 10 s); once the controller says so, web2's job is stopped as an
# operator would. A status snapshot right after round 11's line shows what that round
# applied (round 12 ends the run, and the controller's rows go with its job).
sed -e 's/"rounds": 6/"rounds": 12/' -e 's/"round_s": 3/"round_s": 2/' "$T/cfg.json" >"$T/cfg2.json"
"$CIL" serve --cluster --config "$T/cfg2.json" --log "$T/run2.log" >"$T/out2.txt" 2>"$T/serve2.err" &
RUN_PID=$!
wait_line() { # wait_line PATTERN SECONDS: until out2.txt has a line matching PATTERN
  local end=$((SECONDS + $2))
  until grep -q "$1" "$T/out2.txt"; do
    kill -0 "$RUN_PID" 2>/dev/null || fail "cilantro serve ended before '$1': $(tail -2 "$T/serve2.err")"
    [ $SECONDS -lt $end ] || fail "no '$1' within $2 s"
    sleep 0.1
  done
}
wait_line "^round 2 " 60
DEAD=$(cat "$T/n3/node_id")
kill -9 "$(awk '{print $1}' "$T/n3/pids/raylet.pid")"
wait_line "^node $DEAD died" 30
WEB2=$(awk '$1 == "tenant" && $2 == "web2" && $3 == "job" {print $4}' "$T/out2.txt")
[ -n "$WEB2" ] || fail "no job id printed for web2"
"$ESC" job stop "$WEB2" >"$T/stop.out" 2>&1 || fail "escher job stop $WEB2: $(cat "$T/stop.out")"
wait_line "^tenant web2 ended" 30
wait_line "^round 11 " 60
"$ESC" status --json >"$T/status2.json" || fail "status"
rc=0
wait "$RUN_PID" || rc=$?
RUN_PID=""
[ "$rc" = 0 ] || fail "cilantro serve exited $rc: $(tail -3 "$T/serve2.err")"
python3 - "$T/out2.txt" "$T/run2.log" "$T/status2.json" "$DEAD" <<'P' || fail "failure checks"
import json, math, sys
lines = open(sys.argv[1]).read().splitlines()
log = [json.loads(l) for l in open(sys.argv[2])]
status = json.load(open(sys.argv[3]))
dead = sys.argv[4]
died = next(i for i, l in enumerate(lines) if l.startswith(f"node {dead} died"))
ended = next(i for i, l in enumerate(lines) if l.startswith("tenant web2 ended"))
after_death = [int(l.split()[1]) for l in lines[died:] if l.startswith("round ")]
after_end = [int(l.split()[1]) for l in lines[ended:] if l.startswith("round ")]
assert len(after_end) >= 2, (after_death, after_end)
# service goes on on the two nodes left: the slo tenants report in the rounds that started
# after the death was known (one 2-s round without a record is allowed: under ASan a pull
# of a lost result takes up to 1 s). The throughput tenant is only printed: under ASan it
# has been seen to stop reporting after a node died while its trainers were loading
# (docs/cilantro.md, "Missing").
for t in ("web1", "web2"):
    rounds = [r for r in after_death[1:] if t != "web2" or r not in after_end]
    silent = [r for r in rounds if log[r - 1]["tenants"][t]["reward"] is None]
    assert len(silent) <= 1, (t, silent, [log[r - 1]["tenants"][t] for r in silent])
    assert t == "web2" or (rounds and rounds[-1] not in silent), (t, rounds, silent)
print("  train's rewards after the death:",
      [log[r - 1]["tenants"]["train"]["reward"] for r in after_death[1:]])
# web2's CPU goes to the others once it ended
for r in after_end:
    x = log[r - 1]["tenants"]
    assert x["web2"]["ended"] and x["web2"]["next_alloc"] == 0, x["web2"]
    assert abs(x["web1"]["next_alloc"] + x["train"]["next_alloc"] - 1) < 1e-6, x
# what round 11 applied: split over the two alive nodes, nothing of web2's left
last = log[10]["tenants"]
alive = [n for n in status["nodes"] if n["state"] == "ALIVE"]
assert dead not in [n["id"] for n in alive] and len(alive) == 2, [n["id"] for n in alive]
for n in alive:
    res = n["resources"]
    assert "cilantro/web2.cpu" not in res and "cilantro/web2.home" not in res, res.keys()
    for t in ("web1", "train"):
        want = math.floor(last[t]["next_alloc"] / 2 * 1e4 + 1e-6) / 1e4
        assert abs(res[f"cilantro/{t}.cpu"]["total"] - want) < 2e-4, (t, res[f"cilantro/{t}.cpu"], want)
print(f"ok: node death seen before round {after_death[0]}, web2 ended before round "
      f"{after_end[0]}; round 11 split web1 {last['web1']['next_alloc']:.2f} and train "
      f"{last['train']['next_alloc']:.2f} CPU over 2 nodes")
P
echo "test_cilantro_live: all checks passed"
