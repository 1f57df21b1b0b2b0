#!/usr/bin/env bash
# test_jobs.sh: `escher job` and `escher logs` end to end, as a user runs them, on a
# one-node cluster of our own: submit with a working directory (its files used, stdout and
# stderr shown, the exit code propagated), job list/status/logs, escher logs TASK_ID,
# --no-wait, job stop of a running job, SIGINT to a waiting submit, job logs --follow, an
# entrypoint that asks for a missing resource shown PENDING with it, an entrypoint that
# connects to the cluster through ESCHER_ADDRESS/ESCHER_TOKEN, and the size limit and
# usage errors as one clean line.
#
# The session lives in a fresh temporary directory (ESCHER_SESSION_DIR). Only processes
# this script started are signalled: the cluster through `escher stop`, a submit that runs
# in the background by its $! pid; entrypoints are checked with `kill -0`, which sends
# nothing.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
export ESCHER_BIN_DIR=$BIN_DIR
ESC="$BIN_DIR/client/escher"
command -v python3 >/dev/null || { echo "test_jobs: python3 is required" >&2; exit 1; }
command -v tar >/dev/null || { echo "test_jobs: tar is required" >&2; exit 1; }
[ -x "$ESC" ] || { echo "test_jobs: no $ESC" >&2; exit 1; }

T=$(mktemp -d /tmp/escher-test-jobs-XXXXXX)
SESSION="$T/session"
export ESCHER_SESSION_DIR="$SESSION"
unset ESCHER_TOKEN ESCHER_NODE_ID ESCHER_ADDRESS

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for f in "$SESSION"/logs/*.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  "$ESC" stop --force >/dev/null 2>&1 || true
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="start"
fail() { echo "test_jobs: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $*"; }

# run CMD...: runs escher, keeping stdout/stderr in $T/out and $T/err and the exit code in RC.
# A sanitizer report (the ASan build) fails the test.
run() {
  RC=0
  "$ESC" "$@" >"$T/out" 2>"$T/err" || RC=$?
  ! grep -Eq "Sanitizer|runtime error:" "$T/err" || fail "escher $*: sanitizer report: $(cat "$T/err")"
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

# jq_job ID EXPR: evaluates a Python expression over `escher job status ID --json` as j.
jq_job() {
  "$ESC" job status "$1" --json >"$T/status.json" || fail "job status $1 failed"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
    "$T/status.json" "$2"
}

# wait_job ID STATE: polls until the job's GCS state is STATE and its result is recorded.
wait_job() {
  local i
  for i in $(seq 200); do
    [ "$(jq_job "$1" 'j["state"] + ("" if j["status"] == "RUNNING" else "+")')" = "$2+" ] && return 0
    sleep 0.1
  done
  fail "job $1 did not reach $2: $(cat "$T/status.json")"
}

# gone PIDFILE: waits until the process whose pid is in PIDFILE has exited.
gone() {
  local i pid
  pid=$(cat "$1")
  for i in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  fail "process $pid (from $1) still runs"
}

# wait_file F: waits until file F exists (an entrypoint wrote its pid).
wait_file() {
  local i
  for i in $(seq 200); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  fail "$1 never appeared"
}

step "start a head node"
"$ESC" start --head --port 0 --num-cpus 2 >"$T/start.out" 2>&1 || {
  cat "$T/start.out" >&2
  fail "escher start exited $?"
}

# The working directory: a file and a script that prints it, its cwd, a line on stderr,
# and exits with its first argument.
WD="$T/wd"
mkdir -p "$WD/sub"
echo "payload-42" >"$WD/sub/data.txt"
cat >"$WD/run.sh" <<'EOF'
#!/bin/sh
echo "data: $(cat sub/data.txt)"
echo "cwd: $(pwd)"
echo "to-stderr" >&2
exit "${1:-0}"
EOF
chmod +x "$WD/run.sh"

step "submit with a working directory, waiting: output shown, exit 0"
run job submit --working-dir "$WD" -- ./run.sh
[ "$RC" -eq 0 ] || fail "exited $RC: $(cat "$T/err")"
J1=$(sed -n 's/^job \([0-9a-f]*\) submitted (entrypoint task [0-9a-f]*)$/\1/p' "$T/err")
[ -n "$J1" ] || fail "no 'job ID submitted' line on stderr: $(cat "$T/err")"
# The copy lives in the raylet's log dir, SESSION/logs/tasks, under jobs/<job id>.
printf 'data: payload-42\ncwd: %s\n' "$SESSION/logs/tasks/jobs/$J1" >"$T/want1"
diff "$T/want1" "$T/out" >&2 || fail "stdout differs (above)"
grep -qx "to-stderr" "$T/err" || fail "the entrypoint's stderr was not shown: $(cat "$T/err")"

step "the entrypoint's exit code is the command's"
run job submit --working-dir "$WD" -- ./run.sh 3
[ "$RC" -eq 3 ] || fail "exited $RC, want 3: $(cat "$T/err")"
J2=$(sed -n 's/^job \([0-9a-f]*\) submitted.*/\1/p' "$T/err")
[ "$(head -n 1 "$T/out")" = "data: payload-42" ] || fail "stdout: $(cat "$T/out")"
[ "$(tail -n 1 "$T/err")" = "escher: job $J2 failed: exited with code 3" ] ||
  fail "last stderr line: $(tail -n 1 "$T/err")"

