#!/usr/bin/env bash
# test_dashboard.sh: the GCS's web dashboard (docs/observability.md, "Dashboard"),
# through `escher start --head`, which turns it on and prints its URL with the token:
#  - without the token every path answers 401 and nothing of the cluster; a wrong token
#    too; ?token= with the right one sets an HttpOnly SameSite=Strict cookie and
#    redirects to the same path without it; the cookie and "Authorization: Bearer" open
#    the JSON endpoints; files outside the dashboard folder are not served;
#  - in headless Chromium (dashboard_cdp.py, the DevTools protocol): the overview lists
#    the node; a resource set with the CLI shows its new capacity on the page within one
#    second of the CLI's return (twice); the history plot and the event list have the
#    changes; a screenshot is kept in $ESCHER_BIN_DIR/test-artifacts/dashboard.png;
#  - an idle event stream costs the GCS no CPU (the connection sleeps, no busy loop);
#    streams whose clients went away are released (more than the 64 connection slots
#    are opened and dropped, and the dashboard still answers);
#  - escher-gcs refuses a --dashboard-dir without index.html, in one line;
#  - `escher start --head --no-dashboard` starts none.
# No fixed sleeps stand in for a condition: every wait polls with a deadline.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
export ESCHER_BIN_DIR=$BIN_DIR
ESC="$BIN_DIR/client/escher"
GCS="$BIN_DIR/gcs/escher-gcs"
HERE=$(cd "$(dirname "$0")" && pwd)
ART="$BIN_DIR/test-artifacts"
command -v curl >/dev/null || { echo "test_dashboard: curl is required" >&2; exit 1; }
command -v chromium >/dev/null ||
  { echo "test_dashboard: chromium is required (deploy/install-deps.sh)" >&2; exit 1; }
# Debian's python3 has python3-websocket; a python3 earlier on PATH may not.
PY=python3
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import websocket' 2>/dev/null; then PY=$p; break; fi
done
"$PY" -c 'import websocket' 2>/dev/null ||
  { echo "test_dashboard: python3-websocket is required (deploy/install-deps.sh)" >&2; exit 1; }
[ -x "$ESC" ] || { echo "test_dashboard: no $ESC" >&2; exit 1; }

T=$(mktemp -d /tmp/escher-test-dashboard-XXXXXX)
S="$T/session"
export ESCHER_SESSION_DIR="$S"
unset ESCHER_TOKEN ESCHER_NODE_ID
STREAM_PIDS=()

