#!/usr/bin/env bash
# cli_test.sh EKYA DATA_DIR: the ekya command line: bad inputs give a single-line
# error and a non-zero exit; --json has the documented keys; plot writes its files.
set -u
EKYA=$1
DATA=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_error WANT_SUBSTRING ARGS...: non-zero exit, exactly one stderr line with WANT.
expect_error() {
    local want=$1
    shift
    "$EKYA" "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    local lines
    lines=$(wc -l <"$TMP/err")
    if [ "$rc" -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$TMP/err"; then
        fail "ekya $* (rc $rc, $lines lines): $(cat "$TMP/err")"
    fi
}

SIM=(simulate --inference-profile "$DATA/inference_paper.csv" --gpus 3 --window 120)
HDR=stream,window,config,epochs,start_pct,end_pct,gpu_seconds
printf 'stream,window,config,epochs,start_pct,end_pct\nA,1,c,1,50,60\n' >"$TMP/nocol.csv"
printf '%s\nA,1,c,1,50,60,-5\n' "$HDR" >"$TMP/neg.csv"
printf '%s\nA,1,c,1,50,abc,5\n' "$HDR" >"$TMP/nan.csv"
printf 'subsampling,accuracy_multiplier\n1,2\n' >"$TMP/badinf.csv"

expect_error "nocol.csv:1:1: header lacks column 'gpu_seconds'" "${SIM[@]}" --profiles "$TMP/nocol.csv" --scheduler thief
expect_error "neg.csv:2:" "${SIM[@]}" --profiles "$TMP/neg.csv" --scheduler thief
expect_error "must not be negative" "${SIM[@]}" --profiles "$TMP/neg.csv" --scheduler thief
expect_error "neg.csv:2:15:" "${SIM[@]}" --profiles "$TMP/neg.csv" --scheduler thief
expect_error "'abc' is not a number" "${SIM[@]}" --profiles "$TMP/nan.csv" --scheduler thief
expect_error "unknown configuration 'cfg9'" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler fixedconfig:cfg9:1
expect_error "unknown configuration 'cfg1' with 7 epochs" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler uniform:cfg1:7:0.5
expect_error "unknown scheduler 'magic'" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler magic
expect_error "SHARE" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler uniform:cfg1:1:1.5
expect_error "badinf.csv:2:3: accuracy_multiplier must be in 0..1" simulate --inference-profile "$TMP/badinf.csv" --gpus 3 --window 120 --profiles "$DATA/toy_profiles.csv" --scheduler thief
expect_error "cannot open" "${SIM[@]}" --profiles "$TMP/absent.csv" --scheduler thief
expect_error "missing --scheduler" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv"
expect_error "--gpus: 'x' is not a positive number" simulate --gpus x
expect_error "unknown command 'frobnicate'" frobnicate
expect_error "missing --streams" run
expect_error "unknown or incomplete option" simulate --bogus
expect_error "--delta: 'xG' is not a positive number of GPUs (D) or fraction of G (FG)" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler thief --delta xG
expect_error "--delta: '-0.1G'" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler thief --delta -0.1G
expect_error "gpus/delta <= 1e6" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler thief --delta 1e-9

# accuracy units: _acc columns hold fractions, _pct percent; a file that contradicts its
# names is refused; the toy profile in fractions gives the very same result
sed -e 's/start_pct,end_pct/start_acc,end_acc/' "$DATA/toy_profiles.csv" >"$TMP/legacy.csv"
python3 - "$DATA/toy_profiles.csv" "$TMP/toy_frac.csv" <<'PY' || fail "toy_frac.csv"
import sys
out = open(sys.argv[2], "w")
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split(",")
    if line.startswith("#") or len(f) < 7:
        out.write(line)
    elif f[4] == "start_pct":
        out.write(line.replace("start_pct,end_pct", "start_acc,end_acc"))
    else:
        out.write(",".join(f[:4] + ["%g" % (float(f[4]) / 100), "%g" % (float(f[5]) / 100)] + f[6:]) + "\n")
PY
printf 'stream,window,config,epochs,start_pct,end_acc,gpu_seconds\nA,1,c,1,50,0.6,10\n' >"$TMP/mixed.csv"
printf '%s\nA,1,c,1,0.5,0.6,10\n' "$HDR" >"$TMP/pctfrac.csv"
expect_error "legacy.csv:6:12: start_acc is a fraction 0..1 but holds 65; did you mean start_pct?" "${SIM[@]}" --profiles "$TMP/legacy.csv" --scheduler thief
expect_error "mixed.csv:1:39: header mixes start_pct (percent) with end_acc (fraction)" "${SIM[@]}" --profiles "$TMP/mixed.csv" --scheduler thief
expect_error "pctfrac.csv:2:9: every accuracy is <= 1" "${SIM[@]}" --profiles "$TMP/pctfrac.csv" --scheduler thief
expect_error "--accuracy-unit fraction" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler thief --accuracy-unit fraction
expect_error "--accuracy-unit: 'pct' is not fraction or percent" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler thief --accuracy-unit pct
for bad in legacy mixed pctfrac; do
    "$EKYA" "${SIM[@]}" --profiles "$TMP/$bad.csv" --scheduler thief >/dev/null 2>&1
    [ $? -eq 1 ] || fail "$bad.csv: exit status is not 1"
done
same() {
    "$EKYA" "${SIM[@]}" --rmax 1 --scheduler thief --json "$@" 2>"$TMP/err" |
        python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["mean_accuracy"], o["streams"], o["windows"])'
}
want=$(same --profiles "$DATA/toy_profiles.csv")
[ -n "$want" ] && [ "$(same --profiles "$TMP/toy_frac.csv")" = "$want" ] || fail "fraction file differs from percent file"
[ "$(same --profiles "$TMP/legacy.csv" --accuracy-unit percent)" = "$want" ] || fail "--accuracy-unit percent on _acc names"
[ "$(same --profiles "$TMP/toy_frac.csv" --accuracy-unit fraction)" = "$want" ] || fail "--accuracy-unit fraction"

