#!/usr/bin/env bash
# Tokenizer benchmark (prints figures; not a test).
#
# Encodes a deterministic ~20 MB multilingual text with the full-size
# o200k_base vocabulary (199,998 ranks, converted from the npm package
# `tiktoken` to tiktoken.model format; the real Kimi vocabulary is not
# public) and prints vocabulary load time, MB/s and tokens/s, single
# threaded, for k3-tokenize and, when node and npm are available, for the
# tiktoken core itself driven with the Kimi pipeline on the same text, with
# the speed ratio and a check that both produced identical ids.
#
# Usage: bench/tokenizer/run.sh [BUILD_BIN_DIR] [MB] [RUNS]
#   defaults: build/bin, 20 MB, 3 runs each (the median is reported)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$(cd "${1:-$root/build/bin}" && pwd)
mb=${2:-20}
runs=${3:-3}
[ -x "$bin/k3-tokenize" ] || { echo "bench: $bin/k3-tokenize not built (cmake --build build --target k3-tokenize)" >&2; exit 2; }
command -v node > /dev/null && command -v npm > /dev/null || { echo "bench: needs node and npm for the o200k_base vocabulary" >&2; exit 2; }

work=$(mktemp -d /tmp/k3-tokbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "bench: installing npm tiktoken@1.0.22 into $work" >&2
npm install --silent --no-audit --no-fund tiktoken@1.0.22 > /dev/null
node "$here/o200k_to_k3.mjs" "$work/o200k"
python3 "$here/make_text.py" "$work/text.txt" "$mb"
bytes=$(stat -c %s "$work/text.txt")
echo "text: $bytes bytes, sha256 $(sha256sum "$work/text.txt" | cut -c1-16)..., $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: > k3.txt
: > tt.txt
for i in $(seq "$runs"); do
  # Interleaved so both see the same machine load.
  "$bin/k3-tokenize" --tok "$work/o200k" --prompt-file "$work/text.txt" --stats 2>> k3.txt > k3.ids
  node "$here/tiktoken_encode.mjs" "$work/text.txt" tt.ids >> tt.txt
done
# k3-tokenize: vocabulary of N tokens loaded in X ms; B bytes -> T tokens in S s (...; C s CPU, ...)
k3_load=$(sed -E 's/.*loaded in ([0-9.]+) ms.*/\1/' k3.txt | median)
k3_s=$(sed -E 's/.* tokens in ([0-9.]+) s .*/\1/' k3.txt | median)
k3_cpu=$(sed -E 's/.*; ([0-9.]+) s CPU.*/\1/' k3.txt | median)
k3_tokens=$(wc -l < k3.ids)
tt_load=$(sed -E 's/.*"load_ms":([0-9.]+).*/\1/' tt.txt | median)
tt_s=$(sed -E 's/.*"encode_s":([0-9.]+).*/\1/' tt.txt | median)
tt_cpu=$(sed -E 's/.*"encode_cpu_s":([0-9.]+).*/\1/' tt.txt | median)

awk -v b="$bytes" -v t="$k3_tokens" -v l="$k3_load" -v s="$k3_s" -v c="$k3_cpu" \
    -v tl="$tt_load" -v ts="$tt_s" -v tc="$tt_cpu" -v runs="$runs" 'BEGIN {
  printf "median of %d runs, single-threaded encode of %.1f MB into %d tokens (o200k_base, Kimi pipeline)\n", runs, b/1e6, t
  printf "%-22s %10s %10s %14s %12s %14s\n", "", "load ms", "MB/s", "tokens/s", "CPU s", "MB/CPU-s"
  printf "%-22s %10.1f %10.2f %14.0f %12.3f %14.2f\n", "k3-tokenize", l, b/1e6/s, t/s, c, b/1e6/c
  printf "%-22s %10.1f %10.2f %14.0f %12.3f %14.2f\n", "tiktoken 1.0.22 (wasm)", tl, b/1e6/ts, t/ts, tc, b/1e6/tc
  printf "speed ratio k3/tiktoken: %.2fx wall, %.2fx CPU; vocabulary load %.1fx faster\n", ts/s, tc/c, tl/l
}'
if cmp -s k3.ids tt.ids; then
  echo "ids: identical ($k3_tokens tokens)"
else
  echo "ids: DIFFERENT (first difference at line $(cmp k3.ids tt.ids | sed -E 's/.*line ([0-9]+).*/\1/'))"
  exit 1
fi
