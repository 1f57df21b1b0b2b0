#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build (cmake -DESCHER_FUZZ=ON; docs/testing.md).
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS [--split]
#
# For each BUILD_DIR/fuzz_<name>: first every regression input of tests/fuzz/regress/<name>/
# once (a crash fixed before must stay fixed), then fuzzing for SECONDS (with --split:
# SECONDS shared among the targets, at least 1 each) from the seeds of
# tests/fuzz/corpus/<name>/ and the regressions. What the fuzzer learns stays in
# BUILD_DIR/fuzz-corpus/<name>/ (never in the source tree), so longer runs build on it.
# Fails on the first crash, leak, timeout or out-of-memory: the input is kept in
# BUILD_DIR/fuzz-artifacts/<name>/ and the log's tail printed; see docs/testing.md for
# turning it into a regression input.
set -euo pipefail

usage() { echo "usage: $0 BUILD_DIR SECONDS [--split]" >&2; exit 2; }
[ $# -ge 2 ] || usage
build=$(cd "$1" && pwd)
seconds=$2
split=${3:-}
[[ "$seconds" =~ ^[0-9]+$ ]] || usage
here=$(cd "$(dirname "$0")" && pwd)

mapfile -t targets < <(find "$build" -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x -printf '%f\n' | sort)
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no fuzz_* programs in $build" >&2; exit 1; }
if [ "$split" = "--split" ]; then
  seconds=$(( seconds / ${#targets[@]} ))
  [ "$seconds" -ge 1 ] || seconds=1
fi

# Each input at most 10 s and 2 GiB in all, 128 MiB in one allocation (no input of these
# parsers needs more: a bigger one is a peer or a file making us allocate what it never
# sent); leaks count as failures (ASan's leak check at exit).
flags=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=128 -print_final_stats=1)

# Code that prints each rejected input's error on stderr (the CLI's cluster file) would
# fill the log with one line an input: its stderr is closed (-close_fd_mask=2; libFuzzer
# and the sanitizers still report). Replay an artifact by hand to see its messages.
quiet() { case $1 in fuzz_cluster_file) echo -close_fd_mask=2 ;; esac; }

fail() {
  local name=$1 log=$2
  echo "fuzz: $name FAILED; log: $log" >&2
  tail -n 40 "$log" >&2
  echo "fuzz: the input is under $build/fuzz-artifacts/$name/" >&2
  exit 1
}

# Replays the regression inputs of one target (files only; none is fine).
replay() {
  local name=$1 dir="$here/regress/${1#fuzz_}" log="$build/fuzz-logs/$1.regress.log"
  [ -d "$dir" ] || return 0
  mapfile -t inputs < <(find "$dir" -type f ! -name 'README*' | sort)
  [ ${#inputs[@]} -gt 0 ] || return 0
  mkdir -p "$build/fuzz-artifacts/$name"
  # shellcheck disable=SC2046
  "$build/$name" "${flags[@]}" $(quiet "$name") -artifact_prefix="$build/fuzz-artifacts/$name/" \
    "${inputs[@]}" >"$log" 2>&1 || fail "$name" "$log"
  echo "fuzz: $name: ${#inputs[@]} regression input(s) pass"
}

run_one() {
  local name=$1 short=${1#fuzz_} log="$build/fuzz-logs/$1.log"
  local work="$build/fuzz-corpus/$short" dirs=()
  mkdir -p "$work" "$build/fuzz-artifacts/$name"
  for d in "$here/corpus/$short" "$here/regress/$short"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  # shellcheck disable=SC2046 # quiet prints one word or none
  "$build/$name" "${flags[@]}" $(quiet "$name") -max_total_time="$seconds" \
    -artifact_prefix="$build/fuzz-artifacts/$name/" "$work" "${dirs[@]}" >"$log" 2>&1 ||
    fail "$name" "$log"
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  echo "fuzz: $name: ${seconds}s, ${execs:-?} runs, no crash"
}

mkdir -p "$build/fuzz-logs"
for t in "${targets[@]}"; do
  replay "$t"
  run_one "$t"
done
echo "fuzz: ${#targets[@]} targets passed"
