#!/usr/bin/env bash
# The expert cache lent to the prefill's chunk end to end (k3-forward over
# the tiny model, a 600-id prompt, a cache of about 40 slots, the chunk
# keeping 2 of them): lending (K3_PREFILL_LEND=1) leaves the generated ids, the --logits
# file and the --state-out file bit-identical to 256-row batches at chunks of
# 600 and 320 (a context of 640: two reads of the weights against three for
# 256-row batches; a chunk of 300 at a context of 700 reads as often as the
# batches do, so the plan would take them and lend nothing);
# --stats-json counts one loan per chunk, each given back, and no slot still
# lent at the end (decode runs on the whole cache again); where the whole
# context fits in one chunk only by lending the cache or by halving the
# batch, the plan halves the batch (it costs no bytes; the loan's refill
# does), keeps the chunk, and the output is bit-identical; a bad switch is
# refused.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/lib/prefill_runs.sh"
FWD="$BIN/k3-forward"
prefill_ids "$work/ids.txt"
CACHE=(--cache-gb 0.0005)

run() {  # run NAME CHUNK LEND FLAGS...: K3_PREFILL_CHUNK=CHUNK, K3_PREFILL_LEND=LEND
  local name=$1 chunk=$2 lend=$3; shift 3
  K3_PREFILL_CHUNK=$chunk K3_PREFILL_LEND=$lend "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 640 --gen 6 \
    --logits "$work/$name.logits" --state-out "$work/$name.state" --stats-json "$work/$name.json" "$@" \
    > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}

run batches 256 0 "${CACHE[@]}"
check "batches: no loan" absent "$(json batches expert_cache_loan.lends)"
for chunk in 600 320; do
  run "lend$chunk" "$chunk" 1 "${CACHE[@]}"
  same "lend$chunk" batches
  check "lend $chunk: given back after every chunk" "$(json "lend$chunk" expert_cache_loan.lends)" \
    "$(json "lend$chunk" expert_cache_loan.reclaims)"
  check "lend $chunk: no slot lent at the end" 0 "$(json "lend$chunk" expert_cache_loan.slots_lent_at_end)"
  check "lend $chunk: lent what the plan lends" "$(json "lend$chunk" expert_cache_loan.planned_lent_bytes)" \
    "$(json "lend$chunk" expert_cache_loan.lent_bytes)"
done
check "lend 600: one chunk, one loan" 1 "$(json lend600 expert_cache_loan.lends)"
check "lend 320: two chunks, two loans" 2 "$(json lend320 expert_cache_loan.lends)"
holds "lend 600: the plan lends the cache's bytes beyond the chunk's slots" \
  "test $(json lend600 expert_cache_loan.planned_lent_bytes) -gt 0"
contains "the plan says it lends" "beyond the chunk's 2 slots lent to the chunk" "$(cat "$work/lend600.err")"
# A cache at its floor (--cache-gb 0: one layer's top-k, 4 slots) lends all
# but the chunk's 2: the chunk's experts run through fewer slots than a
# token's top-k, and decode gets its floor back.
run floor-batches 256 0 --cache-gb 0
run lend-floor 600 1 --cache-gb 0
same lend-floor floor-batches
check "lend at the floor: 2 of 4 slots lent" "$(json lend-floor expert_cache_loan.planned_lent_bytes)" \
  "$(json lend-floor expert_cache_loan.lent_bytes)"
holds "lend at the floor: the plan lends half the floor" \
  "test $(json lend-floor expert_cache_loan.planned_lent_bytes) -gt 0"
contains "lend at the floor: the plan says so" "beyond the chunk's 2 slots lent to the chunk" "$(cat "$work/lend-floor.err")"
run lend-draft 600 1 "${CACHE[@]}" --draft "${K3_TEST_DATA:?}/k3-tiny-dspark"
run draft-batches 256 0 "${CACHE[@]}" --draft "${K3_TEST_DATA:?}/k3-tiny-dspark"
same lend-draft draft-batches

# The whole context in one chunk with less memory: the roomy plan's forecast
# less 100 kB as the 90% limit. Lending the cache beyond the chunk's slots
# (about 470 kB) would fit, and so does a batch of 128 rows (half the 256-row
# batch's 14.8 MB of activations), which costs no bytes read: the plan takes
# that (no spill file without a packed trunk).
peak_of() {  # peak_of FILE: the forecast peak RSS of a --plan's stderr, in bytes
  awk '/forecast peak RSS/ { u = $5 == "GB" ? 1e9 : $5 == "MB" ? 1e6 : 1e3; printf "%.0f\n", $4 * u }' "$1"
}
K3_PREFILL_CHUNK=4096 "$FWD" "$TINY" "${CACHE[@]}" --plan --ctx 4096 < /dev/null > /dev/null 2> "$work/roomy.err"
holds "roomy plan: nothing lent" "! grep -q 'lent to the chunk' '$work/roomy.err'"
avail=$(( ($(peak_of "$work/roomy.err") - 100000) * 10 / 9 ))
K3_AVAILABLE_MEMORY=$avail "$FWD" "$TINY" "${CACHE[@]}" --plan --ctx 4096 < /dev/null > /dev/null 2> "$work/tight.err"
check "tight plan: fits" 0 "$?"
holds "tight plan: lends nothing" "! grep -q 'lent to the chunk' '$work/tight.err'"
contains "tight plan: the batch halved" "prefill batch lowered from 256 to 128 tokens" "$(cat "$work/tight.err")"
contains "tight plan: the whole context in one chunk" "prefill chunk     4096 tokens" "$(cat "$work/tight.err")"
K3_AVAILABLE_MEMORY=$avail "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 4096 --gen 6 "${CACHE[@]}" \
  --logits "$work/tight.logits" --state-out "$work/tight.state" --stats-json "$work/tight.json" \
  > "$work/tight.out" 2> "$work/tight-run.err"
check "tight run: exit" 0 "$?"
contains "tight run: the batch halved" "prefill batch lowered from 256 to 128 tokens" "$(cat "$work/tight-run.err")"
contains "tight run: one chunk of the context" "prefill chunk     4096 tokens" "$(cat "$work/tight-run.err")"
for f in out logits; do
  holds "tight run: $f identical to 256-row batches" "cmp -s '$work/tight.$f' '$work/batches.$f'"
done
check "tight run: no loan" absent "$(json tight expert_cache_loan.lends)"

bad "a lending switch that is not 0 or 1" 2 "K3_PREFILL_LEND" -- env K3_PREFILL_LEND=yes "$FWD" "$TINY" \
  --ids "$work/ids.txt" "${CACHE[@]}"
finish k3_forward_prefill_lend_test
