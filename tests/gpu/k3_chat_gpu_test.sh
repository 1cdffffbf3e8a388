#!/usr/bin/env bash
# k3-chat --gpu on Mesa's lavapipe (fma emulated), validation layer on, from a
# script: a message long enough that its prompt runs in layer-major chunks
# (K3_PREFILL_CHUNK=300, above the 256-row batch), then a second turn. The
# reply text, the --logits file and the --history file equal the CPU run's
# byte for byte, and --stats-json shows the products and MLA's attention ran
# on the device.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
CHAT="$BIN/k3-chat"
export K3_GPU_VALIDATION=1 K3_PREFILL_CHUNK=300
lvp=$(vulkaninfo --summary 2> /dev/null | awk '/^GPU[0-9]+:/ { i = substr($1, 4) + 0 } /deviceName.*llvmpipe/ { print i; exit }')
holds "lavapipe is installed (mesa-vulkan-drivers)" "[ -n '$lvp' ]"
lvp=${lvp:-0}

# A first message of several hundred ids, then a short one, then /exit.
python3 -c "print(' '.join('item %d of the list, number %d' % (i, i * 7) for i in range(60)))" > "$work/script"
printf 'And the next one?\n/exit\n' >> "$work/script"
run() {  # run NAME FLAGS...
  local name=$1; shift
  "$CHAT" "$TINY" --max-tokens 6 --ctx 2048 --history "$work/$name.jsonl" --logits "$work/$name.logits" \
    --stats-json "$work/$name.json" "$@" < "$work/script" > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$work/$1.json" "$2"; }

run cpu
run gpu --gpu "$lvp"
prefilled=$(json cpu 'd["chat"]["turns"][0]["prefilled_ids"]')
holds "the first turn's prompt is longer than a chunk ($prefilled ids > 300)" "[ '${prefilled:-0}' -gt 300 ]"
for f in out logits jsonl; do holds "$f identical to the CPU run's" "cmp -s '$work/gpu.$f' '$work/cpu.$f'"; done
holds "the reply was shown" "[ -s '$work/gpu.out' ]"
holds "products ran on the device" "[ '$(json gpu 'd["gpu"]["products"]')' -gt 0 ]"
holds "MLA attention ran on the device" "[ '$(json gpu 'd["gpu"]["attention"]')' -gt 0 ]"
check "the CPU run has no device" absent "$(json cpu 'd.get("gpu", "absent")')"
holds "no validation errors" "! grep -q 'vulkan validation' '$work/gpu.err'"
bad "a device that is not there" 2 "--gpu 99: there is no such Vulkan device" -- \
  "$CHAT" "$TINY" --gpu 99 < /dev/null
finish k3_chat_gpu_test
