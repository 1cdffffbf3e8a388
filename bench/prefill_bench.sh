#!/usr/bin/env bash
# Prefill benchmark: the bytes a prompt reads and its time to first token,
# k3-forward --gen 1 on a synthetic checkpoint, per prompt length and budget:
# everything streaming (--trunk-gb 0 --cache-gb 0) and the trunk pinned
# (--trunk-gb 64 --cache-gb 0). Bytes are exact (--stats-json's prefill
# counters: trunk and expert bytes, weight reads, tokens per read); times
# are medians over K3_BENCH_REPEAT runs. The "touched" column is what the
# prompt needs at least: every streamed trunk byte once and every expert
# some row chose once (the all-streaming run with one read of the weights
# for the whole prompt at the same budget, K3_PREFILL_CHUNK = the prompt).
#
# Usage: bench/prefill_bench.sh [BUILD_DIR]     (default: build)
# Env:   K3_BENCH_DIR  where the checkpoint and trunk are cached (default /var/tmp/k3-prefill-bench)
#        K3_BENCH_SYNTH  k3-synth flags (default "--preset bench --layers 8 --experts 64", 0.92 GB)
#        K3_BENCH_PROMPTS  prompt lengths (default "128 256 512 1024")
#        K3_BENCH_BUDGETS  which budgets (default "streaming pinned")
#        K3_BENCH_REPEAT  runs per cell (default 1); K3_BENCH_THREADS (default: all cores)
#        K3_BENCH_BASELINE  another k3-forward (the binary, its bin directory or its build directory): each
#                           cell runs both, interleaved (ours first in odd repetitions, the baseline first
#                           in even ones), and prints both rows and after/before of the medians
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN=$BUILD/bin
DIR=${K3_BENCH_DIR:-/var/tmp/k3-prefill-bench}
SYNTH=${K3_BENCH_SYNTH:---preset bench --layers 8 --experts 64}
PROMPTS=${K3_BENCH_PROMPTS:-128 256 512 1024}
REPEAT=${K3_BENCH_REPEAT:-1}
THREADS=${K3_BENCH_THREADS:-0}
for t in k3-synth k3-pack k3-forward; do
  [ -x "$BIN/$t" ] || { echo "prefill_bench: $BIN/$t missing; build it first" >&2; exit 2; }
done
BASE=""
if [ -n "${K3_BENCH_BASELINE:-}" ]; then
  for c in "$K3_BENCH_BASELINE" "$K3_BENCH_BASELINE/k3-forward" "$K3_BENCH_BASELINE/bin/k3-forward"; do
    if [ -f "$c" ] && [ -x "$c" ]; then BASE=$c; break; fi
  done
  [ -n "$BASE" ] || { echo "prefill_bench: K3_BENCH_BASELINE=$K3_BENCH_BASELINE: no k3-forward there" >&2; exit 2; }
fi
MODEL=$DIR/model TRUNK=$DIR/trunk
mkdir -p "$DIR"
if [ ! -f "$MODEL/model.safetensors.index.json" ]; then
  echo "== generating the checkpoint in $MODEL (once; cached): k3-synth $SYNTH"
  # shellcheck disable=SC2086  # the flags are words
  "$BIN/k3-synth" "$MODEL" $SYNTH --seed 1 >/dev/null
  echo "$SYNTH" >"$DIR/synth-flags"
fi
[ "$(cat "$DIR/synth-flags")" = "$SYNTH" ] || { echo "prefill_bench: $MODEL is of other k3-synth flags: set K3_BENCH_DIR" >&2; exit 2; }
[ -f "$TRUNK/trunk.json" ] || "$BIN/k3-pack" "$MODEL" "$TRUNK" >/dev/null 2>&1
vocab=$(python3 -c "import json; print(json.load(open('$MODEL/config.json'))['text_config']['vocab_size'] - 512)")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run EXE N FLAGS... -> "seconds trunk_bytes expert_bytes reads tokens_per_read"
run() {
  local exe=$1 n=$2; shift 2
  awk -v n="$n" -v v="$vocab" 'BEGIN { for (i = 0; i < n; ++i) printf "%d ", (i * 7919 + 13) % v; print "" }' >"$work/ids"
  sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
  "$exe" "$MODEL" --trunk "$TRUNK" --ids "$work/ids" --gen 1 --ctx $((n + 8)) --threads "$THREADS" \
    --stats-json "$work/stats.json" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  python3 -c "
import json; d = json.load(open('$work/stats.json'))['prefill']
print(d['seconds'], int(d['trunk_bytes']), int(d['expert_bytes']), d.get('weight_reads', '-'), d.get('tokens_per_read', '-'))"
}
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

printf '%-9s %6s %-5s %9s %10s %10s %10s %6s %6s %7s\n' budget tokens side "TTFT s" "trunk MB" "expert MB" \
  "touched MB" reads tok/rd "x touch"
for budget in ${K3_BENCH_BUDGETS:-streaming pinned}; do
  flags=(--trunk-gb 0 --cache-gb 0)
  [ "$budget" = pinned ] && flags=(--trunk-gb 64 --cache-gb 0)
  for n in $PROMPTS; do
    touched=$(K3_PREFILL_CHUNK=$n run "$BIN/k3-forward" "$n" "${flags[@]}" | awk '{ printf "%d\n", $2 + $3 }')
    : >"$work/ours" ; : >"$work/base"
    for r in $(seq "$REPEAT"); do
      order="ours base"
      [ $((r % 2)) -eq 0 ] && order="base ours"
      for side in $order; do
        if [ "$side" = ours ]; then run "$BIN/k3-forward" "$n" "${flags[@]}" >>"$work/ours"
        elif [ -n "$BASE" ]; then run "$BASE" "$n" "${flags[@]}" >>"$work/base"; fi
      done
    done
    for side in ours base; do
      [ -s "$work/$side" ] || continue
      t=$(cut -d' ' -f1 "$work/$side" | median)
      read -r _ tb eb reads tpr < <(tail -1 "$work/$side")
      awk -v b="$budget" -v n="$n" -v s="$side" -v t="$t" -v tb="$tb" -v eb="$eb" -v to="$touched" -v r="$reads" \
        -v p="$tpr" 'BEGIN { printf "%-9s %6d %-5s %9.3f %10.1f %10.1f %10.1f %6s %6s %7.2f\n", b, n, s, t, tb / 1e6,
                             eb / 1e6, to / 1e6, r, p, (tb + eb) / to }'
      echo "$t $tb $eb" >"$work/$side.median"
    done
    if [ -s "$work/base.median" ]; then
      read -r t1 tb1 eb1 <"$work/ours.median"; read -r t0 tb0 eb0 <"$work/base.median"
      awk -v t1="$t1" -v t0="$t0" -v b1="$((tb1 + eb1))" -v b0="$((tb0 + eb0))" \
        'BEGIN { printf "  after/before: time %.2fx, bytes %.2fx\n", t1 / t0, b1 / b0 }'
      rm -f "$work/base.median"
    fi
  done
done
