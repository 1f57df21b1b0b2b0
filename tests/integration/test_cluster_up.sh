#!/usr/bin/env bash
# test_cluster_up.sh: `escher up/down/exec` on three "hosts": network namespaces joined
# to a bridge in the root namespace by veth links, each running its own sshd (Debian's
# openssh-server, started by this test with its own config, host key and a throwaway
# user key; root login by key). The namespaces share this machine's filesystem, so the
# cluster file gives each host its own session directory (session_dir with {host}).
#
# Checks: the cluster file's errors (unknown key, negative CPUs, bad port) are one line
# naming file, line and key; a missing install fails naming the host and the step;
# `escher up` brings up 3 nodes (GCS on Redis storage, in the head's namespace); a job
# submitted from the root namespace to the head's address runs on each node (a static
# resource per host); `escher up` again reports every host unchanged; `escher exec`
# runs `escher status` on the head; kill -9 of a worker's raylet and of the GCS: the
# supervisor restarts them and every node is ALIVE again; `escher down` leaves no
# escher process in any namespace and no session directory.
#
# Needs root, ip (iproute2), sshd, ssh and redis-server; exits 77 (skipped) without.
set -euo pipefail

BIN_DIR=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
skip() { echo "test_cluster_up: skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root"
command -v ip >/dev/null || skip "needs ip (iproute2)"
[ -x /usr/sbin/sshd ] || skip "needs sshd (openssh-server)"
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || skip "needs ssh (openssh-client)"
command -v redis-server >/dev/null || skip "needs redis-server"

TAG="ec$$"
NET="10.200.$(( $$ % 200 + 20 ))"
T=$(mktemp -d /tmp/escher-test-up-XXXXXX)
PIDS=()
STEP="setup"
START=$(date +%s)
fail() { echo "test_cluster_up: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$1; echo "test_cluster_up: [+$(( $(date +%s) - START )) s] $STEP"; }
ESCHER="$BIN_DIR/client/escher"

cleanup() {
  local rc=$?
  [ -f "$T/cluster.yaml" ] && HOME="$T/home" "$ESCHER" down "$T/cluster.yaml" >/dev/null 2>&1 || true
  if [ "$rc" -ne 0 ]; then
    for f in "$T"/hosts/*/session/logs/*.log "$T"/*.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 8 "$f" >&2; }
    done
  fi
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  for i in 0 1 2; do
    # Anything left in a namespace is this test's: end it by its pid.
    for p in $(ip netns pids "${TAG}n$i" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    ip netns del "${TAG}n$i" 2>/dev/null || true
  done
  ip link del "${TAG}b" 2>/dev/null || true
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

# Polls "$@" every 0.1 s until it succeeds or $1 seconds pass.
wait_for() {
  local limit=$1; shift
  local end=$(( $(date +%s) + limit ))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.1
  done
}

ip netns add "${TAG}probe" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "${TAG}probe"

step "network"
ip link add "${TAG}b" type bridge
ip addr add "$NET.254/24" dev "${TAG}b"
ip link set "${TAG}b" up
HOSTS=()
for i in 0 1 2; do
  ns="${TAG}n$i"
  ip netns add "$ns"
  ip link add "${TAG}h$i" type veth peer name "${TAG}p$i"
  ip link set "${TAG}p$i" netns "$ns"
  ip link set "${TAG}h$i" master "${TAG}b" up
  ip netns exec "$ns" ip addr add "$NET.$((i + 1))/24" dev "${TAG}p$i"
  ip netns exec "$ns" ip link set "${TAG}p$i" up
  ip netns exec "$ns" ip link set lo up
  HOSTS+=("$NET.$((i + 1))")
done

step "sshd"
mkdir -p "$T/home" /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$T/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$T/user_key"
cp "$T/user_key.pub" "$T/authorized_keys"
for i in 0 1 2; do
  cat >"$T/sshd$i.conf" <<CONF
ListenAddress ${HOSTS[$i]}
Port 22
HostKey $T/host_key
PidFile $T/sshd$i.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile $T/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
CONF
  ip netns exec "${TAG}n$i" /usr/sbin/sshd -D -e -f "$T/sshd$i.conf" 2>"$T/sshd$i.log" &
  PIDS+=($!)
done
for i in 0 1 2; do
  wait_for 10 grep -q "Server listening on ${HOSTS[$i]}" "$T/sshd$i.log" || fail "sshd $i did not listen"
done

# Redis for the GCS's storage, in the head's namespace (its own 127.0.0.1).
ip netns exec "${TAG}n0" redis-server --port 6390 --bind 127.0.0.1 --save '' --appendonly no \
  >"$T/redis.log" 2>&1 &
PIDS+=($!)
wait_for 10 grep -q "Ready to accept connections" "$T/redis.log" || fail "redis did not start"

# An install prefix: <prefix>/bin/escher, escher-gcs, escher-raylet, escher-worker.
mkdir -p "$T/prefix/bin"
ln -s "$BIN_DIR/client/escher" "$BIN_DIR/gcs/escher-gcs" "$BIN_DIR/raylet/escher-raylet" \
  "$BIN_DIR/raylet/escher-worker" "$T/prefix/bin/"

write_file() { # write_file PREFIX [EXTRA LINE]
  cat >"$T/cluster.yaml" <<YAML
# test_cluster_up.sh's cluster: three namespaces on one machine.
cluster_name: t$TAG
provider:
  type: local
  head_ip: ${HOSTS[0]}
  worker_ips: [${HOSTS[1]}, ${HOSTS[2]}]
auth:
  ssh_user: root
  ssh_private_key: $T/user_key
  ssh_port: 22
install_prefix: $1
session_dir: $T/hosts/{host}/session
storage: redis://127.0.0.1:6390
node_timeout_ms: 3000
ports:
  gcs: 6380
  raylet: 0
environment:
  ESCHER_TEST_CLUSTER: "1"
systemd: false
hosts:
  ${HOSTS[0]}:
    num_cpus: 2
    resources: {host0: 1}
    labels: {role: head}
  ${HOSTS[1]}:
    num_cpus: 2
    resources: {host1: 1}
  ${HOSTS[2]}:
    num_cpus: 2
    resources: {host2: 1}
${2:-}
YAML
}
up() { HOME="$T/home" "$ESCHER" up "$T/cluster.yaml"; }
down() { HOME="$T/home" "$ESCHER" down "$T/cluster.yaml"; }
on_head() { HOME="$T/home" "$ESCHER" exec "$T/cluster.yaml" -- "$@"; }

step "file errors"
expect_error() { # expect_error PATTERN: `escher up` fails with one line matching it
  local out
  if out=$(up 2>&1); then fail "up accepted a bad file: $out"; fi
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "more than one line: $out"
  printf '%s\n' "$out" | grep -qE "$1" || fail "unexpected error: $out (wanted $1)"
}
write_file "$T/prefix" "colour: blue"
expect_error "cluster.yaml:[0-9]+: unknown key \"colour\""
write_file "$T/prefix" "  ${HOSTS[2]}x: {}"
expect_error "cluster.yaml:[0-9]+: hosts: ${HOSTS[2]}x is neither"
write_file "$T/prefix"
sed -i 's/num_cpus: 2/num_cpus: -1/' "$T/cluster.yaml"
expect_error "cluster.yaml:2[0-9]: hosts.${HOSTS[0]}.num_cpus wants a non-negative number"
write_file "$T/prefix"
sed -i 's/gcs: 6380/gcs: 70000/' "$T/cluster.yaml"
expect_error "cluster.yaml:[0-9]+: ports.gcs wants a port number 1..65535"

step "missing install"
write_file "$T/nowhere"
out=$(up 2>&1) && fail "up succeeded without escher on the hosts"
echo "$out" | grep -q "escher up: host ${HOSTS[0]}: check escher: $T/nowhere/bin/escher is missing" ||
  fail "unexpected error: $out"

step "broken raylet"
# A prefix whose escher-raylet fails at once: up names the host and the step, and
# leaves nothing running (the head's GCS it had started is stopped).
mkdir -p "$T/broken/bin"
ln -s "$BIN_DIR/client/escher" "$BIN_DIR/gcs/escher-gcs" "$BIN_DIR/raylet/escher-worker" "$T/broken/bin/"
printf '#!/bin/sh\necho "escher-raylet: broken on purpose" >&2\nexit 1\n' >"$T/broken/bin/escher-raylet"
chmod +x "$T/broken/bin/escher-raylet"
write_file "$T/broken"
out=$(up 2>&1) && fail "up succeeded with a broken raylet"
echo "$out" | grep -q "^escher up: host ${HOSTS[0]}: start raylet: escher-raylet: broken on purpose" ||
  fail "unexpected error: $out"
down >/dev/null || fail "down after a failed up"

step "up"
write_file "$T/prefix"
up >"$T/up1.out" 2>&1 || fail "escher up: $(cat "$T/up1.out")"
cat "$T/up1.out"
for h in "${HOSTS[@]}"; do grep -q "^$h: started" "$T/up1.out" || fail "$h not started"; done
grep -q "all 3 nodes are ALIVE" "$T/up1.out" || fail "not all ALIVE"

step "exec"
on_head escher status --json >"$T/status.json" || fail "escher exec escher status"
[ "$(grep -o '"ALIVE"' "$T/status.json" | wc -l)" -eq 3 ] || fail "exec status: $(cat "$T/status.json")"
[ "$(on_head sh -c 'echo $ESCHER_TEST_CLUSTER')" = 1 ] || fail "the file's environment is not set"
# The head's Prometheus discovery file lists the GCS and every host's raylet at that
# host's own address (docs/observability.md, "Service discovery"); the head is marked.
on_head sh -c 'cat "$ESCHER_SESSION_DIR/prometheus_sd.json"' >"$T/sd.json" || fail "no discovery file"
python3 - "$T/sd.json" "$T/status.json" "${HOSTS[@]}" \
  "$(on_head sh -c 'cat "$ESCHER_SESSION_DIR/node_id"')" <<'PY' || fail "discovery file"
import json, sys
sd = json.load(open(sys.argv[1]))
nodes = json.load(open(sys.argv[2]))["nodes"]
hosts, head = sys.argv[3:6], sys.argv[6]
by_node = {e["labels"].get("escher_node"): e for e in sd}
assert [e["labels"]["escher_role"] for e in sd].count("gcs") == 1, sd
for n in nodes:
    host = n["address"].rsplit(":", 1)[0]
    assert host in hosts, (n, hosts)
    t = by_node[n["id"]]["targets"][0]
    assert t.rsplit(":", 1)[0] == host, (n["id"], t, host)
    assert n["head"] == (n["id"] == head), n
PY
# attach without a terminal: ssh -t warns, and the shell reads these lines.
echo 'escher status >/dev/null && echo "attached to $ESCHER_SESSION_DIR"' |
  HOME="$T/home" "$ESCHER" attach "$T/cluster.yaml" >"$T/attach.out" 2>/dev/null || true
grep -q "^attached to $T/hosts/${HOSTS[0]}/session" "$T/attach.out" || fail "attach: $(cat "$T/attach.out")"
TOKEN=$(on_head sh -c 'cat "$ESCHER_SESSION_DIR/token"')
# The driver in the root namespace: the head's raylet is its local node; no session of
# this machine is looked at.
HEAD_NODE=$(on_head sh -c 'cat "$ESCHER_SESSION_DIR/node_id"')
mkdir -p "$T/client"

step "jobs"
submit_on() { # submit_on I: a job whose entrypoint must run on host I
  ESCHER_SESSION_DIR="$T/client" ESCHER_NODE_ID="$HEAD_NODE" \
    "$ESCHER" --address "${HOSTS[0]}:6380" --token "$TOKEN" job submit --resources "host$1=1" \
    -- sh -c 'ip -o -4 addr show' >"$T/job$1.out" 2>&1
}
for i in 0 1 2; do
  submit_on "$i" || fail "job on host $i: $(cat "$T/job$i.out")"
  grep -q "inet ${HOSTS[$i]}/" "$T/job$i.out" || fail "job $i ran elsewhere: $(cat "$T/job$i.out")"
done

step "up again"
up >"$T/up2.out" 2>&1 || fail "escher up (again): $(cat "$T/up2.out")"
for h in "${HOSTS[@]}"; do grep -q "^$h: unchanged" "$T/up2.out" || fail "$h: $(cat "$T/up2.out")"; done

step "config change"
sed -i "/resources: {host2: 1}/a\\    labels: {zone: b}" "$T/cluster.yaml"
up >"$T/up3.out" 2>&1 || fail "escher up (changed): $(cat "$T/up3.out")"
grep -q "^${HOSTS[2]}: restarted (its configuration changed)" "$T/up3.out" || fail "$(cat "$T/up3.out")"
for h in "${HOSTS[0]}" "${HOSTS[1]}"; do grep -q "^$h: unchanged" "$T/up3.out" || fail "$h: $(cat "$T/up3.out")"; done
read -r rpid _ <"$T/hosts/${HOSTS[2]}/session/pids/raylet.pid"
tr '\0' ' ' <"/proc/$rpid/cmdline" | grep -q -- "--labels zone=b" || fail "the raylet has not the new label"

alive_at() { # alive_at ADDRESS NODE_ID: that node is listed ALIVE
  on_head escher status --json 2>/dev/null | tr -d ' \n' | grep -q "\"id\":\"$2\",\"address\":\"$1:[0-9]*\",\"state\":\"ALIVE\""
}

step "raylet kill -9"
SD2="$T/hosts/${HOSTS[2]}/session"
old_id=$(cat "$SD2/node_id")
read -r pid _ <"$SD2/pids/raylet.pid"
kill -KILL "$pid"
wait_for 20 sh -c "[ -s '$SD2/node_id' ] && [ \"\$(cat '$SD2/node_id')\" != '$old_id' ]" ||
  fail "the raylet was not restarted"
new_id=$(cat "$SD2/node_id")
wait_for 20 alive_at "${HOSTS[2]}" "$new_id" || fail "the restarted raylet is not ALIVE"
grep -q "supervise.sh: raylet exited with status 137" "$SD2/logs/raylet.log" ||
  fail "no supervisor line in the raylet's log"

step "gcs kill -9"
SD0="$T/hosts/${HOSTS[0]}/session"
read -r gpid _ <"$SD0/pids/gcs.pid"
kill -KILL "$gpid"
wait_for 20 sh -c "read p _ <'$SD0/pids/gcs.pid' && [ \"\$p\" != $gpid ]" || fail "the GCS was not restarted"
# Each host's current raylet (its session's node_id) reconnected to the new GCS.
for i in 0 1 2; do
  id=$(cat "$T/hosts/${HOSTS[$i]}/session/node_id")
  wait_for 30 alive_at "${HOSTS[$i]}" "$id" ||
    fail "${HOSTS[$i]}'s node is not ALIVE after the GCS restart: $(on_head escher status 2>&1)"
done
submit_on 1 || fail "job after the GCS restart: $(cat "$T/job1.out")"
grep -q "inet ${HOSTS[1]}/" "$T/job1.out" || fail "job ran elsewhere after the GCS restart"

step "down"
down >"$T/down.out" 2>&1 || fail "escher down: $(cat "$T/down.out")"
for i in 0 1 2; do
  grep -q "^${HOSTS[$i]}: stopped" "$T/down.out" || fail "${HOSTS[$i]} not stopped: $(cat "$T/down.out")"
  [ ! -e "$T/hosts/${HOSTS[$i]}/session" ] || fail "the session of ${HOSTS[$i]} is still there"
  for p in $(ip netns pids "${TAG}n$i"); do
    # This test's sshd and redis-server (and sshd's per-connection children) stay.
    case " ${PIDS[*]} " in *" $p "*) continue;; esac
    exe=$(readlink "/proc/$p/exe" 2>/dev/null || true)
    case "$exe" in
      /usr/sbin/sshd|"") ;;
      *) fail "a process is left in ${HOSTS[$i]}'s namespace: $p $exe $(tr '\0' ' ' </proc/$p/cmdline)";;
    esac
  done
done
[ -z "$(ls "$T/home/.escher/clusters/t$TAG/hosts")" ] || fail "down left host records"
echo "test_cluster_up: PASS in $(( $(date +%s) - START )) s"
