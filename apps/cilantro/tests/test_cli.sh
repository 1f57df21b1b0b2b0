#!/usr/bin/env bash
# test_cli.sh CILANTRO ENVDIR: the `cilantro` command end to end on a small built-in
# environment: every subcommand's output and JSON keys, and one-line errors with a
# non-zero exit for bad input.
set -u
bin=$1
envdir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$tmp/env.json" <<'J'
{"cpus": 120, "round_s": 60, "report_s": 10, "jobs": [
 {"name": "a", "curve": {"type": "linear", "demand": 30}, "load": 10, "slo": 0.9, "utility": "linear"},
 {"name": "b", "curve": {"type": "sigmoid", "offset": 2}, "load": 20, "slo": 0.8, "utility": "sqrt"},
 {"name": "c", "curve": {"type": "linear", "demand": 60}, "load": 5, "slo": 0.9, "utility": "quadratic", "weight": 2}]}
J

# simulate: text and JSON with the documented keys; integer allocations within R
out=$("$bin" simulate --env "$tmp/env.json" --policy cilantro-njc --hours 0.5 --json) ||
    fail "simulate --json exited $?"
python3 - "$out" <<'P' || fail "simulate JSON: $out"
import json, sys
d = json.loads(sys.argv[1])
for k in ("social_welfare", "egalitarian_welfare", "njc_fairness", "njc_fairness_utility",
          "useful_usage", "jobs"):
    assert k in d, k
assert set(d["jobs"]) == {"a", "b", "c"}
assert all(set(v) >= {"utility", "alloc"} for v in d["jobs"].values())
assert sum(v["alloc"] for v in d["jobs"].values()) <= 120 + 1e-9
assert 0 <= d["social_welfare"] <= 1 and 0 <= d["njc_fairness"] <= 1
# one entry per round, whose mean is the reported time average
for k in ("social_welfare", "egalitarian_welfare", "njc_fairness"):
    s = d["series"][k]
    assert len(s) == d["rounds"], (k, len(s), d["rounds"])
    assert abs(sum(s) / len(s) - d[k]) < 1e-5, k
P
"$bin" simulate --env "$tmp/env.json" --policy parties --hours 0.2 | grep -q '^useful_usage' ||
    fail "simulate text output"

# same seed, same answer; every policy runs
a=$("$bin" simulate --env "$tmp/env.json" --policy evoalg-sw --hours 0.3 --seed 4 --json)
b=$("$bin" simulate --env "$tmp/env.json" --policy evoalg-sw --hours 0.3 --seed 4 --json)
python3 - "$a" "$b" <<'P' || fail "simulate is not deterministic for a seed"
import json, sys
a, b = (json.loads(x) for x in sys.argv[1:3])
for d in (a, b):
    del d["alloc_ms_median"]  # wall time, the one field that may differ
assert a == b
P
"$bin" compare --env "$tmp/env.json" --policies all --hours 0.3 >"$tmp/cmp.txt" ||
    fail "compare all exited $?"
[ "$(grep -c '^[a-z]' "$tmp/cmp.txt")" -ge 16 ] || fail "compare: $(cat "$tmp/cmp.txt")"
"$bin" compare --env "$tmp/env.json" --policies resource-fair,oracle-sw --hours 0.2 --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert [p["policy"] for p in d["policies"]] == ["resource-fair","oracle-sw"]' ||
    fail "compare --json"

# alloc: integers summing to at most R for the feedback-free policies
for p in resource-fair oracle-njc oracle-sw oracle-ew; do
    "$bin" alloc --env "$tmp/env.json" --policy $p --json |
        python3 -c 'import json,sys; a=json.load(sys.stdin)["alloc"]; assert set(a)=={"a","b","c"}; assert all(isinstance(v,int) and v>=0 for v in a.values()); assert sum(a.values())<=120' ||
        fail "alloc $p"
done

# plot: the table and three PNGs
if command -v gnuplot >/dev/null; then
    "$bin" plot --env "$tmp/env.json" --policies resource-fair,cilantro-ew --hours 0.5 \
        --out "$tmp/plots" >/dev/null || fail "plot exited $?"
    for f in series.tsv welfare.png egalitarian.png fairness.png; do
        [ -s "$tmp/plots/$f" ] || fail "plot: $f missing"
    done
fi

# bad input: one line on stderr, non-zero exit
expect_error() { # expected-substring, then the command
    local want=$1; shift
    "$@" >/dev/null 2>"$tmp/err" && fail "succeeded: $*"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "not one line: $(cat "$tmp/err")"
    grep -q -- "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
}
expect_error "unknown policy 'nope'" "$bin" simulate --env "$tmp/env.json" --policy nope
expect_error "unknown command" "$bin" frobnicate
expect_error "unknown option '--bogus'" "$bin" simulate --env "$tmp/env.json" --policy miad --bogus 1
expect_error "--env is required" "$bin" simulate --policy miad
expect_error "--hours" "$bin" simulate --env "$tmp/env.json" --policy miad --hours -1
expect_error "needs feedback" "$bin" alloc --env "$tmp/env.json" --policy cilantro-sw
expect_error "unknown policy 'x'" "$bin" compare --env "$tmp/env.json" --policies miad,x
echo '{"cpus": 10, "round_s": 60, "report_s": 10, "jobs": [{"name": "a", "curve": {"type": "linear", "demand": 3}, "load": 1, "slo": 0.9}]}' >"$tmp/bad.json"
expect_error "utility" "$bin" simulate --env "$tmp/bad.json" --policy miad
echo '{"cpus": -5, "jobs": []}' >"$tmp/bad2.json"
expect_error "cpus" "$bin" simulate --env "$tmp/bad2.json" --policy miad
expect_error "missing.json" "$bin" simulate --env "$tmp/missing.json" --policy miad

# the microservices comparison, when built
if "$bin" --help | grep -q 'cilantro micro'; then
    "$bin" micro --policy all --hours 0.5 --json |
        python3 -c 'import json,sys; rows=[json.loads(l) for l in sys.stdin]; assert [r["policy"] for r in rows]==["ucb","evoalg","egreedy","resource-fair"]; assert all(r["mean_p99_s"]>0 for r in rows)' ||
        fail "micro --json"
    expect_error "unknown policy" "$bin" micro --policy bogus
fi

# the paper's environment on the shipped data; a data folder that does not hold it is
# one line naming the path tried and CILANTRO_DATA_DIR
"$bin" alloc --env "$envdir/paper20.json" --policy oracle-njc --json |
    python3 -c 'import json,sys; a=json.load(sys.stdin)["alloc"]; assert len(a)==20 and sum(a.values())<=1000' ||
    fail "paper20 alloc"
expect_error "$tmp/nodata/craydb0_profile.csv: cannot read.*set CILANTRO_DATA_DIR" \
    env CILANTRO_DATA_DIR="$tmp/nodata" "$bin" alloc --env "$envdir/paper20.json" --policy oracle-njc
echo "cli: all checks passed"
