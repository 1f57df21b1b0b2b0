#!/usr/bin/env bash
# test_cli.sh: the `escher` command end to end, as a user runs it: start a head node, shape
# ephemeral resources, read `status --json` and `resource list`, check the errors and their
# exit codes, join a second raylet, target it with --where and --all-nodes, and stop both
# sessions with nothing left running.
#
# Every session lives in a fresh temporary directory (ESCHER_SESSION_DIR and --session-dir);
# nothing here looks for the user's newest session (test_cli_cluster.sh does, in a runtime
# directory of its own). Only pids of our own sessions are ever signalled, by `escher stop`.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
export ESCHER_BIN_DIR=$BIN_DIR
ESC="$BIN_DIR/client/escher"
command -v python3 >/dev/null || { echo "test_cli: python3 is required" >&2; exit 1; }
[ -x "$ESC" ] || { echo "test_cli: no $ESC" >&2; exit 1; }

T=$(mktemp -d /tmp/escher-test-cli-XXXXXX)
HEAD_DIR="$T/head"    # the head's session
JOIN_DIR="$T/join"    # the joined raylet's session
export ESCHER_SESSION_DIR="$HEAD_DIR"
unset ESCHER_TOKEN ESCHER_NODE_ID

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for f in "$HEAD_DIR"/logs/*.log "$JOIN_DIR"/logs/*.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  "$ESC" stop --force --session-dir "$JOIN_DIR" >/dev/null 2>&1 || true
  "$ESC" stop --force --session-dir "$HEAD_DIR" >/dev/null 2>&1 || true
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="start"
fail() { echo "test_cli: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $*"; }

# run CMD...: runs escher, keeping stdout/stderr in $T/out and $T/err and the exit code in RC.
run() {
  RC=0
  "$ESC" "$@" >"$T/out" 2>"$T/err" || RC=$?
}

# ok CMD...: escher must succeed.
ok() {
  run "$@"
  [ "$RC" -eq 0 ] || fail "escher $* exited $RC: $(cat "$T/err")"
}

# expect_err CODE PREFIX CMD...: escher must exit CODE with exactly one stderr line, starting
# with PREFIX, and print nothing on stdout.
expect_err() {
  local code=$1 prefix=$2
  shift 2
  run "$@"
  [ "$RC" -eq "$code" ] || fail "escher $* exited $RC, want $code (stderr: $(cat "$T/err"))"
  local lines
  lines=$(wc -l <"$T/err")
  [ "$lines" -eq 1 ] || fail "escher $*: want one stderr line, got $lines: $(cat "$T/err")"
  [[ "$(cat "$T/err")" == "$prefix"* ]] || fail "escher $*: stderr '$(cat "$T/err")' does not start with '$prefix'"
  [ ! -s "$T/out" ] || fail "escher $*: unexpected stdout: $(cat "$T/out")"
}

# Python helpers for the JSON checks: d is the parsed document, HEAD and JOIN the node ids.
cat >"$T/check.py" <<'EOF'
import json, os, sys

HEAD = os.environ.get("HEAD_ID", "")
JOIN = os.environ.get("JOIN_ID", "")

def is_qty(v, inf_ok):
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    return inf_ok and v == "inf"

def check_totals(d):
    """totals: each resource summed over the alive nodes, with how many have it."""
    want = {}
    for n in d["nodes"]:
        if n["state"] == "DEAD":
            continue
        for name, r in n["resources"].items():
            if r.get("deleted"):
                continue
            w = want.setdefault(name, {"total": 0, "held": 0, "available": 0, "nodes": 0})
            for k in ("total", "held", "available"):
                w[k] = "inf" if "inf" in (w[k], r[k]) else w[k] + r[k]
            w["nodes"] += 1
    got = d["totals"]
    assert set(got) == set(want), (sorted(got), sorted(want))
    for name, w in want.items():
        for k in ("total", "held", "available"):
            assert w[k] == got[name][k] or abs(w[k] - got[name][k]) < 1e-9, (name, k, w, got[name])
        assert got[name]["nodes"] == w["nodes"], (name, got[name], w)

def check_status_shape(d):
    """The exact shape of `escher status --json` (docs/cli.md)."""
    assert isinstance(d, dict) and set(d) == {"seq", "totals", "nodes"}, sorted(d)
    assert isinstance(d["seq"], int) and not isinstance(d["seq"], bool) and d["seq"] > 0, d["seq"]
    assert isinstance(d["nodes"], list) and d["nodes"], d["nodes"]
    for n in d["nodes"]:
        assert set(n) == {"id", "address", "state", "head", "resources", "cpu_shares",
                          "labels"}, sorted(n)
        assert isinstance(n["head"], bool), n["head"]
        assert set(n["cpu_shares"]) == {"enforced", "detail"}, n["cpu_shares"]
        assert isinstance(n["id"], str) and len(n["id"]) == 16, n["id"]
        int(n["id"], 16)
        host, _, port = n["address"].rpartition(":")
        assert host and 0 < int(port) < 65536, n["address"]
        assert n["state"] == "ALIVE", n["state"]
        res = n["resources"]
        assert isinstance(res, dict) and "CPU" in res, res
        for name, r in res.items():
            ephemeral = "/" in name
            keys = {"total", "held", "available"}
            if ephemeral:
                keys |= {"owner", "namespace"}
            assert set(r) == keys, (name, sorted(r))
            assert is_qty(r["total"], True) and is_qty(r["available"], True), (name, r)
            assert is_qty(r["held"], False), (name, r)
            if r["total"] != "inf":
                assert r["available"] == r["total"] - r["held"], (name, r)
            else:
                assert r["available"] == "inf", (name, r)
            if ephemeral:
                assert isinstance(r["owner"], str), (name, r)
                assert r["namespace"] == name.split("/", 1)[0], (name, r)

def node(d, nid):
    found = [n for n in d["nodes"] if n["id"] == nid]
    assert len(found) == 1, (nid, [n["id"] for n in d["nodes"]])
    return found[0]

def res(d, nid, name):
    """The row of name on node nid, or None."""
    return node(d, nid)["resources"].get(name)

def ephemeral(d, nid):
    return sorted(k for k in node(d, nid)["resources"] if "/" in k)

def check_list_shape(d):
    """The exact shape of `escher resource list --json` (docs/cli.md)."""
    assert isinstance(d, dict) and set(d) == {"seq", "resources"}, sorted(d)
    assert isinstance(d["seq"], int) and d["seq"] > 0, d["seq"]
    for r in d["resources"]:
        assert set(r) == {"node", "name", "namespace", "owner", "total", "held",
                          "available"}, sorted(r)
        assert r["name"].split("/", 1)[0] == r["namespace"], r

def listed(d):
    return sorted((r["node"], r["name"]) for r in d["resources"])

with open(sys.argv[1]) as f:
    d = json.load(f)
exec(sys.argv[2])
EOF

# jcheck FILE CODE: runs python CODE (asserts) with d = the JSON in FILE.
jcheck() {
  HEAD_ID=${HEAD_ID:-} JOIN_ID=${JOIN_ID:-} python3 "$T/check.py" "$1" "$2" \
    || fail "JSON check failed: $2 on $(cat "$1")"
}

# status_json: `escher status --json` into $T/status.json, shape checked.
status_json() {
  ok status --json
  cp "$T/out" "$T/status.json"
  jcheck "$T/status.json" 'check_status_shape(d); check_totals(d)'
}

# A pid of this test's sessions is alive when it runs (zombies are dead) and is still our
# daemon (its command line names its session directory).
pid_alive() {
  local pid=$1 dir=$2 stat state
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  state=$(sed 's/.*) \(.\).*/\1/' <<<"$stat")
  [ "$state" != Z ] && [ "$state" != X ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir"
}

