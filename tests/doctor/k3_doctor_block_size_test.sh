#!/usr/bin/env bash
# A compressed trunk whose trunk.json gives another block size than the one
# its blocks were cut at: k3-doctor used to call it "ready to use with
# --trunk" while k3-forward failed midway through the run ("zstd:
# Destination buffer is too small", "split block of the wrong size"). Both
# now refuse it when trunk.json is read: k3-doctor reports the trunk as
# damaged, k3-forward exits 3 naming trunk.json before any id, at every
# budget.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
"$BIN/k3-pack" --compress "$TINY" "$work/good" > /dev/null 2>&1 || { echo "k3-pack --compress failed"; exit 1; }
bb=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['block_bytes'])" "$work/good/trunk.json")
# Sizes that keep every tensor's block count (so the table still parses as
# before) but not the blocks' decoded sizes; and sizes that change it.
for size in 262000 266000 270335 4096 131072 1073741824; do
  rm -rf "$work/t"
  cp -r "$work/good" "$work/t"
  sed -i "s/\"block_bytes\": $bb/\"block_bytes\": $size/" "$work/t/trunk.json"
  out=$("$BIN/k3-doctor" --model "$TINY" --trunk "$work/t" --no-probe 2>&1)
  holds "block_bytes $size: k3-doctor does not call it ready" "! grep -q 'ready to use with --trunk' <<< \"\$out\""
  holds "block_bytes $size: k3-doctor's trunk check fails" "grep -Eq '^  FAIL +trunk ' <<< \"\$out\""
  for p in min max; do
    "$BIN/k3-forward" "$TINY" --trunk "$work/t" --preset $p --ids "$TINY/prompt_ids.txt" --gen 3 > "$work/out" 2> "$work/err"
    check "block_bytes $size, --preset $p: k3-forward exit" 3 "$?"
    contains "block_bytes $size, --preset $p: names trunk.json" "trunk.json" "$(tail -1 "$work/err")"
    check "block_bytes $size, --preset $p: no id" 0 "$(stat -c %s "$work/out")"
  done
done
# The trunk as packed is ready and runs.
out=$("$BIN/k3-doctor" --model "$TINY" --trunk "$work/good" --no-probe 2>&1)
contains "the packed trunk is ready" "ready to use with --trunk" "$out"
"$BIN/k3-forward" "$TINY" --trunk "$work/good" --preset min --ids "$TINY/prompt_ids.txt" --gen 3 > "$work/out" 2> /dev/null
check "the packed trunk runs" 0 "$?"
finish k3_doctor_block_size_test
