#!/usr/bin/env bash
# Prompt tokens/s and decode s/token of k3-forward on the bundled tiny model,
# at 1 and 2 threads: the median of RUNS runs each (default 5).
#   bench/forward_tiny.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/bin/k3-forward
tiny=tests/data/k3-tiny
runs=${RUNS:-5}
prompt=$(python3 -c "import json; print(' '.join(map(str, json.load(open('$tiny/golden.json'))['teacher_forcing']['ids'])))")
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for threads in 1 2; do
  tps=(); spt=()
  for _ in $(seq "$runs"); do
    line=$(echo "$prompt" | "$bin" "$tiny" --gen 64 --ignore-eos --threads "$threads" 2>&1 >/dev/null | grep 'prompt tokens')
    tps+=("$(sed -E 's/.*\(([0-9.]+) tokens\/s\).*/\1/' <<< "$line")")
    spt+=("$(sed -E 's/.* ([0-9.]+) s\/token.*/\1/' <<< "$line")")
  done
  echo "threads=$threads  prompt (32 tokens): $(printf '%s\n' "${tps[@]}" | median) tokens/s   decode (64 tokens): $(printf '%s\n' "${spt[@]}" | median) s/token   (median of $runs)"
done
