#!/usr/bin/env bash
# test_metrics.sh: the Prometheus endpoints of escher-gcs and escher-raylet
# (docs/observability.md), through `escher start`, which passes --metrics-port 0:
#  - `escher start` prints both endpoints; the ports are in the session directory;
#  - GET /metrics answers 200, Content-Type text/plain; version=0.0.4, and a text that
#    parses: HELP and TYPE before each family's samples, names and labels well formed,
#    numeric values, counters ending in _total, every escher_ metric documented;
#  - another path answers 404;
#  - a resource set with the CLI appears on the raylet with its value and this node's id;
#  - after a job ran, the GCS's counts moved (jobs by state, committed sequence, calls).
# No fixed sleeps: every wait polls with a deadline.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
export ESCHER_BIN_DIR=$BIN_DIR
ESC="$BIN_DIR/client/escher"
SRC_DIR=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null || { echo "test_metrics: python3 is required" >&2; exit 1; }
command -v curl >/dev/null || { echo "test_metrics: curl is required" >&2; exit 1; }
[ -x "$ESC" ] || { echo "test_metrics: no $ESC" >&2; exit 1; }

T=$(mktemp -d /tmp/escher-test-metrics-XXXXXX)
S="$T/session"
export ESCHER_SESSION_DIR="$S"
unset ESCHER_TOKEN ESCHER_NODE_ID

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for f in "$S"/logs/*.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  "$ESC" stop --force --session-dir "$S" >/dev/null 2>&1 || true
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="start"
fail() { echo "test_metrics: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $(date +%T.%3N) $*"; }

cat >"$T/check.py" <<'PY'
"""check.py FILE DOC: checks a Prometheus text exposition (format 0.0.4)."""
import re, sys

NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*$')
SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')
text = open(sys.argv[1]).read()
doc = open(sys.argv[2]).read()
if not text.endswith("\n"):
    sys.exit("no final newline")
helps, types, seen_samples = {}, {}, set()
for ln, line in enumerate(text.splitlines(), 1):
    if line.startswith("# HELP "):
        name, _, h = line[7:].partition(" ")
        if not NAME.match(name) or not h or name in helps:
            sys.exit(f"line {ln}: bad HELP: {line}")
        helps[name] = h
    elif line.startswith("# TYPE "):
        name, _, t = line[7:].partition(" ")
        if name not in helps or name in types or t not in ("counter", "gauge", "histogram", "summary", "untyped"):
            sys.exit(f"line {ln}: bad TYPE (or no HELP before it): {line}")
        if name in seen_samples:
            sys.exit(f"line {ln}: TYPE after samples of {name}")
        types[name] = t
        if t == "counter" and not name.endswith("_total"):
            sys.exit(f"line {ln}: counter {name} does not end in _total")
        if not name.startswith("escher_"):
            sys.exit(f"line {ln}: {name} has no escher_ prefix")
        if f"`{name}`" not in doc:
            sys.exit(f"{name} is not in docs/observability.md")
    elif line.startswith("#") or not line:
        sys.exit(f"line {ln}: unexpected line: {line!r}")
    else:
        m = SAMPLE.match(line)
        if not m:
            sys.exit(f"line {ln}: bad sample: {line}")
        name, labels, value = m.group(1), m.group(3), m.group(4)
        family = name
        if family not in types:
            family = re.sub(r'_(bucket|sum|count)$', '', name)
            if types.get(family) != "histogram":
                sys.exit(f"line {ln}: sample of {name} without TYPE")
        seen_samples.add(family)
        rest = labels or ""
        while rest:
            lm = LABEL.match(rest)
            if not lm:
                sys.exit(f"line {ln}: bad labels: {labels}")
            rest = rest[lm.end():]
        if value not in ("+Inf", "-Inf", "NaN"):
            try:
                float(value)
            except ValueError:
                sys.exit(f"line {ln}: bad value {value}")
print(f"ok: {len(types)} families")
PY

# value FILE NAME 'k="v",...': the value of the one sample of NAME whose labels include
# every pair given (empty output when none).
value() {
  python3 - "$@" <<'PY'
import re, sys
f, name, want = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""
pairs = re.findall(r'([a-zA-Z_]+)="([^"]*)"', want)
for line in open(f):
    m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line.strip())
    if not m or m.group(1) != name:
        continue
    labels = dict(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
    if all(labels.get(k) == v for k, v in pairs):
        print(m.group(4))
        break
PY
}

# fetch PORT PATH OUT: GET over loopback; the status code in CODE, headers in OUT.h.
fetch() {
  CODE=$(curl -sS --max-time 10 -D "$3.h" -o "$3" -w '%{http_code}' "http://127.0.0.1:$1$2") ||
    fail "GET 127.0.0.1:$1$2 failed"
}

# wait_value PORT NAME LABELS WANT: polls /metrics (10 s deadline) until the sample is WANT.
wait_value() {
  local deadline=$((SECONDS + 10)) got=""
  while :; do
    fetch "$1" /metrics "$T/poll"
    got=$(value "$T/poll" "$2" "$3")
    [ "$got" = "$4" ] && return 0
    [ "$SECONDS" -ge "$deadline" ] && fail "$2{$3} is '$got', want '$4'"
    sleep 0.1
  done
}

step "escher start prints the endpoints"
"$ESC" start --head --port 0 --num-cpus 2 --num-gpus 0 --node-ip 127.0.0.1 >"$T/start.out" 2>"$T/start.err" ||
  fail "escher start: $(cat "$T/start.err")"
GCS_MPORT=$(cat "$S/gcs.metrics_port") || fail "no gcs.metrics_port"
RAY_MPORT=$(cat "$S/raylet.metrics_port") || fail "no raylet.metrics_port"
NODE_ID=$(cat "$S/node_id")
grep -q "metrics   http://127.0.0.1:$GCS_MPORT/metrics (GCS)" "$T/start.out" ||
  fail "no GCS endpoint in: $(cat "$T/start.out")"
grep -q "metrics   http://127.0.0.1:$RAY_MPORT/metrics (raylet)" "$T/start.out" ||
  fail "no raylet endpoint in: $(cat "$T/start.out")"

step "format"
for p in "$GCS_MPORT" "$RAY_MPORT"; do
  fetch "$p" /metrics "$T/m"
  [ "$CODE" = 200 ] || fail "GET /metrics on $p: $CODE"
  grep -qi '^content-type: text/plain; version=0.0.4' "$T/m.h" || fail "content type: $(cat "$T/m.h")"
  python3 "$T/check.py" "$T/m" "$SRC_DIR/docs/observability.md" || fail "port $p: bad exposition"
done

step "404"
for p in "$GCS_MPORT" "$RAY_MPORT"; do
  for path in / /metricsx /metrics/x /nope; do
    fetch "$p" "$path" "$T/nf"
    [ "$CODE" = 404 ] || fail "GET $path on $p: $CODE, want 404"
  done
done

step "physical resources on the raylet"
fetch "$RAY_MPORT" /metrics "$T/r"
[ "$(value "$T/r" escher_resource_total "node=\"$NODE_ID\",resource=\"CPU\",namespace=\"\"")" = 2 ] ||
  fail "CPU total: $(grep CPU "$T/r")"
[ "$(value "$T/r" escher_resource_available "node=\"$NODE_ID\",resource=\"CPU\"")" = 2 ] ||
  fail "CPU available: $(grep CPU "$T/r")"

step "GCS before any job"
fetch "$GCS_MPORT" /metrics "$T/g0"
[ "$(value "$T/g0" escher_gcs_nodes 'state="alive"')" = 1 ] || fail "alive nodes: $(grep nodes "$T/g0")"
SEQ0=$(value "$T/g0" escher_gcs_log_committed_seq)
JOBS0=$(value "$T/g0" escher_gcs_jobs 'state="finished"')
REG0=$(value "$T/g0" escher_gcs_rpc_calls_total 'method="RegisterJob"')
W0=$(value "$T/g0" escher_gcs_storage_write_seconds_count)
[ -n "$SEQ0" ] && [ -n "$JOBS0" ] && [ -n "$REG0" ] && [ -n "$W0" ] || fail "missing GCS samples"

step "a resource set with the CLI appears on this node"
"$ESC" resource set foo 2.5 >"$T/out" 2>"$T/err" || fail "resource set: $(cat "$T/err")"
wait_value "$RAY_MPORT" escher_resource_total "node=\"$NODE_ID\",resource=\"foo\",kind=\"ephemeral\"" 2.5
NS=$(value "$T/poll" escher_resource_total "resource=\"foo\"" >/dev/null; grep 'escher_resource_total{.*resource="foo"' "$T/poll" | sed 's/.*namespace="\([^"]*\)".*/\1/')
[ -n "$NS" ] || fail "foo has no namespace: $(grep foo "$T/poll")"
wait_value "$RAY_MPORT" escher_resource_available "node=\"$NODE_ID\",resource=\"foo\",namespace=\"$NS\"" 2.5
wait_value "$RAY_MPORT" escher_resource_held "node=\"$NODE_ID\",resource=\"foo\",namespace=\"$NS\"" 0
"$ESC" resource set foo 4 >"$T/out" 2>"$T/err" || fail "resource set: $(cat "$T/err")"
wait_value "$RAY_MPORT" escher_resource_total "node=\"$NODE_ID\",resource=\"foo\",namespace=\"$NS\"" 4

