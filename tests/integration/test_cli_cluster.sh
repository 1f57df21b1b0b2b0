#!/usr/bin/env bash
# test_cli_cluster.sh: addresses, ports, sessions and stops of `escher start`/`stop`, and
# labels in placement (docs/deploy.md, "Addresses, ports and sessions"; docs/cli.md):
#   - --version and --help on every program;
#   - a failed start (its port in use) says so in one line and changes nothing: no session
#     directory is left and the newest session stays what it was;
#   - sessions are found without --session-dir under the user's runtime directory
#     ($XDG_RUNTIME_DIR/escher, here a fresh temporary one);
#   - --bind and --raylet-port reach the daemons; a joined node advertises the local
#     address that reaches the GCS (127.0.0.1 for a GCS on loopback);
#   - labels: shown by `status` (text and --json), selected by `resource set --where
#     zone=a` / `--where-label`, and `resource delete --where` removes every copy;
#   - `escher stop` on the head makes a joined raylet exit (one started with --keep stays),
#     `escher stop --all` stops every raylet, --keep ones included, then the GCS.
# Everything listens on 127.0.0.1. Waits poll a condition against a deadline.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
export ESCHER_BIN_DIR=$BIN_DIR
ESC="$BIN_DIR/client/escher"
command -v python3 >/dev/null || { echo "test_cli_cluster: python3 is required" >&2; exit 1; }
[ -x "$ESC" ] || { echo "test_cli_cluster: no $ESC" >&2; exit 1; }
SRC_DIR=$(cd "$(dirname "$0")/../.." && pwd)

T=$(mktemp -d /tmp/escher-test-clu-XXXXXX)
export XDG_RUNTIME_DIR="$T/xdg"
mkdir -m 0700 "$XDG_RUNTIME_DIR"
ROOT="$XDG_RUNTIME_DIR/escher"
unset ESCHER_SESSION_DIR ESCHER_ADDRESS ESCHER_TOKEN ESCHER_DAEMON_KEY ESCHER_NODE_ID
HOLDER=""

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for f in "$ROOT"/*/logs/*.log "$T"/*/logs/*.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null
  for d in "$T"/join "$T"/keep "$T"/keep2 "$ROOT"/*; do
    [ -d "$d" ] && "$ESC" stop --force --session-dir "$d" >/dev/null 2>&1
  done
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="start"
fail() { echo "test_cli_cluster: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $*"; }
run() { RC=0; "$ESC" "$@" >"$T/out" 2>"$T/err" || RC=$?; }
ok() { run "$@"; [ "$RC" -eq 0 ] || fail "escher $* exited $RC: $(cat "$T/err")"; }
# alive PID: runs and is not a zombie.
alive() { [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
# wait_for SECONDS CMD...: polls CMD every 0.1 s until it succeeds; fails at the deadline.
wait_for() {
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
dead() { ! alive "$1"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
jcheck() { python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def node(nid):
    return next(n for n in d["nodes"] if n["id"] == nid)
exec(sys.argv[2])
EOF
}
status_json() { ok status --json; cp "$T/out" "$T/status.json"; }

# ---------------------------------------------------------------------------- versions
step "--version and --help"
VERSION=$(sed -n 's/^project(escher VERSION \([0-9.]*\).*/\1/p' "$SRC_DIR/CMakeLists.txt")
[ -n "$VERSION" ] || fail "no project VERSION in CMakeLists.txt"
for prog in client/escher gcs/escher-gcs raylet/escher-raylet raylet/escher-worker \
            client/escher-gang-ghost; do
  name=$(basename "$prog")
  out=$("$BIN_DIR/$prog" --version) || fail "$name --version failed"
  [ "$out" = "$name $VERSION" ] || fail "$name --version says '$out', want '$name $VERSION'"
  "$BIN_DIR/$prog" --help >"$T/help" || fail "$name --help failed"
  grep -q "usage" "$T/help" || fail "$name --help prints no usage: $(cat "$T/help")"
done

