#!/usr/bin/env bash
# test_prometheus.sh: a real Prometheus server (Debian's `prometheus`, on loopback)
# scrapes the endpoints of a cluster started with `escher start` (docs/observability.md),
# found through the head's service-discovery file (file_sd_configs): the GCS and the
# raylet come up (up == 1) with their labels, a second node that joins is scraped too and
# leaves the file when it stops, and a query for a resource set with the CLI returns its
# value. Skipped (77) only when the prometheus binary is missing
# (deploy/install-deps.sh installs it). No fixed sleeps: every wait polls with a deadline.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
export ESCHER_BIN_DIR=$BIN_DIR
ESC="$BIN_DIR/client/escher"
PROM=$(command -v prometheus || true)
[ -n "$PROM" ] || { echo "test_prometheus: SKIP: no prometheus binary"; exit 77; }
command -v python3 >/dev/null || { echo "test_prometheus: python3 is required" >&2; exit 1; }
command -v curl >/dev/null || { echo "test_prometheus: curl is required" >&2; exit 1; }
[ -x "$ESC" ] || { echo "test_prometheus: no $ESC" >&2; exit 1; }

T=$(mktemp -d /tmp/escher-test-prometheus-XXXXXX)
S="$T/session"
S2="$T/session2"
export ESCHER_SESSION_DIR="$S"
unset ESCHER_TOKEN ESCHER_NODE_ID
PROM_PID=

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for f in "$S"/logs/*.log "$T/prometheus.log"; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null || true
  "$ESC" stop --force --session-dir "$S2" >/dev/null 2>&1 || true
  "$ESC" stop --force --session-dir "$S" >/dev/null 2>&1 || true
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="start"
fail() { echo "test_prometheus: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $(date +%T.%3N) $*"; }

# query PROMQL: the instant vector's samples, one "labels-json value" line each.
query() {
  curl -sS --max-time 5 -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
    --data-urlencode "query=$1" 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
for r in d.get("data", {}).get("result", []):
    print(json.dumps(r["metric"], sort_keys=True), r["value"][1])
'
}

# wait_query PROMQL WANT SECS: polls until the query's output is WANT (lines in any order).
wait_query() {
  local deadline=$((SECONDS + $3)) got="" want
  want=$(printf '%s\n' "$2" | LC_ALL=C sort)
  while :; do
    got=$(query "$1" | LC_ALL=C sort) || got=""
    [ "$got" = "$want" ] && return 0
    [ "$SECONDS" -ge "$deadline" ] && fail "query '$1' gave '$got', want '$2'"
    sleep 0.2
  done
}

step "cluster"
"$ESC" start --head --port 0 --num-cpus 2 --num-gpus 0 --node-ip 127.0.0.1 \
  --node-timeout-ms 2000 >"$T/start.out" 2>"$T/start.err" || fail "escher start: $(cat "$T/start.err")"
grep -q "discovery $S/prometheus_sd.json" "$T/start.out" || fail "no discovery line: $(cat "$T/start.out")"
GCS_MPORT=$(cat "$S/gcs.metrics_port")
RAY_MPORT=$(cat "$S/raylet.metrics_port")
NODE_ID=$(cat "$S/node_id")

step "prometheus"
PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: escher
    file_sd_configs:
      - files: ["$S/prometheus_sd.json"]
        refresh_interval: 1s
YML
"$PROM" --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/data" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$T/prometheus.log" 2>&1 &
PROM_PID=$!

step "both targets up, found in the discovery file"
wait_query 'up' "{\"__name__\": \"up\", \"escher_role\": \"gcs\", \"instance\": \"127.0.0.1:$GCS_MPORT\", \"job\": \"escher\"} 1
{\"__name__\": \"up\", \"escher_node\": \"$NODE_ID\", \"escher_role\": \"raylet\", \"instance\": \"127.0.0.1:$RAY_MPORT\", \"job\": \"escher\"} 1" 60

step "escher metrics through PromQL"
wait_query 'escher_gcs_nodes{state="alive"}' \
  "{\"__name__\": \"escher_gcs_nodes\", \"escher_role\": \"gcs\", \"instance\": \"127.0.0.1:$GCS_MPORT\", \"job\": \"escher\", \"state\": \"alive\"} 1" 30
"$ESC" resource set foo 3.5 >"$T/out" 2>"$T/err" || fail "resource set: $(cat "$T/err")"
wait_query "sum by (node) (escher_resource_total{resource=\"foo\",kind=\"ephemeral\"})" \
  "{\"node\": \"$NODE_ID\"} 3.5" 30
step "a node that joins is scraped; one that stops leaves the file"
"$ESC" start --address "$(cat "$S/gcs_address")" --token "$(cat "$S/token")" \
  --daemon-key "$(cat "$S/daemon_key")" --session-dir "$S2" --num-cpus 1 --num-gpus 0 \
  --node-ip 127.0.0.1 >"$T/start2.out" 2>"$T/start2.err" || fail "join: $(cat "$T/start2.err")"
NODE2=$(cat "$S2/node_id")
RAY2_MPORT=$(cat "$S2/raylet.metrics_port")
wait_query "up{escher_node=\"$NODE2\"}" "{\"__name__\": \"up\", \"escher_node\": \"$NODE2\", \"escher_role\": \"raylet\", \"instance\": \"127.0.0.1:$RAY2_MPORT\", \"job\": \"escher\"} 1" 60
"$ESC" stop --force --session-dir "$S2" >/dev/null 2>&1 || fail "stopping the second node"
deadline=$((SECONDS + 30))
while grep -q "$NODE2" "$S/prometheus_sd.json"; do
  [ "$SECONDS" -ge "$deadline" ] && fail "the stopped node is still in $S/prometheus_sd.json"
  sleep 0.2
done
grep -q "$NODE_ID" "$S/prometheus_sd.json" || fail "the head's raylet left the discovery file"
echo "test_prometheus: ok ($(date +%T.%3N))"
