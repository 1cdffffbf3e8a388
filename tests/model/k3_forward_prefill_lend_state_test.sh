#!/usr/bin/env bash
# The sequence state lent to the prefill's chunk end to end (k3-forward over
# the tiny model, a 600-id prompt, every weight streamed from a packed
# trunk): with K3_PREFILL_LEND_STATE=1 every layer's KDA state and MLA cache
# but the running layer's is in a file beside the trunk while a chunk runs,
# and the generated ids, the --logits file and the --state-out file are
# bit-identical to 256-row batches at one chunk and at two (the second
# continues the first's MLA rows), at three (the chunk asked for kept:
# forced, the loan's bytes do not steer the plan), spilled, held whole in
# row blocks and with --draft; --stats-json counts the file's bytes exactly, by the formula
# from config.json; the plan says the loan; nothing is left beside the
# trunk; a write the disk refuses is exit 5 naming the file, and leaves
# nothing behind; a bad switch is refused.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/lib/prefill_runs.sh"
FWD="$BIN/k3-forward"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
prefill_trunk

run() {  # run NAME CHUNK LEND FLAGS...: K3_PREFILL_CHUNK=CHUNK, K3_PREFILL_LEND_STATE=LEND, --ctx CTX (640)
  local name=$1 chunk=$2 lend=$3; shift 3
  K3_PREFILL_CHUNK=$chunk K3_PREFILL_LEND_STATE=$lend "$FWD" "$TINY" --ids "$work/ids.txt" --ctx "${CTX:-640}" --gen 4 \
    --logits "$work/$name.logits" --state-out "$work/$name.state" --stats-json "$work/$name.json" \
    "${STREAM[@]}" "$@" > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}

run batches 256 0
check "batches: no state lent" absent "$(json batches prefill.state_loan_written_bytes)"
run lend600 600 1
same lend600 batches
run lend320 320 1
same lend320 batches
# Forced, the loan's bytes do not steer the plan off the chunk asked for: at
# a context of 700, chunks of 300 (300 + 300 + 100 rows) read the weights as
# often as 256-row batches, and only 300 lends.
CTX=700 run lend300 300 1
same lend300 batches
check "lend 300: the chunk asked for" 300 "$(json lend300 prefill.tokens_per_read)"
K3_PREFILL_SPILL=1 run lend-spill 600 1
same lend-spill batches
K3_PREFILL_HOLD=1 run lend-held 600 1 --block-mb 0.01
same lend-held batches
contains "held: the plan holds each layer" "each streamed layer read whole" "$(cat "$work/lend-held.err")"
run draft-batches 256 0 --draft "$DRAFT"
run lend-draft 600 1 --draft "$DRAFT"
same lend-draft draft-batches

# The file's bytes, from config.json: K, one sequence's KDA states (9 KDA
# layers of 6 heads x 16 x 16 floats and 3 conv carries of 3 x 6 x 16), and
# R, one position's MLA rows (4 MLA layers of 32 + 8 floats). A chunk from
# position P of r rows writes 2K + (P + r)R and reads 2K + (2P + r)R
# (model/state_loan.h). One chunk of 600: P = 0; two of 320 and 280.
read -r K R < <(python3 -c "
import json, sys
c = json.load(open(sys.argv[1] + '/config.json'))['text_config']; a = c['linear_attn_config']
H, D, k = a['num_heads'], a['head_dim'], a['short_conv_kernel_size']
print(len(a['kda_layers']) * (H * D * D + 3 * (k - 1) * H * D) * 4,
      len(a['full_attn_layers']) * (c['kv_lora_rank'] + c['qk_rope_head_dim']) * 4)" "$TINY")
check "lend 600: bytes written" $((2 * K + 600 * R)) "$(json lend600 prefill.state_loan_written_bytes)"
check "lend 600: bytes read" $((2 * K + 600 * R)) "$(json lend600 prefill.state_loan_read_bytes)"
check "lend 320: bytes written" $((2 * K + 320 * R + 2 * K + 600 * R)) "$(json lend320 prefill.state_loan_written_bytes)"
check "lend 320: bytes read" $((2 * K + 320 * R + 2 * K + 920 * R)) "$(json lend320 prefill.state_loan_read_bytes)"
contains "the plan says the loan" "lent to the chunk: one layer's in memory" "$(cat "$work/lend600.err")"
contains "the prefill line forecasts its bytes" "the lent sequence state" \
  "$(grep 'prefill: one read' "$work/lend600.err")"
check "nothing left beside the trunk" "$(cat "$work/trunk-before.txt")" "$(ls -A "$work/trunk")"

# A write the disk refuses ends the run with exit 5, a line naming the
# file, and nothing beside the trunk.
refused_write "the sequence state lent to the prefill's chunk" K3_PREFILL_CHUNK=600 K3_PREFILL_LEND_STATE=1 -- \
  --ctx 640 --gen 4 "${STREAM[@]}"

bad "a state-lending switch that is not 0 or 1" 2 "K3_PREFILL_LEND_STATE" -- env K3_PREFILL_LEND_STATE=yes "$FWD" \
  "$TINY" --ids "$work/ids.txt" "${STREAM[@]}"
finish k3_forward_prefill_lend_state_test
