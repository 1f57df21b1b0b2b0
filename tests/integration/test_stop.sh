#!/usr/bin/env bash
# test_stop.sh: `escher stop` signals only a process that its pid file records exactly
# (pid, start time and executable; docs/cli.md), with no cluster running:
#  - a pid file pointing at an unrelated live process is reported stale and removed, and
#    the process lives on, although its command line names escher-raylet and the
#    session directory (which fooled the substring match stop used to do);
#  - a pid file recording a process exactly gets it stopped;
#  - a malformed pid file (the bare pid older versions wrote, a truncated line) is
#    refused with one line and exit 1, and kept, its process left alone.
# Only sleeps this script started are ever signalled.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
ESC="$BIN_DIR/client/escher"
[ -x "$ESC" ] || { echo "test_stop: no $ESC" >&2; exit 1; }
RAYLET_EXE=$(realpath "$BIN_DIR/raylet/escher-raylet")
SLEEP_EXE=$(realpath "$(command -v sleep)")

T=$(realpath "$(mktemp -d /tmp/escher-test-stop-XXXXXX)")
S="$T/session"
mkdir -p "$S/pids" "$S/logs"
BYSTANDER=
TARGET=
cleanup() {
  local rc=$?
  for p in $BYSTANDER $TARGET; do kill "$p" 2>/dev/null || true; done
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="start"
fail() { echo "test_stop: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $*"; }

# run ARGS...: escher stop on our session; stdout, stderr and exit code in $T/out, $T/err, RC.
run_stop() {
  RC=0
  "$ESC" stop --grace-period 5 --session-dir "$S" "$@" >"$T/out" 2>"$T/err" || RC=$?
}

# Waits (up to 5 s) until pid runs the executable $2: a background ( exec ... ) is a
# copy of this shell for a moment before it becomes the program.
wait_exe() {
  local pid=$1 exe=$2 i
  for ((i = 0; i < 250; i++)); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] && return 0
    sleep 0.02
  done
  fail "pid $pid never became $exe"
}

# Field 22 of /proc/PID/stat (start time in clock ticks): the fields after the command
# name's closing parenthesis start at field 3.
start_ticks() {
  sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20
}

alive() {
  local state
  state=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [ "$state" != Z ] && [ "$state" != X ]
}

# The bystander: not ours, but dressed as this session's raylet.
(exec -a "$RAYLET_EXE --token-file $S/token --node-id-file $S/node_id --log-dir $S/logs" \
  sleep 600) &
BYSTANDER=$!
wait_exe "$BYSTANDER" "$SLEEP_EXE"
tr '\0' ' ' <"/proc/$BYSTANDER/cmdline" | grep -qF "escher-raylet" || fail "bystander cmdline"
tr '\0' ' ' <"/proc/$BYSTANDER/cmdline" | grep -qF "$S" || fail "bystander cmdline"
TICKS=$(start_ticks "$BYSTANDER")

step "pid reused: right pid, another start time"
printf '%s %s %s\n' "$BYSTANDER" "$((TICKS + 1))" "$RAYLET_EXE" >"$S/pids/raylet.pid"
run_stop --force
[ "$RC" -eq 0 ] || fail "stop exited $RC: $(cat "$T/err")"
grep -qF "escher-raylet: pid file is stale (pid $BYSTANDER is now another process" "$T/out" ||
  fail "stop output: $(cat "$T/out")"
alive "$BYSTANDER" || fail "stop killed an unrelated process"
[ ! -e "$S/pids/raylet.pid" ] || fail "the stale pid file was kept"

step "right pid and start time, another executable"
printf '%s %s %s\n' "$BYSTANDER" "$TICKS" "$RAYLET_EXE" >"$S/pids/raylet.pid"
run_stop
[ "$RC" -eq 0 ] || fail "stop exited $RC: $(cat "$T/err")"
grep -qF "pid file is stale" "$T/out" || fail "stop output: $(cat "$T/out")"
alive "$BYSTANDER" || fail "stop killed an unrelated process"
[ ! -e "$S/pids/raylet.pid" ] || fail "the stale pid file was kept"

step "malformed pid files are refused and kept"
for content in "$BYSTANDER" "$BYSTANDER $TICKS" "$BYSTANDER $TICKS relative/exe" \
               "x$BYSTANDER $TICKS $SLEEP_EXE" "$BYSTANDER -$TICKS $SLEEP_EXE"; do
  printf '%s\n' "$content" >"$S/pids/raylet.pid"
  run_stop --force
  [ "$RC" -eq 1 ] || fail "stop on '$content' exited $RC"
  [ "$(wc -l <"$T/err")" -eq 1 ] || fail "want one stderr line for '$content': $(cat "$T/err")"
  grep -q "^escher: malformed pid file $S/pids/raylet.pid (" "$T/err" ||
    fail "stderr for '$content': $(cat "$T/err")"
  alive "$BYSTANDER" || fail "stop killed a process named by a malformed pid file"
  [ -e "$S/pids/raylet.pid" ] || fail "the malformed pid file was removed"
done
printf '%s %s %s' "$BYSTANDER" "$TICKS" "$SLEEP_EXE" >"$S/pids/raylet.pid" # no newline
run_stop --force
[ "$RC" -eq 1 ] || fail "stop on a line without newline exited $RC"
alive "$BYSTANDER" || fail "stop killed a process named by a truncated pid file"
rm -f "$S/pids/raylet.pid"

step "a process recorded exactly is stopped"
sleep 600 &
TARGET=$!
wait_exe "$TARGET" "$SLEEP_EXE"
printf '%s %s %s\n' "$TARGET" "$(start_ticks "$TARGET")" "$SLEEP_EXE" >"$S/pids/gcs.pid"
run_stop
[ "$RC" -eq 0 ] || fail "stop exited $RC: $(cat "$T/err")"
grep -qF "stopped escher-gcs (pid $TARGET)" "$T/out" || fail "stop output: $(cat "$T/out")"
wait "$TARGET" 2>/dev/null || true # reap it: a zombie would still have a /proc entry
alive "$TARGET" && fail "the recorded process survived stop"
TARGET=
[ ! -e "$S/pids/gcs.pid" ] || fail "the pid file was kept"
alive "$BYSTANDER" || fail "the bystander died with the recorded process"

step "nothing left"
run_stop
[ "$RC" -eq 0 ] || fail "stop exited $RC"
grep -qF "no escher session is running" "$T/out" || fail "stop output: $(cat "$T/out")"

echo "test_stop: OK"
