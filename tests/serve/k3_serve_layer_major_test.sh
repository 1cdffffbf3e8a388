#!/usr/bin/env bash
# k3-serve's prompts layer-major (tests/serve/layer_major_checks.py): a long
# prompt is one weight pass, the other slots' decode rows ride in it, every
# sequence equals k3-forward, a client gone within the pass stops it, the
# progress says the layer, the expert cache lent to each prompt pass comes
# back. Every weight streamed (no trunk kept; the cache lent; the pass's
# sequences' layer states lent too: all but the running layer's in a file
# beside the trunk while a pass runs), against a server whose prompts run in
# 256-row passes (K3_PREFILL_CHUNK=256, no cache).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/serve/serve_lib.sh"
"$BIN/k3-pack" "$TINY" "$work/trunk" > /dev/null 2>&1 || { echo "FAIL k3-pack"; exit 1; }
K3_PREFILL_CHUNK=256 start_server "$work/serve256.log" --slots 2 --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0 ||
  exit 1
url256=$url
# This one lends its expert cache to every prompt pass (the cache above its
# floor: the pass's experts in its place; given back, empty, for decode), and
# the sequence state of every sequence in a prompt pass (model/state_loan.h).
lent_cache_gb=0.0005  # about 40 slots of the tiny model, the chunk keeping 2
K3_SERVE_PROGRESS_MS=0 K3_PREFILL_LEND=1 K3_PREFILL_LEND_STATE=1 start_server "$work/serve.log" --slots 2 --trunk "$work/trunk" --trunk-gb 0 \
  --cache-gb "$lent_cache_gb" || exit 1
contains "the plan says one weight read covers the prompt" "prefill: one read of the weights per" "$(cat "$work/serve.log")"
contains "the plan lends the sequence state" "the lent sequence state" "$(grep "prefill: one read" "$work/serve.log")"
timeout 600 python3 "$K3_SOURCE_DIR/tests/serve/layer_major_checks.py" "$url" "$url256" "$BIN" "$TINY" \
  "$work/trunk" "$work" "$work/serve.log" "$lent_cache_gb"
check "layer-major checks" 0 "$?"
finish k3_serve_layer_major_test
