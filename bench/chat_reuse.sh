#!/usr/bin/env bash
# Chat turn 2: what k3-chat evaluates when it keeps the model state between
# turns, against evaluating the whole re-rendered conversation again
# (--no-reuse, what a stateless front end does). Prints, per mode, the
# turn-2 prompt size, the ids prefilled and the prefill seconds (median of
# RUNS interleaved runs) and the ratios. A benchmark, not a test.
#
# Usage: bench/chat_reuse.sh [BUILD_BIN_DIR] [MODEL_DIR] [RUNS]   (RUNS default 3;
#   one --no-reuse turn 2 takes minutes on 2 busy cores: RUNS=1 for a quick look)
#   default model: a small generated bench checkpoint (k3-synth --preset bench
#   --layers 4 --experts 16, ~450 MB, written to a temporary directory)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "${1:-$here/../build/bin}" && pwd)
model=${2:-}
runs=${3:-3}
work=$(mktemp -d /tmp/k3-chatbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -z "$model" ]; then
  model="$work/model"
  "$bin/k3-synth" "$model" --preset bench --layers 4 --experts 16 > /dev/null 2>&1
fi
# Turn 1: a question of a few hundred tokens; turn 2: a short follow-up.
{
  for i in $(seq 12); do
    printf 'Paragraph %d of the report: the lighthouse keeper climbed the narrow stairs every evening to light the lamp, and the ships that passed the rocky coast were grateful. ' "$i"
  done
  printf '\nSummarise the report.\n/send\nNow in one sentence, please.\n'
} > "$work/script"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: > "$work/reuse"; : > "$work/full"
for r in $(seq "$runs"); do
  for mode in reuse full; do
    flag=""; [ "$mode" = full ] && flag=--no-reuse
    "$bin/k3-chat" "$model" --max-tokens 24 --stats $flag < "$work/script" 2>&1 > /dev/null |
      sed -nE 's/.*turn 2: prompt ([0-9]+) ids, ([0-9]+) reused, ([0-9]+) prefilled in ([0-9.]+) s.*/\1 \2 \3 \4/p' >> "$work/$mode"
  done
done
prompt=$(cut -d' ' -f1 "$work/reuse" | median)
reuse_ids=$(cut -d' ' -f3 "$work/reuse" | median); full_ids=$(cut -d' ' -f3 "$work/full" | median)
reuse_s=$(cut -d' ' -f4 "$work/reuse" | median); full_s=$(cut -d' ' -f4 "$work/full" | median)
echo "chat turn 2 on $(basename "$model") (median of $runs interleaved runs, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)):"
printf '%-34s %8s %10s %10s\n' "" "prompt" "prefilled" "seconds"
printf '%-34s %8s %10s %10s\n' "k3-chat (state kept)" "$prompt" "$reuse_ids" "$reuse_s"
printf '%-34s %8s %10s %10s\n' "--no-reuse (whole prompt again)" "$prompt" "$full_ids" "$full_s"
awk -v a="$reuse_ids" -v b="$full_ids" -v s="$reuse_s" -v t="$full_s" \
  'BEGIN { printf "turn-2 prefill: %.1fx fewer ids, %.1fx less time\n", b / a, t / s }'
