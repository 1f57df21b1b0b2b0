#!/usr/bin/env bash
# compare.sh BUILD_DIR CONFIG POLICY...: a measured live run per policy (docs/cilantro.md,
# "Live runs"): a fresh 3-raylet loopback cluster (one CPU each) per policy, `cilantro
# serve` with the config's tenants and rounds, and a summary line per policy: the mean
# over rounds 2.. of each tenant's reward and utility, and of the weighted utility sum.
set -euo pipefail
B=${1:?usage: compare.sh BUILD_DIR CONFIG POLICY...}
CFG=${2:?usage: compare.sh BUILD_DIR CONFIG POLICY...}
shift 2
ESC="$B/client/escher"
for pol in "$@"; do
  T=$(mktemp -d /tmp/cilantro-compare-XXXXXX)
  export ESCHER_SESSION_DIR="$T/head"
  stop() {
    for d in "$T"/n*; do ESCHER_SESSION_DIR=$d "$ESC" stop --force >/dev/null 2>&1 || true; done
    "$ESC" stop --force >/dev/null 2>&1 || true
  }
  trap stop EXIT
  "$ESC" start --head --port 0 --bind 127.0.0.1 --num-cpus 1 --num-gpus 0 >/dev/null
  for i in 2 3; do
    "$ESC" start --address "$(cat "$T/head/gcs_address")" --token "$(cat "$T/head/token")" \
      --daemon-key "$(cat "$T/head/daemon_key")" --bind 127.0.0.1 --session-dir "$T/n$i" \
      --num-cpus 1 --num-gpus 0 >/dev/null
  done
  python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['policy']=sys.argv[2]; json.dump(c, open(sys.argv[3],'w'))" \
    "$CFG" "$pol" "$T/cfg.json"
  "$B/apps/cilantro/cilantro" serve --cluster --config "$T/cfg.json" | tee "$T/out.txt" >&2
  python3 - "$T/out.txt" "$pol" <<'P'
import math, re, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("round ")][1:]
per = {}
for l in rows:
    for name, rew, ut in re.findall(r"\| (\w+) reward=(\S+) utility=(\S+) ", l):
        if rew != "nan":
            per.setdefault(name, []).append((float(rew), float(ut)))
mean = lambda v: sum(v) / len(v)
tot = sum(mean([u for _, u in v]) for v in per.values())
print(f"{sys.argv[2]}: rounds {len(rows)}, utility sum {tot:.3f} | " +
      " ".join(f"{n} reward={mean([r for r, _ in v]):.3f} utility={mean([u for _, u in v]):.3f}"
               for n, v in per.items()))
P
  stop
  trap - EXIT
  rm -rf "$T"
done
