#!/usr/bin/env bash
# k3-forward --batch through the real tools: each line's ids equal the same
# prompt run alone (greedy and seeded, resident and streaming, 1/2 threads),
# with sequences stopping at different steps; lines come out in input order;
# k3-detok --format=line gives one text line per prompt; a batch whose
# states do not fit the memory is refused with exit 6 saying how many would.
set -uo pipefail
B=${K3_BIN_DIR:?}
TINY=${K3_TEST_DATA:?}/k3-tiny
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-forward
W=$work

G="$W/gen"
"$B/k3-synth" "$G" --seed 5 --vocab 2048 --hidden 256 --intermediate 512 --layers 8 --kda-heads 4 --kda-head-dim 64 \
  --mla-heads 4 --q-lora 64 --kv-lora 32 --experts 64 --top-k 4 --moe-inter 128 --latent 128 --shards 3 2>/dev/null \
  || { echo "k3-synth failed"; exit 1; }
"$B/k3-pack" "$G" "$W/gtrunk" 2>/dev/null || { echo "k3-pack failed"; exit 1; }

python3 -c "
import random; r=random.Random(1)
for n in (5, 9, 3, 12, 7): print(' '.join(str(r.randrange(2048)) for _ in range(n)))" >"$W/batch.txt"

# alone FILE ARGS...: each line of batch.txt run alone, one output line each.
alone() {
  local out=$1; shift
  : >"$out"
  while read -r line; do
    echo "$line" | "$B/k3-forward" "$G" "$@" 2>/dev/null | tr '\n' ' ' | sed 's/ $//' >>"$out"
    echo >>"$out"
  done <"$W/batch.txt"
}
# Stop ids taken from the plain outputs at different steps of different lines.
alone "$W/plain.out" --gen 14 --ignore-eos
s1=$(sed -n 2p "$W/plain.out" | cut -d' ' -f4)
s2=$(sed -n 4p "$W/plain.out" | cut -d' ' -f9)
for sampling in "" "--temp 0.9 --top-p 0.95 --seed 5"; do
  tag=${sampling:+seeded}; tag=${tag:-greedy}
  alone "$W/alone-$tag.out" --gen 14 --ignore-eos --stop-id "$s1" --stop-id "$s2" $sampling
  for budget in "--threads 1" "--threads 2 --trunk $W/gtrunk --trunk-gb 0 --cache-gb 0" \
                "--threads 1 --trunk $W/gtrunk --trunk-gb 0.004 --cache-gb 0.003"; do
    "$B/k3-forward" "$G" --batch "$W/batch.txt" --gen 14 --ignore-eos --stop-id "$s1" --stop-id "$s2" $sampling \
      $budget >"$W/batch.out" 2>"$W/err"; rc=$?
    check "batch $tag ($budget) exit" 0 "$rc"
    check "batch $tag ($budget) = each prompt alone" "$(cat "$W/alone-$tag.out")" "$(cat "$W/batch.out")"
  done
done
lens=$(awk '{print NF}' "$W/alone-greedy.out" | sort -u | wc -l)
holds "sequences stopped at different steps" "[ $lens -gt 1 ]"
check "one output line per prompt" 5 "$(wc -l <"$W/batch.out")"
contains "summary names passes" "weight passes" "$(cat "$W/err")"
# Fewer weight passes than tokens: the batch shares them.
"$B/k3-forward" "$G" --batch "$W/batch.txt" --gen 10 --ignore-eos --trunk "$W/gtrunk" --trunk-gb 0 --cache-gb 0 \
  --stats-json "$W/b.json" >/dev/null 2>&1
holds "batch: 5 tokens per weight pass" \
  "python3 -c \"import json,sys; g=json.load(open('$W/b.json'))['generation']; sys.exit(0 if g['weight_passes'] == 9 and g['generated_tokens'] == 50 else 1)\""

# k3-detok --format=line: one text line per prompt, same text as alone.
"$B/k3-forward" "$TINY" --batch <(printf '976 4490\n39 6053\n') --gen 4 --ignore-eos 2>/dev/null >"$W/tb.out"
"$B/k3-detok" --tok "$TINY" --format=line <"$W/tb.out" >"$W/tb.txt"
check "detok --format=line: one line per prompt" 2 "$(wc -l <"$W/tb.txt")"
want=$(sed -n 2p "$W/tb.out" | "$B/k3-detok" --tok "$TINY" | sed 's/\\/\\\\/g' | awk 'BEGIN{ORS="\\n"} {print}' | sed 's/\\n$//')
check "detok --format=line text = detok of the line" "$want" "$(sed -n 2p "$W/tb.txt")"

# Refusals.
bad "empty batch line" 4 "line 2: an empty prompt" -- "$B/k3-forward" "$G" --batch <(printf '1 2\n\n3\n') --gen 2
bad "bad id in batch" 4 "line 1: token 2 'x'" -- "$B/k3-forward" "$G" --batch <(printf '1 x\n') --gen 2
bad "missing batch file" 4 "not found" -- "$B/k3-forward" "$G" --batch "$W/nope" --gen 2
bad "--batch with --spec" 2 "--batch" -- "$B/k3-forward" "$G" --batch "$W/batch.txt" --spec 2
python3 -c "print('\n'.join(['1 2 3'] * 64))" >"$W/big.txt"
# Each sequence holds a latent cache for --ctx positions: 64 of them cannot fit.
for mode in "--gen 2" "--plan"; do
  "$B/k3-forward" "$G" --batch "$W/big.txt" $mode --trunk "$W/gtrunk" --ctx 100000000 >"$W/out" 2>"$W/err"; rc=$?
  check "a batch that does not fit ($mode): exit 6" 6 "$rc"
  last=$(tail -1 "$W/err")
  contains "refusal names the batch ($mode)" "k3-forward: a batch of 64 sequences needs" "$last"
  contains "refusal names the per-sequence state ($mode)" "of KDA state and MLA cache per sequence" "$last"
  holds "refusal says how many would fit ($mode)" "[[ '$last' == *'sequences would fit'* || '$last' == *'not even one sequence fits'* ]]"
  check "refused batch wrote nothing ($mode)" 0 "$(stat -c %s "$W/out")"
done
# A smaller context: some of the 64 fit, and the message says how many.
avail=$(awk '/MemAvailable/ {print $2 * 1024}' /proc/meminfo)
ctx=$(python3 -c "print(max(1000, int(float($avail)) // 8 // 768))")
"$B/k3-forward" "$G" --batch "$W/big.txt" --plan --trunk "$W/gtrunk" --ctx "$ctx" >/dev/null 2>"$W/err"; rc=$?
if [ "$rc" = 6 ]; then
  contains "a partly fitting batch names how many would fit" "sequences would fit: split the batch" "$(tail -1 "$W/err")"
fi
finish k3_forward_batch_test
