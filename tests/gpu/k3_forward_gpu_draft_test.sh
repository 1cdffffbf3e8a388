#!/usr/bin/env bash
# The tiny DSpark draft through --gpu, on Mesa's lavapipe (fma emulated),
# validation layer on: the draft reads taps of the model's own layers as the
# prompt's chunks run (K3_PREFILL_CHUNK=300, above the 256-row batch, so the
# taps come from the layer-major prefill whose products ran on the device),
# and its proposals depend on every tap's bits. The ids, --logits,
# --state-out, every line of --draft-log and --stats-json's draft counters
# equal the CPU run's, resident and streamed.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
FWD="$BIN/k3-forward"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
export K3_GPU_VALIDATION=1 K3_PREFILL_CHUNK=300
lvp=$(vulkaninfo --summary 2> /dev/null | awk '/^GPU[0-9]+:/ { i = substr($1, 4) + 0 } /deviceName.*llvmpipe/ { print i; exit }')
holds "lavapipe is installed (mesa-vulkan-drivers)" "[ -n '$lvp' ]"
lvp=${lvp:-0}
awk 'BEGIN { for (i = 0; i < 400; ++i) printf "%d ", (i * 7919 + 13) % 8192; print "" }' > "$work/ids.txt"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> "$work/pack.err" || { cat "$work/pack.err"; exit 1; }
STREAM=(--trunk "$work/trunk" --trunk-gb 0 --cache-gb 0)

run() {  # run NAME FLAGS...
  local name=$1; shift
  "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 500 --gen 12 --draft "$DRAFT" --draft-log "$work/$name.log" \
    --logits "$work/$name.logits" --state-out "$work/$name.state" --stats-json "$work/$name.json" "$@" \
    > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}
draft() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d.get('draft'), sort_keys=True))" "$work/$1.json"; }

run cpu "${STREAM[@]}"
run gpu "${STREAM[@]}" --gpu "$lvp"
run resident-gpu --gpu "$lvp"
for name in gpu resident-gpu; do
  for f in out logits state log; do holds "$name: $f identical to the CPU run's" "cmp -s '$work/$name.$f' '$work/cpu.$f'"; done
  holds "$name: the device ran products" "grep -Eq 'gpu $lvp \\(.*\\): [1-9][0-9]* matrix products' '$work/$name.err'"
done
holds "the draft ran passes" "[ \$(wc -l < '$work/cpu.log') -gt 0 ]"
check "stats: the draft's counters equal the CPU run's" "$(draft cpu)" "$(draft gpu)"
holds "stats: the draft proposed" "[ '$(draft cpu)' != null ]"
holds "no validation errors" "! grep -q 'vulkan validation' '$work/gpu.err' '$work/resident-gpu.err'"
finish k3_forward_gpu_draft_test