"$EKYA" --help >"$TMP/help" 2>&1 || fail "--help exit"
grep -q "simulate" "$TMP/help" || fail "--help text"

# --json: one object with the documented keys, accuracies in 0..1
"$EKYA" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --rmax 1 --scheduler thief --json \
    --decisions "$TMP/dec.jsonl" >"$TMP/json" 2>"$TMP/err" || fail "json run: $(cat "$TMP/err")"
python3 - "$TMP/json" "$TMP/dec.jsonl" <<'PY' || fail "json keys"
import json, sys
o = json.load(open(sys.argv[1]))
assert 0 <= o["mean_accuracy"] <= 1
assert set(o["streams"]) == {"A", "B"} and all(0 <= v <= 1 for v in o["streams"].values())
assert len(o["windows"]) == 2 and all(0 <= v <= 1 for v in o["windows"])
assert o["scheduler_seconds"] >= 0
assert abs(o["mean_accuracy"] - 0.7609) < 0.002
lines = [json.loads(l) for l in open(sys.argv[2])]
assert lines[0]["reason"] == "start" and lines[0]["window"] == 0
assert any(l["reason"] == "completion" for l in lines)
PY

# --delta FG is a fraction of the GPUs: 0.1/3 G on 3 GPUs is the same run as 0.1 GPUs
acc() { "$EKYA" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --rmax 1 --scheduler thief --json "$@" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["mean_accuracy"])'; }
[ "$(acc --delta 0.1)" = "$(acc --delta 0.0333333333333G)" ] || fail "--delta FG differs from --delta D"
[ "$(acc --delta 1.5)" = "$(acc --delta 0.5G)" ] && [ "$(acc --delta 0.1)" != "$(acc --delta 1.5)" ] || fail "--delta 0.5G is not 1.5 GPUs"

# a window sampled fewer than 20 times gets a one-line note after the results; 120 do not
"$EKYA" simulate --inference-profile "$DATA/inference_paper.csv" --gpus 3 --window 2 \
    --profiles "$DATA/toy_profiles.csv" --scheduler noretrain >/dev/null 2>"$TMP/note" || fail "note run"
[ "$(wc -l <"$TMP/note")" -eq 1 ] && grep -q "sampled 2 times per 2-s window; --sample 0.01" "$TMP/note" ||
    fail "sampling note: $(cat "$TMP/note")"
"$EKYA" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler noretrain >/dev/null 2>"$TMP/note" &&
    [ ! -s "$TMP/note" ] || fail "note with 120 samples: $(cat "$TMP/note")"

# text report names every stream and window and the scheduler time
"$EKYA" "${SIM[@]}" --profiles "$DATA/toy_profiles.csv" --scheduler noretrain >"$TMP/text" || fail "text run"
grep -q "stream A" "$TMP/text" && grep -q "window 2" "$TMP/text" && grep -q "scheduler time" "$TMP/text" || fail "text report"

# plot: data, script and, with gnuplot, two svg files and (pngcairo or png) two png files
if command -v gnuplot >/dev/null; then
    "$EKYA" plot --profiles "$DATA/toy_profiles.csv" --inference-profile "$DATA/inference_paper.csv" \
        --window 120 --gpus 0.5,1,2,3 --rmax 1 --out "$TMP/plot" --target 70 >"$TMP/plotout" 2>&1 || fail "plot: $(cat "$TMP/plotout")"
    for f in results.dat plot.gp accuracy_vs_gpus.svg streams_above_target.svg; do
        [ -s "$TMP/plot/$f" ] || fail "plot did not write $f"
    done
    grep -q "set logscale x 2" "$TMP/plot/plot.gp" && grep -qF "set xtics ('0.5' 0.5, '1' 1, '2' 2, '3' 3)" "$TMP/plot/plot.gp" ||
        fail "plot.gp: no log2 GPU axis with ticks at the given G"
    if gnuplot -e 'set terminal' 2>&1 </dev/null | grep -qE '^ *(pngcairo|png) '; then
        for f in accuracy_vs_gpus.png streams_above_target.png; do
            [ "$(head -c 8 "$TMP/plot/$f" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
                fail "plot did not write $f with the PNG signature"
        done
    fi
fi

[ "$fails" -eq 0 ] && echo "cli: all passed"
exit "$fails"
