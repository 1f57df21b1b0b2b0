#!/usr/bin/env bash
# make demo: a one-node cluster on the embedded defaults (in-memory store), shaped with
# ephemeral resources from the CLI and from a C driver, then stopped with nothing left.
set -euo pipefail
BUILD=${1:-build}
ESC="$BUILD/client/escher"
export ESCHER_BIN_DIR="$BUILD"
SESSION=$(mktemp -d /tmp/escher-demo-XXXXXX)
export ESCHER_SESSION_DIR="$SESSION"
cleanup() { "$ESC" stop >/dev/null 2>&1 || true; rm -rf "$SESSION"; }
trap cleanup EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$ESC" start --head --port 0 --num-cpus 2 --resources accel=1
step "$ESC" resource set gpu_share 1.5
step "$ESC" resource add gpu_share -0.5
step "$ESC" resource set queue 0
step "$ESC" resource set pool inf --all-nodes
step "$ESC" resource set lane 2 --where CPU=1 --num-nodes 1
step "$ESC" status
step "$BUILD/examples/ephemeral_resources"
step "$BUILD/examples/fanout" 200
step "$BUILD/examples/placement"
step "$BUILD/examples/actor"
step "$ESC" resource delete queue
step "$ESC" status --json
# Ekya live (docs/ekya.md, "Live runs"): two video streams retrained and served by actors
# whose shares are ephemeral resources; `escher status` mid-run shows them with their owner.
echo; printf '\033[1m$ %s\033[0m\n' "$BUILD/apps/ekya/ekya run --cluster --streams 2 --windows 3 --window 4 --device-cpus 0.5 &"
"$BUILD/apps/ekya/ekya" run --cluster --streams 2 --windows 3 --window 4 --device-cpus 0.5 \
  2>"$SESSION/ekya.err" &
ekya=$!
deadline=$((SECONDS + 60))
until grep -q "window 1/" "$SESSION/ekya.err" 2>/dev/null; do
  kill -0 "$ekya" 2>/dev/null || break
  [ "$SECONDS" -lt "$deadline" ] || { echo "demo: ekya made no progress in 60 s" >&2; exit 1; }
  sleep 0.2
done
step "$ESC" status
wait "$ekya" || { cat "$SESSION/ekya.err" >&2; echo "demo: ekya run failed" >&2; exit 1; }
cat "$SESSION/ekya.err"
pids=$(cut -d" " -f1 "$SESSION"/pids/*.pid)   # "PID START_TICKS EXE" (docs/cli.md)
step "$ESC" stop
for p in $pids; do
  # A pid that still runs and is not a zombie was left behind.
  state=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null || true)
  if [ -n "$state" ] && [ "$state" != Z ]; then
    echo "demo: process $p is still running" >&2; exit 1
  fi
done
echo; echo "demo: done, no escher process left behind"