cleanup() {
  local rc=$?
  for p in "${STREAM_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  # Chromium, if dashboard_cdp.py could not kill it: its own process group.
  if [ -s "$T/profile/chromium.pid" ]; then
    kill -KILL -- "-$(cat "$T/profile/chromium.pid")" 2>/dev/null || true
  fi
  if [ "$rc" -ne 0 ]; then
    for f in "$S"/logs/*.log "$T"/profile/chromium.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  "$ESC" stop --force --session-dir "$S" >/dev/null 2>&1 || true
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="start"
fail() { echo "test_dashboard: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $(date +%T.%3N) $*"; }

# get PATH OUT [curl args...]: GET on the dashboard; status in CODE, headers in OUT.h.
get() {
  local path=$1 out=$2
  shift 2
  CODE=$(curl -sS --path-as-is --max-time 10 -D "$out.h" -o "$out" -w '%{http_code}' "$@" \
    "http://127.0.0.1:$PORT$path") || fail "GET $path failed"
}

step "escher start prints the dashboard's URL with the token"
"$ESC" start --head --port 0 --num-cpus 2 --num-gpus 0 --node-ip 127.0.0.1 >"$T/start.out" 2>"$T/start.err" ||
  fail "escher start: $(cat "$T/start.err")"
PORT=$(cat "$S/gcs.dashboard_port") || fail "no gcs.dashboard_port"
TOKEN=$(cat "$S/token")
NODE_ID=$(cat "$S/node_id")
URL="http://127.0.0.1:$PORT/?token=$TOKEN"
grep -qF "dashboard http://127.0.0.1:$PORT/?token=$TOKEN" "$T/start.out" ||
  fail "no dashboard URL in: $(cat "$T/start.out")"
grep -q "127.0.0.1:$PORT" <(ss -ltn 2>/dev/null || echo "127.0.0.1:$PORT") ||
  fail "the dashboard does not listen on 127.0.0.1:$PORT"

step "without the token: 401 and nothing else"
for path in / /index.html /app.js /api/state /api/nodes /api/stream /api/events /nope; do
  get "$path" "$T/u"
  [ "$CODE" = 401 ] || fail "GET $path without a token: $CODE"
  ! grep -q "$NODE_ID" "$T/u" || fail "GET $path without a token leaked the node id"
  ! grep -qi '^set-cookie' "$T/u.h" || fail "GET $path without a token set a cookie"
done
get "/api/state" "$T/u" -H "Authorization: Bearer ${TOKEN}x"
[ "$CODE" = 401 ] || fail "a wrong bearer token: $CODE"
get "/?token=${TOKEN%?}" "$T/u"
[ "$CODE" = 401 ] || fail "a wrong ?token=: $CODE"
get "/api/state" "$T/u" -H "Cookie: escher_dashboard=$TOKEN"
[ "$CODE" = 401 ] || fail "the token as the cookie (the cookie is a hash of it): $CODE"

step "?token= sets the cookie and redirects without it"
get "/?token=$TOKEN" "$T/c"
[ "$CODE" = 303 ] || fail "GET /?token=: $CODE"
grep -qi '^location: /\s*$' "$T/c.h" || fail "redirect: $(cat "$T/c.h")"
COOKIE=$(sed -n 's/^[Ss]et-[Cc]ookie: \(escher_dashboard=[0-9a-f]*\);.*/\1/p' "$T/c.h" | tr -d '\r')
[ -n "$COOKIE" ] || fail "no cookie: $(cat "$T/c.h")"
grep -i '^set-cookie' "$T/c.h" | grep -q 'HttpOnly' || fail "cookie not HttpOnly"
grep -i '^set-cookie' "$T/c.h" | grep -q 'SameSite=Strict' || fail "cookie not SameSite=Strict"
! grep -qi "^set-cookie.*$TOKEN" "$T/c.h" || fail "the cookie carries the token itself"
get "/" "$T/p" -H "Cookie: $COOKIE"
[ "$CODE" = 200 ] && grep -q '<script src="app.js">' "$T/p" || fail "the page with the cookie: $CODE"
grep -qi '^content-type: text/html' "$T/p.h" || fail "page type: $(cat "$T/p.h")"

step "JSON endpoints with the cookie or a bearer token"
get "/api/state" "$T/s" -H "Cookie: $COOKIE"
[ "$CODE" = 200 ] || fail "/api/state with the cookie: $CODE"
"$PY" - "$T/s" "$NODE_ID" <<'PY' || fail "/api/state: $(head -c 600 "$T/s")"
import json, sys
s = json.load(open(sys.argv[1]))
node = sys.argv[2]
assert [n["node_id"] for n in s["nodes"]] == [node], s["nodes"]
cpu = [r for r in s["nodes"][0]["resources"] if r["name"] == "CPU"][0]
assert (cpu["total"], cpu["held"], cpu["available"]) == (2, 0, 2), cpu
assert s["totals"]["CPU"]["total"] == 2 and s["totals"]["CPU"]["nodes"] == 1, s["totals"]
assert isinstance(s["demand"], list) and isinstance(s["jobs"], list)
PY
for ep in nodes totals demand resources jobs events; do
  get "/api/$ep" "$T/e" -H "Authorization: Bearer $TOKEN"
  [ "$CODE" = 200 ] || fail "/api/$ep with a bearer token: $CODE"
  "$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/e" || fail "/api/$ep: not JSON"
done
get "/api/nope" "$T/e" -H "Cookie: $COOKIE"
[ "$CODE" = 404 ] || fail "/api/nope: $CODE"
for path in /../CMakeLists.txt /.hidden "/%2e%2e/CMakeLists.txt" //etc/passwd; do
  get "$path" "$T/e" -H "Cookie: $COOKIE"
  [ "$CODE" = 404 ] || fail "GET $path: $CODE, want 404"
done

step "a job's tasks, asked of the raylets"
JOB=$("$ESC" job submit --no-wait -- sh -c 'echo dashboard-log-line' 2>"$T/err" | head -1)
[ -n "$JOB" ] || fail "job submit --no-wait: $(cat "$T/err")"
deadline=$((SECONDS + 30))
until get "/api/jobs/$JOB/tasks" "$T/jt" -H "Authorization: Bearer $TOKEN" && [ "$CODE" = 200 ] &&
  "$PY" - "$T/jt" "$NODE_ID" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["unreachable"] == [] and d["total"] == 1, d
t = d["tasks"][0]
assert t["name"] == "sh" and t["state"] == "FINISHED" and t["node"] == sys.argv[2], t
assert t["start_ms"] > 0 and t["end_ms"] >= t["start_ms"], t
PY
do
  [ "$SECONDS" -ge "$deadline" ] && fail "/api/jobs/$JOB/tasks: $CODE $(head -c 400 "$T/jt")"
  sleep 0.2
done
get "/api/jobs/$JOB/tasks" "$T/e"
[ "$CODE" = 401 ] || fail "/api/jobs/$JOB/tasks without the token: $CODE"
TASK=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["tasks"][0]["task_id"])' "$T/jt")
get "/api/tasks/$TASK/logs?node=$NODE_ID" "$T/tl" -H "Authorization: Bearer $TOKEN"
[ "$CODE" = 200 ] || fail "/api/tasks/$TASK/logs: $CODE"
"$PY" - "$T/tl" <<'PY' || fail "the task's output: $(head -c 400 "$T/tl")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["found"] and d["text"] == "dashboard-log-line\n" and not d["truncated"], d
PY
get "/api/tasks/$TASK/logs" "$T/e" -H "Cookie: $COOKIE"
[ "$CODE" = 404 ] || fail "a task's output without ?node=: $CODE"
get "/api/tasks/$TASK/logs?node=$NODE_ID" "$T/e"
[ "$CODE" = 401 ] || fail "a task's output without the token: $CODE"
get "/api/jobs/0123456789abcdef/tasks" "$T/e" -H "Cookie: $COOKIE"
[ "$CODE" = 404 ] || fail "the tasks of a job nobody knows: $CODE"

