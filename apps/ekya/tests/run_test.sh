#!/usr/bin/env bash
# run_test.sh EKYA: `ekya run` end to end on a small real workload: the JSON summary's
# keys and ranges, the decisions log and one-line errors. (Not determinism: costs are
# measured CPU time, so completion times and the accuracy timeline vary run to run.)
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

args=(--streams 2 --windows 2 --gpus 1 --window 2 --images-per-window 400 --seed 3)
out=$("$bin" run "${args[@]}" --json --decisions "$tmp/dec.jsonl") || fail "run exited $?"
python3 - "$out" "$tmp/dec.jsonl" <<'P' || fail "run output: $out"
import json, sys
d = json.loads(sys.argv[1])
for k in ("mean_accuracy", "streams", "windows", "scheduler_seconds", "retrainings"):
    assert k in d, k
assert 0 < d["mean_accuracy"] <= 1
assert set(d["streams"]) == {"0", "1"} and len(d["windows"]) == 2
assert d["retrainings"] >= d["completions"] >= 0
steps = [json.loads(l) for l in open(sys.argv[2])]
assert steps and {s["window"] for s in steps} == {0, 1}
for s in steps:  # shares within G, one entry per stream
    assert len(s["streams"]) == 2
    assert sum(x["retrain_gpus"] + x["infer_gpus"] for x in s["streams"]) <= 1 + 1e-9
P

expect_error() { # expected-substring, then the command
    local want=$1; shift
    "$@" >/dev/null 2>"$tmp/err" && fail "succeeded: $*"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "not one line: $(cat "$tmp/err")"
    grep -q -- "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
}
expect_error "missing --gpus" "$bin" run --streams 1 --windows 1 --window 2
expect_error "--streams" "$bin" run --streams 0 --windows 1 --gpus 1 --window 2
expect_error "unknown scheduler" "$bin" run --streams 1 --windows 1 --gpus 1 --window 2 \
    --images-per-window 200 --scheduler nope
echo "run: all checks passed"
