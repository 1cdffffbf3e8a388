#!/usr/bin/env bash
# A chunk that holds each layer whole end to end (k3-forward over the tiny
# model, a 600-id prompt, the trunk in row blocks of 10 kB): with
# K3_PREFILL_HOLD=1 each streamed layer is read whole into one buffer per
# chunk, the sub-batch one piece, and the generated ids, the --logits file
# and the --state-out file are bit-identical to 256-row batches, in memory
# and spilled, with and without a pinned layer (lent to the buffer for the
# chunk, read again after it), from a raw and a compressed trunk;
# --stats-json counts each layer section read once per chunk (the lent
# pinned one too) and the pinned section read again after each chunk,
# exactly, from trunk.json; --plan says the hold; a damaged byte in a held
# section or in the pinned one is exit 3 naming the block, as without the
# hold; a bad switch is refused. With a hold limit (K3_PREFILL_HOLD_LIMIT)
# the layers over it stream in row blocks inside the held chunk, with the
# same bits: counted, read once per piece, said by --plan, a damaged byte
# in one exit 3 too.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/lib/prefill_runs.sh"
FWD="$BIN/k3-forward"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> "$work/pack.err" || { cat "$work/pack.err"; exit 1; }
"$BIN/k3-pack" "$TINY" "$work/packed" --compress 2> "$work/pack.err" || { cat "$work/pack.err"; exit 1; }
prefill_ids "$work/ids.txt"
BLOCKS=(--cache-gb 0 --block-mb 0.01)
ONE_PINNED=0.0002  # GB: layer 0's section (184 kB) and nothing more

run() {  # run NAME CHUNK HOLD SPILL TRUNK_DIR TRUNK_GB FLAGS...
  local name=$1 chunk=$2 hold=$3 spill=$4 dir=$5 gb=$6; shift 6
  K3_PREFILL_CHUNK=$chunk K3_PREFILL_HOLD=$hold K3_PREFILL_SPILL=$spill K3_PREFILL_HOLD_LIMIT=${LIMIT:-} \
    "$FWD" "$TINY" --ids "$work/ids.txt" \
    --ctx 640 --gen 4 --trunk "$dir" --trunk-gb "$gb" "${BLOCKS[@]}" --logits "$work/$name.logits" \
    --state-out "$work/$name.state" --stats-json "$work/$name.json" "$@" > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}

# layers TRUNK_DIR FIELD [LAYER]: the sum of FIELD (length, stored_length)
# over the layer sections of trunk.json, or of one layer's.
layers() {
  python3 -c "import json,sys; t=json.load(open(sys.argv[1]+'/trunk.json')); print(sum(s[sys.argv[2]] for s in t['sections'] if s['layer'] >= 0 and (len(sys.argv) < 4 or s['layer'] == int(sys.argv[3]))))" "$@"
}
member() {  # member NAME KEY: a field of the layer_hold member of $work/NAME.json
  json "$1" "layer_hold.$2"
}

run batches 256 0 0 "$work/trunk" 0
check "batches: nothing held" absent "$(member batches held_layers)"
all=$(layers "$work/trunk" length)
layer0=$(layers "$work/trunk" length 0)

run held 600 1 0 "$work/trunk" 0
same held batches
check "held: 13 layers read whole" 13 "$(member held held_layers)"
check "held: each layer section's bytes once" "$all" "$(member held held_bytes)"
check "held: nothing pinned, nothing read again" 0 "$(member held repinned_bytes)"
holds "held: the prefill's trunk bytes include them" "test $(json held prefill.trunk_bytes) -ge $all"
# The units read ahead at start into the three stream buffers the hold
# takes (of four: the head keeps one) are dropped, and counted: some of
# layer 0's row blocks, less than one read of the layers.
dropped=$(member held dropped_ahead_bytes)
holds "held: the read-ahead dropped is counted, below one read of the layers" \
  "test $dropped -gt 0 && test $dropped -lt $all"

run held-spill 600 1 1 "$work/trunk" 0
same held-spill batches
check "held, spilled: each layer section's bytes once" "$all" "$(member held-spill held_bytes)"