step "the page in headless Chromium: live within one second of the CLI"
mkdir -p "$ART"
"$PY" "$HERE/dashboard_cdp.py" --url "$URL" --node "$NODE_ID" --nodes 1 \
  --resource default/gpu_share --profile "$T/profile" --screenshot "$ART/dashboard.png" \
  --job "$JOB" --task-name sh --task "$TASK" --task-node "$NODE_ID" --log dashboard-log-line \
  --set 3 "$ESC" resource set gpu_share 3 \
  --set 7.5 "$ESC" resource set gpu_share 7.5 \
  --set 2 "$ESC" resource add gpu_share -5.5 || fail "browser checks"
[ -s "$ART/dashboard.png" ] || fail "no screenshot"
pgrep -f -- "--user-data-dir=$T/profile" >/dev/null && fail "chromium still runs"
echo "screenshot: $ART/dashboard.png"

step "the stream: events arrive, an idle stream costs no CPU"
curl -sSN --max-time 60 -H "Cookie: $COOKIE" "http://127.0.0.1:$PORT/api/stream" >"$T/sse" &
STREAM_PIDS+=($!)
deadline=$((SECONDS + 10))
until grep -q '^event: hello' "$T/sse"; do
  [ "$SECONDS" -ge "$deadline" ] && fail "no hello on the stream"
  sleep 0.05
