#!/usr/bin/env bash
# test_cli_users.sh: two users run a cluster each on one machine, at the same time
# (docs/deploy.md, "Addresses, ports and sessions"). Each user's sessions live under
# their own runtime directory ($XDG_RUNTIME_DIR/escher), their raylets' worker sockets
# under /tmp/escher-<uid>; `escher status` and `escher stop` of one user see only that
# user's cluster.
#
# Needs root (it makes two throwaway system users with useradd and runs escher as them
# with runuser); anything else skips with 77. The trap stops both clusters and removes
# the users and their directories. Everything listens on 127.0.0.1.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
ESC="$BIN_DIR/client/escher"
if [ "$(id -u)" -ne 0 ] || ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
  echo "test_cli_users: needs root, useradd and runuser; skipped"
  exit 77
fi
command -v python3 >/dev/null || { echo "test_cli_users: python3 is required" >&2; exit 1; }
# The users must reach the binaries.
if ! runuser -u nobody -- test -x "$ESC" 2>/dev/null; then
  echo "test_cli_users: $ESC is not executable by other users; skipped"
  exit 77
fi

T=$(mktemp -d /tmp/escher-test-users-XXXXXX)
chmod 0755 "$T"
U1="escu1$$"
U2="escu2$$"
USERS=()
declare -A DIR

cleanup() {
  local rc=$?
  for u in "${USERS[@]}"; do
    if [ "$rc" -ne 0 ]; then
      for f in "$T/$u"/xdg/escher/*/logs/*.log; do
        [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
      done
    fi
    for d in "$T/$u"/xdg/escher/*; do
      [ -d "$d/pids" ] && as "$u" "$ESC" stop --force --session-dir "$d" >/dev/null 2>&1
    done
    local uid
    uid=$(id -u "$u" 2>/dev/null) && rm -rf "/tmp/escher-$uid"
    userdel "$u" >/dev/null 2>&1 || true
  done
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

fail() { echo "test_cli_users: FAIL: $*" >&2; exit 1; }
# alive PID: runs and is not a zombie (a stopped daemon is reaped by init, not by us).
alive() { [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
# gone PID: not alive within 10 s (polled).
gone() {
  local deadline=$(($(date +%s) + 10))
  while alive "$1"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# as USER CMD...: runs CMD as USER with its own HOME and XDG_RUNTIME_DIR.
as() {
  local u=$1
  shift
  runuser -u "$u" -- env -i PATH="$PATH" HOME="$T/$u/home" XDG_RUNTIME_DIR="$T/$u/xdg" \
    ESCHER_BIN_DIR="$BIN_DIR" "$@"
}

for u in "$U1" "$U2"; do
  useradd --system --no-create-home --shell /usr/sbin/nologin "$u" ||
    fail "useradd $u"
  USERS+=("$u")
  mkdir -p "$T/$u/home" "$T/$u/xdg"
  chown -R "$u:" "$T/$u"
  chmod 0700 "$T/$u/xdg"
done

echo "== each user starts a head with --port 0"
for u in "$U1" "$U2"; do
  as "$u" "$ESC" start --head --port 0 --bind 127.0.0.1 --num-cpus 1 --num-gpus 0 \
    >"$T/$u.out" 2>&1 || fail "$u: start: $(cat "$T/$u.out")"
  dirs=$(ls -d "$T/$u"/xdg/escher/session_*)
  [ "$(wc -l <<<"$dirs")" -eq 1 ] || fail "$u: sessions $dirs"
  [ "$(stat -c %U "$dirs")" = "$u" ] || fail "$u: session owned by $(stat -c %U "$dirs")"
  DIR[$u]=$dirs
done

echo "== each user's status sees only their cluster"
for u in "$U1" "$U2"; do
  dir=${DIR[$u]}
  as "$u" "$ESC" status --json >"$T/$u.json" 2>"$T/$u.err" || fail "$u: status: $(cat "$T/$u.err")"
  python3 - "$T/$u.json" "$(cat "$dir/node_id")" <<'EOF' || fail "$u: status shows another cluster"
import json, sys
d = json.load(open(sys.argv[1]))
ids = [n["id"] for n in d["nodes"]]
assert ids == [sys.argv[2]], ids
EOF
done
[ "$(cat "${DIR[$U1]}/gcs_address")" != "$(cat "${DIR[$U2]}/gcs_address")" ] ||
  fail "both users' GCSs share an address"

echo "== one user's stop stops only their cluster"
PIDS1=$(cut -d' ' -f1 "${DIR[$U1]}"/pids/*.pid)
PIDS2=$(cut -d' ' -f1 "${DIR[$U2]}"/pids/*.pid)
as "$U1" "$ESC" stop >"$T/stop1.out" 2>&1 || fail "$U1: stop: $(cat "$T/stop1.out")"
[ "$(grep -c '^stopped escher-' "$T/stop1.out")" -eq 2 ] || fail "$U1 stop: $(cat "$T/stop1.out")"
for p in $PIDS1; do gone "$p" || fail "$U1's pid $p survived its stop"; done
for p in $PIDS2; do alive "$p" || fail "$U2's pid $p died with $U1's stop"; done
as "$U2" "$ESC" status >/dev/null 2>&1 || fail "$U2's cluster stopped answering"
as "$U1" "$ESC" status >/dev/null 2>&1 && fail "$U1's status still finds a cluster"
as "$U2" "$ESC" stop >"$T/stop2.out" 2>&1 || fail "$U2: stop: $(cat "$T/stop2.out")"
[ "$(grep -c '^stopped escher-' "$T/stop2.out")" -eq 2 ] || fail "$U2 stop: $(cat "$T/stop2.out")"

echo "test_cli_users: OK"
