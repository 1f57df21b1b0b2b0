#!/usr/bin/env bash
# test_install.sh: the installed SDK, used as an outside project uses it (docs/deploy.md,
# "Installing the SDK"). Installs the build into a temporary prefix with `cmake --install`;
# checks the layout (programs, libescher.so with its soname, libescher.a, escher.pc, the
# CMake package); compiles every installed public header alone against the prefix only;
# builds examples/standalone from a copy, with pkg-config (shared and static) and with
# CMake (escher::escher and escher::escher_static); starts a one-node cluster with the
# INSTALLED programs in a temporary session directory; runs the four builds against it;
# and stops it. Nothing of the source or build tree is on any include, library or program
# path of what runs here, and everything it started is stopped at exit (trap).
#
# In a sanitized build (ESCHER_SANITIZE) the standalone builds get the same sanitizers:
# an uninstrumented program cannot load an instrumented libescher.so.
set -euo pipefail

BUILD=${ESCHER_BIN_DIR:?ESCHER_BIN_DIR must name the build directory}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
for tool in cmake make cc pkg-config readelf; do
  command -v "$tool" >/dev/null || { echo "test_install: $tool is required" >&2; exit 1; }
done

T=$(mktemp -d /tmp/escher-test-install-XXXXXX)
P="$T/prefix"
ESC="$P/bin/escher"
export ESCHER_SESSION_DIR="$T/session"
# The installed programs must find each other by themselves: no build directory, no
# cluster of the caller's.
unset ESCHER_BIN_DIR ESCHER_SDK_LIB ESCHER_ADDRESS ESCHER_TOKEN ESCHER_NODE_ID \
  ESCHER_DAEMON_KEY ESCHER_JOB_ID ESCHER_JOB_CREDENTIAL CPATH C_INCLUDE_PATH LIBRARY_PATH \
  LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for f in "$ESCHER_SESSION_DIR"/logs/*.log; do
      [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  [ -x "$ESC" ] && [ -d "$ESCHER_SESSION_DIR" ] &&
    "$ESC" stop --force --session-dir "$ESCHER_SESSION_DIR" >/dev/null 2>&1 || true
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

STEP="install"
fail() { echo "test_install: FAIL [$STEP]: $*" >&2; exit 1; }
step() { STEP=$*; echo "== $*"; }

SAN=""
grep -q '^ESCHER_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" && SAN="-fsanitize=address,undefined"

# ---------------------------------------------------------------------------- install
step "cmake --install"
cmake --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1 || fail "$(tail -n 5 "$T/install.log")"
for f in bin/escher bin/escher-gcs bin/escher-raylet bin/escher-worker bin/escher-gang-ghost; do
  [ -x "$P/$f" ] || fail "no $f"
done
LIBDIR=$(dirname "$(find "$P" -name libescher.so -print -quit)")
[ -n "$LIBDIR" ] && [ "$LIBDIR" != . ] || fail "no libescher.so"
[ -f "$LIBDIR/libescher.a" ] || fail "no libescher.a"
[ -f "$LIBDIR/pkgconfig/escher.pc" ] || fail "no escher.pc"
[ -f "$LIBDIR/cmake/escher/escherConfig.cmake" ] || fail "no escherConfig.cmake"
[ -f "$LIBDIR/cmake/escher/escherConfigVersion.cmake" ] || fail "no escherConfigVersion.cmake"
SONAME=$(readelf -d "$LIBDIR/libescher.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$SONAME" =~ ^libescher\.so\.[0-9]+$ ]] || fail "soname '$SONAME'"
[ -f "$LIBDIR/$SONAME" ] || fail "no $SONAME"
# libescher.a is self-contained but for escher.pc's Libs.private: every member of it
# (--whole-archive), linked into a program with those, leaves nothing undefined.
echo 'int main(void) { return 0; }' >"$T/main.c"
cc $SAN -o "$T/whole" "$T/main.c" -Wl,--whole-archive "$LIBDIR/libescher.a" -Wl,--no-whole-archive \
  $(sed -n 's/^Libs.private: //p' "$LIBDIR/pkgconfig/escher.pc") 2>"$T/whole.err" ||
  fail "libescher.a with Libs.private: $(grep -m 5 -i 'undefined\|error' "$T/whole.err")"

step "public headers, each alone"
HEADERS=$(cd "$P/include/escher" && ls)
[ "$(echo "$HEADERS" | tr '\n' ' ')" = "escher.h esl.h jobs.h status.h task.h " ] ||
  fail "installed headers: $HEADERS"
for h in $HEADERS; do
  printf '#include <escher/%s>\nint main(void) { return 0; }\n' "$h" >"$T/h.c"
  cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$P/include" -c "$T/h.c" -o "$T/h.o" \
    2>"$T/h.err" || fail "escher/$h alone: $(head -n 5 "$T/h.err")"
done
! grep -E '#include' "$P"/include/escher/*.h | grep -vE '<(stdarg|stdbool|stddef|stdint)\.h>|"(escher/)?(escher|status)\.h"|\* +#include' ||
  fail "an installed header includes something else"

# ---------------------------------------------------------------------------- builds
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
step "pkg-config"
[ "$(pkg-config --modversion escher)" = "$(sed -n 's/^Version: //p' "$LIBDIR/pkgconfig/escher.pc")" ] ||
  fail "pkg-config --modversion escher"
[ "$(pkg-config --variable=libdir escher | xargs realpath)" = "$(realpath "$LIBDIR")" ] ||
  fail "escher.pc's libdir is $(pkg-config --variable=libdir escher)"
for kind in shared static; do
  step "examples/standalone with pkg-config ($kind)"
  cp -r "$SRC/examples/standalone" "$T/pc-$kind"
  make -C "$T/pc-$kind" STATIC=$([ $kind = static ] && echo 1 || echo 0) \
    CFLAGS="-O1 -g $SAN" LDFLAGS="$SAN" >"$T/build.log" 2>&1 || fail "$(tail -n 20 "$T/build.log")"
done
readelf -d "$T/pc-shared/standalone" | grep -q "NEEDED.*\[$SONAME\]" || fail "shared build does not need $SONAME"
! readelf -d "$T/pc-static/standalone" | grep -q "NEEDED.*libescher" || fail "static build needs libescher.so"

for kind in shared static; do
  step "examples/standalone with CMake ($kind)"
  cp -r "$SRC/examples/standalone" "$T/cm-$kind"
  cmake -S "$T/cm-$kind" -B "$T/cm-$kind/build" -DCMAKE_PREFIX_PATH="$P" \
    -DCMAKE_BUILD_TYPE=Release -DESCHER_STATIC=$([ $kind = static ] && echo ON || echo OFF) \
    -DCMAKE_C_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN" >"$T/build.log" 2>&1 ||
    fail "$(tail -n 20 "$T/build.log")"
  grep -qxF "escher_DIR:PATH=$LIBDIR/cmake/escher" "$T/cm-$kind/build/CMakeCache.txt" ||
    fail "CMake found escher elsewhere: $(grep escher_DIR "$T/cm-$kind/build/CMakeCache.txt")"
  cmake --build "$T/cm-$kind/build" >"$T/build.log" 2>&1 || fail "$(tail -n 20 "$T/build.log")"
  cp "$T/cm-$kind/build/standalone" "$T/cm-$kind/build/libstandalone_tasks.so" "$T/cm-$kind/"
done
! readelf -d "$T/cm-static/standalone" | grep -q "NEEDED.*libescher" || fail "static CMake build needs libescher.so"

# ---------------------------------------------------------------------------- cluster
step "escher start --head (installed)"
"$ESC" start --head --port 0 --num-cpus 2 --num-gpus 0 --node-ip 127.0.0.1 >"$T/out" 2>&1 ||
  fail "start: $(cat "$T/out")"
for name in gcs raylet; do
  read -r _ _ exe <"$ESCHER_SESSION_DIR/pids/$name.pid" || fail "no pids/$name.pid"
  [ "$exe" = "$(realpath "$P/bin/escher-$name")" ] || fail "$name runs $exe, not the installed one"
done

step "status"
# start returns once the node registered; the status must say so within the deadline.
deadline=$((SECONDS + 20))
until "$ESC" status >"$T/status" 2>&1 && grep -q "ALIVE" "$T/status"; do
  [ $SECONDS -lt $deadline ] || fail "no ALIVE node in: $(cat "$T/status")"
  sleep 0.1
done

for b in pc-shared pc-static cm-shared cm-static; do
  step "run $b"
  "$T/$b/standalone" >"$T/run.out" 2>&1 || fail "exit $?: $(cat "$T/run.out")"
  for want in "square(3) = 9" "sum = 14" "a task's namespace = standalone"; do
    grep -qxF "$want" "$T/run.out" || fail "no '$want' in: $(cat "$T/run.out")"
  done
done

step "escher stop"
"$ESC" stop >"$T/out" 2>&1 || fail "stop: $(cat "$T/out")"
for name in gcs raylet; do
  [ ! -e "$ESCHER_SESSION_DIR/pids/$name.pid" ] || fail "pids/$name.pid left after stop"
done
echo "test_install: OK"
