#!/usr/bin/env bash
# Several tokens per weight pass, measured exactly through --stats-json:
#  (1) --predict with the model's own greedy output edited at 1 id in 10,
#      against the plain run: tokens per pass, bytes per generated token,
#      s/token (interleaved runs, medians of K3_BENCH_REPEAT);
#  (3) --spec on a prompt with no repetition: bytes per token vs plain
#      (must stay within 2%).
# Usage: bench/spec_bench.sh BUILD_BIN_DIR [MODEL_DIR TRUNK_DIR]
# Without a model, a generated checkpoint (k3-synth --preset bench) is made
# in a scratch directory. K3_BENCH_GEN (default 32) tokens per run.
set -euo pipefail
B=${1:?usage: spec_bench.sh BUILD_BIN_DIR [MODEL_DIR TRUNK_DIR]}
GEN=${K3_BENCH_GEN:-32}
REPEAT=${K3_BENCH_REPEAT:-3}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
if [ $# -ge 3 ]; then
  M=$2 T=$3
else
  M="$W/model" T="$W/trunk"
  "$B/k3-synth" "$M" --preset bench --seed 3 >/dev/null 2>&1
  "$B/k3-pack" "$M" "$T" >/dev/null 2>&1
fi
V=$(python3 -c "import json; c=json.load(open('$M/config.json')); print(c.get('text_config', c)['vocab_size'])")
python3 -c "import random; r=random.Random(9); print(' '.join(map(str, r.sample(range($V), 24))))" >"$W/prompt"
budget=(--trunk "$T" --trunk-gb 0 --cache-gb 0)
"$B/k3-forward" "$M" --ids "$W/prompt" --gen "$GEN" --ignore-eos "${budget[@]}" >"$W/plain.ids" 2>/dev/null
python3 - "$W" "$V" <<'PY'
import sys
w, v = sys.argv[1], int(sys.argv[2])
ids = open(w + '/plain.ids').read().split()
for i in range(4, len(ids), 10): ids[i] = str((int(ids[i]) + 1) % v)
open(w + '/edited.pred', 'w').write(' '.join(ids))
PY
run() {  # run NAME ARGS...: one run's figures as a python dict line
  "$B/k3-forward" "$M" --ids "$W/prompt" --gen "$GEN" --ignore-eos "${budget[@]}" --stats-json "$W/$1.json" "${@:2}" \
    >"$W/$1.out" 2>/dev/null
  cmp -s "$W/$1.out" "$W/plain.ids" || { echo "$1: ids differ from the plain run" >&2; exit 1; }
  python3 -c "
import json; j=json.load(open('$W/$1.json')); g=j['generation']
print(g['tokens_per_pass'], g['trunk_bytes_per_generated_token'], g['expert_bytes_per_generated_token'],
      j['decode']['seconds'] / g['generated_tokens'])" >>"$W/$1.rows"
}
for _ in $(seq "$REPEAT"); do run plain; run predict --predict "$W/edited.pred"; run spec --spec 8; done
python3 - "$W" <<'PY'
import statistics, sys
w = sys.argv[1]
def med(name):
    rows = [list(map(float, l.split())) for l in open(w + '/' + name + '.rows')]
    return [statistics.median(c) for c in zip(*rows)]
print('%-34s %12s %16s %16s %10s' % ('run', 'tokens/pass', 'trunk B/token', 'expert B/token', 's/token'))
for name, label in (('plain', 'plain'), ('predict', '--predict (1 in 10 edited)'), ('spec', '--spec 8, no repetition')):
    t, tb, eb, s = med(name)
    print('%-34s %12.2f %16.0f %16.0f %10.4f' % (label, t, tb, eb, s))
p, s = med('plain'), med('spec')
print('--spec bytes per token / plain: %.4f (limit 1.02)' % ((s[1] + s[2]) / (p[1] + p[2])))
PY
