#!/bin/sh
# failure_summary.sh BUILD_DIR: after a failed ctest run, repeats what each failed test
# printed that explains its failure (violations, failed assertions, errors) and the end of
# its output. ctest --output-on-failure shows a test's output where the test ran, in the
# middle of a long log; a reader who sees only the log's end (a CI summary) finds it here.
dir=${1:-.}
failed="$dir/Testing/Temporary/LastTestsFailed.log"
log="$dir/Testing/Temporary/LastTest.log"
[ -r "$failed" ] && [ -r "$log" ] || exit 0
echo "==== what the failed tests printed (from $log) ===="
cut -d: -f2- "$failed" | while read -r name; do
    echo "---- $name"
    # The test's section: from its "Testing: NAME" line to its "end time" line.
    awk -v n="$name" '$0 ~ ("Testing: " n "$") {on = 1} on {print} on && index($0, "\"" n "\" end time") {exit}' \
        "$log" >"$dir/.failed_section" 2>/dev/null
    grep -E 'VIOLATION|FAILED|Failure|[Aa]ssert|ERROR|error:|Sanitizer|leak' "$dir/.failed_section" | head -n 40
    echo "---- $name: last lines"
    grep -v -E '^\[ *[0-9.]+ s [0-9:.]+\] (fault |raylet [0-9]+ back|GCS back)' "$dir/.failed_section" | tail -n 25
    rm -f "$dir/.failed_section"
done