# Two chunks (320 and 280 rows) with layer 0 pinned: lent to the buffer, read through it
# in each chunk, read again after each.
run held-pinned 320 1 0 "$work/trunk" "$ONE_PINNED"
same held-pinned batches
check "held, pinned: the plan lends layer 0" "$layer0" "$(member held-pinned planned_pinned_lent_bytes)"
check "held, pinned: 13 layers per chunk" 26 "$(member held-pinned held_layers)"
check "held, pinned: every layer section once per chunk" $((2 * all)) "$(member held-pinned held_bytes)"
check "held, pinned: layer 0 read again after each chunk" $((2 * layer0)) "$(member held-pinned repinned_bytes)"

# Compressed: the sections' stored bytes.
run held-packed 600 1 1 "$work/packed" "$ONE_PINNED"
same held-packed batches
check "held, compressed: each layer section's stored bytes once" "$(layers "$work/packed" stored_length)" \
  "$(member held-packed held_bytes)"
check "held, compressed: layer 0's stored bytes read again" "$(layers "$work/packed" stored_length 0)" \
  "$(member held-packed repinned_bytes)"

# A hold limit: the tiny model's packed layer sections come in three sizes
# (the KDA layers, the dense layer 0, the MLA layers). Limited to the
# second, the KDA layers are not held: they stream in row blocks once per
# piece of 256 rows (three in 600), through the stream buffers in the hold
# buffer's stead.
size() {  # size N: the Nth largest distinct layer section length of trunk.json
  python3 -c "import json,sys; t=json.load(open(sys.argv[1]+'/trunk.json')); print(sorted({s['length'] for s in t['sections'] if s['layer'] >= 0}, reverse=True)[int(sys.argv[2]) - 1])" "$work/trunk" "$1"
}
over() {  # over BYTES count|sum: the layer sections longer, counted or their lengths summed
  python3 -c "import json,sys; t=json.load(open(sys.argv[1]+'/trunk.json')); o=[s['length'] for s in t['sections'] if s['layer'] >= 0 and s['length'] > int(sys.argv[2])]; print(len(o) if sys.argv[3] == 'count' else sum(o))" "$work/trunk" "$1" "$2"
}
limit=$(size 2)
skipped=$(over "$limit" count)
skipped_bytes=$(over "$limit" sum)
holds "limited: some layers over the limit, not all" "test $skipped -gt 0 && test $skipped -lt 13"
LIMIT=$limit run limited 600 1 0 "$work/trunk" 0
same limited batches
check "limited: the layers over the limit skipped" "$skipped" "$(member limited skipped_layers)"
check "limited: the others held" $((13 - skipped)) "$(member limited held_layers)"
check "limited: their sections' bytes once" $((all - skipped_bytes)) "$(member limited held_bytes)"
holds "limited: the plan's buffer holds the largest layer under the limit" \
  "test $(member limited planned_hold_bytes) -ge $limit"
# What the skipped layers read beyond the held run (the held layers' bytes
# and the head's and embedding's taken out of both): their held parts once
# and their row blocks once per piece, about 3 reads of their sections
# (less the held parts read once; more a first read's whole trunk blocks
# and page alignment): between 2.5 and 3.25. Held once, it would be 0.
extra=$(($(json limited prefill.trunk_bytes) - $(member limited held_bytes) - $(json held prefill.trunk_bytes) + $(member held held_bytes)))
holds "limited: the skipped layers read once per piece ($extra bytes; their sections $skipped_bytes)" \
  "test $((2 * extra)) -ge $((5 * skipped_bytes)) && test $((4 * extra)) -le $((13 * skipped_bytes))"
# Over the MLA layers' size: the KDA layers and layer 0, from a compressed
# trunk, spilled, layer 0 pinned: over the limit, it stays pinned (not lent).
LIMIT=$(size 3) run limited-packed 600 1 1 "$work/packed" "$ONE_PINNED"
same limited-packed batches
streamed_over=$(($(over "$(size 3)" count) - 1))
check "limited, compressed: the streamed layers over the limit skipped" "$streamed_over" \
  "$(member limited-packed skipped_layers)"