step "a command killed by a signal exits 128+N"
run job submit -- sh -c 'kill -9 $$'
[ "$RC" -eq 137 ] || fail "exited $RC, want 137: $(cat "$T/err")"

step "job list shows FINISHED and FAILED with their results"
run job list --json
[ "$RC" -eq 0 ] || fail "job list --json exited $RC: $(cat "$T/err")"
python3 - "$T/out" "$J1" "$J2" <<'EOF' || fail "job list --json: $(cat "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
jobs = {j["job_id"]: j for j in d["jobs"]}
a, b = jobs[sys.argv[2]], jobs[sys.argv[3]]
assert (a["state"], a["status"], a["exit_code"], a["result"]) == ("FINISHED", "SUCCEEDED", 0, "exit code 0"), a
assert (b["state"], b["status"], b["exit_code"], b["result"]) == ("FAILED", "FAILED", 3, "exit code 3"), b
assert a["entrypoint"] == ["./run.sh"] and b["entrypoint"] == ["./run.sh", "3"], (a, b)
assert a["working_dir"].endswith("/wd") and a["working_dir_bytes"] > 0, a
EOF
run job list
grep -Eq "^$J1 +FINISHED +exit code 0 " "$T/out" || fail "job list: $(cat "$T/out")"
grep -Eq "^$J2 +FAILED +exit code 3 " "$T/out" || fail "job list: $(cat "$T/out")"

step "job logs prints the entrypoint's stdout and stderr"
run job logs "$J1"
[ "$RC" -eq 0 ] || fail "exited $RC: $(cat "$T/err")"
diff "$T/want1" "$T/out" >&2 || fail "job logs stdout differs (above)"
[ "$(cat "$T/err")" = "to-stderr" ] || fail "job logs stderr: $(cat "$T/err")"

step "escher logs TASK_ID [--err]"
TASK1=$(jq_job "$J1" 'j["task_id"]')
run logs "$TASK1"
diff "$T/want1" "$T/out" >&2 || fail "escher logs stdout differs (above)"
run logs "$TASK1" --err
[ "$RC" -eq 0 ] && [ "$(cat "$T/out")" = "to-stderr" ] || fail "escher logs --err: $RC $(cat "$T/out")"
expect_err 1 "escher: no logs of task 0123abcd" logs 0123abcd
expect_err 2 "escher: not a task id" logs ../etc