# ---------------------------------------------------------------------------- failed start
step "a port in use fails the start and changes nothing"
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)' "$T/busy_port" &
HOLDER=$!
wait_for 10 test -s "$T/busy_port" || fail "no listener for the busy port"
BUSY=$(cat "$T/busy_port")
run start --head --port "$BUSY" --bind 127.0.0.1 --num-cpus 1
[ "$RC" -eq 1 ] || fail "start on a busy port exited $RC: $(cat "$T/err")"
[ "$(cat "$T/err")" = "escher: port $BUSY is in use; pass --port 0 for any free port" ] ||
  fail "busy port message: $(cat "$T/err")"
[ -z "$(ls -A "$ROOT" 2>/dev/null)" ] || fail "a failed start left $(ls -A "$ROOT")"
run status
[ "$RC" -ne 0 ] || fail "status found a cluster after a failed start"

# ---------------------------------------------------------------------------- head
step "head on 127.0.0.1 with --bind and --raylet-port, found without --session-dir"
RPORT=$(free_port)
ok start --head --port 0 --bind 127.0.0.1 --raylet-port "$RPORT" --num-cpus 1 --num-gpus 0 \
  --labels zone=a,tier=gold
HEAD_DIR=$(ls -d "$ROOT"/session_*)
[ "$(wc -l <<<"$HEAD_DIR")" -eq 1 ] || fail "sessions: $HEAD_DIR"
[ "$(stat -c %a "$ROOT")" = 700 ] || fail "runtime root mode $(stat -c %a "$ROOT")"
GCS_ADDR=$(cat "$HEAD_DIR/gcs_address")
HEAD_ID=$(cat "$HEAD_DIR/node_id")
[[ "$GCS_ADDR" == 127.0.0.1:* ]] || fail "GCS address $GCS_ADDR"
[ "$(cat "$HEAD_DIR/raylet_address")" = "127.0.0.1:$RPORT" ] ||
  fail "raylet address $(cat "$HEAD_DIR/raylet_address"), want port $RPORT"
for d in gcs raylet; do
  tr '\0' ' ' <"/proc/$(cut -d' ' -f1 "$HEAD_DIR/pids/$d.pid")/cmdline" | grep -q -- "--bind 127.0.0.1" ||
    fail "escher-$d was not given --bind"
done
grep -qF "Started escher head node" "$T/out" || fail "banner: $(cat "$T/out")"
grep -q -- "--session-dir" "$T/out" && fail "the default session's next steps name it: $(cat "$T/out")"
status_json
jcheck "$T/status.json" "
n = node('$HEAD_ID')
assert n['labels'] == {'zone': 'a', 'tier': 'gold'}, n['labels']
assert n['address'] == '127.0.0.1:$RPORT', n['address']"

