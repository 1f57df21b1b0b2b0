#!/usr/bin/env bash
# test_install_deb.sh: the .deb of `make package` (docs/deploy.md, "Installing the SDK").
# Builds the package from the build directory with cpack (into a temporary directory),
# installs it with dpkg, starts a head node with /usr/bin/escher in a temporary session
# directory, checks `escher status`, builds examples/standalone against /usr with
# pkg-config and runs it, stops the node, and purges the package, leaving no escher file
# under /usr.
#
# This changes the machine's /usr, so: root only (exit 77, skipped, otherwise); skipped
# when an escher package or escher files under /usr are there already (they are not ours
# to remove); one run at a time on the machine (a lock); and the purge always runs once
# the package is in (trap). Skipped in sanitized builds too: the package is the plain
# build's.
set -euo pipefail

BUILD=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
skip() { echo "test_install_deb: SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root (installs a package)"
grep -q '^ESCHER_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" && skip "sanitized build"
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps flock make cc pkg-config; do
  command -v "$tool" >/dev/null || skip "no $tool"
done

# One run at a time: other build trees' suites may run this test on the same machine.
exec 9>/run/lock/escher-test-install-deb.lock
flock -w 240 9 || skip "another run holds /run/lock/escher-test-install-deb.lock"

dpkg-query -W -f='${Status}' escher 2>/dev/null | grep -q "installed" &&
  skip "an escher package is installed already"
OURS=$(find /usr/bin /usr/lib /usr/include /usr/share/man -maxdepth 4 \
  \( -name 'escher' -o -name 'escher-*' -o -name 'libescher*' -o -name 'escher.pc' \) 2>/dev/null || true)
[ -z "$OURS" ] || skip "escher files under /usr already: $(echo "$OURS" | head -n 3 | tr '\n' ' ')"

T=$(mktemp -d /tmp/escher-test-install-deb-XXXXXX)
export ESCHER_SESSION_DIR="$T/session"
unset ESCHER_BIN_DIR ESCHER_SDK_LIB ESCHER_ADDRESS ESCHER_TOKEN ESCHER_NODE_ID \
  ESCHER_DAEMON_KEY ESCHER_JOB_ID ESCHER_JOB_CREDENTIAL CPATH C_INCLUDE_PATH LIBRARY_PATH \
  LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH
export PATH=/usr/bin:/bin:/usr/sbin:/sbin
INSTALLED=0

STEP="package"
fail() { echo "test_install_deb: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $*"; }

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for f in "$ESCHER_SESSION_DIR"/logs/*.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  if [ "$INSTALLED" = 1 ]; then
    [ -x /usr/bin/escher ] && [ -d "$ESCHER_SESSION_DIR" ] &&
      /usr/bin/escher stop --force --session-dir "$ESCHER_SESSION_DIR" >/dev/null 2>&1 || true
    dpkg --purge escher >"$T/purge.log" 2>&1 || {
      echo "test_install_deb: dpkg --purge escher failed: $(tail -n 5 "$T/purge.log")" >&2
      [ "$rc" -ne 0 ] || rc=1
    }
  fi
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------- package
step "cpack -G DEB"
cpack -G DEB -B "$T/pkg" --config "$BUILD/CPackConfig.cmake" >"$T/cpack.log" 2>&1 ||
  fail "$(tail -n 20 "$T/cpack.log")"
DEB=$(ls "$T"/pkg/escher_*.deb 2>/dev/null | head -n 1)
[ -n "$DEB" ] || fail "no escher_*.deb in: $(ls "$T/pkg")"
[ "$(dpkg-deb -f "$DEB" Package)" = escher ] || fail "package name $(dpkg-deb -f "$DEB" Package)"
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
for lib in libgrpc libprotobuf-c libjansson libev; do
  [[ "$DEPENDS" == *"$lib"* ]] || fail "Depends lacks $lib: $DEPENDS"
done
dpkg-deb -c "$DEB" >"$T/contents"
grep -q ' \./usr/bin/escher-worker$' "$T/contents" || fail "no /usr/bin/escher-worker in the package"

step "dpkg -i"
INSTALLED=1 # from here on the purge runs whatever happens
dpkg -i "$DEB" >"$T/dpkg.log" 2>&1 || fail "$(tail -n 20 "$T/dpkg.log")"
dpkg -L escher >"$T/files"
for f in /usr/bin/escher /usr/bin/escher-gcs /usr/bin/escher-raylet /usr/bin/escher-worker \
    /usr/bin/escher-gang-ghost /usr/include/escher/escher.h; do
  grep -qxF "$f" "$T/files" || fail "the package does not install $f"
done
[ "$(command -v escher)" = /usr/bin/escher ] || fail "escher on PATH is $(command -v escher)"

# ---------------------------------------------------------------------------- cluster
step "escher start --head (/usr/bin)"
escher start --head --port 0 --num-cpus 2 --num-gpus 0 --node-ip 127.0.0.1 >"$T/out" 2>&1 ||
  fail "start: $(cat "$T/out")"
for name in gcs raylet; do
  read -r _ _ exe <"$ESCHER_SESSION_DIR/pids/$name.pid" || fail "no pids/$name.pid"
  [ "$exe" = "/usr/bin/escher-$name" ] || fail "$name runs $exe"
done

step "escher status"
deadline=$((SECONDS + 20))
until escher status >"$T/status" 2>&1 && grep -q "ALIVE" "$T/status"; do
  [ $SECONDS -lt $deadline ] || fail "no ALIVE node in: $(cat "$T/status")"
  sleep 0.1
done
grep -q "^cluster: 1 node" "$T/status" || fail "status: $(cat "$T/status")"

step "examples/standalone against /usr (pkg-config)"
cp -r "$SRC/examples/standalone" "$T/sa"
make -C "$T/sa" >"$T/build.log" 2>&1 || fail "$(tail -n 20 "$T/build.log")"
"$T/sa/standalone" >"$T/run.out" 2>&1 || fail "exit $?: $(cat "$T/run.out")"
for want in "sum = 14" "a task's namespace = standalone"; do
  grep -qxF "$want" "$T/run.out" || fail "no '$want' in: $(cat "$T/run.out")"
done

step "escher stop"
escher stop >"$T/out" 2>&1 || fail "stop: $(cat "$T/out")"

# ---------------------------------------------------------------------------- purge
step "dpkg --purge"
INSTALLED=0
dpkg --purge escher >"$T/purge.log" 2>&1 || fail "$(tail -n 20 "$T/purge.log")"
! dpkg-query -W -f='${Status}' escher 2>/dev/null | grep -q "installed" || fail "escher still installed"
while read -r f; do
  [ -d "$f" ] && [ ! -L "$f" ] && continue # shared directories (/usr/bin) stay
  [ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f left after the purge"
done <"$T/files"
LEFT=$(find /usr/bin /usr/lib /usr/include -maxdepth 4 \
  \( -name 'escher' -o -name 'escher-*' -o -name 'libescher*' -o -name 'escher.pc' \) 2>/dev/null || true)
[ -z "$LEFT" ] || fail "left under /usr: $LEFT"
echo "test_install_deb: OK"