step "--no-wait prints the job id at once; job status later says FINISHED"
START=$(date +%s%N)
# The job waits for a gate the test opens once it has seen it RUNNING: no race with a
# slow machine, and the job's end is still waited for below.
run job submit --no-wait --working-dir "$WD" -- sh -c "while [ ! -e $T/nowait.gate ]; do sleep 0.05; done; exec ./run.sh"
END=$(date +%s%N)
[ "$RC" -eq 0 ] || fail "exited $RC: $(cat "$T/err")"
J3=$(cat "$T/out")
[[ "$J3" =~ ^[0-9a-f]{16}$ ]] || fail "stdout is not a job id: $J3"
[ $(((END - START) / 1000000)) -lt 2000 ] || fail "--no-wait took $(((END - START) / 1000000)) ms"
[ "$(jq_job "$J3" 'j["state"], j["result"]')" = "('RUNNING', 'running')" ] ||
  fail "status right after: $(cat "$T/status.json")"
touch "$T/nowait.gate"
wait_job "$J3" FINISHED
[ "$(jq_job "$J3" 'j["exit_code"]')" = "0" ] || fail "status: $(cat "$T/status.json")"
run job status "$J3"
grep -qx "state:       FINISHED" "$T/out" || fail "job status: $(cat "$T/out")"
run job logs "$J3"
[ "$(head -n 1 "$T/out")" = "data: payload-42" ] || fail "job logs: $(cat "$T/out")"

step "job stop ends a running job and kills its entrypoint"
run job submit --no-wait -- sh -c "echo \$\$ > $T/stop.pid; exec sleep 300"
[ "$RC" -eq 0 ] || fail "exited $RC: $(cat "$T/err")"
J4=$(cat "$T/out")
wait_file "$T/stop.pid"
# The operator key ($ESCHER_OPERATOR_KEY before the session's file): a wrong one is refused.
ESCHER_OPERATOR_KEY=not-the-key run job stop "$J4"
[ "$RC" -ne 0 ] && grep -q "PERMISSION_DENIED.*operator key" "$T/err" ||
  fail "job stop with a wrong operator key: $RC $(cat "$T/out" "$T/err")"
run job stop "$J4"
[ "$RC" -eq 0 ] && [ "$(cat "$T/out")" = "job $J4 stopped" ] || fail "job stop: $RC $(cat "$T/out" "$T/err")"
gone "$T/stop.pid"
wait_job "$J4" FAILED
[ "$(jq_job "$J4" 'j["status"], j["result"], j["exit_code"]')" = "('STOPPED', 'stopped', None)" ] ||
  fail "status after stop: $(cat "$T/status.json")"
run job stop "$J4"
[ "$RC" -eq 0 ] && [ "$(cat "$T/out")" = "job $J4 is not running (FAILED)" ] ||
  fail "second stop: $RC $(cat "$T/out" "$T/err")"

step "SIGINT to a waiting submit stops the job (exit 130)"
"$ESC" job submit -- sh -c "echo \$\$ > $T/int.pid; exec sleep 300" >"$T/int.out" 2>"$T/int.err" &
SUBMIT=$!
wait_file "$T/int.pid"
kill -INT "$SUBMIT"
RC=0
wait "$SUBMIT" || RC=$?
[ "$RC" -eq 130 ] || fail "exited $RC, want 130: $(cat "$T/int.err")"
gone "$T/int.pid"
J5=$(sed -n 's/^job \([0-9a-f]*\) submitted.*/\1/p' "$T/int.err")
[ "$(tail -n 1 "$T/int.err")" = "escher: job $J5 stopped: stopped by SIGINT" ] ||
  fail "last stderr line: $(tail -n 1 "$T/int.err")"
wait_job "$J5" FAILED

