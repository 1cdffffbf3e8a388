#!/usr/bin/env bash
# Trunk matrices in row blocks through the real tools: k3-forward --block-mb
# and --preset min give ids and --logits byte-identical to the resident run
# at every block size down to one row of the widest matrix (320 bytes on the
# fixture), with 1 and 2 threads and any prefill batch; a smaller block, or
# --block-mb without a packed trunk, is refused with one line (exit 2); the
# plan shows the row blocks, the floor expert arena and the min preset.
set -uo pipefail
B=${K3_BIN_DIR:?}
TINY=${K3_TEST_DATA:?}/k3-tiny
work=$(mktemp -d "${TMPDIR:-/tmp}/k3-blocks-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

"$B/k3-pack" "$TINY" "$work/trunk" 2> "$work/pack.err"
check "k3-pack exit" 0 "$?"
echo "1 2 3 4 5 6 7 8 9 10 11 12" > "$work/ids"
run() {  # run NAME flags...: ids to $work/NAME.ids, logits to $work/NAME.st, stderr to $work/NAME.err
  local name=$1; shift
  "$B/k3-forward" "$TINY" --ids "$work/ids" --gen 6 --ignore-eos --logits "$work/$name.st" "$@" \
    > "$work/$name.ids" 2> "$work/$name.err"
  check "$name exit" 0 "$?"
}
run resident
# 0.00032 MB = 320 bytes: one row of layer 0's mlp.down_proj, the smallest block.
for block in 0.00032 0.0005 0.004 0.03 1; do
  for threads in 1 2; do
    name=b${block}t$threads
    run "$name" --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0 --block-mb "$block" --threads "$threads"
    check "$name logits byte-identical" same "$(cmp -s "$work/resident.st" "$work/$name.st" && echo same)"
    check "$name ids" "$(cat "$work/resident.ids")" "$(cat "$work/$name.ids")"
  done
done
contains "plan shows the row blocks" "row blocks        matrices in blocks of at most 320 B" "$(cat "$work/b0.00032t1.err")"
contains "plan shows the floor arena" "4 slots x" "$(cat "$work/b0.00032t1.err")"
contains "floor arena said so" "(the floor: one layer's top-k, all in flight)" "$(cat "$work/b0.00032t1.err")"

run min --trunk "$work/trunk" --preset min --threads 2
check "--preset min logits byte-identical" same "$(cmp -s "$work/resident.st" "$work/min.st" && echo same)"
contains "--preset min plans 32 MB blocks" "blocks of at most 32.0 MB" "$(cat "$work/min.err")"
# The 12-token prompt's plan (one batch of 12) with a little less memory
# available than it needs: the plan lowers the batch until it fits.
"$B/k3-forward" "$TINY" --trunk "$work/trunk" --preset min --ids "$work/ids" --gen 0 --stats-json "$work/min.json" \
  > /dev/null 2>&1
need=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["forecast_peak_rss_bytes"])' "$work/min.json")
K3_AVAILABLE_MEMORY=$(( (need - 1) / 9 * 10 )) "$B/k3-forward" "$TINY" --trunk "$work/trunk" --preset min --ids "$work/ids" --gen 2 \
  --ignore-eos > "$work/low.ids" 2> "$work/low.err"
check "lowered batch exit" 0 "$?"
contains "lowered batch said" "prefill batch lowered from 12 to" "$(cat "$work/low.err")"
check "lowered batch ids" "$(head -2 "$work/resident.ids")" "$(cat "$work/low.ids")"

TOOL=k3-forward
bad "block below one row" 2 "is less than one row of language_model.model.layers.0.mlp.down_proj.weight (320 bytes" -- \
  "$B/k3-forward" "$TINY" --trunk "$work/trunk" --block-mb 0.0003 --ids "$work/ids"
bad "--block-mb without --trunk" 2 "--block-mb needs --trunk DIR" -- "$B/k3-forward" "$TINY" --block-mb 1 --ids "$work/ids"
presets=$("$B/k3-forward" "$TINY" --trunk "$work/trunk" --list-presets)
check "--list-presets has min with no trunk and no cache" "0.0 0.0" "$(awk '$1 == "min" {print $2, $3}' <<< "$presets")"

finish "k3_forward_blocks_test"