step "values move after a job ran"
# Every CLI call registers a job of its own (ended when it exits): count from here.
fetch "$GCS_MPORT" /metrics "$T/g0"
SEQ0=$(value "$T/g0" escher_gcs_log_committed_seq)
JOBS0=$(value "$T/g0" escher_gcs_jobs 'state="finished"')
REG0=$(value "$T/g0" escher_gcs_rpc_calls_total 'method="RegisterJob"')
W0=$(value "$T/g0" escher_gcs_storage_write_seconds_count)
fetch "$RAY_MPORT" /metrics "$T/r0"
OK0=$(value "$T/r0" escher_raylet_tasks_ended_total 'outcome="succeeded"')
FAILED0=$(value "$T/r0" escher_raylet_tasks_ended_total 'outcome="failed"')
STARTED0=$(value "$T/r0" escher_raylet_workers_started_total)
[ -n "$OK0" ] && [ -n "$FAILED0" ] && [ -n "$STARTED0" ] || fail "missing raylet samples"
"$ESC" job submit -- true >"$T/out" 2>"$T/err" || fail "job submit: $(cat "$T/err")"
fetch "$GCS_MPORT" /metrics "$T/g1"
SEQ1=$(value "$T/g1" escher_gcs_log_committed_seq)
[ "$SEQ1" -gt "$SEQ0" ] || fail "committed seq $SEQ0 -> $SEQ1"
REG1=$(value "$T/g1" escher_gcs_rpc_calls_total 'method="RegisterJob"')
[ "$REG1" -gt "$REG0" ] || fail "RegisterJob calls $REG0 -> $REG1"
W1=$(value "$T/g1" escher_gcs_storage_write_seconds_count)
[ "$W1" -gt "$W0" ] || fail "storage writes $W0 -> $W1"
# The entrypoint ran as a task on this node's worker.
wait_value "$RAY_MPORT" escher_raylet_tasks_ended_total 'outcome="succeeded"' $((OK0 + 1))
STARTED1=$(value "$T/poll" escher_raylet_workers_started_total)
[ "$STARTED1" -gt "$STARTED0" ] || fail "workers started $STARTED0 -> $STARTED1"
RC=0
"$ESC" job submit -- false >"$T/out" 2>"$T/err" || RC=$?
[ "$RC" -ne 0 ] || fail "a job running false succeeded"
wait_value "$RAY_MPORT" escher_raylet_tasks_ended_total 'outcome="failed"' $((FAILED0 + 1))
JOBS1=$(value "$T/g1" escher_gcs_jobs 'state="finished"')
[ "$JOBS1" -gt "$JOBS0" ] || fail "finished jobs $JOBS0 -> $JOBS1"
# The raylet applies the log up to what the GCS committed (it reports that back).
fetch "$GCS_MPORT" /metrics "$T/g2"
wait_value "$RAY_MPORT" escher_raylet_log_applied_seq "node=\"$NODE_ID\"" \
  "$(value "$T/g2" escher_gcs_log_committed_seq)"