step "the entrypoint reaches the cluster through ESCHER_ADDRESS and ESCHER_TOKEN"
# A session directory that does not exist: address and token can only come from the env.
run job submit -- env ESCHER_SESSION_DIR="$T/nowhere" "$ESC" status --json
[ "$RC" -eq 0 ] || fail "exited $RC: $(cat "$T/err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["nodes"][0]["state"] == "ALIVE"' \
  "$T/out" || fail "status from the entrypoint: $(cat "$T/out")"

step "an SDK program run as the entrypoint joins the job; what it made goes with the job"
EXAMPLE=$(cd "$BIN_DIR/examples" && pwd)/ephemeral_resources
run job submit --namespace example -- "$EXAMPLE"
[ "$RC" -eq 0 ] || fail "exited $RC: $(cat "$T/err")"
J6=$(sed -n 's/^job \([0-9a-f]*\) submitted.*/\1/p' "$T/err")
grep -qx "job $J6 in namespace example" "$T/out" ||
  fail "the entrypoint did not join job $J6: $(head -n 1 "$T/out")"
grep -q "lane goes when the job ends" "$T/out" || fail "the example did not finish: $(cat "$T/out")"
run resource list --namespace example --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
left=[r for r in d["resources"] if r["owner"] == sys.argv[2]]
assert not left, left' "$T/out" "$J6" || fail "job $J6 ended but its resources remain: $(cat "$T/out")"
run job submit --namespace other -- "$EXAMPLE"
[ "$RC" -ne 0 ] || fail "an entrypoint that asks for another namespace joined the job"
grep -q "runs in namespace other, not example" "$T/err" ||
  fail "no clear error for the namespace mismatch: $(cat "$T/err")"

step "job logs --follow copies a running entrypoint's output until it ends"
run job submit --no-wait -- sh -c "echo one; while [ ! -e $T/follow.gate ]; do sleep 0.05; done; echo two >&2; echo three"
[ "$RC" -eq 0 ] || fail "exited $RC: $(cat "$T/err")"
J8=$(cat "$T/out")
"$ESC" job logs "$J8" --follow >"$T/follow.out" 2>"$T/follow.err" &
FOLLOW=$!
# "one" arrives while the entrypoint still waits for the gate: it was followed, not read after.
for i in $(seq 200); do grep -qx one "$T/follow.out" && break; sleep 0.1; done
grep -qx one "$T/follow.out" || fail "job logs --follow did not show the first line: $(cat "$T/follow.out")"
kill -0 "$FOLLOW" 2>/dev/null || fail "job logs --follow ended while the entrypoint runs"
touch "$T/follow.gate"
RC=0
wait "$FOLLOW" || RC=$?
[ "$RC" -eq 0 ] || fail "job logs --follow exited $RC: $(cat "$T/follow.err")"
printf 'one\nthree\n' | diff - "$T/follow.out" >&2 || fail "job logs --follow stdout differs (above)"
[ "$(cat "$T/follow.err")" = "two" ] || fail "job logs --follow stderr: $(cat "$T/follow.err")"
wait_job "$J8" FINISHED

step "an entrypoint that asks for a resource no node has is PENDING with it; stop ends it"
run job submit --no-wait --resources nosuch/thing=1 -- echo never
[ "$RC" -eq 0 ] || fail "exited $RC: $(cat "$T/err")"
J7=$(cat "$T/out")
for i in $(seq 200); do
  [ "$(jq_job "$J7" 'j["state"]')" = "PENDING" ] && break
  sleep 0.1
done
[ "$(jq_job "$J7" 'j["state"], j["result"], j["pending"]["missing"], j["pending"]["infeasible"]')" = \
  "('PENDING', 'pending: no node has nosuch/thing', ['nosuch/thing'], True)" ] ||
  fail "status of a pending job: $(cat "$T/status.json")"
run job status "$J7"
grep -qx "state:       PENDING" "$T/out" && grep -qx "missing:     nosuch/thing" "$T/out" ||
  fail "job status of a pending job: $(cat "$T/out")"