done
"$ESC" resource set sse_probe 4 >/dev/null || fail "resource set sse_probe"
deadline=$((SECONDS + 10))
until grep -q '"name":"default/sse_probe","value":4' "$T/sse"; do
  [ "$SECONDS" -ge "$deadline" ] && fail "the change is not on the stream: $(tail -c 400 "$T/sse")"
  sleep 0.05
done
GCS_PID=$(cat "$S/pids/gcs.pid" 2>/dev/null | head -1 | awk '{print $1}')
[ -n "$GCS_PID" ] && [ -r "/proc/$GCS_PID/stat" ] || fail "no GCS pid ($GCS_PID)"
cpu() { awk '{print $14 + $15}' "/proc/$GCS_PID/stat"; }
c0=$(cpu)
sleep 2 # the measurement's window, with the stream open and nothing to send
c1=$(cpu)
[ $((c1 - c0)) -le 20 ] || fail "the GCS used $((c1 - c0)) ticks in 2 s with an idle stream"
echo "GCS CPU with an idle stream open: $((c1 - c0)) ticks in 2 s"

step "streams of clients that went away are released"
"$PY" - "$PORT" "$COOKIE" "$ESC" <<'PY' || fail "stream slots"
import socket, subprocess, sys, time
port, cookie, esc = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def stream():
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(f"GET /api/stream HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n".encode())
    got = b""
    while b"event: hello" not in got:
        d = s.recv(4096)
        if not d:
            raise SystemExit("stream closed before hello")
        got += d
    s.close()
# 3 x 40 streams opened and dropped: more than the server's 64 slots, so the later ones
# open only if the dropped ones were released (at the next event each one is sent).
for rnd in range(3):
    for i in range(40):
        stream()
    r = subprocess.run([esc, "resource", "set", "slot_probe", str(rnd + 1)], capture_output=True)
    if r.returncode:
        raise SystemExit(r.stderr.decode())
print("120 streams opened and dropped; the dashboard still answers")
PY
get "/api/state" "$T/s" -H "Cookie: $COOKIE"
[ "$CODE" = 200 ] || fail "/api/state after the dropped streams: $CODE"

step "escher-gcs: a --dashboard-dir without index.html is refused in one line"
set +e
ESCHER_TOKEN=t ESCHER_DAEMON_KEY=k "$GCS" --port 0 --bind 127.0.0.1 --dashboard-port 0 \
  --dashboard-dir "$T/nowhere" >"$T/g.out" 2>"$T/g.err"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "escher-gcs accepted a --dashboard-dir with no page"
[ "$(wc -l <"$T/g.err")" -eq 1 ] && grep -q "dashboard-dir.*index.html" "$T/g.err" ||
  fail "its error: $(cat "$T/g.err")"

step "escher start --no-dashboard"
for p in "${STREAM_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
STREAM_PIDS=()
"$ESC" stop --session-dir "$S" >/dev/null 2>&1 || fail "escher stop"
S2="$T/session2"
"$ESC" start --head --no-dashboard --dashboard-port 1 --session-dir "$S2" >"$T/o" 2>"$T/e" &&
  fail "--no-dashboard with --dashboard-port was accepted"
grep -q "exclude each other" "$T/e" || fail "its error: $(cat "$T/e")"
S="$S2" # cleanup stops this one
"$ESC" start --head --no-dashboard --port 0 --num-cpus 1 --num-gpus 0 --node-ip 127.0.0.1 \
  --session-dir "$S2" >"$T/o" 2>"$T/e" || fail "escher start --no-dashboard: $(cat "$T/e")"
[ ! -e "$S2/gcs.dashboard_port" ] || fail "a dashboard port file with --no-dashboard"
! grep -q "dashboard http" "$T/o" || fail "a dashboard line with --no-dashboard: $(cat "$T/o")"
! grep -q "dashboard on" "$S2/logs/gcs.log" || fail "the GCS serves a dashboard: $(grep "dashboard on" "$S2/logs/gcs.log")"

echo "test_dashboard: PASS"