wait_value "$GCS_MPORT" escher_gcs_node_applied_seq "node=\"$NODE_ID\"" \
  "$(value "$T/g2" escher_gcs_log_committed_seq)"
# wait_at_least PORT NAME LABELS MIN: polls /metrics (10 s deadline) until the sample is >= MIN.
wait_at_least() {
  local deadline=$((SECONDS + 10)) got=""
  while :; do
    fetch "$1" /metrics "$T/poll"
    got=$(value "$T/poll" "$2" "$3")
    [ -n "$got" ] && python3 -c 'import sys; sys.exit(float(sys.argv[1]) < float(sys.argv[2]))' "$got" "$4" && return 0
    [ "$SECONDS" -ge "$deadline" ] && fail "$2{$3} is '$got', want at least $4"
    sleep 0.1
  done
}

step "RPC calls and latency per method"
fetch "$GCS_MPORT" /metrics "$T/g3"
[ "$(value "$T/g3" escher_rpc_server_seconds_count 'method="RegisterJob"')" = \
  "$(value "$T/g3" escher_rpc_server_seconds_bucket 'method="RegisterJob",le="+Inf"')" ] ||
  fail "RegisterJob's histogram count is not its +Inf bucket"
wait_at_least "$GCS_MPORT" escher_rpc_server_seconds_count 'method="RegisterJob"' 1
# Cumulative buckets: never fewer calls under a larger bound, the last one all of them.
python3 - "$T/poll" <<'PY' || fail "RegisterJob's buckets are not cumulative"
import re, sys
b = [(float(le), float(v)) for le, v in re.findall(
    r'escher_rpc_server_seconds_bucket\{method="RegisterJob",le="([^"]+)"\} (\S+)', open(sys.argv[1]).read())]
