#!/usr/bin/env bash
# The prefill's spill file end to end (k3-forward over the tiny model, a
# 600-id prompt): with the chunk's block states in a file beside the trunk
# (K3_PREFILL_SPILL=1) the generated ids, the --logits file and the
# --state-out file are bit-identical to the unspilled 256-row batches at
# several chunks, streamed whole or in row blocks, with --draft; the plan
# says where they go; where memory is short it weighs the file's bytes
# (written, then read back by every layer: more than the tiny model's
# weights) and halves the batch instead; --stats-json counts exactly what the
# file took and gave back; nothing is left beside the trunk; a write the disk refuses is exit 5,
# and leaves nothing behind either.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/lib/prefill_runs.sh"
FWD="$BIN/k3-forward"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
prefill_trunk

run() {  # run NAME CHUNK SPILL FLAGS...: K3_PREFILL_CHUNK=CHUNK, K3_PREFILL_SPILL=SPILL
  local name=$1 chunk=$2 spill=$3; shift 3
  K3_PREFILL_CHUNK=$chunk K3_PREFILL_SPILL=$spill "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 700 --gen 4 \
    --logits "$work/$name.logits" --state-out "$work/$name.state" "$@" > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}

run batches 256 0 "${STREAM[@]}" --stats-json "$work/batches.json"
check "unspilled: no spill counts" absent "$(json batches prefill.spill_written_bytes)"
for chunk in 300 600; do
  run "spill$chunk" "$chunk" 1 "${STREAM[@]}" --stats-json "$work/spill$chunk.json"
  same "spill$chunk" batches
done
run spill-plan "" 1 "${STREAM[@]}" --threads 2
same spill-plan batches
contains "the plan says where the block states go" "in a spill file beside the trunk" "$(cat "$work/spill-plan.err")"
contains "the prefill line forecasts the spill file's reads" "the spill file" "$(grep 'prefill: one read' "$work/spill-plan.err")"

# What the file took and gave back, written out for the tiny model (hidden
# 64, 13 layers, a block every 4): each of the 4 blocks' 600 rows of 64
# floats written once; layer i reads the i / 4 + 1 blocks opened by then
# (1+1+1+1 + 2+2+2+2 + 3+3+3+3 + 4 = 28 block reads of 600 rows); each of
# the 12 MoE layers (1-12) writes its 600 rows of shared-expert output and
# reads them back; the head reads all 4 blocks of every row (--logits: every
# position's logits).
row=$((64 * 4))
check "spill 600: bytes written" $(((4 + 12) * 600 * row)) "$(json spill600 prefill.spill_written_bytes)"
check "spill 600: bytes read" $(((28 + 12) * 600 * row + 4 * 600 * row)) "$(json spill600 prefill.spill_read_bytes)"
# The one chunk visits each layer once with the cache at its floor, empty:
# no expert can be resident when its layer's prefetch begins, so none is a
# hit, not even one read for an earlier expert group of the layer.
check "spill 600: no resident hits in one chunk" 0.0 "$(json spill600 prefill.expert_hit_rate)"
# Chunk 300: two chunks of 300 rows, the same bytes in all.
check "spill 300: bytes written" $((2 * (4 + 12) * 300 * row)) "$(json spill300 prefill.spill_written_bytes)"
check "spill 300: bytes read" $((2 * (28 + 12 + 4) * 300 * row)) "$(json spill300 prefill.spill_read_bytes)"
# Without --logits the head reads the blocks of the prompt's last row only.
K3_PREFILL_CHUNK=600 K3_PREFILL_SPILL=1 "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 700 --gen 4 "${STREAM[@]}" \
  --stats-json "$work/last.json" > "$work/last.out" 2> "$work/last.err"
check "last row: exit" 0 "$?"
holds "last row: ids identical" "cmp -s '$work/last.out' '$work/batches.out'"
check "last row: bytes read" $(((28 + 12) * 600 * row + 4 * row)) "$(json last prefill.spill_read_bytes)"

run spill-draft 600 1 "${STREAM[@]}" --draft "$DRAFT"
run draft-batches 256 0 "${STREAM[@]}" --draft "$DRAFT"
same spill-draft draft-batches
run spill-blocks 600 1 "${STREAM[@]}" --block-mb 0.01
same spill-blocks batches

# Where the chunk fits only without its block states or at a smaller batch
# (the unspilled plan for 4096 positions, its forecast less 1 MB as the 90%
# limit), the plan halves the batch: the spill file would take 4096 tokens x
# (4 blocks + 12 layers' shared-expert rows) x 256 bytes = 16.8 MB and give
# back (28 block reads + 12 shared reads) of 4096 rows (42 MB), more bytes
# than the tiny model's weights (5.6 MB a read), and a smaller batch moves
# none (planning/prefill_chunk_fit.h).
peak_of() {  # peak_of FILE: the forecast peak RSS of a --plan's stderr, in bytes
  awk '/forecast peak RSS/ { u = $5 == "GB" ? 1e9 : $5 == "MB" ? 1e6 : 1e3; printf "%.0f\n", $4 * u }' "$1"
}
"$FWD" "$TINY" "${STREAM[@]}" --plan --ctx 4096 < /dev/null > /dev/null 2> "$work/roomy.err"
peak=$(peak_of "$work/roomy.err")
holds "roomy plan: nothing spilled" "! grep -q 'spill' '$work/roomy.err'"
avail=$(( (peak - 1000000) * 10 / 9 ))
K3_AVAILABLE_MEMORY=$avail "$FWD" "$TINY" "${STREAM[@]}" --plan --ctx 4096 < /dev/null > /dev/null 2> "$work/tight.err"
check "tight plan: fits" 0 "$?"
contains "tight plan: the batch halved" "prefill batch lowered from 256 to 128 tokens" "$(cat "$work/tight.err")"
holds "tight plan: nothing spilled" "! grep -q 'spill' '$work/tight.err'"
contains "tight plan: the whole context in one chunk" "prefill chunk     4096 tokens" "$(cat "$work/tight.err")"
K3_AVAILABLE_MEMORY=$avail "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 4096 --gen 4 "${STREAM[@]}" \
  --stats-json "$work/tight.json" > "$work/tight.out" 2> "$work/tight-run.err"
check "tight run: exit" 0 "$?"
holds "tight run: ids identical" "cmp -s '$work/tight.out' '$work/batches.out'"
check "tight run: no spill file" absent "$(json tight prefill.spill_written_bytes)"

check "nothing left beside the trunk" "$(cat "$work/trunk-before.txt")" "$(ls -A "$work/trunk")"

# A write the disk refuses ends the run with exit 5, a line naming the
# spill file, and nothing beside the trunk.
refused_write "the prefill's spill file" K3_PREFILL_CHUNK=600 K3_PREFILL_SPILL=1 -- --ctx 700 --gen 4 "${STREAM[@]}"

bad "a spill switch that is not 0 or 1" 2 "K3_PREFILL_SPILL" -- env K3_PREFILL_SPILL=yes "$FWD" "$TINY" \
  --ids "$work/ids.txt" "${STREAM[@]}"
finish k3_forward_prefill_spill_test