# ---------------------------------------------------------------------------- head
step "start --head"
ok start --head --port 0 --num-cpus 2 --num-gpus 0 --resources accel=1 --node-ip 127.0.0.1
grep -q "Started escher head node" "$T/out" || fail "no start banner: $(cat "$T/out")"
for f in token gcs_address node_id raylet_address pids/gcs.pid pids/raylet.pid; do
  [ -s "$HEAD_DIR/$f" ] || fail "session file $f missing or empty"
done
HEAD_ID=$(cat "$HEAD_DIR/node_id")
GCS_ADDR=$(cat "$HEAD_DIR/gcs_address")
[[ "$GCS_ADDR" =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "gcs_address is '$GCS_ADDR'"
[ "${GCS_ADDR##*:}" != 0 ] || fail "--port 0 was not replaced by the bound port"
grep -qF "escher start --address $GCS_ADDR --token" "$T/out" || fail "no join command printed"

step "pid files"
# One line each: "PID START_TICKS EXE" (docs/cli.md), matching the running daemon.
for name in gcs raylet; do
  read -r pid ticks exe <"$HEAD_DIR/pids/$name.pid" || fail "pids/$name.pid unreadable"
  [ "$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f20)" = "$ticks" ] ||
    fail "pids/$name.pid start time $ticks is not the process's"
  [ "$(readlink "/proc/$pid/exe")" = "$exe" ] || fail "pids/$name.pid exe $exe is not the process's"
  [ "$(basename "$exe")" = "escher-$name" ] || fail "pids/$name.pid names $exe"
done

step "token file"
[ "$(stat -c %a "$HEAD_DIR/token")" = 600 ] || fail "token mode $(stat -c %a "$HEAD_DIR/token")"
TOKEN=$(cat "$HEAD_DIR/token")
[ "$(stat -c %s "$HEAD_DIR/token")" -eq 64 ] || fail "token is not 64 bytes"
[[ "$TOKEN" =~ ^[0-9a-f]{64}$ ]] || fail "token is not 64 hex characters"
grep -qF "$TOKEN" "$T/out" || fail "the printed join command lacks the token"

step "daemon key and operator key files"
# Two more secrets (docs/security.md): daemons only, and operator stops only.
for f in daemon_key operator; do
  [ "$(stat -c %a "$HEAD_DIR/$f")" = 600 ] || fail "$f mode $(stat -c %a "$HEAD_DIR/$f")"
  [[ "$(cat "$HEAD_DIR/$f")" =~ ^[0-9a-f]{64}$ ]] || fail "$f is not 64 hex characters"
  [ "$(cat "$HEAD_DIR/$f")" != "$TOKEN" ] || fail "$f is the token"
done
DAEMON_KEY=$(cat "$HEAD_DIR/daemon_key")
[ "$DAEMON_KEY" != "$(cat "$HEAD_DIR/operator")" ] || fail "the daemon key is the operator key"
grep -qF -- "--daemon-key $DAEMON_KEY" "$T/out" || fail "the printed join command lacks the daemon key"

step "status --json of a fresh head"
status_json
jcheck "$T/status.json" '
assert len(d["nodes"]) == 1
assert d["nodes"][0]["id"] == HEAD
r = d["nodes"][0]["resources"]
assert r["CPU"] == {"total": 2, "held": 0, "available": 2}, r["CPU"]
assert r["accel"] == {"total": 1, "held": 0, "available": 1}, r["accel"]
assert "GPU" not in r or r["GPU"]["total"] == 0, r.get("GPU")
assert ephemeral(d, HEAD) == [], ephemeral(d, HEAD)'
SEQ0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seq"])' "$T/status.json")

jcheck "$T/status.json" 'assert d["nodes"][0]["head"] is True, d["nodes"][0]'

step "status (table)"
ok status
grep -q "^cluster: 1 node" "$T/out" || fail "table header: $(head -1 "$T/out")"
grep -qF "node $HEAD_ID (head)" "$T/out" || fail "table lacks node $HEAD_ID marked head"
grep -q "^totals (alive nodes)" "$T/out" || fail "table lacks the totals"
grep -Eq "^  CPU +2 +0 +2  1$" "$T/out" || fail "totals' CPU row: $(grep "^  CPU" "$T/out" | head -1)"

step "status --watch"
# Redraws until SIGINT, then exits 0: at 0.2 s, a second's watch prints several documents.
RC=0
timeout --preserve-status -s INT 1.5 "$ESC" status --watch 0.2 --json >"$T/watch" 2>"$T/err" || RC=$?
[ "$RC" -eq 0 ] || fail "status --watch exited $RC on SIGINT: $(cat "$T/err")"
DOCS=$(grep -c '^{' "$T/watch" || true)
[ "$DOCS" -ge 2 ] || fail "status --watch printed $DOCS documents in 1.5 s at 0.2 s"
expect_err 2 "escher: --watch wants seconds" status --watch 0

# ---------------------------------------------------------------------------- resources
step "resource set / add"
ok resource set foo 2
grep -qF "default/foo set to 2 on the local node (seq " "$T/out" || fail "set output: $(cat "$T/out")"
ok resource add foo -0.5
grep -qF "default/foo changed by -0.5" "$T/out" || fail "add output: $(cat "$T/out")"
status_json
jcheck "$T/status.json" '
assert d["seq"] > '"$SEQ0"', d["seq"]
assert res(d, HEAD, "default/foo") == {"total": 1.5, "held": 0, "available": 1.5,
                                       "owner": "", "namespace": "default"}, res(d, HEAD, "default/foo")'

step "resource set inf"
ok resource set big inf
status_json
jcheck "$T/status.json" '
assert res(d, HEAD, "default/big") == {"total": "inf", "held": 0, "available": "inf",
                                       "owner": "", "namespace": "default"}, res(d, HEAD, "default/big")'

step "resource set --namespace"
ok resource set x 1 --namespace other
grep -qF "other/x set to 1" "$T/out" || fail "set output: $(cat "$T/out")"
status_json
jcheck "$T/status.json" '
assert res(d, HEAD, "other/x") == {"total": 1, "held": 0, "available": 1,
                                   "owner": "", "namespace": "other"}, res(d, HEAD, "other/x")
assert res(d, HEAD, "default/x") is None
assert ephemeral(d, HEAD) == ["default/big", "default/foo", "other/x"], ephemeral(d, HEAD)'

step "resource list"
ok resource list
for name in default/big default/foo other/x; do
  grep -qE "^$HEAD_ID +$name " "$T/out" || fail "list lacks $name: $(cat "$T/out")"
done
[ "$(grep -c "^$HEAD_ID " "$T/out")" -eq 3 ] || fail "list rows: $(cat "$T/out")"
ok resource list --json
cp "$T/out" "$T/list.json"
jcheck "$T/list.json" '
check_list_shape(d)
assert listed(d) == [(HEAD, "default/big"), (HEAD, "default/foo"), (HEAD, "other/x")], listed(d)
foo = [r for r in d["resources"] if r["name"] == "default/foo"][0]
assert (foo["total"], foo["held"], foo["available"], foo["owner"]) == (1.5, 0, 1.5, ""), foo'
ok resource list --namespace other --json
cp "$T/out" "$T/list.json"
jcheck "$T/list.json" 'check_list_shape(d); assert listed(d) == [(HEAD, "other/x")], listed(d)'

step "resource delete"
ok resource delete foo
status_json
jcheck "$T/status.json" '
assert res(d, HEAD, "default/foo") is None
assert ephemeral(d, HEAD) == ["default/big", "other/x"], ephemeral(d, HEAD)'
ok resource list
grep -qF "default/foo" "$T/out" && fail "deleted foo still listed: $(cat "$T/out")"
ok resource set foo 1.5   # back, for the checks below that nothing changes it

# ---------------------------------------------------------------------------- errors
step "errors"
expect_err 1 "escher: PERMISSION_DENIED" resource set CPU 1
expect_err 1 "escher: INVALID_ARGUMENT" resource set 'bad name' 1
expect_err 2 "escher: " resource set foo abc
expect_err 1 "escher: INVALID_ARGUMENT" resource set foo 1 --node ffffffffffffffff
expect_err 1 "escher: NOT_FOUND" resource delete never
expect_err 1 "escher: UNAUTHENTICATED" --token "not-the-token" status
expect_err 1 "escher: UNAUTHENTICATED" resource set foo 7 --token "not-the-token"
status_json
jcheck "$T/status.json" '
r = node(d, HEAD)["resources"]
assert r["CPU"]["total"] == 2, r["CPU"]
assert res(d, HEAD, "default/foo")["total"] == 1.5, res(d, HEAD, "default/foo")
assert ephemeral(d, HEAD) == ["default/big", "default/foo", "other/x"], ephemeral(d, HEAD)'

# ---------------------------------------------------------------------------- join
step "join a second raylet"
run start --address "$GCS_ADDR" --token "$TOKEN" --daemon-key "not-the-key" \
  --session-dir "$T/badjoin" --num-cpus 1 --num-gpus 0 --node-ip 127.0.0.1
[ "$RC" -ne 0 ] || fail "a join with a wrong daemon key succeeded"
grep -q "PERMISSION_DENIED" "$T/err" ||
  fail "the refused raylet does not say why: $(cat "$T/err")"
[ ! -e "$T/badjoin" ] || fail "a failed start left its session directory: $(ls -R "$T/badjoin")"
ok start --address "$GCS_ADDR" --token "$TOKEN" --daemon-key "$DAEMON_KEY" \
  --session-dir "$JOIN_DIR" --resources zone=1 --num-cpus 1 --num-gpus 0 --node-ip 127.0.0.1
grep -q "Started escher node" "$T/out" || fail "no join banner: $(cat "$T/out")"
[ -s "$JOIN_DIR/node_id" ] && [ -s "$JOIN_DIR/pids/raylet.pid" ] || fail "join session files missing"
[ ! -e "$JOIN_DIR/pids/gcs.pid" ] || fail "a join started a GCS"
[ "$(cat "$JOIN_DIR/token")" = "$TOKEN" ] || fail "join token differs"
[ "$(cat "$JOIN_DIR/daemon_key")" = "$DAEMON_KEY" ] || fail "join daemon key differs"
[ ! -e "$JOIN_DIR/operator" ] || fail "a joined node has the operator key"
[ "$(cat "$JOIN_DIR/gcs_address")" = "$GCS_ADDR" ] || fail "join gcs_address differs"
JOIN_ID=$(cat "$JOIN_DIR/node_id")
[ "$JOIN_ID" != "$HEAD_ID" ] || fail "joined node has the head's id"
status_json
jcheck "$T/status.json" '
assert sorted(n["id"] for n in d["nodes"]) == sorted([HEAD, JOIN]), d["nodes"]
assert res(d, JOIN, "zone") == {"total": 1, "held": 0, "available": 1}, res(d, JOIN, "zone")
assert res(d, HEAD, "zone") is None
assert res(d, JOIN, "CPU")["total"] == 1
assert ephemeral(d, JOIN) == [], ephemeral(d, JOIN)'

step "resource set --where"
ok resource set tag 1 --where zone=1
status_json
jcheck "$T/status.json" '
assert res(d, JOIN, "default/tag") == {"total": 1, "held": 0, "available": 1,
                                       "owner": "", "namespace": "default"}, res(d, JOIN, "default/tag")
assert res(d, HEAD, "default/tag") is None, res(d, HEAD, "default/tag")'
# accel is only on the head: the same selector form lands there.
ok resource set tag_a 1 --where accel=1
status_json
jcheck "$T/status.json" '
assert res(d, HEAD, "default/tag_a")["total"] == 1
assert res(d, JOIN, "default/tag_a") is None'
expect_err 1 "escher: FAILED_PRECONDITION" resource set tag 1 --where zone=1 --num-nodes 2

step "resource set/add --all-nodes"
ok resource set every 2 --all-nodes
ok resource add tag 0.25 --all-nodes
status_json
jcheck "$T/status.json" '
for nid in (HEAD, JOIN):
    assert res(d, nid, "default/every")["total"] == 2, (nid, res(d, nid, "default/every"))
assert res(d, JOIN, "default/tag")["total"] == 1.25, res(d, JOIN, "default/tag")
assert res(d, HEAD, "default/tag")["total"] == 0.25, res(d, HEAD, "default/tag")'
# foo is only on the head: a delete on all nodes is a delete of an absent resource on
# the joined one, which rejects it whole (docs/resources.md).
expect_err 1 "escher: NOT_FOUND: default/foo does not exist on node $JOIN_ID" \
  resource delete foo --all-nodes
status_json
jcheck "$T/status.json" 'assert res(d, HEAD, "default/foo")["total"] == 1.5, res(d, HEAD, "default/foo")'
ok resource list --json
cp "$T/out" "$T/list.json"
jcheck "$T/list.json" '
check_list_shape(d)
assert (JOIN, "default/every") in listed(d) and (HEAD, "default/every") in listed(d), listed(d)
assert len(listed(d)) == 8, listed(d)'

# ---------------------------------------------------------------------------- stop
step "stop"
HEAD_PIDS=$(cut -d' ' -f1 "$HEAD_DIR"/pids/*.pid)   # "PID START_TICKS EXE"
JOIN_PIDS=$(cut -d' ' -f1 "$JOIN_DIR"/pids/*.pid)
[ "$(wc -w <<<"$HEAD_PIDS")" -eq 2 ] || fail "head pids: $HEAD_PIDS"
[ "$(wc -w <<<"$JOIN_PIDS")" -eq 1 ] || fail "join pids: $JOIN_PIDS"
for p in $HEAD_PIDS; do pid_alive "$p" "$HEAD_DIR" || fail "head pid $p not running before stop"; done
for p in $JOIN_PIDS; do pid_alive "$p" "$JOIN_DIR" || fail "join pid $p not running before stop"; done

ok stop --session-dir "$JOIN_DIR"
grep -qF "stopped escher-raylet" "$T/out" || fail "stop output: $(cat "$T/out")"
for p in $JOIN_PIDS; do pid_alive "$p" "$JOIN_DIR" && fail "join pid $p alive after stop"; done
for p in $HEAD_PIDS; do pid_alive "$p" "$HEAD_DIR" || fail "head pid $p died with the join's stop"; done

ok stop
[ "$(grep -c '^stopped escher-' "$T/out")" -eq 2 ] || fail "stop output: $(cat "$T/out")"
for p in $HEAD_PIDS; do pid_alive "$p" "$HEAD_DIR" && fail "head pid $p alive after stop"; done
ls "$HEAD_DIR"/pids/*.pid >/dev/null 2>&1 && fail "pid files left after stop"
[ -d "$HEAD_DIR/logs" ] || fail "stop removed the session's logs"

step "second stop"
ok stop
grep -qF "no escher session is running" "$T/out" || fail "second stop: $(cat "$T/out")"
ok stop --session-dir "$JOIN_DIR"
grep -qF "no escher session is running" "$T/out" || fail "second stop (join): $(cat "$T/out")"

step "after stop"
run status
[ "$RC" -eq 1 ] || fail "status after stop exited $RC"
grep -q "^escher: UNAVAILABLE" "$T/err" || fail "status after stop: $(cat "$T/err")"

echo "test_cli: OK"
