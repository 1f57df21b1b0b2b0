#!/usr/bin/env bash
# test_ekya_live.sh: Ekya live on a 3-raylet loopback cluster (`ekya run --cluster`,
# docs/ekya.md "Live runs"):
#  - every stream's resources (ekya/s<i>.home, .infer, .train) live on one node, its two
#    actors hold them there, and the inference actor's log is on that node;
#  - the shares, sampled from `escher status --json` while the run goes on, are the
#    decided ones: every capacity seen is a share some decision gave that stream, held
#    never exceeds it, and the actors hold exactly it in nearly every sample;
#  - the summary's accuracy is what the inference actors measured (their own log lines);
#  - a raylet killed with -9 mid-run: its streams move to the other nodes at the next
#    window, go on serving, and the summary reports each move's time.
# The cluster runs in a fresh temporary directory; only processes this script started are
# signalled.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
ESC="$BIN_DIR/client/escher"
EKYA="$BIN_DIR/apps/ekya/ekya"
[ -x "$ESC" ] && [ -x "$EKYA" ] || { echo "test_ekya_live: no $ESC or $EKYA" >&2; exit 1; }
[ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
  { echo "test_ekya_live: Fashion-MNIST missing (deploy/install-deps.sh)" >&2; exit 1; }

T=$(mktemp -d /tmp/escher-test-ekya-XXXXXX)
unset ESCHER_TOKEN ESCHER_NODE_ID ESCHER_ADDRESS
export ESCHER_SESSION_DIR="$T/head"
RUN_PID=""

cleanup() {
  local rc=$?
  [ -n "$RUN_PID" ] && kill "$RUN_PID" 2>/dev/null
  if [ "$rc" -ne 0 ]; then
    for f in "$T"/*.err "$T"/*/logs/raylet.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 15 "$f" >&2; }
    done
  fi
  for d in "$T"/n*; do [ -d "$d" ] && ESCHER_SESSION_DIR=$d "$ESC" stop --force >/dev/null 2>&1; done
  "$ESC" stop --force >/dev/null 2>&1 || true
  [ "${KEEP_T:-}" ] || rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="start"
fail() { echo "test_ekya_live: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $*"; }

# A sanitized build runs the workload about ten times slower: fewer frames per window and
# longer windows keep micro-profiling and retraining inside a window there too.
if grep -q '^ESCHER_SANITIZE:BOOL=ON' "$BIN_DIR/CMakeCache.txt" 2>/dev/null; then
  WORK=(--images-per-window 300 --window 8)
else
  WORK=(--images-per-window 1000 --window 4)
fi

step "a head and two nodes, one CPU each"
"$ESC" start --head --port 0 --bind 127.0.0.1 --num-cpus 1 --num-gpus 0 \
  --node-timeout-ms 2000 >/dev/null || fail "head"
GCS=$(cat "$T/head/gcs_address")
for i in 2 3; do
  "$ESC" start --address "$GCS" --token "$(cat "$T/head/token")" \
    --daemon-key "$(cat "$T/head/daemon_key")" --bind 127.0.0.1 --session-dir "$T/n$i" \
    --num-cpus 1 --num-gpus 0 >/dev/null || fail "node $i"
done

# live_run NAME ARGS...: starts `ekya run --cluster` in the background (stdout NAME.json,
# stderr NAME.err, decisions NAME.dec) and samples `escher status --json` into
# NAME.samples (one object per line) until it exits; the exit code goes to NAME.rc.
# ON_WINDOW (a window number) and ON_WINDOW_DO (a command) run once when the run's
# progress line for that window appears.
live_run() {
  local name=$1
  shift
  "$EKYA" run --cluster --json --decisions "$T/$name.dec" "$@" \
    >"$T/$name.json" 2>"$T/$name.err" &
  RUN_PID=$!
  : >"$T/$name.samples"
  local fired=0
  while kill -0 "$RUN_PID" 2>/dev/null; do
    "$ESC" status --json 2>/dev/null | tr -d '\n' >>"$T/$name.samples" && echo >>"$T/$name.samples"
    if [ "$fired" = 0 ] && [ -n "${ON_WINDOW:-}" ] &&
       grep -q "window $ON_WINDOW/" "$T/$name.err"; then
      fired=1
      eval "$ON_WINDOW_DO"
    fi
  done
  local rc=0
  wait "$RUN_PID" || rc=$?
  RUN_PID=""
  echo "$rc" >"$T/$name.rc"
}

# Every serve call's measurement, from the inference actors' logs on every node: one JSON
# object {"node": id, "stream": s, "window": w, "frames": f, "correct": c} per line.
actor_lines() {
  for d in "$T"/head "$T"/n*; do
    local node
    node=$(cat "$d/node_id")
    cat "$d"/logs/tasks/*.out 2>/dev/null | grep '^ekya_infer_serve:' |
      awk -v n="$node" '{printf "{\"node\":\"%s\",\"stream\":%s,\"window\":%s,\"frames\":%s,\"correct\":%s}\n", n, $3, $5, $7, $9}'
  done
}

step "a live run of 4 streams: placement, shares and accuracy"
live_run run1 --streams 4 --windows 3 "${WORK[@]}" --device-cpus 0.5 --seed 5
[ "$(cat "$T/run1.rc")" = 0 ] || fail "ekya run exited $(cat "$T/run1.rc"): $(tail -3 "$T/run1.err")"
actor_lines >"$T/run1.actors"
python3 - "$T/run1.json" "$T/run1.dec" "$T/run1.samples" "$T/run1.actors" <<'P' || fail "checks"
import json, sys
summary = json.load(open(sys.argv[1]))
decisions = [json.loads(l) for l in open(sys.argv[2])]
samples = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
actors = [json.loads(l) for l in open(sys.argv[4])]
S, W = 4, 3
assert len(samples) >= 10, f"only {len(samples)} status samples"

# decided shares per stream (devices), plus the provisional share before the first
# decision of a stream's first window on a node (an equal split of the node's device, at
# most rmax 0.25, in whole 0.1 quanta: 0.2 here): any of them may be in effect
decided = {s: {"infer": set(), "train": {0.0}} for s in range(S)}
for d in decisions:
    for e in d["streams"]:
        s = int(e["stream"])
        decided[s]["infer"].add(round(e["infer_gpus"], 4))
        decided[s]["train"].add(round(e["retrain_gpus"], 4))
for s in range(S):
    decided[s]["infer"].add(0.2)

home_node = {}
exact = total = 0
for smp in samples:
    for node in smp["nodes"]:
        for name, r in node["resources"].items():
            if not name.startswith("ekya/s"):
                continue
            s, role = name[len("ekya/s"):].split(".")
            s = int(s)
            if role == "home":
                assert home_node.setdefault(s, node["id"]) == node["id"], f"{name} on two nodes"
                continue
            # a backed share of CPU=0.5 per device: the capacity is a decided share
            cap = round(r["total"], 4)
            assert cap in decided[s][role], f"{name} capacity {cap} not decided {sorted(decided[s][role])}"
            assert r["held"] <= r["total"] + 1e-9, f"{name} held {r['held']} > total {r['total']}"
            total += 1
            exact += abs(r["held"] - r["total"]) < 1e-9
        # each stream's resources on one node only
    names = [(n["id"], k) for n in smp["nodes"] for k in n["resources"] if k.startswith("ekya/s")]
    seen = {}
    for nid, k in names:
        assert seen.setdefault(k, nid) == nid, f"{k} on two nodes"
assert set(home_node) == set(range(S)), home_node
assert total > 0 and exact / total >= 0.9, f"actors held their exact share in {exact}/{total}"

# the inference actors ran where the stream's resources are, and measured the summary
by_stream = {s: [] for s in range(S)}
for a in actors:
    assert a["node"] == home_node[a["stream"]], f"stream {a['stream']} served on {a['node']}"
    by_stream[a["stream"]].append(a["correct"] / a["frames"])
for s in range(S):
    assert len(by_stream[s]) == W, f"stream {s}: {len(by_stream[s])} serve calls"
    mean = sum(by_stream[s]) / W
    assert abs(mean - summary["streams"][str(s)]) < 1e-9, (s, mean, summary["streams"][str(s)])
assert 0.3 < summary["mean_accuracy"] <= 1, summary["mean_accuracy"]
live = summary["live"]
assert live["nodes"] == 3 and live["reallocations"] >= S, live
assert summary["completions"] >= 1, summary
print(f"ok: {len(samples)} samples, {exact}/{total} exact, accuracy {summary['mean_accuracy']:.4f} "
      f"(simulated {live['simulated_mean_accuracy']:.4f}), reallocation median "
      f"{live['reallocation_ms_median']:.1f} ms")
P

step "a node killed with -9 mid-run: its streams move and go on"
# the node that hosts stream 1 (never the head's), found from the status
VICTIM=""
kill_host() {
  local nid
  nid=$("$ESC" status --json | python3 -c "
import json, sys
d = json.load(sys.stdin)
for n in d['nodes']:
    if 'ekya/s1.home' in n['resources'] or 'ekya/s2.home' in n['resources']:
        if n['id'] != open('$T/head/node_id').read().strip():
            print(n['id']); break")
  for d in "$T"/n*; do
    if [ "$(cat "$d/node_id")" = "$nid" ]; then
      VICTIM=$nid
      kill -9 "$(awk '{print $1}' "$d/pids/raylet.pid")"
    fi
  done
}
ON_WINDOW=1 ON_WINDOW_DO=kill_host live_run run2 --streams 4 --windows 3 "${WORK[@]}" \
  --device-cpus 0.5 --seed 6
[ -n "$VICTIM" ] || fail "no node to kill was found"
[ "$(cat "$T/run2.rc")" = 0 ] || fail "ekya run exited $(cat "$T/run2.rc"): $(tail -3 "$T/run2.err")"
python3 - "$T/run2.json" <<'P' || fail "failover checks"
import json, sys
d = json.load(open(sys.argv[1]))
moves = d["live"]["failovers"]
assert moves, "no stream moved"
for m in moves:
    assert 0 < m["seconds"] < 30, m
    # after the move the stream is served again: its last window is not lost
print("ok: moved", [(m["stream"], round(m["seconds"], 2)) for m in moves],
      "last window accuracy", round(d["windows"][-1], 4))
assert d["windows"][-1] > 0.3, d["windows"]
P
echo "test_ekya_live: all checks passed"
