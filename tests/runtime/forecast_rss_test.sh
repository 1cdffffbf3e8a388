#!/usr/bin/env bash
# The memory plan's forecast against the peak RSS a run really reaches:
# k3-forward over a packed trunk with a 300-token prompt, layer-major in one
# chunk of 300 rows (sub-batches of min's 32), at three budgets:
#   --preset min                        every weight streamed
#   --preset min, K3_PREFILL_SPILL=1     the chunk's block states in a spill file
#   --preset min --trunk-gb 1 --cache-gb 1   the whole trunk and every expert pinned
# The checkpoint is headers-only (every tensor a hole, read as zeros: RSS
# does not depend on the values), 4 layers, hidden 512, 32 experts and a
# vocabulary of 65,536 so the embedding and head (67 MB each) make the
# weights' terms larger than the fixed ones. The peak is the child's
# ru_maxrss (getrusage, measured by this script, not by k3-forward); the
# forecast is the one the run planned (--stats-json's forecast_peak_rss_bytes). Each peak is at most the
# forecast + 3% (no further allowance: the plan's "I/O, index, misc" term
# already holds 48 MB for the program, its libraries and allocator slack),
# and each forecast at most 2x the peak, so a plan that counts a large term
# twice fails as one that leaves it out does. RSS does not depend on timing.
# A sanitized build (K3_SANITIZE) inflates RSS with its shadow memory: the
# runs are checked, the comparisons skipped with a message (ctest leaves the
# test out of `scripts/test.sh --sanitize` by its label, native_memory).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

"$BIN/k3-synth" "$work/model" --preset tiny-like --hidden 512 --layers 4 --experts 32 --vocab 65536 \
  --headers-only > "$work/synth.log" 2>&1 || { echo "FAIL k3-synth: $(tail -1 "$work/synth.log")"; exit 1; }
"$BIN/k3-pack" "$work/model" "$work/trunk" > "$work/pack.log" 2>&1 ||
  { echo "FAIL k3-pack: $(tail -1 "$work/pack.log")"; exit 1; }
python3 -c "import random; random.seed(3); print(' '.join(str(random.randrange(300, 65000)) for _ in range(300)))" \
  > "$work/prompt.ids"
sanitized=0
grep -q '^K3_SANITIZE:BOOL=ON' "${K3_BUILD_DIR:-/nonexistent}/CMakeCache.txt" 2> /dev/null && sanitized=1

# measure NAME ENV... -- FLAGS...: runs k3-forward, prints "EXIT PEAK_BYTES FORECAST_BYTES".
measure() {
  local name=$1; shift
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  env "${env[@]}" python3 - "$work/$name.err" "$BIN/k3-forward" "$work/model" --trunk "$work/trunk" \
    --ids "$work/prompt.ids" --stats-json "$work/$name.json" "$@" << 'EOF'
import json, resource, subprocess, sys
with open(sys.argv[1], "w") as err:
    rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=err).returncode
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux: KiB
stats = sys.argv[sys.argv.index("--stats-json") + 1]
try:
    forecast = json.load(open(stats))["forecast_peak_rss_bytes"]
except (OSError, ValueError, KeyError):
    forecast = 0
print(rc, peak, forecast)
EOF
}

for run in "streamed:K3_PREFILL_SPILL=0:--preset min" "spilled:K3_PREFILL_SPILL=1:--preset min" \
  "pinned:K3_PREFILL_SPILL=0:--preset min --trunk-gb 1 --cache-gb 1"; do
  IFS=: read -r name env flags <<< "$run"
  read -r rc peak forecast <<< "$(measure "$name" "$env" -- $flags)"
  check "$name: k3-forward runs the prompt" 0 "$rc"
  holds "$name: the run wrote its forecast" "[ '${forecast:-0}' -gt 0 ]"
  chunk=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['prefill']['tokens_per_read'])" "$work/$name.json" 2>&1)
  check "$name: one chunk of the whole prompt (layer-major)" 300 "$chunk"
  spilled=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['prefill'].get('spill_written_bytes', 0) > 0)" \
    "$work/$name.json" 2>&1)
  check "$name: the spill file used only where asked" "$([ "$name" = spilled ] && echo True || echo False)" "$spilled"
  echo "$name: peak RSS $peak bytes, forecast $forecast bytes"
  if [ "$sanitized" = 1 ]; then
    echo "$name: RSS comparison skipped: a sanitized build (K3_SANITIZE=ON) inflates RSS with shadow memory"
    continue
  fi
  holds "$name: peak RSS $peak <= forecast $forecast + 3%" "[ $peak -le $((forecast * 103 / 100)) ]"
  holds "$name: forecast $forecast <= 2 x peak RSS $peak" "[ $forecast -le $((peak * 2)) ]"
done
finish forecast_rss_test
