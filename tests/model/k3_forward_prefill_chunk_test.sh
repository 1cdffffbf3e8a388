#!/usr/bin/env bash
# The layer-major prefill end to end (k3-forward over the tiny model, a
# 600-id prompt): the generated ids, the --logits file, the --state-out file
# and --draft's output are bit-identical whatever the prompt tokens one read
# of the weights covers (K3_PREFILL_CHUNK: 1 token, today's 256-row batches,
# 100, 300, the whole prompt, and the plan's own choice), streaming and
# resident, 1 and 2 threads; --stats-json says how many tokens a read covers
# and how many reads the prompt took, and the trunk bytes read fall by one
# streamed pass per read saved; a trunk streamed in row blocks through the
# products gives the same bits and passes once per chunk (its layers take
# the chunk's rows in one sub-batch where the plan fits it).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/lib/prefill_runs.sh"
FWD="$BIN/k3-forward"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
prefill_trunk

run() {  # run NAME CHUNK FLAGS...: K3_PREFILL_CHUNK=CHUNK (empty: the plan's)
  local name=$1 chunk=$2; shift 2
  K3_PREFILL_CHUNK=$chunk "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 700 --gen 4 --logits "$work/$name.logits" \
    --state-out "$work/$name.state" "$@" > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}

run batches 256 "${STREAM[@]}" --stats-json "$work/batches.json"
for chunk in 1 100 300 600; do
  run "chunk$chunk" "$chunk" "${STREAM[@]}" --stats-json "$work/chunk$chunk.json"
  same "chunk$chunk" batches
done
run plan "" "${STREAM[@]}" --stats-json "$work/plan.json" --threads 2
same plan batches
run resident 600
same resident batches
run resident-batches 256 --threads 2
same resident-batches batches

check "batches: tokens per read" 256 "$(json batches prefill.tokens_per_read)"
check "batches: reads" 3 "$(json batches prefill.weight_reads)"
check "chunk 300: reads" 2 "$(json chunk300 prefill.weight_reads)"
check "chunk 600: reads" 1 "$(json chunk600 prefill.weight_reads)"
check "the plan's chunk covers the prompt: reads" 1 "$(json plan prefill.weight_reads)"
check "the plan's chunk: tokens per read (the context)" 700 "$(json plan prefill.tokens_per_read)"
contains "the plan shows the chunk" "prefill chunk     700 tokens" "$(cat "$work/plan.err")"
# Trunk bytes: about one streamed pass per read (how far the stream buffers
# read ahead past a read's last layer varies from run to run, so the exact
# count per read is prefill_chunk_test's, which counts the acquisitions).
t256=$(json batches prefill.trunk_bytes) t300=$(json chunk300 prefill.trunk_bytes) t600=$(json chunk600 prefill.trunk_bytes)
holds "trunk bytes fall with the reads ($t256 > $t300 > $t600)" "[ $t256 -gt $t300 ] && [ $t300 -gt $t600 ]"
e256=$(json batches prefill.expert_bytes) e300=$(json chunk300 prefill.expert_bytes) e600=$(json chunk600 prefill.expert_bytes)
holds "experts: fewer bytes with fewer reads ($e256 > $e300 > $e600)" "[ $e256 -gt $e300 ] && [ $e300 -gt $e600 ]"

# --draft: the draft's taps see every prompt row whatever the chunk.
run draft-batches 256 "${STREAM[@]}" --draft "$DRAFT"
run draft-chunk 600 "${STREAM[@]}" --draft "$DRAFT"
same draft-chunk draft-batches
same draft-chunk batches

# Row blocks (--block-mb): the plan gives the chunk's layers a sub-batch as
# long as the chunk where it fits, so each block passes once per chunk, not
# once per 256-row batch.
run blocks 600 "${STREAM[@]}" --block-mb 0.01 --stats-json "$work/blocks.json"
same blocks batches
check "row blocks: one read of the experts" 1 "$(json blocks prefill.weight_reads)"
contains "row blocks: the plan's sub-batch is the chunk" "chunk sub-batch   600 of the chunk's rows" \
  "$(cat "$work/blocks.err")"
run blocks-batches 256 "${STREAM[@]}" --block-mb 0.01 --stats-json "$work/blocks-batches.json"
same blocks-batches batches
holds "row blocks: the chunk reads fewer expert bytes" \
  "[ $(json blocks prefill.expert_bytes) -lt $(json blocks-batches prefill.expert_bytes) ]"
# Without --logits the head runs once either way: three batches pass the
# layers' blocks three times, the chunk once (with 256-row sub-batches it
# was three times too, the same bytes). The head's blocks and what the
# stream reads ahead stay, so: at least a fifth fewer trunk bytes.
for c in 256 600; do
  K3_PREFILL_CHUNK=$c "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 700 --gen 4 "${STREAM[@]}" --block-mb 0.01 \
    --stats-json "$work/blocks-last$c.json" > "$work/blocks-last$c.out" 2> "$work/blocks-last$c.err"
  check "row blocks, last row, chunk $c: exit" 0 "$?"
done
tb=$(json blocks-last600 prefill.trunk_bytes) tbb=$(json blocks-last256 prefill.trunk_bytes)
holds "row blocks: the chunk passes the layers once ($tb < 0.8 x $tbb)" "[ $((10 * tb)) -lt $((8 * tbb)) ]"
run blocks-plan "" "${STREAM[@]}" --block-mb 0.01 --threads 2
same blocks-plan batches

bad "a chunk of no tokens" 2 "K3_PREFILL_CHUNK" -- env K3_PREFILL_CHUNK=0 "$FWD" "$TINY" --ids "$work/ids.txt" "${STREAM[@]}"
bad "a chunk that is not a number" 2 "K3_PREFILL_CHUNK" -- env K3_PREFILL_CHUNK=12x "$FWD" "$TINY" --ids "$work/ids.txt"
finish k3_forward_prefill_chunk_test