run job list
grep -Eq "^$J7 +PENDING +pending: no node has nosuch/thing " "$T/out" || fail "job list: $(cat "$T/out")"
"$ESC" job logs "$J7" --follow >"$T/pfollow.out" 2>"$T/pfollow.err" &
FOLLOW=$!
run job stop "$J7"
[ "$RC" -eq 0 ] && [ "$(cat "$T/out")" = "job $J7 stopped" ] || fail "job stop: $RC $(cat "$T/out" "$T/err")"
RC=0
wait "$FOLLOW" || RC=$?
[ "$RC" -eq 0 ] && [ ! -s "$T/pfollow.out" ] || fail "job logs --follow of a stopped pending job: $RC $(cat "$T/pfollow.out" "$T/pfollow.err")"
wait_job "$J7" FAILED
[ "$(jq_job "$J7" 'j["status"], j["result"], j["message"]')" = "('STOPPED', 'stopped', 'stopped by escher job stop')" ] ||
  fail "status after stopping a pending job: $(cat "$T/status.json")"

step "a waiting submit says what a pending entrypoint lacks; SIGINT stops it"
"$ESC" job submit --resources nosuch/other=2 -- echo never >"$T/pend.out" 2>"$T/pend.err" &
SUBMIT=$!
for i in $(seq 200); do grep -q " pending: " "$T/pend.err" && break; sleep 0.1; done
J9=$(sed -n 's/^job \([0-9a-f]*\) submitted.*/\1/p' "$T/pend.err")
grep -qx "job $J9 pending: no node has nosuch/other" "$T/pend.err" ||
  fail "no pending line from the waiting submit: $(cat "$T/pend.err")"
kill -INT "$SUBMIT"
RC=0
wait "$SUBMIT" || RC=$?
[ "$RC" -eq 130 ] || fail "exited $RC, want 130: $(cat "$T/pend.err")"
[ "$(tail -n 1 "$T/pend.err")" = "escher: job $J9 stopped: stopped by SIGINT" ] ||
  fail "last stderr line: $(tail -n 1 "$T/pend.err")"
wait_job "$J9" FAILED

step "errors are one line: size limit, missing directory, usage"
run job list --json
BEFORE=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["jobs"]))' "$T/out")
expect_err 1 "escher: working directory $WD is too large: 10.0 KiB as a tar stream, over the limit of 1.0 KiB (--working-dir-limit)" \
  job submit --working-dir "$WD" --working-dir-limit 1K -- ./run.sh
expect_err 1 "escher: cannot use working directory $T/none" job submit --working-dir "$T/none" -- true
expect_err 2 "escher: job submit wants the entrypoint after --" job submit true
expect_err 2 "escher: job submit wants the entrypoint after --" job submit --no-wait --
expect_err 2 "escher: --working-dir-limit wants a size" job submit --working-dir-limit 1X -- true
expect_err 2 "escher: invalid quantity" job submit --resources CPU=-1 -- true
expect_err 2 "escher: unknown job subcommand" job frobnicate
expect_err 1 "escher: no job 0123456789abcdef" job status 0123456789abcdef
expect_err 1 "escher: no job 0123456789abcdef was submitted" job logs 0123456789abcdef
run job list --json
AFTER=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["jobs"]))' "$T/out")
[ "$BEFORE" = "$AFTER" ] || fail "refused submissions left jobs behind ($BEFORE -> $AFTER)"

step "stop the cluster; no sanitizer report in any log"
"$ESC" stop >/dev/null || fail "escher stop failed"
# Workers, fetch-workdir (in the tasks' .err) and --no-wait drivers (logs/job-*.log).
if grep -rlE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$SESSION/logs" "$T"/*.err >"$T/reports"; then
  fail "sanitizer reports in: $(tr '\n' ' ' <"$T/reports")"
fi
echo "test_jobs: OK"