check "limited, compressed: the others held" $((12 - streamed_over)) "$(member limited-packed held_layers)"
check "limited, compressed: layer 0 stays pinned, not lent" 0 "$(member limited-packed planned_pinned_lent_bytes)"
check "limited, compressed: nothing read again" 0 "$(member limited-packed repinned_bytes)"

K3_PREFILL_CHUNK=600 K3_PREFILL_HOLD=1 K3_PREFILL_HOLD_LIMIT="$limit" "$FWD" "$TINY" --trunk "$work/trunk" \
  --trunk-gb 0 "${BLOCKS[@]}" --ctx 640 --plan < /dev/null > /dev/null 2> "$work/plan-limited.err"
contains "the plan says the layers over the limit" "but $skipped layers (" "$(grep 'layer hold' "$work/plan-limited.err")"
contains "the prefill line says it" "each layer held whole but $skipped layers (" \
  "$(grep 'prefill: one read' "$work/plan-limited.err")"

K3_PREFILL_CHUNK=600 K3_PREFILL_HOLD=1 "$FWD" "$TINY" --trunk "$work/trunk" --trunk-gb "$ONE_PINNED" \
  "${BLOCKS[@]}" --ctx 640 --plan < /dev/null > /dev/null 2> "$work/plan.err"
contains "the plan says the hold" "each streamed layer read whole into a" "$(cat "$work/plan.err")"
contains "the plan says the pinned layer is lent" "the pinned layers' 184.3 kB lent to it" "$(cat "$work/plan.err")"
contains "the prefill line says it" "each layer held whole" "$(grep 'prefill: one read' "$work/plan.err")"

# corrupt SECTION: a copy of the trunk with one byte of the section's middle
# flipped; prints the index of its block.
corrupt() {
  rm -rf "$work/bad"
  cp -r "$work/trunk" "$work/bad"
  python3 - "$work/bad" "$1" <<'PY'
import json, sys
d, name = sys.argv[1], sys.argv[2]
t = json.load(open(d + "/trunk.json"))
s = [s for s in t["sections"] if s["name"] == name][0]
x = s["tensors"][0]
at = x["offset"] + (x["nbytes"] // 2 // 4) * 4
with open(d + "/trunk.bin", "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 1]))
print((at - s["offset"]) // t["block_bytes"])
PY
}
for section in layer.7 layer.0; do
  block=$(corrupt "$section")
  for hold in 0 1; do
    K3_PREFILL_CHUNK=600 K3_PREFILL_HOLD=$hold "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 640 --gen 4 \
      --trunk "$work/bad" --trunk-gb "$ONE_PINNED" "${BLOCKS[@]}" > "$work/bad.out" 2> "$work/bad.err"
    check "$section damaged, hold $hold: exit" 3 "$?"
    contains "$section damaged, hold $hold: names the block" "section $section block $block (bytes" \
      "$(tail -1 "$work/bad.err")"
    check "$section damaged, hold $hold: no ids" 0 "$(stat -c %s "$work/bad.out")"
  done
done

# A damaged byte in the layer over the limit, streamed in row blocks inside
# the held chunk: exit 3 naming the block.
block=$(corrupt layer.1)
K3_PREFILL_CHUNK=600 K3_PREFILL_HOLD=1 K3_PREFILL_HOLD_LIMIT="$limit" "$FWD" "$TINY" --ids "$work/ids.txt" \
  --ctx 640 --gen 4 --trunk "$work/bad" --trunk-gb 0 "${BLOCKS[@]}" > "$work/bad.out" 2> "$work/bad.err"
check "layer.1 damaged, over the hold limit: exit" 3 "$?"
contains "layer.1 damaged, over the hold limit: names the block" "section layer.1 block $block (bytes" \
  "$(tail -1 "$work/bad.err")"
bad "a hold limit that is not a byte count" 2 "K3_PREFILL_HOLD_LIMIT" -- env K3_PREFILL_HOLD_LIMIT=1G "$FWD" "$TINY" \
  --ids "$work/ids.txt" --trunk "$work/trunk"
bad "a hold switch that is not 0 or 1" 2 "K3_PREFILL_HOLD" -- env K3_PREFILL_HOLD=yes "$FWD" "$TINY" \
  --ids "$work/ids.txt" --trunk "$work/trunk"
finish k3_forward_prefill_hold_test
