#!/bin/sh
# tsan_run.sh BUILD_DIR: runs the multi-threaded suites (ctest label "threads",
# tests/CMakeLists.txt) of a ThreadSanitizer tree (ESCHER_TSAN=ON), then fails if any
# process wrote a report. The daemons, workers and CLIs a test starts are TSan builds too,
# and a race in one of them does not always fail the test that started it (the daemon
# carries on), so every process writes its reports under BUILD_DIR/tsan-reports and this
# script is the judge: no report file, or the run fails and prints them.
set -u
dir=$(cd "${1:?usage: tsan_run.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
reports="$dir/tsan-reports"
rm -rf "$reports" && mkdir -p "$reports"
# handle_segv=0: tests crash workers on purpose (SIGSEGV in a task) and expect the plain
# signal death, not TSan's report of it.
export TSAN_OPTIONS="suppressions=$src/tests/tsan.supp log_path=$reports/tsan handle_segv=0 second_deadlock_stack=1"
cd "$dir" || exit 1
ctest --output-on-failure -L threads
rc=$?
[ $rc -eq 0 ] || "$src/tests/failure_summary.sh" .
if [ -n "$(ls -A "$reports")" ]; then
    echo "==== ThreadSanitizer reports ($(ls "$reports" | wc -l) processes) ===="
    grep -h '^SUMMARY' "$reports"/* | sort | uniq -c | sort -rn
    for f in "$reports"/*; do
        echo "---- $f"
        head -n 60 "$f"
    done
    exit 1
fi
exit $rc