step "a second head on the default session is refused; a failed one leaves nothing"
run start --head --port 0 --bind 127.0.0.1
[ "$RC" -eq 1 ] && grep -q "already running" "$T/err" || fail "second head: $RC $(cat "$T/err")"
run start --head --port "$BUSY" --bind 127.0.0.1 --session-dir "$T/busy"
[ "$RC" -eq 1 ] || fail "busy head with --session-dir exited $RC"
[ ! -e "$T/busy" ] || fail "failed start left $T/busy"
[ "$(ls -d "$ROOT"/*)" = "$HEAD_DIR" ] || fail "sessions changed: $(ls "$ROOT")"
expect_object_port() {
  run start --head --port 0 --object-port 7000 --session-dir "$T/obj"
  [ "$RC" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "one gRPC port" "$T/err" ||
    fail "--object-port: $RC $(cat "$T/err")"
}
expect_object_port

# ---------------------------------------------------------------------------- join
step "joined nodes advertise the address that reaches the GCS"
# The token and daemon key come from the newest live session (the head's).
ok start --address "$GCS_ADDR" --session-dir "$T/join" --num-cpus 1 --num-gpus 0 --labels zone=b
JOIN_ID=$(cat "$T/join/node_id")
ok start --address "$GCS_ADDR" --session-dir "$T/keep" --keep --num-cpus 1 --num-gpus 0 \
  --labels zone=a
KEEP_ID=$(cat "$T/keep/node_id")
status_json
jcheck "$T/status.json" "
for nid in ('$JOIN_ID', '$KEEP_ID'):
    assert node(nid)['address'].startswith('127.0.0.1:'), node(nid)['address']
assert node('$JOIN_ID')['labels'] == {'zone': 'b'}
assert node('$KEEP_ID')['labels'] == {'zone': 'a'}"
ok status
grep -q "labels zone=a,tier=gold\|labels tier=gold,zone=a" "$T/out" || fail "status text: $(cat "$T/out")"
grep -q "labels zone=b" "$T/out" || fail "status text lacks zone=b: $(cat "$T/out")"

# ---------------------------------------------------------------------------- labels
step "labels in --where"
ok resource set lab 2 --where zone=a
grep -q "every node with the labels" "$T/out" || fail "set output: $(cat "$T/out")"
status_json
jcheck "$T/status.json" "
def has(nid, name):
    return name in node(nid)['resources']
assert has('$HEAD_ID', 'default/lab') and has('$KEEP_ID', 'default/lab'), d
assert not has('$JOIN_ID', 'default/lab')"
ok resource set blab 1 --where-label zone=b
ok resource set gold 1 --where zone=a,tier=gold
ok resource set only 1 --node "$HEAD_ID"
status_json
jcheck "$T/status.json" "
r = lambda nid: node(nid)['resources']
assert 'default/blab' in r('$JOIN_ID') and 'default/blab' not in r('$HEAD_ID')
assert 'default/gold' in r('$HEAD_ID') and 'default/gold' not in r('$KEEP_ID')"
run resource set none 1 --where zone=nowhere
[ "$RC" -eq 1 ] && grep -q "FAILED_PRECONDITION" "$T/err" || fail "no match: $RC $(cat "$T/err")"
ok resource delete lab --where zone=a
# only the head has `only`: the delete by label skips the other zone=a node.
ok resource delete only --where zone=a
status_json
jcheck "$T/status.json" "
for n in d['nodes']:
    assert 'default/lab' not in n['resources'] and 'default/only' not in n['resources'], n"
run resource delete lab --where zone=a
[ "$RC" -eq 1 ] && grep -q "NOT_FOUND" "$T/err" || fail "second delete: $RC $(cat "$T/err")"

# ---------------------------------------------------------------------------- stop
step "stop on the head: the joined raylet exits, the --keep one stays"
JOIN_PID=$(cut -d' ' -f1 "$T/join/pids/raylet.pid")
KEEP_PID=$(cut -d' ' -f1 "$T/keep/pids/raylet.pid")
ok stop
[ "$(grep -c '^stopped escher-' "$T/out")" -eq 2 ] || fail "stop output: $(cat "$T/out")"
wait_for 20 dead "$JOIN_PID" || fail "the joined raylet still runs after the head stopped"
grep -q "the cluster stopped" "$T/join/logs/raylet.log" || fail "join log: $(tail -5 "$T/join/logs/raylet.log")"
wait_for 20 grep -q "retrying until it is back" "$T/keep/logs/raylet.log" ||
  fail "the --keep raylet did not hear of the stop"
alive "$KEEP_PID" || fail "the --keep raylet exited"
ok stop --session-dir "$T/keep"

step "stop --all stops every raylet, --keep ones too, then the GCS"
ok start --head --port 0 --bind 127.0.0.1 --num-cpus 1 --num-gpus 0
HEAD2_DIR=$(ls -td "$ROOT"/session_* | head -1)
[ "$HEAD2_DIR" != "$HEAD_DIR" ] || fail "no new session"
GCS2=$(cat "$HEAD2_DIR/gcs_address")
ok start --address "$GCS2" --session-dir "$T/keep2" --keep --num-cpus 1 --num-gpus 0
KEEP2_PID=$(cut -d' ' -f1 "$T/keep2/pids/raylet.pid")
GCS2_PID=$(cut -d' ' -f1 "$HEAD2_DIR/pids/gcs.pid")
ok stop --all
grep -q "stopping the whole cluster" "$T/out" || fail "stop --all output: $(cat "$T/out")"
wait_for 20 dead "$KEEP2_PID" || fail "the --keep raylet survived stop --all"
dead "$GCS2_PID" || fail "the GCS survived stop --all"
grep -q "the whole cluster is stopping" "$T/keep2/logs/raylet.log" || fail "keep2 log"
run status
[ "$RC" -ne 0 ] || fail "status after stop --all: $(cat "$T/out")"

echo "test_cli_cluster: OK"
