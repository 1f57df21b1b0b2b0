#!/usr/bin/env bash
# test_mapreduce.sh: examples/mapreduce on three "machines" — network namespaces joined
# to a bridge by veth links whose both ends are limited to 1 Gbit/s with tc (tbf), so
# moving a chunk costs what it costs between machines. The GCS listens on the bridge in
# the root namespace; one raylet runs in each namespace; the driver runs in the root
# namespace with the first namespace's node as its local node.
#
# Checks: both runs count every word; with locality no chunk crosses a link (the raylets'
# pulled bytes) and the maps finish sooner; without, the chunks of the other nodes cross
# (at least their size). The veth byte counters are printed as a cross-check.
#
# Needs root, ip and tc (iproute2) and network namespaces; exits 77 (skipped) without.
# Creates and removes its own namespaces, veths and bridge, named em<pid>*.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
skip() { echo "test_mapreduce: skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root"
command -v ip >/dev/null && command -v tc >/dev/null || skip "needs ip and tc (iproute2)"

TAG="em$$"
NET="10.231.$(( $$ % 200 + 20 ))"
T=$(mktemp -d /tmp/escher-test-mr-XXXXXX)
PIDS=()
STEP="setup"
fail() { echo "test_mapreduce: FAIL [$STEP]: $*" >&2; exit 1; }

cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 15 "$f" >&2; }; done
  fi
  for i in 0 1 2; do ip netns del "${TAG}n$i" 2>/dev/null || true; done
  ip link del "${TAG}b" 2>/dev/null || true
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

# What the machine must offer, probed first: a failure past this point is the test's.
ip netns add "${TAG}probe" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "${TAG}probe"
ip link add "${TAG}q" type bridge 2>/dev/null || skip "cannot create a bridge"
tc qdisc add dev "${TAG}q" root tbf rate 1gbit burst 256kb latency 100ms 2>/dev/null || {
  ip link del "${TAG}q"
  skip "tc cannot shape with tbf"
}
ip link del "${TAG}q"

# tbf at 1 Gbit/s on the device's egress (burst: 256 KiB, queue: 100 ms).
shape() { "$@" tc qdisc add dev "$DEV" root tbf rate 1gbit burst 256kb latency 100ms; }

STEP="network"
ip link add "${TAG}b" type bridge
ip addr add "$NET.254/24" dev "${TAG}b"
ip link set "${TAG}b" up
for i in 0 1 2; do
  ns="${TAG}n$i"
  ip netns add "$ns"
  ip link add "${TAG}h$i" type veth peer name "${TAG}p$i"
  ip link set "${TAG}p$i" netns "$ns"
  ip link set "${TAG}h$i" master "${TAG}b" up
  ip netns exec "$ns" ip addr add "$NET.$((i + 1))/24" dev "${TAG}p$i"
  ip netns exec "$ns" ip link set "${TAG}p$i" up
  ip netns exec "$ns" ip link set lo up
  DEV="${TAG}h$i" shape
  DEV="${TAG}p$i" shape ip netns exec "$ns"
done

STEP="cluster"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/daemon_key"
"$BIN_DIR/gcs/escher-gcs" --bind "$NET.254" --port 0 --port-file "$T/gcs.port" \
  --token-file "$T/token" --daemon-key-file "$T/daemon_key" --node-timeout-ms 5000 \
  2>"$T/gcs.log" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/gcs.port" ] && break; sleep 0.1; done
[ -s "$T/gcs.port" ] || fail "the GCS did not start"
GCS="$NET.254:$(cat "$T/gcs.port")"
for i in 0 1 2; do
  ip netns exec "${TAG}n$i" "$BIN_DIR/raylet/escher-raylet" --gcs-address "$GCS" \
    --token-file "$T/token" --daemon-key-file "$T/daemon_key" \
    --bind "$NET.$((i + 1))" --node-ip "$NET.$((i + 1))" \
    --num-cpus 2 --object-store-memory $((512 << 20)) --log-dir "$T/tasks$i" \
    --node-id-file "$T/node$i" 2>"$T/raylet$i.log" &
  PIDS+=($!)
done
for i in 0 1 2; do
  for _ in $(seq 100); do [ -s "$T/node$i" ] && break; sleep 0.1; done
  [ -s "$T/node$i" ] || fail "raylet $i did not register"
done

veth_bytes() {
  local total=0
  for i in 0 1 2; do
    total=$(( total + $(cat "/sys/class/net/${TAG}h$i/statistics/tx_bytes") ))
  done
  echo "$total"
}

STEP="mapreduce"
CHUNK_MB=16
run() {
  local before after
  before=$(veth_bytes)
  ESCHER_ADDRESS="$GCS" ESCHER_TOKEN="$(cat "$T/token")" ESCHER_NODE_ID="$(cat "$T/node0")" \
    ESCHER_SESSION_DIR="$T/nosession" \
    "$BIN_DIR/examples/mapreduce" --chunks 6 --chunk-mb "$CHUNK_MB" --locality "$1" \
    >"$T/$1.json" 2>"$T/$1.err" || fail "mapreduce --locality $1: $(cat "$T/$1.err")"
  after=$(veth_bytes)
  echo "$(cat "$T/$1.json") veth_bytes=$(( after - before ))"
}
run false
run true

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
OFF_BYTES=$(field "$T/false.json" cross_node_bytes)
ON_BYTES=$(field "$T/true.json" cross_node_bytes)
OFF_S=$(field "$T/false.json" makespan_s)
ON_S=$(field "$T/true.json" makespan_s)
# Without locality the maps run on node 0 and pull the 4 chunks made elsewhere.
[ "$OFF_BYTES" -ge $(( 4 * CHUNK_MB << 20 )) ] || fail "without locality only $OFF_BYTES bytes moved"
[ "$ON_BYTES" -eq 0 ] || fail "with locality $ON_BYTES bytes moved"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$ON_S" "$OFF_S" ||
  fail "locality did not cut the makespan ($ON_S s with, $OFF_S s without)"
echo "test_mapreduce: OK"