assert len(b) == 15 and b[-1][0] == float("inf"), b
assert all(b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)), b
PY
# A stream (Subscribe) is left out of the latencies but counted as a call.
wait_at_least "$GCS_MPORT" escher_gcs_rpc_calls_total 'method="Subscribe"' 1
[ "$(value "$T/poll" escher_rpc_server_seconds_count 'method="Subscribe"')" = 0 ] ||
  fail "a stream was timed: $(grep 'Subscribe' "$T/poll" | head -3)"
wait_at_least "$RAY_MPORT" escher_raylet_rpc_calls_total "node=\"$NODE_ID\",method=\"SubmitTasks\"" 1
wait_at_least "$RAY_MPORT" escher_rpc_server_seconds_count "node=\"$NODE_ID\",method=\"SubmitTasks\"" 1

step "object store, actors, workers reused"
fetch "$RAY_MPORT" /metrics "$T/r2"
CAP=$(value "$T/r2" escher_raylet_object_store_capacity_bytes "node=\"$NODE_ID\"")
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) > 0)' "$CAP" || fail "store capacity '$CAP'"
[ -n "$(value "$T/r2" escher_raylet_object_store_bytes "node=\"$NODE_ID\"")" ] || fail "no store bytes"
[ -n "$(value "$T/r2" escher_raylet_object_store_objects "node=\"$NODE_ID\"")" ] || fail "no store objects"
for st in starting alive restarting dead; do
  [ "$(value "$T/r2" escher_raylet_actors "state=\"$st\"")" = 0 ] || fail "actors $st: $(grep actors "$T/r2")"
done
R0=$(value "$T/r2" escher_raylet_worker_reuses_total "node=\"$NODE_ID\"")
[ -n "$R0" ] || fail "no worker reuses sample"

step "queued demand by shape"
"$ESC" job submit --no-wait --resources default/never=1 -- true >"$T/out" 2>"$T/err" ||
  fail "job submit --no-wait: $(cat "$T/err")"
wait_at_least "$RAY_MPORT" escher_raylet_demand_tasks "node=\"$NODE_ID\",shape=\"default/never:1\"" 1
WJOB=$(head -1 "$T/out") # --no-wait prints the job id alone
[ -n "$WJOB" ] || fail "no job id in: $(cat "$T/out")"
wait_value "$RAY_MPORT" escher_raylet_job_tasks "job=\"$WJOB\",state=\"queued\"" 1

step "heartbeats missed"
wait_value "$GCS_MPORT" escher_gcs_heartbeats_missed_total "node=\"$NODE_ID\"" 0
read -r RPID _ <"$S/pids/raylet.pid" 2>/dev/null || RPID=$(pgrep -f "escher-raylet.*$S" | head -1)
[ -n "$RPID" ] || fail "no raylet pid"
# Silent for 3.5 heartbeat periods (1 s each; the node timeout is 10 s): missed ones count.
# The sleep is the fault's length, not a wait for a condition: periods are counted when
# the late report arrives, so nothing can be polled while the raylet is stopped.
kill -STOP "$RPID"
sleep 3.5
kill -CONT "$RPID"
wait_at_least "$GCS_MPORT" escher_gcs_heartbeats_missed_total "node=\"$NODE_ID\"" 1
echo "test_metrics: ok ($(date +%T.%3N))"
